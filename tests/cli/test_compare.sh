#!/bin/sh
# test_compare.sh - `stallscope compare` on the bundled demos: a recording compared
# with itself (and with a copy of itself) shows no difference, as text and JSON
# (every ratio 1, no finding in one only); steady against long-poll names
# culprit_spin_long_poll as new, with its long-poll finding only in B, and the other
# way round as gone and only in A; the figures of a side are the database's (polls,
# nearest-rank p99, CPU share, wake-to-poll p99 per location, by SQL); bad inputs
# give one line on stderr and a non-zero exit. With the example runtime, steady and
# long-poll are also recorded here and compared (as two files, and as two recordings
# of one database with --recording-a/--recording-b).
# usage: test_compare.sh STALLSCOPE_CLI SOURCE_ROOT [EXAMPLE_RUNTIME]
set -eu
cli=$1
root=$2
exe=${3:-}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stallscope-compare.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

fail() { echo "FAIL: $*"; exit 1; }

"$cli" import --quiet "$root/data/demo/steady" -o "$tmp/steady.db"
"$cli" import --quiet "$root/data/demo/long-poll" -o "$tmp/lp.db"
cp "$tmp/lp.db" "$tmp/lp-copy.db"

# ---- the same recording --------------------------------------------------------------
for b in lp lp-copy; do
	"$cli" compare "$tmp/lp.db" "$tmp/$b.db" --top 0 > "$tmp/self.txt"
	grep -q '^no differences' "$tmp/self.txt" || { cat "$tmp/self.txt"; fail "self-compare shows differences"; }
	# Every ratio in the tables is 1.00x (or '-': neither has the figure).
	if grep -E '^    (polls|poll p50|poll p99|poll max|CPU share|wake-to-poll p99) ' "$tmp/self.txt" |
		awk '{print $NF}' | grep -v -x -e '1.00x' -e '-' | grep -q .; then
		cat "$tmp/self.txt"
		fail "self-compare has a ratio other than 1.00x"
	fi
	for what in 'findings only in A: none' 'findings only in B: none' 'at another severity (A -> B): none'; do
		grep -q "$what" "$tmp/self.txt" || { cat "$tmp/self.txt"; fail "self-compare: no '$what'"; }
	done
	"$cli" compare "$tmp/lp.db" "$tmp/$b.db" --json --top 0 > "$tmp/self.json"
	python3 - "$tmp/self.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
assert c["identical"] is True and c["same_program"] is True, c
assert c["locations"] and c["functions"], "no rows"
for row in c["locations"] + c["functions"]:
    assert row["status"] == "both", row
    assert row["a"] == row["b"], row
    for k, v in row["ratio"].items():
        assert v in (1, None), (row["name"], k, v)
assert c["cpu_share_moves"] == [], c["cpu_share_moves"]
assert c["findings"] == {"only_a": [], "only_b": [], "changed": []}, c["findings"]
print(f"ok    self-compare: {len(c['locations'])} locations, {len(c['functions'])} functions, all ratios 1")
PY
done

# ---- steady against long-poll ---------------------------------------------------------
"$cli" compare "$tmp/steady.db" "$tmp/lp.db" > "$tmp/sl.txt"
sed -n '/^culprit functions/,/^functions whose/p' "$tmp/sl.txt" | grep -q '^  culprit_spin_long_poll  \[new\]' \
	|| { cat "$tmp/sl.txt"; fail "steady -> long-poll does not name culprit_spin_long_poll as new"; }
sed -n '/^functions whose CPU share moved most/,/^findings/p' "$tmp/sl.txt" | sed -n 3p |
	grep -q '^  culprit_spin_long_poll .* +[0-9.]* pp *new$' \
	|| { cat "$tmp/sl.txt"; fail "culprit_spin_long_poll is not the largest CPU share move"; }
sed -n '/^findings only in B/,/^findings in both/p' "$tmp/sl.txt" |
	grep -q -E '^  (CRITICAL|WARNING) +long-poll in culprit_spin_long_poll' \
	|| { cat "$tmp/sl.txt"; fail "the long-poll finding is not only in B"; }
grep -q '^no differences' "$tmp/sl.txt" && fail "steady and long-poll compare as identical"
"$cli" compare "$tmp/steady.db" "$tmp/lp.db" --json --top 0 > "$tmp/sl.json"
"$cli" compare "$tmp/lp.db" "$tmp/steady.db" --json --top 0 > "$tmp/ls.json"
python3 - "$tmp/sl.json" "$tmp/ls.json" "$tmp/lp.db" <<'PY'
import json, sqlite3, sys
sl, ls = (json.load(open(p)) for p in sys.argv[1:3])
assert sl["identical"] is False
f = {r["name"]: r for r in sl["functions"]}["culprit_spin_long_poll"]
assert f["status"] == "new" and f["ratio"]["cpu_share"] == "new" and f["ratio"]["p99"] == "new", f
assert f["b"]["cpu_share"] > 0.5 and f["b"]["polls"] > 0 and f["a"]["polls"] == 0, f
assert sl["cpu_share_moves"][0]["function"] == "culprit_spin_long_poll", sl["cpu_share_moves"][:2]
assert sl["cpu_share_moves"][0]["delta"] > 0.5
lp = [x for x in sl["findings"]["only_b"] if x["check"] == "long-poll" and x["culprit"] == "culprit_spin_long_poll"]
assert lp and lp[0]["severity_b"] in ("warning", "critical") and lp[0]["severity_a"] is None, sl["findings"]
assert not sl["findings"]["only_a"], sl["findings"]["only_a"]
# The other way round: gone, and only in A.
g = {r["name"]: r for r in ls["functions"]}["culprit_spin_long_poll"]
assert g["status"] == "gone" and g["ratio"]["cpu_share"] == "gone", g
assert any(x["culprit"] == "culprit_spin_long_poll" for x in ls["findings"]["only_a"]), ls["findings"]
# B's figures per location against SQL on long-poll.db.
d = sqlite3.connect(sys.argv[3])
q = lambda sql: d.execute(sql).fetchall()
total = q("SELECT count(*) FROM samples WHERE kind = 'cpu'")[0][0]
assert sl["b"]["cpu_samples"] == total and sl["b"]["polls"] == q("SELECT count(*) FROM polls WHERE NOT incomplete")[0][0]
assert sl["b"]["recordings"] == q("SELECT count(*) FROM recordings")[0][0] and sl["b"]["recording"] is None, sl["b"]
def rank(vals, p):
    vals = sorted(vals)
    return vals[(p * len(vals) + 99) // 100 - 1] if vals else None
checked = 0
for row in sl["locations"]:
    if row["function"] is None:
        continue
    loc = f"l.function = '{row['function']}' AND l.file = '{row['file']}' AND l.line = {row['line']}"
    durs = [v for (v,) in q(f"SELECT p.dur FROM polls p JOIN locations l ON l.id = p.location_id WHERE {loc} AND NOT p.incomplete")]
    b = row["b"]
    assert b["polls"] == len(durs), (row["name"], b, len(durs))
    if durs:
        assert (b["p50_ns"], b["p99_ns"], b["max_ns"]) == (rank(durs, 50), rank(durs, 99), max(durs)), (row["name"], b)
    cpu = q(f"SELECT count(*) FROM samples s JOIN polls p ON p.id = s.poll_id JOIN locations l ON l.id = p.location_id"
            f" WHERE s.kind = 'cpu' AND {loc}")[0][0]
    assert b["cpu_samples"] == cpu and abs(b["cpu_share"] - cpu / total) < 1e-5, (row["name"], b, cpu)
    delays = [v for (v,) in q(f"SELECT w.delay FROM wakes w JOIN polls p ON p.id = w.poll_id JOIN locations l"
                              f" ON l.id = p.location_id WHERE w.delay IS NOT NULL AND {loc}")]
    assert b["wakes"] == len(delays) and b["wake_p99_ns"] == rank(delays, 99), (row["name"], b)
    checked += 1
assert checked >= 3, checked
print(f"ok    steady -> long-poll: culprit_spin_long_poll new (CPU share {f['b']['cpu_share']:.1%}), its long-poll"
      f" finding only in B; {checked} locations' figures = SQL")
PY

# --top limits the rows, the JSON too.
"$cli" compare "$tmp/steady.db" "$tmp/lp.db" --json --top 1 > "$tmp/top1.json"
python3 -c "
import json, sys
c = json.load(open(sys.argv[1]))
assert len(c['locations']) == 1 and len(c['functions']) == 1 and len(c['cpu_share_moves']) == 1, c
" "$tmp/top1.json"

# ---- recordings made here, and two recordings of one database --------------------------
# The demos above were recorded once; these are recorded now, by this build's example
# runtime, so a change to the recorder or the importer that hides the culprit shows.
if [ -n "$exe" ]; then
	for sc in steady long-poll; do
		mkdir -p "$tmp/rec-$sc"
		STALLSCOPE_ENABLED=1 STALLSCOPE_OUTPUT_DIR="$tmp/rec-$sc" STALLSCOPE_FILE_PREFIX="$sc" \
			"$exe" --scenario "$sc" --workers 4 --duration 1.5 --rate 1500 --seed 1 > /dev/null \
			|| fail "the example runtime did not run $sc"
		"$cli" import --quiet "$tmp/rec-$sc" -o "$tmp/rec-$sc.db"
	done
	"$cli" import --quiet "$tmp/rec-steady" "$tmp/rec-long-poll" -o "$tmp/two.db"
	first=$(sqlite3 "$tmp/two.db" "SELECT id FROM recordings ORDER BY first_ts LIMIT 1")
	second=$(sqlite3 "$tmp/two.db" "SELECT id FROM recordings ORDER BY first_ts DESC LIMIT 1")
	[ "$first" != "$second" ] || fail "two.db does not hold two recordings"
	"$cli" compare "$tmp/rec-steady.db" "$tmp/rec-long-poll.db" --json --top 0 > "$tmp/fresh.json"
	"$cli" compare "$tmp/rec-long-poll.db" "$tmp/rec-steady.db" --json --top 0 > "$tmp/fresh-back.json"
	"$cli" compare "$tmp/two.db" "$tmp/two.db" --recording-a "$first" --recording-b "$second" --json --top 0 \
		> "$tmp/two.json"
	"$cli" compare "$tmp/two.db" "$tmp/two.db" --recording-a "$first" --recording-b "$first" > "$tmp/two-self.txt"
	grep -q '^no differences' "$tmp/two-self.txt" || { cat "$tmp/two-self.txt"; fail "a recording of two.db against itself differs"; }
	python3 - "$tmp/fresh.json" "$tmp/fresh-back.json" "$tmp/two.json" "$first" "$second" <<'PY'
import json, sys
fwd, back, two = (json.load(open(p)) for p in sys.argv[1:4])
first, second = int(sys.argv[4]), int(sys.argv[5])
def fn(c, name):
    rows = [r for r in c["functions"] if r["name"] == name]
    assert rows, [r["name"] for r in c["functions"]]
    return rows[0]
f = fn(fwd, "culprit_spin_long_poll")
assert f["status"] == "new" and f["b"]["polls"] > 0 and f["b"]["cpu_share"] > 0.2, f
assert f["b"]["max_ns"] > 10_000_000, f  # the scenario spins for tens of ms
assert any(x["check"] == "long-poll" and x["culprit"] == "culprit_spin_long_poll"
           and x["severity_b"] in ("warning", "critical") and x["severity_a"] is None
           for x in fwd["findings"]["only_b"]), fwd["findings"]["only_b"]
assert fwd["cpu_share_moves"][0]["function"] == "culprit_spin_long_poll", fwd["cpu_share_moves"][:3]
g = fn(back, "culprit_spin_long_poll")
assert g["status"] == "gone" and g["ratio"]["cpu_share"] == "gone", g
assert any(x["culprit"] == "culprit_spin_long_poll" for x in back["findings"]["only_a"]), back["findings"]
# One database holding both recordings: the same comparison as the two files.
assert two["a"]["recording"] == first and two["b"]["recording"] == second, (two["a"], two["b"])
assert two["a"]["recordings"] == 1 and two["b"]["recordings"] == 1, (two["a"], two["b"])
for k in ("polls", "cpu_samples", "wakes"):
    assert (two["a"][k], two["b"][k]) == (fwd["a"][k], fwd["b"][k]), k
assert [(r["name"], r["a"], r["b"]) for r in two["locations"]] == [(r["name"], r["a"], r["b"]) for r in fwd["locations"]]
# Functions only where no shared helper is involved: whether a function is a
# helper that stands for its callers is decided over the database's stacks
# (analysis/stacks.c), and one database holding both recordings sees the
# callers of both.
t = fn(two, "culprit_spin_long_poll")
assert (t["status"], t["a"], t["b"]) == (f["status"], f["a"], f["b"]), (t, f)
print(f"ok    recorded here: culprit_spin_long_poll new (CPU share {f['b']['cpu_share']:.1%}, max"
      f" {f['b']['max_ns'] / 1e6:.1f} ms) and gone the other way; two.db --recording-a {first} --recording-b"
      f" {second} = the two files")
PY
else
	echo "ok    (no example runtime given: the recordings made here are left out)"
fi

# ---- bad inputs -------------------------------------------------------------------------
expect_error() {
	what=$1
	shift
	if "$cli" compare "$@" > "$tmp/err.out" 2> "$tmp/err.txt"; then fail "$what: accepted"; fi
	[ "$(wc -l < "$tmp/err.txt")" -eq 1 ] || { cat "$tmp/err.txt"; fail "$what: not one line"; }
	grep -q '^stallscope compare: ' "$tmp/err.txt" || { cat "$tmp/err.txt"; fail "$what: no prefix"; }
	[ ! -s "$tmp/err.out" ] || fail "$what: wrote to stdout"
	echo "ok    $what: $(cat "$tmp/err.txt")"
}
echo "not a database" > "$tmp/text.db"
expect_error "missing A" "$tmp/missing.db" "$tmp/lp.db"
expect_error "missing B" "$tmp/lp.db" "$tmp/missing.db"
expect_error "not a database" "$tmp/lp.db" "$tmp/text.db"
expect_error "one database" "$tmp/lp.db"
expect_error "unknown recording" "$tmp/lp.db" "$tmp/lp.db" --recording-b 7
expect_error "bad --top" "$tmp/lp.db" "$tmp/lp.db" --top x
cp "$tmp/steady.db" "$tmp/norec.db"
sqlite3 "$tmp/norec.db" "DELETE FROM recordings"
expect_error "no recording in B" "$tmp/lp.db" "$tmp/norec.db"
grep -q '^stallscope compare: B: .*norec.db holds no data' "$tmp/err.txt" || fail "no data: not said of B"
echo "compare: ok"

#!/bin/sh
# test_report.sh - `stallscope report` answers "which task held the worker, and was
# it computing or blocked?" on the bundled demos: the long-poll demo's longest poll
# is computing in culprit_spin_long_poll, the blocking demo's is blocked in read in
# culprit_blocking_syscall; --json is valid JSON with the same verdicts; a file
# that is not a stallscope database is refused with a clear message.
# usage: test_report.sh STALLSCOPE_CLI SOURCE_ROOT
set -eu
cli=$1
root=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stallscope-report.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

fail() { echo "FAIL: $*"; exit 1; }

"$cli" import --quiet "$root/data/demo/long-poll" -o "$tmp/lp.db"
"$cli" import --quiet "$root/data/demo/blocking" -o "$tmp/bl.db"

"$cli" report "$tmp/lp.db" --top 3 > "$tmp/lp.txt"
grep -q 'culprit_spin_long_poll' "$tmp/lp.txt" || { cat "$tmp/lp.txt"; fail "long-poll culprit not named"; }
sed -n '/longest polls/,/^stalls/p' "$tmp/lp.txt" | grep -q 'computing' \
	|| { cat "$tmp/lp.txt"; fail "long-poll verdict is not computing"; }
grep -q 'CRITICAL\|WARNING' "$tmp/lp.txt" || fail "no finding for the long polls"

"$cli" report "$tmp/bl.db" --top 3 > "$tmp/bl.txt"
grep -q 'culprit_blocking_syscall' "$tmp/bl.txt" || { cat "$tmp/bl.txt"; fail "blocking culprit not named"; }
sed -n '/longest polls/,/^stalls/p' "$tmp/bl.txt" | grep -q 'blocked in read' \
	|| { cat "$tmp/bl.txt"; fail "blocking verdict does not name read"; }

# The verdicts exactly: "computing" is not "computing, but preempted part of the
# time" (a moved threshold would turn one into the other).
"$cli" report "$tmp/lp.db" --json > "$tmp/lp.json"
python3 - "$tmp/lp.json" <<'PY'
import json, sys
top = json.load(open(sys.argv[1]))["summary"]["long_polls"]["longest"][0]
assert top["verdict"] == "computing", top
assert top["on_cpu_fraction"] >= 0.8 and top["blocked_fraction"] <= 0.2, top
PY
sed -n '/longest polls/,/^stalls/p' "$tmp/lp.txt" | sed -n 2,3p | grep -q 'of it: computing;' \
	|| { cat "$tmp/lp.txt"; fail "long-poll's longest poll is not exactly 'computing'"; }

"$cli" report "$tmp/bl.db" --json > "$tmp/bl.json"
python3 - "$tmp/bl.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["summary"]
top = r["long_polls"]["longest"][0]
assert top["verdict"] == "blocked", top
assert "culprit_blocking_syscall" in (top["stack"] or ""), top
assert r["stalls"]["by_kind"].get("blocked", 0) > 0, r["stalls"]
assert r["workers"] and all("utilisation" in w for w in r["workers"])
PY

# The one-pass figures (report_scan.c) against plain SQL on the demo: worker
# totals and delay percentiles exact (nearest rank); and the same
# figures when the wakes are not in poll order (read through a join then).
for db in lp bl; do
	"$cli" report "$tmp/$db.db" --json > "$tmp/$db.json"
	cp "$tmp/$db.db" "$tmp/$db-shuffled.db"
	python3 - "$tmp/$db-shuffled.db" <<'PY'
import sqlite3, sys
d = sqlite3.connect(sys.argv[1])
d.executescript("""CREATE TEMP TABLE w2 AS SELECT * FROM wakes ORDER BY rowid DESC;
                   DELETE FROM wakes; INSERT INTO wakes SELECT * FROM temp.w2;""")
d.commit()
PY
	"$cli" report "$tmp/$db-shuffled.db" --json > "$tmp/$db-shuffled.json"
	python3 - "$tmp/$db.db" "$tmp/$db.json" "$tmp/$db-shuffled.json" <<'PY'
import json, sqlite3, sys
d = sqlite3.connect(sys.argv[1])
q = lambda sql: d.execute(sql).fetchall()
for path in sys.argv[2:]:
    r = json.load(open(path))["summary"]
    for w in r["workers"]:
        wid = q(f"SELECT id FROM workers WHERE runtime IS '{w['runtime']}' AND idx = {w['index']} AND recording_id = {w['recording']}")[0][0]
        polls, busy, longest = q(f"SELECT count(*), coalesce(sum(dur), 0), coalesce(max(dur), 0) FROM polls WHERE worker_id = {wid}")[0]
        parked = q(f"SELECT coalesce(sum(dur), 0) FROM parks WHERE worker_id = {wid}")[0][0]
        assert (w["polls"], w["busy_ns"], w["parked_ns"], w["longest_poll_ns"]) == (polls, busy, parked, longest), (path, w)
    delays = sorted(v for (v,) in q("SELECT delay FROM wakes WHERE delay IS NOT NULL"))
    wk = r["wake_to_poll"]
    assert wk["wakes"] == len(delays), (path, wk)
    # Nearest rank, exactly: the value at rank ceil(p * n).
    for key, pct in (("p50_ns", 50), ("p99_ns", 99)):
        exact = delays[(pct * len(delays) + 99) // 100 - 1]
        assert wk[key] == exact, (path, key, wk[key], exact)
    assert wk["max_ns"] == delays[-1], (path, wk)
    assert r["long_polls"]["over_1ms"] == q("SELECT count(*) FROM polls WHERE dur > 1000000")[0][0], path
print("report figures match SQL:", sys.argv[2])
PY
done

# The CPU table against plain SQL: a function's self time is the weight of the
# CPU samples whose leaf frame it is, its total the weight of the samples with
# it anywhere in the stack (once per sample however deep it recurses); most
# self first, --top rows; the same inside --recording and a --from/--to window.
"$cli" report "$tmp/lp.db" --top 5 --json > "$tmp/lp-cpu.json"
"$cli" report "$tmp/lp.db" --top 5 --recording 1 --from 1s --to 2s --json > "$tmp/lp-cpu-win.json"
"$cli" report "$tmp/lp.db" --top 5 > "$tmp/lp-cpu.txt"
python3 - "$tmp/lp.db" "$tmp/lp-cpu.json" "$tmp/lp-cpu-win.json" "$tmp/lp-cpu.txt" <<'PY'
import json, sqlite3, sys
d = sqlite3.connect(sys.argv[1])
def sql_costs(where):
    self = dict(d.execute(f"""SELECT f.function, sum(s.weight) FROM samples s JOIN callsites c ON c.id = s.callsite_id
        JOIN frames f ON f.id = c.frame_id JOIN threads t ON t.id = s.thread_id
        WHERE s.kind = 'cpu' AND f.function IS NOT NULL AND {where} GROUP BY f.function"""))
    total = dict(d.execute(f"""WITH RECURSIVE up(sid, cs) AS (
          SELECT s.rowid, s.callsite_id FROM samples s JOIN threads t ON t.id = s.thread_id
          WHERE s.kind = 'cpu' AND s.callsite_id IS NOT NULL AND {where}
          UNION ALL SELECT up.sid, c.parent_id FROM up JOIN callsites c ON c.id = up.cs WHERE c.parent_id IS NOT NULL)
        SELECT fn, sum(w) FROM (SELECT DISTINCT up.sid AS sid, f.function AS fn, s.weight AS w FROM up
          JOIN callsites c ON c.id = up.cs JOIN frames f ON f.id = c.frame_id JOIN samples s ON s.rowid = up.sid
          WHERE f.function IS NOT NULL) GROUP BY fn"""))
    n, w = d.execute(f"""SELECT count(*), coalesce(sum(s.weight), 0) FROM samples s JOIN threads t ON t.id = s.thread_id
        WHERE s.kind = 'cpu' AND {where}""").fetchone()
    return self, total, n, w
for path, where in ((sys.argv[2], "1"), (sys.argv[3], None)):
    doc = json.load(open(path))
    if where is None:
        o = doc["scope"]["origin_ts"]
        where = f"t.recording_id = 1 AND s.ts >= {o + 1000000000} AND s.ts < {o + 2000000000}"
    cp = doc["cpu_profile"]
    self, total, n, w = sql_costs(where)
    assert (cp["samples"], cp["cpu_ns"]) == (n, w), (path, cp["samples"], cp["cpu_ns"], n, w)
    fs = cp["functions"]
    assert 1 <= len(fs) <= 5, (path, fs)
    assert [f["self_ns"] for f in fs] == sorted((f["self_ns"] for f in fs), reverse=True), (path, fs)
    named = [f for f in fs if f["function"] in total]
    assert named, (path, fs)
    for f in named:
        assert f["self_ns"] == self.get(f["function"], 0) and f["total_ns"] == total[f["function"]], (path, f, self.get(f["function"]), total[f["function"]])
    # nothing named with more self time was left out of the table
    assert max(self.values()) <= fs[0]["self_ns"], (path, max(self.values()), fs[0])
assert json.load(open(sys.argv[2]))["cpu_profile"]["functions"][0]["function"] == "cpu_spin"
text = open(sys.argv[4]).read()
assert "\nCPU: " in text and "cpu_spin" in text.split("\nCPU: ")[1].split("\n")[2], text
print("report CPU table matches SQL")
PY
# Without CPU samples the section says so, and the JSON has an empty list.
cp "$tmp/lp.db" "$tmp/nosamples.db"
sqlite3 "$tmp/nosamples.db" "DELETE FROM samples"
"$cli" report "$tmp/nosamples.db" > "$tmp/nosamples.txt"
grep -q '^CPU: no CPU samples in scope' "$tmp/nosamples.txt" || { cat "$tmp/nosamples.txt"; fail "no 'no CPU samples' line"; }
"$cli" report "$tmp/nosamples.db" --json | python3 -c '
import json, sys
cp = json.load(sys.stdin)["cpu_profile"]
assert cp == {"samples": 0, "cpu_ns": 0, "functions": []}, cp'

# The README's per-location p99 query and the report's per-location p99 are
# one definition: run the query exactly as the README prints it.
python3 - "$root/README.md" "$tmp/lp.db" "$tmp/lp.json" "$tmp/bl.db" "$tmp/bl.json" <<'PY'
import json, re, sqlite3, sys
readme = open(sys.argv[1]).read()
m = re.search(r"-- Wake-to-poll delay p99 per poll location\.\n(.*?;)\n", readme, re.S)
assert m, "README has no per-location p99 query"
sql = m.group(1)
for db, js in ((sys.argv[2], sys.argv[3]), (sys.argv[4], sys.argv[5])):
    d = sqlite3.connect(db)
    rows = {f"{fn} ({at})": ms for fn, at, ms in d.execute(sql)}
    worst = json.load(open(js))["summary"]["wake_to_poll"]["worst_locations"]
    assert worst, db
    for w in worst:
        assert w["location"] in rows, (w, rows)
        assert round(rows[w["location"]] * 1e6) == w["p99_ns"], (db, w, rows[w["location"]])
print("README p99 SQL agrees with the report")
PY

# The README's thresholds table is the one the report grades by.
"$cli" report --list-thresholds > "$tmp/th.txt"
python3 - "$root/README.md" "$tmp/th.txt" <<'PY'
import sys
readme, table = open(sys.argv[1]).read(), open(sys.argv[2]).read()
start = readme.index("threshold          unit")
block = readme[start:readme.index("```", start)]
assert block == table, "README's thresholds table differs from --list-thresholds:\n" + block + "\n---\n" + table
print("README thresholds = --list-thresholds")
PY

echo "not a database" > "$tmp/bad.db"
if "$cli" report "$tmp/bad.db" > "$tmp/bad.txt" 2>&1; then fail "a non-database was accepted"; fi
grep -q 'stallscope report' "$tmp/bad.txt" || { cat "$tmp/bad.txt"; fail "no clear message"; }
echo "report: ok"

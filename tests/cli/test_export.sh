#!/bin/sh
# test_export.sh - `stallscope export` on the bundled demos, checked against SQL on
# the same database: folded lines parse and their counts add up to the samples in
# scope (whole trace, --worker, --from/--to, --task, --offcpu, --value ns); the
# Chrome trace parses, its slices nest on every thread, and its polls, stall
# captures and samples are the database's, with poll_view's verdicts; the pprof
# profile decodes with protoc against viewer/export/profile.proto and its totals
# are the database's (SKIP when this build has no pprof format or protoc is
# missing); bad inputs give one line on stderr, a non-zero exit, and leave an
# existing -o file as it was.
# usage: test_export.sh STALLSCOPE_CLI SOURCE_ROOT folded-chrome|pprof
set -eu
cli=$1
root=$2
part=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stallscope-export.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

fail() { echo "FAIL: $*"; exit 1; }

"$cli" import --quiet "$root/data/demo/long-poll" -o "$tmp/lp.db"
"$cli" import --quiet "$root/data/demo/blocking" -o "$tmp/bl.db"

task=$(sqlite3 "$tmp/lp.db" "SELECT t.task FROM samples s JOIN polls p ON p.id = s.poll_id JOIN tasks t
	ON t.id = p.task_id WHERE s.kind = 'cpu' GROUP BY t.task ORDER BY count(*) DESC, t.task LIMIT 1")
cp "$tmp/lp.db" "$tmp/nosamples.db"
sqlite3 "$tmp/nosamples.db" "DELETE FROM samples"

# expect_error WHAT ARGS...: exit status 1, one line on stderr, nothing on stdout.
expect_error() {
	what=$1
	shift
	if "$cli" export "$@" > "$tmp/err.out" 2> "$tmp/err.txt"; then fail "$what: accepted"; fi
	[ "$(wc -l < "$tmp/err.txt")" -eq 1 ] || { cat "$tmp/err.txt"; fail "$what: not one line"; }
	grep -q '^stallscope export: ' "$tmp/err.txt" || { cat "$tmp/err.txt"; fail "$what: no prefix"; }
	[ ! -s "$tmp/err.out" ] || fail "$what: wrote to stdout"
	echo "ok    $what: $(cat "$tmp/err.txt")"
}

if [ "$part" = folded-chrome ]; then
# ---- folded ------------------------------------------------------------------------
# check_folded DB FILE SQL: every line is "frame;frame;... COUNT", no stack twice,
# and the counts add up to what SQL returns.
check_folded() {
	python3 - "$1" "$2" "$3" <<'PY'
import re, sqlite3, sys
db, path, sql = sys.argv[1:4]
want = sqlite3.connect(db).execute(sql).fetchone()[0] or 0
total, seen = 0, set()
for n, line in enumerate(open(path), 1):
    m = re.fullmatch(r"(\S.*) (\d+)\n", line)
    assert m, f"{path}:{n}: not 'stack count': {line!r}"
    frames = m.group(1).split(";")
    assert all(frames), f"{path}:{n}: an empty frame: {line!r}"
    assert m.group(1) not in seen, f"{path}:{n}: stack twice"
    seen.add(m.group(1))
    total += int(m.group(2))
assert seen, f"{path}: no lines"
assert total == want, f"{path}: counts add up to {total}, SQL says {want} ({sql})"
print(f"ok    folded {path.rsplit('/', 1)[-1]}: {len(seen)} stacks, {total} = SQL")
PY
}

for db in lp bl; do
	"$cli" export "$tmp/$db.db" --format folded > "$tmp/$db.folded"
	check_folded "$tmp/$db.db" "$tmp/$db.folded" "SELECT count(*) FROM samples WHERE kind = 'cpu'"
	"$cli" export "$tmp/$db.db" --format folded --value ns > "$tmp/$db.ns.folded"
	check_folded "$tmp/$db.db" "$tmp/$db.ns.folded" "SELECT sum(weight) FROM samples WHERE kind = 'cpu'"
	"$cli" export "$tmp/$db.db" --format folded --offcpu --value samples > "$tmp/$db.off.folded"
	check_folded "$tmp/$db.db" "$tmp/$db.off.folded" "SELECT count(*) FROM samples WHERE kind = 'offcpu'"
	# Off-CPU ns: the blocked or preempted interval each switch began (it
	# starts within 1 ms after the sample).
	"$cli" export "$tmp/$db.db" --format folded --offcpu > "$tmp/$db.offns.folded"
	check_folded "$tmp/$db.db" "$tmp/$db.offns.folded" "SELECT sum((SELECT c.dur FROM cpu_intervals c
		WHERE c.thread_id = s.thread_id AND c.state <> 'on-cpu' AND c.ts >= s.ts AND c.ts < s.ts + 1000000
		ORDER BY c.ts LIMIT 1)) FROM samples s WHERE s.kind = 'offcpu'"
done
grep -q 'culprit_spin_long_poll' "$tmp/lp.folded" || fail "long-poll's folded stacks do not name culprit_spin_long_poll"
# Root first: the thread's start function, then down to the culprit.
grep -q '^start_thread;worker_main;.*;culprit_spin_long_poll' "$tmp/lp.folded" || fail "folded frames are not root first"

# Scope options: a worker by name and by index, a window, a task.
"$cli" export "$tmp/lp.db" --format folded --worker example#1 > "$tmp/w1.folded"
check_folded "$tmp/lp.db" "$tmp/w1.folded" "SELECT count(*) FROM samples WHERE kind = 'cpu' AND worker_id IN
	(SELECT id FROM workers WHERE runtime = 'example' AND idx = 1)"
"$cli" export "$tmp/lp.db" --format folded --worker 3 > "$tmp/w3.folded"
check_folded "$tmp/lp.db" "$tmp/w3.folded" "SELECT count(*) FROM samples WHERE kind = 'cpu' AND worker_id IN
	(SELECT id FROM workers WHERE idx = 3)"
"$cli" export "$tmp/lp.db" --format folded --from 200ms --to 0.9s > "$tmp/win.folded"
check_folded "$tmp/lp.db" "$tmp/win.folded" "SELECT count(*) FROM samples WHERE kind = 'cpu'
	AND ts >= (SELECT min(first_ts) FROM recordings) + 200000000
	AND ts < (SELECT min(first_ts) FROM recordings) + 900000000"
"$cli" export "$tmp/lp.db" --format folded --worker example#2 --from 300000000 > "$tmp/w2win.folded"
check_folded "$tmp/lp.db" "$tmp/w2win.folded" "SELECT count(*) FROM samples WHERE kind = 'cpu'
	AND ts >= (SELECT min(first_ts) FROM recordings) + 300000000
	AND worker_id IN (SELECT id FROM workers WHERE idx = 2)"
"$cli" export "$tmp/lp.db" --format folded --task "$task" > "$tmp/task.folded"
check_folded "$tmp/lp.db" "$tmp/task.folded" "SELECT count(*) FROM samples s JOIN polls p ON p.id = s.poll_id
	JOIN tasks t ON t.id = p.task_id WHERE s.kind = 'cpu' AND t.task = $task"
# The same output to a file, and the same again.
"$cli" export "$tmp/lp.db" --format folded -o "$tmp/lp2.folded" 2> "$tmp/lp2.err"
cmp -s "$tmp/lp.folded" "$tmp/lp2.folded" || fail "-o FILE differs from standard output"
grep -q 'CPU samples in .* stacks to' "$tmp/lp2.err" || { cat "$tmp/lp2.err"; fail "no summary line for -o"; }

# ---- chrome ----------------------------------------------------------------------------
for db in lp bl; do
	"$cli" export "$tmp/$db.db" --format chrome -o "$tmp/$db.json" -q
	python3 - "$tmp/$db.db" "$tmp/$db.json" <<'PY'
import collections, json, sqlite3, sys
db, path = sys.argv[1:3]
d = sqlite3.connect(db)
q = lambda sql: d.execute(sql).fetchall()
t = json.load(open(path))
ev, frames = t["traceEvents"], t["stackFrames"]
ns = lambda us: round(us * 1000)
# Slices nest per thread: sorted by start (longest first on a tie), each one
# ends before the one it starts inside ends.
lanes = collections.defaultdict(list)
for e in ev:
    if e["ph"] == "X":
        assert e["dur"] >= 0 and e["ts"] >= 0, e
        lanes[(e["pid"], e["tid"])].append((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), e))
for lane, xs in lanes.items():
    xs.sort(key=lambda x: (x[0], -x[1]))
    stack = []
    for b, e, x in xs:
        while stack and stack[-1][1] <= b:
            stack.pop()
        assert not stack or e <= stack[-1][1], f"{lane}: {x} overlaps {stack[-1][2]} partially"
        stack.append((b, e, x))
# Polls: every one, with its task, location and poll_view's verdict.
polls = [e for e in ev if e.get("cat") == "poll"]
assert len(polls) == q("SELECT count(*) FROM polls")[0][0], (len(polls), path)
verdict = dict(q("SELECT poll_id, verdict FROM poll_view"))
task = dict(q("SELECT p.id, t.task FROM polls p JOIN tasks t ON t.id = p.task_id"))
for e in polls:
    a = e["args"]
    assert a["verdict"] == verdict[a["poll_id"]], (e, verdict[a["poll_id"]])
    assert a["task"] == task[a["poll_id"]], e
    assert a["location"] and "(" in a["location"], e
parks = [e for e in ev if e.get("cat") == "park"]
assert len(parks) == q("SELECT count(*) FROM parks")[0][0], len(parks)
offcpu = [e for e in ev if e.get("cat") == "cpu"]
assert len(offcpu) == q("SELECT count(*) FROM cpu_intervals WHERE state <> 'on-cpu' AND thread_id IN"
                       " (SELECT thread_id FROM workers)")[0][0], len(offcpu)
# Stall captures and samples: instants with stacks that stackFrames holds.
stalls = [e for e in ev if e.get("cat") == "stall"]
assert len(stalls) == q("SELECT count(*) FROM stall_captures")[0][0], len(stalls)
samples = [e for e in ev if e.get("cat") == "cpu-sample"]
assert len(samples) == q("SELECT count(*) FROM samples WHERE kind = 'cpu'")[0][0], len(samples)
for e in stalls + samples:
    assert e["ph"] == "i" and e["s"] == "t", e
    if "sf" in e:
        seen, sf = set(), e["sf"]
        while sf:
            assert sf in frames and sf not in seen, (sf, e)
            seen.add(sf)
            sf = frames[sf].get("parent")
        assert e["args"]["stack"], e
with_stack = q("SELECT count(*) FROM stall_captures WHERE callsite_id IS NOT NULL")[0][0]
assert sum("sf" in e for e in stalls) == with_stack, with_stack
# A process per recording, a named thread per worker.
names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
for rec, runtime, idx, tid in q("SELECT w.recording_id, w.runtime, w.idx, w.thread_id FROM workers w"):
    assert names.get((rec, tid), "").startswith(f"{runtime}#{idx} "), (rec, tid, names)
procs = [e for e in ev if e["ph"] == "M" and e["name"] == "process_name"]
assert len(procs) == q("SELECT count(*) FROM recordings")[0][0], procs
print(f"ok    chrome {path.rsplit('/', 1)[-1]}: {len(ev)} events, {len(polls)} polls, {len(stalls)} stall "
      f"captures, {len(samples)} samples, slices nest on {len(lanes)} lanes")
PY
done
grep -q '"stall: blocked in read"' "$tmp/bl.json" || fail "blocking's stalls are not 'blocked in read'"
grep -q 'culprit_blocking_syscall' "$tmp/bl.json" || fail "blocking's stall stacks do not name the culprit"

# Narrowed: one worker, a window, a task.
"$cli" export "$tmp/lp.db" --format chrome --worker example#2 --from 100ms --to 1s -o "$tmp/w.json" -q
"$cli" export "$tmp/lp.db" --format chrome --task "$task" -o "$tmp/t.json" -q
python3 - "$tmp/lp.db" "$tmp/w.json" "$tmp/t.json" "$task" <<'PY'
import json, sqlite3, sys
d = sqlite3.connect(sys.argv[1])
q = lambda sql: d.execute(sql).fetchall()
o = q("SELECT min(first_ts) FROM recordings")[0][0]
w = json.load(open(sys.argv[2]))["traceEvents"]
polls = [e for e in w if e.get("cat") == "poll"]
want = q(f"SELECT count(*) FROM polls p JOIN workers k ON k.id = p.worker_id WHERE k.idx = 2"
         f" AND p.ts < {o} + 1000000000 AND p.ts + p.dur >= {o} + 100000000")[0][0]
assert len(polls) == want and len({e["tid"] for e in polls}) == 1, (len(polls), want)
samples = [e for e in w if e.get("cat") == "cpu-sample"]
want = q(f"SELECT count(*) FROM samples s JOIN workers k ON k.id = s.worker_id WHERE k.idx = 2 AND s.kind = 'cpu'"
         f" AND s.ts >= {o} + 100000000 AND s.ts < {o} + 1000000000")[0][0]
assert len(samples) == want, (len(samples), want)
t = json.load(open(sys.argv[3]))["traceEvents"]
polls = [e for e in t if e.get("cat") == "poll"]
want = q(f"SELECT count(*) FROM polls p JOIN tasks t ON t.id = p.task_id WHERE t.task = {sys.argv[4]}")[0][0]
assert len(polls) == want and all(e["args"]["task"] == int(sys.argv[4]) for e in polls), (len(polls), want)
assert not [e for e in t if e.get("cat") in ("park", "cpu")], "a task's export has parks"
print("ok    chrome: --worker with a window and --task match SQL")
PY

fi # folded-chrome

if [ "$part" = pprof ]; then
# ---- pprof -----------------------------------------------------------------------------
pprof=yes
if ! "$cli" export "$tmp/lp.db" --format pprof -o "$tmp/lp.pb.gz" -q 2> "$tmp/pp.err"; then
	grep -q 'no pprof format' "$tmp/pp.err" || { cat "$tmp/pp.err"; fail "pprof export failed"; }
	pprof="this build has no pprof format (configured without protobuf-c)"
elif ! command -v protoc > /dev/null; then
	pprof="protoc is not installed (Debian: protobuf-compiler): the profile cannot be decoded"
fi
if [ "$pprof" = yes ]; then
	for kind in cpu offcpu; do
		flag=""
		[ "$kind" = offcpu ] && flag=--offcpu
		for db in lp bl; do
			# shellcheck disable=SC2086 # flag is empty or one word
			"$cli" export "$tmp/$db.db" --format pprof $flag -o "$tmp/$db.$kind.pb.gz" -q
			gunzip < "$tmp/$db.$kind.pb.gz" > "$tmp/$db.$kind.pb"
			protoc --decode perftools.profiles.Profile -I "$root/viewer/export" profile.proto \
				< "$tmp/$db.$kind.pb" > "$tmp/$db.$kind.txt"
			python3 - "$tmp/$db.db" "$tmp/$db.$kind.txt" "$kind" <<'PY'
import re, sqlite3, sys
db, path, kind = sys.argv[1:4]
d = sqlite3.connect(db)
q = lambda sql: d.execute(sql).fetchone()[0] or 0

def parse(lines):
    """protoc's text format: 'key: value' and 'key { ... }', into lists per key."""
    msg = {}
    for line in lines:
        line = line.strip()
        if line == "}":
            return msg
        m = re.fullmatch(r"(\w+) \{", line)
        if m:
            msg.setdefault(m.group(1), []).append(parse(lines))
            continue
        k, v = line.split(": ", 1)
        msg.setdefault(k, []).append(eval(v) if v[0] == '"' else int(v) if v not in ("true", "false") else v == "true")
    return msg

p = parse(iter(open(path)))
st = p["string_table"]
assert st[0] == "", st[:3]
types = [(st[t["type"][0]], st[t["unit"][0]]) for t in p["sample_type"]]
if kind == "cpu":
    assert types == [("samples", "count"), ("cpu", "nanoseconds")], types
    want = (q("SELECT count(*) FROM samples WHERE kind = 'cpu'"), q("SELECT sum(weight) FROM samples WHERE kind = 'cpu'"))
else:
    assert types == [("switches", "count"), ("off_cpu", "nanoseconds")], types
    want = (q("SELECT count(*) FROM samples WHERE kind = 'offcpu'"),
            q("""SELECT sum((SELECT c.dur FROM cpu_intervals c WHERE c.thread_id = s.thread_id AND c.state <> 'on-cpu'
                 AND c.ts >= s.ts AND c.ts < s.ts + 1000000 ORDER BY c.ts LIMIT 1)) FROM samples s WHERE s.kind = 'offcpu'"""))
got = tuple(sum(s["value"][i] for s in p["sample"]) for i in range(2))
assert got == want, (path, got, want)
locs = {l["id"][0]: l for l in p["location"]}
funcs = {f["id"][0]: f for f in p["function"]}
maps = {m["id"][0] for m in p.get("mapping", [])}
for s in p["sample"]:
    assert s["location_id"], s
    for lid in s["location_id"]:
        l = locs[lid]
        assert l.get("mapping_id", [0])[0] in maps | {0}, l
        for ln in l["line"]:
            assert ln["function_id"][0] in funcs, ln
    labels = {st[l["key"][0]]: st[l["str"][0]] for l in s.get("label", [])}
    assert labels.get("worker", "").startswith("example#"), labels
name = lambda lid: [st[funcs[ln["function_id"][0]]["name"][0]] for ln in locs[lid]["line"]]
assert p["duration_nanos"][0] > 0 and p["period"][0] > 0, (p["duration_nanos"], p["period"])
assert st[p["default_sample_type"][0]] == types[1][0]
if kind == "cpu" and "lp." in path:
    # The hottest stack runs culprit_spin_long_poll, with its file and line.
    top = max(p["sample"], key=lambda s: s["value"][1])
    fns = [f for lid in top["location_id"] for f in name(lid)]
    assert "culprit_spin_long_poll" in fns, fns
    f = next(f for f in funcs.values() if st[f["name"][0]] == "culprit_spin_long_poll")
    assert st[f["filename"][0]].endswith("scenarios.c"), f
    assert any(ln.get("line", [0])[0] > 0 for l in locs.values() for ln in l["line"]
               if st[funcs[ln["function_id"][0]]["name"][0]] == "culprit_spin_long_poll")
print(f"ok    pprof {path.rsplit('/', 1)[-1]}: {len(p['sample'])} samples, totals {got} = SQL")
PY
		done
	done
	head -c 2 "$tmp/lp.cpu.pb.gz" | od -An -tx1 | grep -q '1f 8b' || fail "the profile is not gzipped"
fi

if [ "$pprof" = yes ]; then
	expect_error "no samples (pprof)" "$tmp/nosamples.db" --format pprof -o "$tmp/never.pb.gz"
	[ ! -e "$tmp/never.pb.gz" ] || fail "a failed export left its file"
fi
if [ "$pprof" != yes ]; then
	echo "SKIP: pprof: $pprof"
	exit 77
fi
fi # pprof

if [ "$part" = folded-chrome ]; then
# ---- bad inputs --------------------------------------------------------------------------
echo "not a database" > "$tmp/text.db"
cp "$tmp/lp.db" "$tmp/empty.db"
sqlite3 "$tmp/empty.db" "DELETE FROM samples; DELETE FROM polls; DELETE FROM parks; DELETE FROM stall_captures;
	DELETE FROM cpu_intervals"
expect_error "missing file" "$tmp/missing.db" --format folded
expect_error "not a database" "$tmp/text.db" --format chrome
expect_error "unknown format" "$tmp/lp.db" --format svg
expect_error "no format" "$tmp/lp.db"
expect_error "window after the end" "$tmp/lp.db" --format folded --from 100s
expect_error "empty window" "$tmp/lp.db" --format folded --from 2s --to 1s
expect_error "unknown worker" "$tmp/lp.db" --format folded --worker example#9
expect_error "unknown task" "$tmp/lp.db" --format chrome --task 999999999
expect_error "bad worker" "$tmp/lp.db" --format folded --worker '#x'
expect_error "no samples (folded)" "$tmp/nosamples.db" --format folded
expect_error "nothing (chrome)" "$tmp/empty.db" --format chrome
expect_error "no off-CPU samples of a task" "$tmp/lp.db" --format folded --offcpu --task "$task" --from 1.4s
# A failed export leaves an existing file alone, and no temporary file beside it.
echo keep > "$tmp/keep.folded"
expect_error "failed export over a file" "$tmp/nosamples.db" --format folded -o "$tmp/keep.folded"
[ "$(cat "$tmp/keep.folded")" = keep ] || fail "a failed export replaced the -o file"
if ls "$tmp" | grep -q 'keep.folded.tmp'; then fail "a failed export left its temporary file"; fi

fi # folded-chrome
echo "export $part: ok"

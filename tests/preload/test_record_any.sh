#!/bin/bash
# test_record_any.sh - `stallscope record` on programs no one here wrote.
#  - Debian's xz -T2 unmodified: one lane per thread, parks where its threads wait,
#    CPU samples on every busy thread with library function names, exit status
#    passed through; the same as an unprivileged user (nobody), where the summary
#    says what perf refused.
#  - -p PID on a running xz: attach, detach; it keeps running, its output is
#    byte-identical to a run without us; as nobody too; refused on a root process.
#  - a statically linked program: recorded from outside, status passed through.
#  - Ctrl-C (SIGINT to record) seals the segments and the program ends; SIGKILL of
#    record leaves segments that import.
#  - nothing recorded means a non-zero exit with the reason: -o /proc/x, -s abc,
#    an unwritable directory, a program that never started the recorder, a static
#    program with --hooks none, perf refused for -p.
# usage: test_record_any.sh STALLSCOPE_CLI STATIC_SPIN
set -u
cli=$1
static=$2
command -v xz >/dev/null || { echo "SKIP: xz is not installed"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stallscope-any.XXXXXX")
chmod 755 "$tmp"
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
q() { sqlite3 -batch -noheader "$1" "$2"; }
# Until DIR holds a segment (recording has begun: on a loaded machine a start
# can take longer than any fixed sleep), at most 20 s.
wait_segment() {
	for _ in $(seq 1 200); do
		for f in "$1"/*.bin "$1"/*.bin.active; do [ -e "$f" ] && return 0; done
		sleep 0.1
	done
	return 1
}
nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
can_nobody=0
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null && nobody test -x "$cli"; then
	can_nobody=1
fi

# Generated data: compressible text, 3 MB, 256 KiB blocks: each of xz's two
# workers compresses about six blocks and waits for the next between them.
python3 -c "
import random
r = random.Random(15)
words = [''.join(r.choice('abcdefghij') for _ in range(r.randint(2, 9))) for _ in range(3000)]
out = []
n = 0
while n < 3000000:
    w = r.choice(words); out.append(w); n += len(w) + 1
open('$tmp/in.txt', 'w').write(' '.join(out))
"
chmod 644 "$tmp/in.txt"
xzargs="-T2 --block-size=256KiB -6 -c $tmp/in.txt"

# Samples against the CPU time the same recording's switch records show: a
# loaded machine gives a program less CPU, never fewer samples per CPU second.
enough_samples() { # DB MIN: at least a quarter of 999 Hz x on-CPU time (user-only
	# sampling as nobody misses the kernel part), and MIN
	local got want
	got=$(q "$1" "SELECT count(*) FROM samples WHERE kind = 'cpu'")
	want=$(q "$1" "SELECT CAST(coalesce(sum(dur), 0) / 1e9 * 999 / 4 AS INTEGER) FROM cpu_intervals WHERE state = 'on-cpu'")
	[ "$want" -lt "$2" ] && want=$2
	[ "$got" -ge "$want" ] || { echo "$got samples, want >= $want"; return 1; }
}

check_xz() { # DB LOG: the recording of one xz run
	local db=$1 log=$2
	local lanes
	lanes=$(q "$db" "SELECT count(*) FROM workers WHERE runtime = 'xz'")
	local threads
	threads=$(q "$db" "SELECT count(*) FROM threads")
	[ "$lanes" -ge 3 ] && [ "$lanes" -eq "$threads" ] || fail "xz: $lanes lanes for $threads threads (want one lane per thread, >= 3)"
	# parks where the threads wait: the two workers between blocks, main for output
	# parks where the threads wait: main for compressed output, the workers for
	# their next block (a worker handed its next block before it looked for one
	# never waits, so not every worker need have one)
	local parked
	parked=$(q "$db" "SELECT count(*) FROM workers w WHERE (SELECT count(*) FROM parks p WHERE p.worker_id = w.id) >= 1")
	local mainparks
	mainparks=$(q "$db" "SELECT count(*) FROM parks p JOIN workers w ON w.id = p.worker_id WHERE w.idx = 0")
	[ "$parked" -ge 2 ] && [ "$mainparks" -ge 1 ] || { q "$db" "SELECT w.idx, t.tid, t.name, (SELECT count(*) FROM parks p WHERE p.worker_id = w.id),
		(SELECT count(*) FROM samples s WHERE s.thread_id = t.id) FROM workers w JOIN threads t ON t.id = w.thread_id";
		fail "xz: $parked lanes with parks, $mainparks on the main thread"; }
	# every thread that used CPU has samples (CPU time from the switch records)
	local unsampled
	unsampled=$(q "$db" "SELECT count(*) FROM threads t WHERE (SELECT coalesce(sum(dur), 0) FROM cpu_intervals c
		WHERE c.thread_id = t.id AND c.state = 'on-cpu') > 100000000
		AND (SELECT count(*) FROM samples s WHERE s.thread_id = t.id) < 20")
	[ "$unsampled" -eq 0 ] || fail "xz: $unsampled busy threads without samples"
	local busy
	busy=$(q "$db" "SELECT count(*) FROM threads t WHERE (SELECT count(*) FROM samples s WHERE s.thread_id = t.id) >= 100")
	[ "$busy" -ge 2 ] || fail "xz: $busy threads with >= 100 samples (want both workers)"
	# library functions named after import
	local named
	named=$(q "$db" "SELECT count(DISTINCT f.function) FROM samples s JOIN callsites c ON c.id = s.callsite_id
		JOIN frames f ON f.id = c.frame_id JOIN mappings m ON m.id = f.mapping_id
		WHERE f.function IS NOT NULL AND m.path LIKE '%.so%'")
	[ "$named" -ge 1 ] || fail "xz: no library function named in the samples"
	grep -q 'preload shim' "$log" || fail "xz: summary does not say the shim recorded it"
	# The report says the lanes computed: each lane's on-CPU time is its
	# threads' on-cpu intervals, and a lane with no polls shows no utilisation
	# (a 0% there read as idle).
	"$cli" report "$db" > "$db.txt" && "$cli" report "$db" --json > "$db.json" || fail "xz: report"
	python3 - "$db" "$db.txt" "$db.json" <<'PY' || fail "xz: report's workers table"
import json, sqlite3, sys
d = sqlite3.connect(sys.argv[1])
text = open(sys.argv[2]).read().splitlines()
head = [i for i, l in enumerate(text) if l.split()[:1] == ["worker"]]
assert head and "on CPU" in text[head[0]], text[:12]
computed = 0
for w in json.load(open(sys.argv[3]))["summary"]["workers"]:
    want = d.execute("SELECT coalesce(sum(c.dur), 0) FROM cpu_intervals c JOIN workers k ON k.thread_id = c.thread_id "
                     "WHERE k.id = ? AND c.state = 'on-cpu'", (w["id"],)).fetchone()[0]
    assert w.get("on_cpu_ns") == want, (w, want)
    row = [l.split() for l in text[head[0] + 1:] if l.split()[:1] == [f"{w['runtime']}#{w['index']}"]]
    assert len(row) == 1, (w, row)
    cols = row[0]
    # worker polls busy(2) parked(2) util longest on-CPU(2) no-CPU
    assert w["polls"] > 0 or cols[6] == "-", ("util shown for a lane without polls", cols)
    if want >= 100_000_000:
        computed += 1
        assert cols[-2] in ("s", "ms"), ("on CPU missing", cols)  # "... 17.71 s 57.5%"
assert computed >= 1, "no lane with 100 ms on CPU"
print("report: on-CPU time per lane matches cpu_intervals,", computed, "lanes computed")
PY
}

# ---- xz -T2, as root -----------------------------------------------------------------
"$cli" record -o "$tmp/xz" -- xz $xzargs > "$tmp/xz.out" 2> "$tmp/xz.log" || { cat "$tmp/xz.log"; fail "record of xz failed"; }
xz -dc "$tmp/xz.out" | cmp -s - "$tmp/in.txt" || fail "xz's output under record is not its input compressed"
"$cli" import "$tmp/xz" -o "$tmp/xz.db" -q || fail "import xz"
check_xz "$tmp/xz.db" "$tmp/xz.log"
"$cli" record -o "$tmp/xzfail" -- xz -T2 -c "$tmp/does-not-exist" > /dev/null 2> "$tmp/xzf.log"
[ $? -eq 1 ] || { cat "$tmp/xzf.log"; fail "xz's exit status 1 was not passed through"; }

# ---- the same as nobody -------------------------------------------------------------
if [ "$can_nobody" -eq 1 ]; then
	mkdir "$tmp/nb" && chown 65534:65534 "$tmp/nb"
	nobody "$cli" record -o "$tmp/nb/xz" -- xz $xzargs > /dev/null 2> "$tmp/nb.log" || { cat "$tmp/nb.log"; fail "record of xz as nobody failed"; }
	grep -q 'kernel frames refused' "$tmp/nb.log" || { cat "$tmp/nb.log"; fail "as nobody: the summary does not say kernel frames were refused"; }
	grep -q 'off-CPU stacks unavailable' "$tmp/nb.log" || { cat "$tmp/nb.log"; fail "as nobody: the summary does not say why there are no off-CPU stacks"; }
	"$cli" import "$tmp/nb/xz" -o "$tmp/nb.db" -q || fail "import xz as nobody"
	check_xz "$tmp/nb.db" "$tmp/nb.log"
	# an output directory nobody cannot write: refused before anything runs
	mkdir "$tmp/rootonly"
	nobody "$cli" record -o "$tmp/rootonly/x" -- touch "$tmp/nb/ran" > /dev/null 2> "$tmp/ro.log"
	[ $? -ne 0 ] && grep -q 'cannot create output directory' "$tmp/ro.log" || { cat "$tmp/ro.log"; fail "unwritable directory not refused"; }
	[ ! -e "$tmp/nb/ran" ] || fail "the command ran although nothing could be recorded"
else
	echo "note: not root or no setpriv: the unprivileged runs are skipped"
fi

# ---- -p PID: attach, detach, the program goes on unchanged --------------------------------
python3 -c "open('$tmp/big.txt','w').write(open('$tmp/in.txt').read() * 4)"
chmod 644 "$tmp/big.txt"
xz -T2 --block-size=256KiB -6 -c "$tmp/big.txt" > "$tmp/plain.xz"
attach_run() { # WHO(root|nobody) DIR: xz runs, record -p follows it for 0.7 s
	local who=$1 dir=$2 run=""
	# (setpriv itself, not a shell function: $! must be xz's pid)
	[ "$who" = nobody ] && run="setpriv --reuid=65534 --regid=65534 --clear-groups"
	$run xz -T2 --block-size=256KiB -6 -c "$tmp/big.txt" > "$dir.xz" &
	local pid=$!
	sleep 0.3
	$run "$cli" record -o "$dir" -p "$pid" --duration 0.7 2> "$dir.log" || { cat "$dir.log"; fail "$who: record -p failed"; }
	kill -0 "$pid" 2>/dev/null || fail "$who: the attached xz did not keep running after detach (or finished too early)"
	wait "$pid" || fail "$who: the attached xz failed"
	cmp -s "$dir.xz" "$tmp/plain.xz" || fail "$who: output of the attached xz differs from a plain run"
	grep -q 'detached from process' "$dir.log" || { cat "$dir.log"; fail "$who: no detach message"; }
	"$cli" import "$dir" -o "$dir.db" -q || fail "$who: import attach"
	local ex
	ex=$(q "$dir.db" "SELECT executable FROM recordings")
	[ "$ex" = "$(readlink -f "$(command -v xz)")" ] || fail "$who: recording names executable '$ex'"
	local lanes
	lanes=$(q "$dir.db" "SELECT count(*) FROM workers WHERE runtime = 'xz'")
	[ "$lanes" -ge 3 ] || fail "$who: attach gave $lanes lanes"
	enough_samples "$dir.db" 20 || fail "$who: attach: too few samples"
}
attach_run root "$tmp/att"
if [ "$can_nobody" -eq 1 ]; then
	attach_run nobody "$tmp/nb/att"
	grep -q 'kernel frames refused' "$tmp/nb/att.log" || { cat "$tmp/nb/att.log"; fail "nobody attach: kernel refusal not said"; }
	# a root process: perf refuses, nothing is recorded, non-zero with the reason
	sleep 5 & victim=$!
	nobody "$cli" record -o "$tmp/nb/att2" -p "$victim" --duration 0.3 2> "$tmp/nb/att2.log"
	[ $? -ne 0 ] && grep -q 'nothing was recorded: perf_event_open on process' "$tmp/nb/att2.log" ||
		{ cat "$tmp/nb/att2.log"; fail "nobody attaching to a root process was not refused clearly"; }
	kill "$victim"
fi

# ---- a statically linked program: from outside ---------------------------------------------
"$cli" record -o "$tmp/static" -- "$static" > "$tmp/static.out" 2> "$tmp/static.log"
[ $? -eq 4 ] || { cat "$tmp/static.log"; fail "static program's exit status 4 not passed through"; }
grep -q 'statically linked' "$tmp/static.log" || fail "no message about the static program"
"$cli" import "$tmp/static" -o "$tmp/static.db" -q || fail "import static"
spun=$(q "$tmp/static.db" "SELECT count(*) FROM threads t WHERE (SELECT count(*) FROM samples s WHERE s.thread_id = t.id) >= 200")
[ "$spun" -ge 2 ] || fail "static: $spun threads with samples, want its 2 spinning threads"
# From outside, stacks are the kernel's frame-pointer chains (never stack copies
# unwound against the recorder's own modules, which end at the first frame).
grep -q 'recorded from outside (its modules are not' "$tmp/static.log" || { cat "$tmp/static.log"; fail "static: the log does not say why stacks are frame-pointer chains"; }
spins=$(q "$tmp/static.db" "SELECT count(*) FROM samples s JOIN callsites c ON c.id = s.callsite_id
	JOIN frames f ON f.id = c.frame_id WHERE f.function = 'spin'")
called=$(q "$tmp/static.db" "SELECT count(*) FROM samples s JOIN callsites c ON c.id = s.callsite_id
	JOIN frames f ON f.id = c.frame_id JOIN callsites p ON p.id = c.parent_id
	JOIN frames pf ON pf.id = p.frame_id WHERE f.function = 'spin' AND pf.function = 'start_thread'")
[ "$spins" -ge 200 ] && [ $((called * 10)) -ge $((spins * 9)) ] || fail "static: $called of $spins samples in spin have start_thread as caller (want 90%)"
"$cli" record -o "$tmp/static2" --hooks none -- "$static" > /dev/null 2> "$tmp/static2.log"
r=$?
[ $r -eq 4 ] && grep -q 'nothing was recorded' "$tmp/static2.log" || { cat "$tmp/static2.log"; fail "static with --hooks none: exit $r"; }

# ---- Ctrl-C and SIGKILL ------------------------------------------------------------------
"$cli" record -o "$tmp/int" -- xz -T2 -9 -c "$tmp/big.txt" > /dev/null 2> "$tmp/int.log" &
rec=$!
sleep 1
kill -INT "$rec"
wait "$rec"
r=$?
[ $r -ne 0 ] || fail "xz interrupted by SIGINT but record exited 0"
ls "$tmp"/int/*.active >/dev/null 2>&1 && fail "SIGINT left unsealed segments"
for f in "$tmp"/int/*.bin; do "$cli" dump --summary "$f" > /dev/null || fail "$f does not decode after SIGINT"; done
"$cli" import "$tmp/int" -o "$tmp/int.db" -q || fail "import after SIGINT"
enough_samples "$tmp/int.db" 20 || fail "SIGINT: the recording lost its samples"

"$cli" record -o "$tmp/kill" -p $$ --duration 30 2> /dev/null &
rec=$!
( i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done ) # some CPU for the shell's samples
wait_segment "$tmp/kill" || fail "record -p made no segment in 20 s"
kill -KILL "$rec"
wait "$rec" 2>/dev/null
"$cli" import "$tmp/kill" -o "$tmp/kill.db" -q 2> "$tmp/kill.log"
[ $? -le 2 ] || { cat "$tmp/kill.log"; fail "segments of a SIGKILLed record -p do not import"; }
[ "$(q "$tmp/kill.db" "SELECT count(*) FROM recordings")" -eq 1 ] || fail "SIGKILL: no recording imported"

# -p detaches on Ctrl-C too, and seals
xz -T2 --block-size=256KiB -9 -c "$tmp/big.txt" > /dev/null &
victim=$!
sleep 0.2
"$cli" record -o "$tmp/pint" -p "$victim" 2> "$tmp/pint.log" &
rec=$!
sleep 0.8
kill -INT "$rec"
wait "$rec" || { cat "$tmp/pint.log"; fail "record -p ended by SIGINT exited non-zero"; }
kill -0 "$victim" 2>/dev/null || fail "the attached xz did not survive record -p's Ctrl-C"
ls "$tmp"/pint/*.active >/dev/null 2>&1 && fail "record -p left unsealed segments after SIGINT"
kill "$victim"; wait "$victim" 2>/dev/null

# SIGKILL of `record -- CMD`: the program goes on recording itself, and its
# segments import
"$cli" record -o "$tmp/kill2" -- xz $xzargs > "$tmp/kill2.xz" 2> /dev/null &
rec=$!
wait_segment "$tmp/kill2" || fail "record -- xz made no segment in 20 s"
kill -KILL "$rec"
wait "$rec" 2>/dev/null
for _ in $(seq 1 100); do pgrep -f "xz $xzargs" > /dev/null || break; sleep 0.1; done
"$cli" import "$tmp/kill2" -o "$tmp/kill2.db" -q 2> "$tmp/kill2.log" || { cat "$tmp/kill2.log"; fail "segments after SIGKILL of record do not import"; }
[ "$(q "$tmp/kill2.db" "SELECT count(*) FROM workers WHERE runtime = 'xz'")" -ge 3 ] || fail "SIGKILL of record: xz's lanes are missing"

# ---- nothing recorded: non-zero, with the reason ------------------------------------------------
expect_refusal() { # PATTERN ARGS...: record exits non-zero and says PATTERN
	local pat=$1
	shift
	"$cli" record "$@" > "$tmp/r.out" 2> "$tmp/r.log"
	local r=$?
	[ $r -ne 0 ] && grep -q "$pat" "$tmp/r.log" || { cat "$tmp/r.log"; fail "record $* exited $r without '$pat'"; }
}
expect_refusal 'cannot create output directory /proc/x' -o /proc/x -- true
expect_refusal 'STALLSCOPE_MAX_FILE_SIZE="abc".*-s' -o "$tmp/n1" -s abc -- true
expect_refusal 'did not start the recorder' -o "$tmp/n2" --hooks none -- true
expect_refusal 'no process' -o "$tmp/n3" -p 999999999
expect_refusal 'use auto, preload or none' --hooks sometimes -- true
echo "record any program: ok"

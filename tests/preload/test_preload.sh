#!/bin/sh
# test_preload.sh - the preload shim on a program that knows nothing of stallscope
# (wrapped_calls): every wrapped family keeps its return values and errno (the
# program checks them itself, with the shim and without), each call that can
# block is one park on its thread's lane, each fd wait's thread is an event loop
# whose iterations are polls, a condition wait is a park and no poll; forked
# children are recorded with --follow-children and ignored without it; a program
# that calls the hooks itself gets no second set of events from the shim.
# usage: test_preload.sh STALLSCOPE_CLI WRAPPED_CALLS EXAMPLE_RUNTIME
set -eu
cli=$1
prog=$2
example=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stallscope-preload.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
q() { sqlite3 -batch -noheader "$1" "$2"; }

"$prog" > "$tmp/plain.log" 2>&1 || { cat "$tmp/plain.log"; fail "wrapped_calls fails without the shim"; }
"$cli" record -o "$tmp/one" -- "$prog" > "$tmp/one.log" 2>&1 ||
	{ cat "$tmp/one.log"; fail "wrapped_calls fails under the shim (return values or errno changed)"; }
grep -q 'preload shim' "$tmp/one.log" || { cat "$tmp/one.log"; fail "record did not use the shim"; }
"$cli" import "$tmp/one" -o "$tmp/one.db" -q || fail "import"
# name|parks|polls for each lane (the thread names are set with pthread_setname_np
# after the lane began: renames reach the trace)
lanes=$(q "$tmp/one.db" "SELECT t.name || '|' || (SELECT count(*) FROM parks p WHERE p.worker_id = w.id)
	|| '|' || (SELECT count(*) FROM polls p WHERE p.worker_id = w.id)
	FROM workers w JOIN threads t ON t.id = w.thread_id ORDER BY w.idx")
lane() { echo "$lanes" | grep "^$1|" | head -n 1; }
for want in 'w-poll|8|8' 'w-fortify|3|3' 'w-epoll|8|8' 'w-compat|1|0'; do
	[ "$(lane "${want%%|*}")" = "$want" ] || { echo "$lanes"; fail "lane ${want%%|*}: want parks|polls ${want#*|}"; }
done
cs=$(lane w-cond-sem)
[ "${cs#*|}" != "${cs}" ] || { echo "$lanes"; fail "no w-cond-sem lane"; }
parks=$(echo "$cs" | cut -d'|' -f2); polls=$(echo "$cs" | cut -d'|' -f3)
[ "$parks" -ge 9 ] && [ "$polls" -eq 0 ] || { echo "$lanes"; fail "condition/semaphore lane: $cs (want >= 9 parks, no polls)"; }
if grep -q 'io_uring: ok' "$tmp/one.log"; then
	[ "$(lane w-uring)" = 'w-uring|2|2' ] || { echo "$lanes"; fail "io_uring lane"; }
else
	echo "note: io_uring family not exercised here: $(grep 'io_uring' "$tmp/one.log")"
fi
# Loop iterations are polls of the loop's own task, at the loop's location.
loc=$(q "$tmp/one.db" "SELECT DISTINCT l.function FROM polls p JOIN locations l ON l.id = p.location_id
	JOIN workers w ON w.id = p.worker_id JOIN threads t ON t.id = w.thread_id WHERE t.name = 'w-epoll'")
[ "$loc" = "epoll_wait loop" ] || fail "epoll lane's polls are at '$loc'"

# Forked children: ignored without --follow-children, their own recording with it.
"$cli" record -o "$tmp/nofollow" -- "$prog" fork > "$tmp/nf.log" 2>&1 || { cat "$tmp/nf.log"; fail "fork run"; }
ls "$tmp"/nofollow/stallscope-*.bin >/dev/null 2>&1 && fail "a child was recorded without --follow-children"
"$cli" record -o "$tmp/follow" --follow-children -- "$prog" fork > "$tmp/f.log" 2>&1 ||
	{ cat "$tmp/f.log"; fail "fork run with --follow-children"; }
ls "$tmp"/follow/stallscope-*.bin >/dev/null 2>&1 || { ls "$tmp/follow"; fail "the forked child has no recording"; }
grep -q 'in 2 recordings' "$tmp/f.log" || { cat "$tmp/f.log"; fail "summary does not count 2 recordings"; }
"$cli" import "$tmp/follow" -o "$tmp/follow.db" -q || fail "import follow"
n=$(q "$tmp/follow.db" "SELECT count(*) FROM recordings")
[ "$n" -eq 2 ] || fail "$n recordings with --follow-children, want 2"
child=$(q "$tmp/follow.db" "SELECT count(*) FROM parks p JOIN workers w ON w.id = p.worker_id
	WHERE w.recording_id = (SELECT max(id) FROM recordings)")
[ "$child" -ge 5 ] || fail "the child's recording has $child parks, want its 5 waits"

# An executed child (sh forks, the child execs wrapped_calls): its own recording
# with --follow-children, none without; the shell itself is the root recording.
"$cli" record -o "$tmp/sh1" -- sh -c "\"$prog\"; true" > "$tmp/sh1.log" 2>&1 || { cat "$tmp/sh1.log"; fail "sh run"; }
ls "$tmp"/sh1/stallscope-*.bin >/dev/null 2>&1 && fail "an executed child was recorded without --follow-children"
"$cli" record -o "$tmp/sh2" --follow-children -- sh -c "\"$prog\"; true" > "$tmp/sh2.log" 2>&1 || { cat "$tmp/sh2.log"; fail "sh run, followed"; }
ls "$tmp"/sh2/stallscope-*.bin >/dev/null 2>&1 || { ls "$tmp/sh2"; fail "the executed child has no recording of its own"; }
"$cli" import "$tmp/sh2" -o "$tmp/sh2.db" -q || fail "import sh2"
[ "$(q "$tmp/sh2.db" "SELECT count(*) FROM workers WHERE runtime = 'wrapped_calls'")" -ge 7 ] ||
	fail "the executed child's lanes are missing"

# Code loaded with dlopen is in the mappings even without perf's MMAP2 records
# (the timer sampler has none): wrapped_calls dlopens liburing.
if grep -q 'io_uring: ok' "$tmp/one.log"; then
	STALLSCOPE_SAMPLER=timer "$cli" record -o "$tmp/dl" -- "$prog" > "$tmp/dl.log" 2>&1 || { cat "$tmp/dl.log"; fail "timer run"; }
	"$cli" import "$tmp/dl" -o "$tmp/dl.db" -q || fail "import dl"
	[ "$(q "$tmp/dl.db" "SELECT count(*) FROM mappings WHERE path LIKE '%liburing%'")" -ge 1 ] ||
		fail "the dlopened liburing is not in the mappings (timer sampler)"
fi

# A failed exec: sealed before, recording again after (a second recording of the
# same process), and execv's -1/ENOENT reach the program (it checks them).
"$cli" record -o "$tmp/exec" -- "$prog" exec > "$tmp/exec.log" 2>&1 || { cat "$tmp/exec.log"; fail "failed-exec run"; }
"$cli" import "$tmp/exec" -o "$tmp/exec.db" -q || fail "import exec"
[ "$(q "$tmp/exec.db" "SELECT count(*) FROM recordings")" -eq 2 ] || fail "a failed exec did not continue in a new recording"
after=$(q "$tmp/exec.db" "SELECT count(*) FROM parks p JOIN workers w ON w.id = p.worker_id
	WHERE w.recording_id = (SELECT max(id) FROM recordings)")
[ "$after" -ge 3 ] || fail "after the failed exec: $after parks, want its 3 waits"

# A program with its own hooks: its workers' lanes are its own (no loop tasks of
# the shim on them), and the run is one recording.
"$cli" record -o "$tmp/rt" -- "$example" --scenario steady --workers 2 --duration 0.4 > "$tmp/rt.log" 2>&1 ||
	{ cat "$tmp/rt.log"; fail "example runtime under the shim"; }
"$cli" import "$tmp/rt" -o "$tmp/rt.db" -q || fail "import rt"
base=6004142728215003136 # the shim's loop tasks: 0x5353 << 48 and up
mixed=$(q "$tmp/rt.db" "SELECT count(*) FROM polls p JOIN tasks k ON k.id = p.task_id WHERE k.task >= $base
	AND p.worker_id IN (SELECT p2.worker_id FROM polls p2 JOIN tasks k2 ON k2.id = p2.task_id WHERE k2.task < $base)")
[ "$mixed" -eq 0 ] || fail "$mixed shim polls on lanes the runtime drives itself"
own=$(q "$tmp/rt.db" "SELECT count(*) FROM polls p JOIN tasks k ON k.id = p.task_id WHERE k.task < $base")
[ "$own" -gt 0 ] || fail "the runtime's own polls are missing"
echo "preload: ok"

#!/bin/sh
# test_demo.sh - the bundled demo, recorded from the example runtime's scenarios,
# says what each scenario did, through import, symbolization and SQL:
#   long-poll   its stalls are classified running, with culprit_spin_long_poll
#               called from long_poll_task_body in their backtraces;
#   blocking    its stalls are blocked in read, in culprit_blocking_syscall;
#   mutex       its blocked stalls wait in futex;
#   starvation  at least one capture is runnable but not running;
#   steady      no stalls at the default threshold;
#   leak        task dumps name the function that yielded (the forgotten waker),
#               and exactly the leaked tasks are alive at the end;
#   all         one row per task, every poll, stall, wake and dump with its own
#               task; no capture claims more CPU than its window.
# Names come from the symbol tables `stallscope symbolize` embedded in the demo
# segments when the recorded binaries are not on this machine.
# usage: test_demo.sh STALLSCOPE_CLI SOURCE_ROOT
set -eu
cli=$1
root=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stallscope-demo-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
"$cli" import --quiet "$root/data/demo" -o "$tmp/demo.db"

python3 - "$tmp/demo.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
q = lambda sql, *a: db.execute(sql, a).fetchall()

def rec(scenario):
    r = q("SELECT recording_id FROM segments WHERE file LIKE ? LIMIT 1", f"%/{scenario}/%")
    assert r, f"no recording for {scenario}"
    return r[0][0]

def stalls(scenario):
    return q("""SELECT s.id, s.kind FROM stalls s JOIN workers w ON w.id = s.worker_id
                WHERE w.recording_id = ?""", rec(scenario))

def stack_has(stall_id, *functions):
    """Some capture of the stall has all these functions, in this order leaf-first."""
    for (cs,) in q("SELECT callsite_id FROM stall_captures WHERE stall_id = ? AND callsite_id IS NOT NULL",
                   stall_id):
        frames = [f for (f,) in q("SELECT function FROM callsite_frames WHERE callsite_id = ? ORDER BY depth", cs)]
        pos = [frames.index(f) if f in frames else -1 for f in functions]
        if all(p >= 0 for p in pos) and pos == sorted(pos):
            return True
    return False

def reasons(stall_id):
    return [r for (r,) in q("SELECT reason FROM stall_captures WHERE stall_id = ?", stall_id)]

failures = []
def check(cond, msg):
    print(("ok    " if cond else "FAIL  ") + msg)
    if not cond:
        failures.append(msg)

st = stalls("long-poll")
named = sum(stack_has(i, "culprit_spin_long_poll", "long_poll_task_body") for i, _ in st)
check(st and all(k == "running" for _, k in st), f"long-poll: {len(st)} stalls, all running")
check(named >= 0.9 * len(st), f"long-poll: {named} of {len(st)} name culprit_spin_long_poll <- long_poll_task_body")

st = stalls("blocking")
in_read = sum(any(r and r.startswith("blocked in read") for r in reasons(i)) for i, _ in st)
named = sum(stack_has(i, "culprit_blocking_syscall") for i, _ in st)
check(st and all(k == "blocked" for _, k in st), f"blocking: {len(st)} stalls, all blocked")
check(in_read == len(st), f"blocking: {in_read} of {len(st)} blocked in read")
check(named >= 0.9 * len(st), f"blocking: {named} of {len(st)} name culprit_blocking_syscall")

st = [s for s in stalls("mutex") if s[1] == "blocked"]
in_futex = sum(any(r and r.startswith("blocked in futex") for r in reasons(i)) for i, _ in st)
check(st and in_futex == len(st), f"mutex: {in_futex} of {len(st)} blocked stalls wait in futex")

runnable = q("""SELECT count(*) FROM stall_captures sc JOIN stalls s ON s.id = sc.stall_id
                JOIN workers w ON w.id = s.worker_id WHERE w.recording_id = ? AND sc.kind = 'runnable'""",
             rec("starvation"))[0][0]
check(runnable >= 1, f"starvation: {runnable} captures runnable but not running")

check(len(stalls("steady")) == 0, f"steady: {len(stalls('steady'))} stalls")

dumps = q("""SELECT td.callsite_id FROM task_dumps td JOIN tasks t ON t.id = td.task_id
             WHERE t.recording_id = ?""", rec("leak"))
named = sum(bool(q("SELECT 1 FROM callsite_frames WHERE callsite_id = ? AND function = 'culprit_leak_forgotten_waker'", cs))
            for (cs,) in dumps)
check(named >= 1, f"leak: {named} of {len(dumps)} task dumps name culprit_leak_forgotten_waker")

# Tasks: one row per task of a recording (the example runtime never reuses a
# number), and every poll, stall, wake and task dump belongs to its own task:
# inside that task's lifetime, with the poll's task. Records reach the importer
# in per-thread runs; read in file order, a TERMINATE overtook the earlier polls
# of its task on other threads and made phantom rows.
dup = q("SELECT count(*) FROM (SELECT 1 FROM tasks GROUP BY recording_id, task HAVING count(*) > 1)")[0][0]
check(dup == 0, f"all scenarios: {dup} task numbers with more than one row")
outside = q("""SELECT count(*) FROM polls p JOIN tasks t ON t.id = p.task_id
               WHERE p.ts < t.spawn_ts OR p.ts > t.end_ts""")[0][0]
check(outside == 0, f"all scenarios: {outside} polls outside their task's lifetime")
nospawn = q("SELECT count(*) FROM tasks WHERE spawn_ts IS NULL")[0][0]
check(nospawn == 0, f"all scenarios: {nospawn} tasks without a spawn (every run is recorded from its start)")
bad = q("SELECT count(*) FROM stalls s JOIN polls p ON p.id = s.poll_id WHERE s.task_id IS NOT p.task_id")[0][0]
check(bad == 0, f"all scenarios: {bad} stalls whose task is not their poll's")
bad = q("SELECT count(*) FROM wakes w JOIN polls p ON p.id = w.poll_id WHERE w.task_id IS NOT p.task_id")[0][0]
check(bad == 0, f"all scenarios: {bad} wakes whose task is not their poll's")
bad = q("""SELECT count(*) FROM task_dumps d JOIN tasks t ON t.id = d.task_id
           WHERE d.ts < t.spawn_ts OR d.ts > t.end_ts""")[0][0]
check(bad == 0, f"all scenarios: {bad} task dumps outside their task's lifetime")
for sc in ("steady", "long-poll", "blocking", "mutex"):
    alive = q("SELECT count(*) FROM tasks WHERE recording_id = ? AND end_ts IS NULL", rec(sc))[0][0]
    check(alive == 0, f"{sc}: {alive} tasks alive at the end (the runtime finished all)")
# The leak scenario counts the tasks it leaks in a mark: exactly those are
# alive at the end.
leaked = q("SELECT max(m.value) FROM marks m JOIN threads t ON t.id = m.thread_id WHERE m.name = 'leaked_tasks' AND t.recording_id = ?",
           rec("leak"))[0][0]
alive = q("SELECT count(*) FROM tasks WHERE recording_id = ? AND end_ts IS NULL", rec("leak"))[0][0]
check(leaked and alive == leaked, f"leak: {alive} tasks alive at the end, {leaked} leaked")

# A capture's CPU time never exceeds the window it was measured in.
import re
over = 0
for (reason,) in q("SELECT reason FROM stall_captures WHERE reason LIKE '%ms CPU in a%'"):
    m = re.search(r"([0-9.]+) ms CPU in a ([0-9.]+) ms window", reason)
    if m and float(m.group(1)) > float(m.group(2)):
        over += 1
check(over == 0, f"all scenarios: {over} captures claim more CPU than their window")

# Samples of a worker stay on the worker's thread, even those drained after the
# thread exited: no extra sampler-only thread carrying a worker's tid.
phantom = q("""SELECT count(*) FROM threads t JOIN workers w ON w.recording_id = t.recording_id
               JOIN threads wt ON wt.id = w.thread_id
               WHERE t.tid = wt.tid AND t.id != wt.id""")[0][0]
check(phantom == 0, f"all scenarios: {phantom} sampler-only threads with a worker's tid")
sys.exit(1 if failures else 0)
PY
echo "demo: ok"

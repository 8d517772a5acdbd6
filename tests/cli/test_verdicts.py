#!/usr/bin/env python3
"""test_verdicts.py - "computing or blocked?" at the edges: a database built
here holds polls whose time splits exactly at and around the 80/20 rules of
viewer/analysis/verdict.h (on a CPU, blocked, preempted), and the report's
verdict of each, the poll_view's, and whether blocking-in-poll counts it, must
be the documented ones. A moved threshold in the C code or in the view fails.

usage: test_verdicts.py STALLSCOPE_CLI SCHEMA_SQL
"""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

cli, schema = sys.argv[1], sys.argv[2]
tmp = tempfile.mkdtemp(prefix="stallscope-verdicts.")
db = os.path.join(tmp, "v.db")
d = sqlite3.connect(db)
d.executescript(open(schema).read())
d.execute("INSERT INTO schema_info(version) VALUES(3)")
d.execute("INSERT INTO recordings(id, session_id, pid, executable, host, first_ts, last_ts) "
          "VALUES(1, 7, 1, 'verdicts', 'here', 0, 10000000000)")
d.execute("INSERT INTO threads(id, recording_id, thread, tid, name) VALUES(1, 1, 0, 100, 'w0')")
d.execute("INSERT INTO workers(id, recording_id, thread_id, runtime, idx) VALUES(1, 1, 1, 'rt', 0)")

# (on-CPU %, blocked %): the rest of the poll is preempted.
CASES = {
    (100, 0): "computing", (80, 0): "computing", (79, 0): "computing, but preempted part of the time",
    (21, 0): "computing, but preempted part of the time", (20, 0): "waiting for a CPU (runnable, not running)",
    (0, 0): "waiting for a CPU (runnable, not running)", (80, 20): "computing", (60, 20): "computing, but preempted part of the time",
    (79, 21): "partly blocked", (0, 21): "partly blocked", (21, 79): "partly blocked", (20, 80): "blocked",
    (0, 100): "blocked",
}
BASE = 10_000_000  # 10 ms polls, each 1 us longer than the last, so all are listed
ts, pid, expect = 1_000_000, 0, {}
for i, ((on, bl), verdict) in enumerate(sorted(CASES.items())):
    dur = BASE + i * 1000
    pid += 1
    d.execute("INSERT INTO polls(id, worker_id, ts, dur) VALUES(?, 1, ?, ?)", (pid, ts, dur))
    a, b = dur * on // 100, dur * bl // 100
    # The interval open at the poll's start began before it: the split counts
    # only the part inside.
    parts = [("on-cpu", a), ("blocked", b), ("preempted", dur - a - b)]
    t = ts
    first = True
    for state, n in parts:
        if n <= 0:
            continue
        start = t - 500 if first else t
        d.execute("INSERT INTO cpu_intervals(thread_id, ts, dur, state) VALUES(1, ?, ?, ?)",
                  (start, t + n - start, state))
        first = False
        t += n
    expect[pid] = (verdict, on, bl, dur)
    ts += dur + 1_000_000
    # parked between polls
    d.execute("INSERT INTO cpu_intervals(thread_id, ts, dur, state) VALUES(1, ?, ?, 'blocked')", (t, ts - t))
d.commit()

failures = []
r = subprocess.run([cli, "report", db, "--json", "--top", "50"], capture_output=True, text=True)
if r.returncode != 0:
    print(r.stderr)
    sys.exit(1)
doc = json.loads(r.stdout)
seen = {p["poll_id"]: p for p in doc["summary"]["long_polls"]["longest"]}
for pid, (verdict, on, bl, dur) in expect.items():
    got = seen.get(pid, {}).get("verdict")
    if got != verdict:
        failures.append(f"poll {pid} ({on}% on CPU, {bl}% blocked): report says {got!r}, expected {verdict!r}")
    view = d.execute("SELECT verdict FROM poll_view WHERE poll_id = ?", (pid,)).fetchone()[0]
    if not verdict.startswith(view):
        failures.append(f"poll {pid} ({on}% on CPU, {bl}% blocked): poll_view says {view!r}, expected {verdict!r}")

# blocking-in-poll counts a poll blocked for more than 20% of it, not 20%.
blocked_ids = set()
for f in doc["findings"]:
    if f["check"] == "blocking-in-poll":
        blocked_ids |= {row[0] for row in d.execute(f["sql"])}
for pid, (verdict, on, bl, dur) in expect.items():
    if (bl > 20) != (pid in blocked_ids):
        failures.append(f"poll {pid} ({bl}% blocked): blocking-in-poll {'missed' if bl > 20 else 'counted'} it")

subprocess.run(["rm", "-rf", tmp])
for f in failures:
    print("FAIL:", f)
if failures:
    sys.exit(1)
print(f"verdicts: {len(expect)} splits as documented")

#!/usr/bin/env python3
"""test_parks_unswitched.py - the report's cpu-starvation share where a
recording's META "switches" says a worker's switches inside its parks were not
recorded (the sched_switch program's recordings, FORMAT.md): its parks count
as time it did not want a CPU, as the blocked rows of a recording with every
switch do, so the same worker gets the same verdict either way.

Two recordings of one worker over 10 s: parked for 9 s, and outside its parks
0.6 s on a CPU and 0.4 s preempted. The first says its parks are unswitched
and has no row inside them; the second has blocked rows there. Neither may be
flagged (4% of the worker's time preempted); a third, like the first but
without the META line, is (40% of the time its rows cover).

usage: test_parks_unswitched.py STALLSCOPE_CLI SCHEMA_SQL
"""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

cli, schema = sys.argv[1], sys.argv[2]
tmp = tempfile.mkdtemp(prefix="stallscope-parks.")
db = os.path.join(tmp, "p.db")
d = sqlite3.connect(db)
d.executescript(open(schema).read())
d.execute("INSERT INTO schema_info(version) VALUES(3)")
S = 1_000_000_000
for rec in (1, 2, 3):
    d.execute("INSERT INTO recordings(id, session_id, pid, executable, host, first_ts, last_ts) "
              "VALUES(?, ?, 1, 'parks', 'here', 0, ?)", (rec, 10 + rec, 10 * S))
    d.execute("INSERT INTO threads(id, recording_id, thread, tid, name) VALUES(?, ?, 0, 100, 'w0')", (rec, rec))
    d.execute("INSERT INTO workers(id, recording_id, thread_id, runtime, idx) VALUES(?, ?, ?, 'rt', 0)",
              (rec, rec, rec))
    if rec != 2:
        d.execute("INSERT INTO metadata VALUES(?, 'switches', 'sched_switch program, not while parked: none "
                  "of a worker from its park to its unpark')" if rec == 1 else
                  "INSERT INTO metadata VALUES(?, 'sampler', 'perf')", (rec,))
    # ten seconds: 0.9 s parked, then 0.06 s on a CPU and 0.04 s preempted, ten times
    for i in range(10):
        t = i * S
        d.execute("INSERT INTO parks(worker_id, ts, dur) VALUES(?, ?, ?)", (rec, t, 9 * S // 10))
        if rec == 2:
            d.execute("INSERT INTO cpu_intervals(thread_id, ts, dur, state) VALUES(?, ?, ?, 'blocked')",
                      (rec, t, 9 * S // 10))
        d.execute("INSERT INTO cpu_intervals(thread_id, ts, dur, state) VALUES(?, ?, ?, 'on-cpu')",
                  (rec, t + 9 * S // 10, 6 * S // 100))
        d.execute("INSERT INTO cpu_intervals(thread_id, ts, dur, state) VALUES(?, ?, ?, 'preempted')",
                  (rec, t + 96 * S // 100, 4 * S // 100))
d.commit()

failures = []
flagged = {}
for rec in (1, 2, 3):
    r = subprocess.run([cli, "report", db, "--json", "--recording", str(rec)], capture_output=True, text=True)
    if r.returncode not in (0, 3):
        print(r.stderr)
        sys.exit(1)
    doc = json.loads(r.stdout)
    flagged[rec] = [f for f in doc["findings"] if f["check"] == "cpu-starvation"]
    print(f"recording {rec}: cpu-starvation {[round(f['value'], 1) for f in flagged[rec]]}")
if flagged[1]:
    failures.append(f"parks unswitched: flagged at {flagged[1][0]['value']:.1f}% (the parks not counted)")
if flagged[2]:
    failures.append(f"parks switched: flagged at {flagged[2][0]['value']:.1f}%")
if not flagged[3] or abs(flagged[3][0]["value"] - 40) > 0.5:
    failures.append(f"no META: {flagged[3]} (want 40% of the rows' time)")
subprocess.run(["rm", "-rf", tmp])
for f in failures:
    print("FAIL:", f)
if failures:
    sys.exit(1)
print("parks unswitched: the report counts them as time not wanting a CPU")

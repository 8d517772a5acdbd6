#!/usr/bin/env python3
"""bench_report.py - how long `stallscope report` takes on a 20M-event
database, against reading the same rows once with plain SQL in the same run
(the floor any report over every poll, wake, park, CPU state and task has).

The database is bench_import's recording (two workers, 20M hook events),
imported here; then one poll in 2000 is made 20 ms long with a CPU split (on a
CPU, blocked) so that the poll checks examine their full 5000 polls, the
expensive path. Runs interleave: scan, report, scan, report ... and CPU time
(user + system of the child) is compared, with wall time beside it.

usage: bench_report.py BENCH_IMPORT STALLSCOPE_CLI [EVENTS] [ROUNDS]   (20000000, 3)
"""
import os
import re
import resource
import shutil
import sqlite3
import subprocess
import sys
import time

bench_import, cli = sys.argv[1], sys.argv[2]
events = sys.argv[3] if len(sys.argv) > 3 else "20000000"
rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 3

out = subprocess.run([bench_import, events, "--keep"], capture_output=True, text=True)
m = re.search(r" into (\S+)\n", out.stdout)
if out.returncode != 0 or not m:
    print(out.stdout, out.stderr)
    sys.exit(1)
work = m.group(1)
db = os.path.join(work, "trace.db")
print(out.stdout.splitlines()[0])

d = sqlite3.connect(db)
n_polls = d.execute("SELECT count(*) FROM polls").fetchone()[0]
thread = d.execute("SELECT thread_id FROM workers LIMIT 1").fetchone()[0]
# Long polls with a CPU split, as a real trace's stalls would have.
rows = d.execute("SELECT id, ts FROM polls WHERE id % 2000 = 0 AND worker_id = (SELECT min(id) FROM workers)").fetchall()
d.executemany("UPDATE polls SET dur = 20000000 WHERE id = ?", [(i,) for i, _ in rows])
d.executemany("INSERT INTO cpu_intervals(thread_id, ts, dur, state) VALUES(?, ?, ?, ?)",
              [(thread, ts, 12000000, "on-cpu") for _, ts in rows] +
              [(thread, ts + 12000000, 8000000, "blocked") for _, ts in rows])
d.commit()
counts = {t: d.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
          for t in ("polls", "wakes", "parks", "tasks", "cpu_intervals", "samples")}
d.close()
print(f"  database: {os.path.getsize(db) / 1e6:.0f} MB, rows: " + ", ".join(f"{k} {v}" for k, v in counts.items()) +
      f"; {len(rows)} polls made 20 ms long")

SCAN = ("SELECT (SELECT count(*) + total(dur) FROM polls), (SELECT count(*) + total(delay) FROM wakes), "
        "(SELECT count(*) + total(dur) FROM parks), (SELECT count(*) + total(dur) FROM cpu_intervals), "
        "(SELECT count(*) + total(spawn_ts) FROM tasks)")


def timed(args):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.monotonic()
    r = subprocess.run(args, capture_output=True, text=True)
    wall = time.monotonic() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if r.returncode not in (0, 3):
        print(r.stderr)
        sys.exit(1)
    return wall, cpu, r.stdout


scan_cpu, rep_cpu, rep_wall = [], [], []
for i in range(rounds):
    w, c, _ = timed(["sqlite3", db, SCAN])
    scan_cpu.append(c)
    w2, c2, text = timed([cli, "report", db])
    rep_cpu.append(c2)
    rep_wall.append(w2)
    print(f"  round {i + 1}: plain SQL scan {c:.2f} s CPU ({w:.2f} s wall); report {c2:.2f} s CPU ({w2:.2f} s wall)")
findings = text[text.find("\nfindings"):].strip().splitlines()
print(f"  report: median {sorted(rep_wall)[rounds // 2]:.2f} s wall  [target < 5 s]; "
      f"CPU ratio to the plain scan {sum(rep_cpu) / max(sum(scan_cpu), 1e-9):.2f}x; "
      f"{len([l for l in findings if l[2:4].isupper()])} findings")
shutil.rmtree(work, ignore_errors=True)

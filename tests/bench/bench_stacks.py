#!/usr/bin/env python3
"""bench_stacks.py - how long the stack views take on a trace with many
samples: `stallscope-viewer --render-png --view flame` (read every CPU sample
of the whole trace, build the tree, lay out and draw the flame graph) and
`--view offcpu-flame` (every thread's CPU intervals and off-CPU samples,
stall captures spliced in), against reading the same sample rows once with
plain SQL in the same run (the floor of any flame graph over them).

The database is the long-poll demo's recording, imported here, with its
samples and CPU intervals repeated end to end in time until it holds SAMPLES
CPU samples (and, as in the demo, seven times as many off-CPU samples). Runs
interleave: scan, flame, off-CPU scan, off-CPU flame, scan ... and CPU time
(user + system of the child) is compared, with wall time beside it.
When `perf` is installed, `perf report` over a `perf record -g` of Debian's
xz gives the peer's CPU time per sample.

usage: bench_stacks.py STALLSCOPE_CLI STALLSCOPE_VIEWER DEMO_DIR [SAMPLES] [ROUNDS]   (1000000, 3)
"""
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # nothing written into the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_timing import timed  # noqa: E402

sys.stdout.reconfigure(line_buffering=True)  # figures as they come, under meson too
cli, viewer, demo = sys.argv[1], sys.argv[2], sys.argv[3]
want = int(sys.argv[4]) if len(sys.argv) > 4 else 1000000
rounds = int(sys.argv[5]) if len(sys.argv) > 5 else 3

work = tempfile.mkdtemp(prefix="bench_stacks.")
db = os.path.join(work, "trace.db")
r = subprocess.run([cli, "import", os.path.join(demo, "long-poll"), "-o", db], capture_output=True, text=True)
if r.returncode != 0:
    print(r.stdout, r.stderr)
    sys.exit(1)

d = sqlite3.connect(db)
t0, t1, n = d.execute("SELECT min(ts), max(ts), count(*) FROM samples WHERE kind = 'cpu'").fetchone()
if not n:
    print("the demo has no CPU samples")
    sys.exit(1)
c0, c1 = d.execute("SELECT min(ts), max(ts + dur) FROM cpu_intervals").fetchone()
span = max(t1, c1 or t1) - min(t0, c0 or t0) + 1
copies = max(1, -(-want // n) - 1)
cols_s = "thread_id, worker_id, poll_id, callsite_id, weight, kind, cpu"
cols_c = ", ".join(r[1] for r in d.execute("PRAGMA table_info(cpu_intervals)") if r[1] not in ("ts", "id"))
# Copies come from the original rows kept aside (reading them back from the
# growing tables would make this quadratic).
d.execute(f"CREATE TEMP TABLE s0 AS SELECT ts, {cols_s} FROM samples")
d.execute(f"CREATE TEMP TABLE c0 AS SELECT ts, {cols_c} FROM cpu_intervals")
for k in range(1, copies + 1):
    d.execute(f"INSERT INTO samples(ts, {cols_s}) SELECT ts + {k * span}, {cols_s} FROM s0")
    d.execute(f"INSERT INTO cpu_intervals(ts, {cols_c}) SELECT ts + {k * span}, {cols_c} FROM c0")
d.commit()
n_cpu, n_off = d.execute("SELECT sum(kind = 'cpu'), sum(kind = 'offcpu') FROM samples").fetchone()
n_int = d.execute("SELECT count(*) FROM cpu_intervals").fetchone()[0]
n_cs = d.execute("SELECT count(DISTINCT callsite_id) FROM samples").fetchone()[0]
d.close()
print(f"  database: {os.path.getsize(db) / 1e6:.0f} MB; samples: cpu {n_cpu}, off-CPU {n_off}, "
      f"{n_cs} distinct stacks; cpu_intervals {n_int}")

SCAN = "SELECT count(*), total(weight), total(callsite_id), total(poll_id) FROM samples WHERE kind = 'cpu'"
SCAN_OFF = ("SELECT (SELECT count(*) + total(dur) + total(thread_id) FROM cpu_intervals),"
            " (SELECT count(*) + total(callsite_id) + total(thread_id) FROM samples WHERE kind = 'offcpu')")


png = os.path.join(work, "out.png")
scan, scan_off, flame, off, flame_wall, off_wall = [], [], [], [], [], []
for i in range(rounds):
    w0, c0, _ = timed(["sqlite3", db, SCAN])
    w1, c1, _ = timed([viewer, "--render-png", png, "--view", "flame", db])
    w3, c3, _ = timed(["sqlite3", db, SCAN_OFF])
    w2, c2, _ = timed([viewer, "--render-png", png, "--view", "offcpu-flame", db])
    scan.append(c0)
    scan_off.append(c3)
    flame.append(c1)
    off.append(c2)
    flame_wall.append(w1)
    off_wall.append(w2)
    print(f"  round {i + 1}: plain SQL scan {c0:.2f} s CPU ({w0:.2f} s wall); flame {c1:.2f} s CPU ({w1:.2f} s wall);"
          f" plain SQL scan of the off-CPU rows {c3:.2f} s CPU ({w3:.2f} s wall); off-CPU flame {c2:.2f} s CPU"
          f" ({w2:.2f} s wall)")
base = max(sum(scan), 1e-9)
med = rounds // 2
print(f"  flame graph of {n_cpu} samples: median {sorted(flame_wall)[med]:.2f} s wall, "
      f"{sum(flame) / rounds / n_cpu * 1e9:.0f} ns CPU per sample; CPU ratio to the plain scan {sum(flame) / base:.2f}x")
print(f"  off-CPU flame graph of {n_int} intervals and {n_off} off-CPU samples: median {sorted(off_wall)[med]:.2f} s wall; "
      f"CPU ratio to the plain scan of those rows {sum(off) / max(sum(scan_off), 1e-9):.2f}x")

# The peer: perf report (hotspot's back end) over a perf record -g of xz.
perf, xz = shutil.which("perf"), shutil.which("xz")
if perf and xz:
    data, inp = os.path.join(work, "perf.data"), os.path.join(work, "input")
    with open(inp, "wb") as f:
        f.write(os.urandom(1 << 20) * 24)
    rec = subprocess.run([perf, "record", "-q", "-e", "cpu-clock", "-F", "20000", "-g", "-o", data, "--",
                          xz, "-6", "-T1", "-k", "-f", inp], capture_output=True, text=True)
    cnt = subprocess.run([perf, "script", "-i", data, "-F", "tid"], capture_output=True, text=True)
    nperf = len(cnt.stdout.splitlines()) if cnt.returncode == 0 else 0
    if rec.returncode == 0 and nperf > 0:
        pc = []
        for i in range(rounds):
            _, c, _ = timed([perf, "report", "-i", data, "--stdio", "--no-children", "-g", "caller", "-q"])
            pc.append(c)
        print(f"  peer: perf report -g caller over {nperf} samples of xz: {sum(pc) / rounds:.2f} s CPU, "
              f"{sum(pc) / rounds / nperf * 1e9:.0f} ns CPU per sample")
    else:
        print(f"  peer: perf record failed here: {rec.stderr.strip()[:200]}")
else:
    print("  peer: perf or xz not installed")
shutil.rmtree(work, ignore_errors=True)

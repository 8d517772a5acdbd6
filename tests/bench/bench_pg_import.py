#!/usr/bin/env python3
"""bench_pg_import.py - `stallscope import --db` into a local PostgreSQL server
(a cluster of its own, Unix socket) against `stallscope import -o` into SQLite
on the same recording, interleaved, ROUNDS times. Prints per round and as
medians: wall time, the client's CPU time, the server's CPU time (every
PostgreSQL process, including the backends that exit with their connection),
events/s by the wall clock and events per CPU-second, and PostgreSQL / SQLite as
ratios. The machine is shared: the CPU figures are the ones to compare.

usage: bench_pg_import.py STALLSCOPE_CLI EXAMPLE_RUNTIME [SECONDS] [ROUNDS]   (6, 3)
"""
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "store"))
import pgtest  # noqa: E402

cli, runtime = sys.argv[1], sys.argv[2]
secs = float(sys.argv[3]) if len(sys.argv) > 3 else 6
rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 3
TICK = os.sysconf("SC_CLK_TCK")


def server_cpu(cluster):
    """CPU seconds of the server: live processes, plus the exited ones the
    postmaster reaped."""
    pm = int(open(os.path.join(cluster.data, "postmaster.pid")).readline())
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            f = open("/proc/%s/stat" % pid).read()
        except OSError:
            continue
        fields = f[f.rindex(")") + 2:].split()
        ppid = int(fields[1])
        if int(pid) == pm:
            total += sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
        elif ppid == pm:
            total += int(fields[11]) + int(fields[12])
    return total / TICK


def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(argv, cluster=None):
    s0, c0, w0 = server_cpu(cluster) if cluster else 0, child_cpu(), time.monotonic()
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    w1, c1 = time.monotonic(), child_cpu()
    time.sleep(0.2)  # the backend's exit reaches the postmaster's counts
    s1 = server_cpu(cluster) if cluster else 0
    if r.returncode != 0:
        sys.exit("%s failed: %s" % (" ".join(argv), r.stderr))
    return w1 - w0, c1 - c0, s1 - s0, r.stderr


def main():
    with pgtest.Cluster() as cl, tempfile.TemporaryDirectory(prefix="stallscope-bench-pg.") as tmp:
        rec = os.path.join(tmp, "rec")
        env = dict(os.environ, STALLSCOPE_ENABLED="1", STALLSCOPE_OUTPUT_DIR=rec, STALLSCOPE_CPU_SAMPLING="0")
        subprocess.run([runtime, "--scenario", "steady", "--rate", "40000", "--workers", "2", "--duration",
                        str(secs)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        rows = []
        events = 0
        for i in range(rounds):
            db = os.path.join(tmp, "r%d.db" % i)
            sw, sc, _, err = timed([cli, "import", rec, "-o", db])
            events = int(re.search(r"(\d+) events in", err).group(1))
            os.unlink(db)
            url = cl.createdb("bench%d" % i)
            pw, pc, ps, _ = timed([cli, "import", rec, "--db", url], cl)
            rows.append((sw, sc, pw, pc, ps))
            print("round %d: sqlite %.2f s wall, %.2f s CPU | postgresql %.2f s wall, %.2f s client CPU +"
                  " %.2f s server CPU" % (i + 1, sw, sc, pw, pc, ps), flush=True)
        med = [statistics.median(r[k] for r in rows) for k in range(5)]
        sw, sc, pw, pc, ps = med
        print("events: %d (example runtime, steady, %.0f s)" % (events, secs))
        print("sqlite:     %.2fM events/s wall, %.2fM events per CPU-second" % (events / sw / 1e6, events / sc / 1e6))
        print("postgresql: %.2fM events/s wall, %.2fM events per CPU-second (client %.2f s + server %.2f s)"
              % (events / pw / 1e6, events / (pc + ps) / 1e6, pc, ps))
        print("postgresql / sqlite: wall %.2fx, CPU %.2fx" % (pw / sw, (pc + ps) / sc))
        print("load average during the run: %s" % open("/proc/loadavg").read().split()[0])


main()

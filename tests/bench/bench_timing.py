"""bench_timing.py - what the Python benchmarks share: running a child and
measuring it the way the figures are compared (CPU time of the child, user +
system, with wall time beside it)."""
import resource
import subprocess
import sys
import time


def timed(args, ok=(0,)):
    """Runs args; returns (wall s, CPU s, stdout). Exits when its status is not in ok."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.monotonic()
    r = subprocess.run(args, capture_output=True, text=True)
    wall = time.monotonic() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if r.returncode not in ok:
        print(" ".join(args), r.stdout, r.stderr)
        sys.exit(1)
    return wall, cpu, r.stdout

#!/usr/bin/env python3
"""bench_import_builds.py OLD_CLI NEW_CLI DIR [ROUNDS] - the import of one
recording by two builds of `stallscope`, interleaved (old, new, new, old, ...),
as CPU seconds (user + system of the import process and its threads) and wall
seconds per run, then the median of each and the ratio new/old. CPU time is the
figure to compare on a shared machine: wall time moves with the load.

A benchmark, not a test: it needs a second build. For the architecture step
(issue 11), with the tag before it:
    git worktree add --detach /tmp/oldsrc pre-model-refactor
    (cd /tmp/oldsrc && meson setup build && ninja -C build viewer/cli/stallscope)
    build/tests/bench/bench_import 20000000 --keep     # prints where it kept them
    tests/bench/bench_import_builds.py /tmp/oldsrc/build/viewer/cli/stallscope \\
        build/viewer/cli/stallscope /tmp/stallscope-bench-import-XXXXXX 3
"""
import os
import shutil
import statistics
import sys
import tempfile

sys.dont_write_bytecode = True  # nothing written into the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_timing import timed  # noqa: E402


def usage():
    print(__doc__.strip().split('\n\n')[0], file=sys.stderr)
    sys.exit(2)


def one_import(cli, src, db):
    for f in (db, db + '-wal', db + '-shm'):
        if os.path.exists(f):
            os.unlink(f)
    wall, cpu, _ = timed([cli, 'import', src, '-o', db, '-q'])
    return cpu, wall


def main():
    if len(sys.argv) not in (4, 5) or sys.argv[1] in ('-h', '--help'):
        usage()
    old, new, src = sys.argv[1:4]
    rounds = int(sys.argv[4]) if len(sys.argv) == 5 else 3
    for cli in (old, new):
        if not os.access(cli, os.X_OK):
            sys.exit(f'{cli}: not an executable')
    if not os.path.isdir(src):
        sys.exit(f'{src}: not a directory of segments')
    # The segments are copied so that neither build finds the other's database
    # beside them (import writes only to -o, but a copy keeps the input fixed).
    tmp = tempfile.mkdtemp(prefix='stallscope-import-builds.')
    try:
        seg = os.path.join(tmp, 'segments')
        shutil.copytree(src, seg, ignore=shutil.ignore_patterns('*.db', '*.db-*'))
        db = os.path.join(tmp, 'trace.db')
        runs = {old: [], new: []}
        print(f'import of {src}, {rounds} rounds, interleaved')
        print(f'{"round":>5} {"build":>5} {"cpu s":>8} {"wall s":>8}')
        for i in range(rounds):
            order = (old, new) if i % 2 == 0 else (new, old)
            for cli in order:
                cpu, wall = one_import(cli, seg, db)
                runs[cli].append((cpu, wall))
                print(f'{i + 1:>5} {"old" if cli == old else "new":>5} {cpu:8.2f} {wall:8.2f}', flush=True)
        mo = statistics.median(c for c, _ in runs[old])
        mn = statistics.median(c for c, _ in runs[new])
        wo = statistics.median(w for _, w in runs[old])
        wn = statistics.median(w for _, w in runs[new])
        print(f'median CPU: old {mo:.2f} s, new {mn:.2f} s, new/old {mn / mo:.3f}')
        print(f'median wall: old {wo:.2f} s, new {wn:.2f} s, new/old {wn / wo:.3f}')
        load = open('/proc/loadavg').read().split()[0]
        print(f'load average at the end: {load}')
    finally:
        shutil.rmtree(tmp)


if __name__ == '__main__':
    main()

#!/usr/bin/env python3
"""bench_import_builds.py OLD_CLI NEW_CLI DIR [DIR...] [ROUNDS] - the import of
recordings by two builds of `stallscope`, interleaved (old, new, new, old, ...),
and per import: CPU seconds (user + system of the import process and its
threads), wall seconds, the import's own max RSS, events per wall second and per
CPU second, and database bytes per event; then the median of each per build and
the ratios new/old. CPU time is the figure to compare on a shared machine: wall
time moves with the load (the load average is printed beside every run). The
first import of each build is also checked for the same rows: every table both
databases have with the same columns, hashed in rowid order, must be equal
(a table whose layout differs between the builds is named, not compared; one
that holds the same rows in another order, say a table one build keeps without
rowid, is named as such).

A DIR may be `steady:RUNTIME`: the example runtime RUNTIME records its steady
scenario (4 workers, 60000 tasks/s, 8 s, about 5.7M events) into a temporary
directory first, the recording issue 17 measures.

A benchmark, not a test: it needs a second build. With the commit before a
change (here main at 2e4ccb0):
    git -C /work/main archive 2e4ccb0 | (mkdir -p /tmp/oldsrc && tar -x -C /tmp/oldsrc)
    (cd /tmp/oldsrc && meson setup build && ninja -C build viewer/cli/stallscope)
    build/tests/bench/bench_import 20000000 --keep     # prints where it kept them
    tests/bench/bench_import_builds.py /tmp/oldsrc/build/viewer/cli/stallscope \\
        build/viewer/cli/stallscope /tmp/stallscope-bench-import-XXXXXX \\
        steady:build/recorder/examples/stallscope-example-runtime 3
"""
import hashlib
import os
import re
import shutil
import statistics
import subprocess
import sqlite3
import sys
import tempfile


def usage():
    print(__doc__.strip().split('\n\n')[0], file=sys.stderr)
    sys.exit(2)


def load():
    return open('/proc/loadavg').read().split()[0]


def run_import(cli, src, db):
    """(cpu s, wall s, max RSS MB, events, db bytes) of one import into a new db.
    os.wait4 gives this child's own rusage (RUSAGE_CHILDREN would mix in the max
    RSS of every import so far)."""
    for f in (db, db + '-wal', db + '-shm', db + '-journal'):
        if os.path.exists(f):
            os.unlink(f)
    t0 = os.times().elapsed
    with tempfile.TemporaryFile(mode='w+') as errf:
        p = subprocess.Popen([cli, 'import', src, '-o', db], stdout=subprocess.DEVNULL, stderr=errf)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        wall = os.times().elapsed - t0
        errf.seek(0)
        err = errf.read()
    if p.returncode != 0:
        sys.exit(f'{cli} import {src} failed ({p.returncode}): {err.strip()}')
    m = re.search(r'(\d+) events in', err)
    if not m:
        sys.exit(f'{cli}: no event count in its summary: {err.strip()}')
    return (ru.ru_utime + ru.ru_stime, wall, ru.ru_maxrss / 1024.0, int(m.group(1)), os.path.getsize(db))


def table_sums(db):
    """{table: (columns, sha1 of its rows in rowid order, order-free sum)} of a database."""
    con = sqlite3.connect(db)
    try:
        out = {}
        # marks and spans are views since schema 6 (of mark_rows, and of
        # span_rows, then span_cells and span_full), tasks and queue_depths
        # since schema 8 (of task_rows and queue_rows), cpu_intervals since
        # schema 9 (of cpu_rows): compared through the views, they show that
        # the rows are the same.
        for (name,) in con.execute("SELECT name FROM sqlite_master WHERE (type = 'table'"
                                   " AND name NOT LIKE 'sqlite_%') OR (type = 'view' AND name IN"
                                   " ('marks', 'spans', 'tasks', 'queue_depths', 'cpu_intervals')) ORDER BY name"):
            cols = tuple(r[1] for r in con.execute(f'PRAGMA table_info("{name}")'))
            h = hashlib.sha1()
            bag = 0  # sum of the rows' hashes: equal for the same rows in any order
            try:
                rows = con.execute(f'SELECT * FROM "{name}" ORDER BY rowid')
            except sqlite3.OperationalError:  # WITHOUT ROWID: its key orders it
                rows = con.execute(f'SELECT * FROM "{name}"')
            for r in rows:
                b = repr(r).encode()
                h.update(b)
                bag += int.from_bytes(hashlib.blake2b(b, digest_size=16).digest(), 'little')
            out[name] = (cols, h.hexdigest(), bag % (1 << 128))
        return out
    finally:
        con.close()


def compare_tables(old, new):
    same, differ, layout, reordered = [], [], [], []
    for name in sorted(set(old) & set(new)):
        if old[name][0] != new[name][0]:
            layout.append(name)
        elif old[name][1] == new[name][1]:
            same.append(name)
        elif old[name][2] == new[name][2]:
            reordered.append(name)
        else:
            differ.append(name)
    print(f'rows: {len(same)} tables identical'
          + (f'; the same rows in another order: {", ".join(reordered)}' if reordered else '')
          + (f'; DIFFERENT: {", ".join(differ)}' if differ else '')
          + (f'; layout differs (not compared): {", ".join(layout)}' if layout else '')
          + (f'; only one build has: {", ".join(sorted(set(old) ^ set(new)))}' if set(old) ^ set(new) else ''))
    return not differ


def record_steady(runtime, tmp):
    rec = os.path.join(tmp, 'steady')
    r = subprocess.run([runtime, '--workers', '4', '--rate', '60000', '--duration', '8', '--record', rec],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f'{runtime} failed: {r.stderr.strip()}')
    last = r.stderr.strip().split('\n')[-1]
    print(f'steady recording: {last}')
    return rec


def main():
    args = sys.argv[1:]
    if len(args) < 3 or args[0] in ('-h', '--help'):
        usage()
    rounds = 3
    if re.fullmatch(r'\d+', args[-1]) and len(args) >= 4:
        rounds = int(args.pop())
    old, new, srcs = args[0], args[1], args[2:]
    for cli in (old, new):
        if not os.access(cli, os.X_OK):
            sys.exit(f'{cli}: not an executable')
    tmp = tempfile.mkdtemp(prefix='stallscope-import-builds.')
    failed = False
    try:
        dirs = []
        for i, src in enumerate(srcs):
            if src.startswith('steady:'):
                dirs.append((src, record_steady(src[7:], tmp)))
                continue
            if not os.path.isdir(src):
                sys.exit(f'{src}: not a directory of segments')
            # A copy, so that neither build finds the other's database beside
            # the segments (import writes only to -o, but the input stays fixed).
            seg = os.path.join(tmp, f'segments{i}')
            shutil.copytree(src, seg, ignore=shutil.ignore_patterns('*.db', '*.db-*'))
            dirs.append((src, seg))
        db = os.path.join(tmp, 'trace.db')
        for name, seg in dirs:
            runs = {old: [], new: []}
            sums = {}
            print(f'\nimport of {name}, {rounds} rounds, interleaved')
            print(f'{"round":>5} {"build":>5} {"cpu s":>7} {"wall s":>7} {"maxRSS MB":>9} {"Mev/s":>6}'
                  f' {"Mev/cpu-s":>9} {"B/event":>7} {"load":>5}')
            for i in range(rounds):
                for cli in ((old, new) if i % 2 == 0 else (new, old)):
                    cpu, wall, rss, ev, size = run_import(cli, seg, db)
                    runs[cli].append((cpu, wall, rss, ev, size))
                    if cli not in sums:
                        sums[cli] = table_sums(db)
                    print(f'{i + 1:>5} {"old" if cli == old else "new":>5} {cpu:7.2f} {wall:7.2f} {rss:9.1f}'
                          f' {ev / wall / 1e6:6.2f} {ev / cpu / 1e6:9.2f} {size / ev:7.2f} {load():>5}',
                          flush=True)
            identical = compare_tables(sums[old], sums[new])
            med = {cli: [statistics.median(r[k] for r in runs[cli]) for k in range(5)] for cli in (old, new)}
            for cli, label in ((old, 'old'), (new, 'new')):
                cpu, wall, rss, ev, size = med[cli]
                print(f'median {label}: {cpu:.2f} CPU s, {wall:.2f} wall s, {rss:.1f} MB max RSS,'
                      f' {ev / wall / 1e6:.2f}M events/s wall, {ev / cpu / 1e6:.2f}M events per CPU s,'
                      f' {size / ev:.2f} bytes/event ({int(ev)} events)')
            o, n = med[old], med[new]
            print(f'new/old: CPU {n[0] / o[0]:.3f}, wall {n[1] / o[1]:.3f}, max RSS {n[2] / o[2]:.3f},'
                  f' bytes/event {(n[4] / n[3]) / (o[4] / o[3]):.3f}; load average at the end: {load()}')
            if not identical:
                failed = True
    finally:
        shutil.rmtree(tmp)
    if failed:
        sys.exit('the two builds wrote different rows (see "rows:" above)')


if __name__ == '__main__':
    main()

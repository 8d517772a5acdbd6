#!/usr/bin/env python3
"""test_demo_digest.py - a fresh import of each demo directory gives the same
rows, table by table, as the digest checked in beside this file
(demo_digest.txt): row count and a SHA-256 of every row, ids included, in a
canonical order. A change to the importer that alters rows must say so by
regenerating the digest in the same commit:

    tests/import/test_demo_digest.py STALLSCOPE_CLI SOURCE_ROOT --update

Frames are not symbolized (--no-symbols): names depend on the binaries and
debug files of the machine; symbolization has tests of its own.

usage: test_demo_digest.py STALLSCOPE_CLI SOURCE_ROOT [--update]
"""
import hashlib
import os
import sqlite3
import subprocess
import sys
import tempfile

cli, root = sys.argv[1], sys.argv[2]
update = "--update" in sys.argv[3:]
digest_file = os.path.join(root, "tests", "import", "demo_digest.txt")
demo = os.path.join(root, "data", "demo")


def canon(v):
    if v is None:
        return "N"
    if isinstance(v, bytes):
        return "B" + v.hex()
    if isinstance(v, float):
        return "F" + repr(v)
    return ("I" if isinstance(v, int) else "T") + str(v)


def digests(db):
    d = sqlite3.connect(db)
    # marks and spans are views (of mark_rows, and of span_cells and
    # span_full) since schemas 6 and 8, tasks and queue_depths (of task_rows
    # and queue_rows) since 8, cpu_intervals (of cpu_rows) since 9,
    # worker_summaries (of summary_rows) since 10: digested as they read, so
    # their lines stay those of the tables they were.
    tables = [t for (t,) in d.execute("SELECT name FROM sqlite_master WHERE (type = 'table'"
                                      " AND name NOT LIKE 'sqlite_%') OR (type = 'view' AND name IN"
                                      " ('marks', 'spans', 'tasks', 'queue_depths', 'cpu_intervals',"
                                      " 'worker_summaries')) ORDER BY name")]
    out = {}
    for t in tables:
        cols = [c[1] for c in d.execute(f"PRAGMA table_info({t})")]
        # segments.file names the path this test imported from: made relative.
        rows = []
        for r in d.execute(f"SELECT * FROM {t}"):
            r = list(r)
            if t == "segments":
                r[cols.index("file")] = os.path.relpath(r[cols.index("file")], demo)
            rows.append("|".join(canon(v) for v in r))
        rows.sort()
        h = hashlib.sha256("\n".join(rows).encode()).hexdigest()[:32]
        out[t] = f"{len(rows)} {h}"
    d.close()
    return out


lines = []
with tempfile.TemporaryDirectory(prefix="stallscope-digest.") as tmp:
    for sc in sorted(os.listdir(demo)):
        db = os.path.join(tmp, sc + ".db")
        subprocess.run([cli, "import", "--quiet", "--no-symbols", os.path.join(demo, sc), "-o", db], check=True)
        for t, v in digests(db).items():
            lines.append(f"{sc} {t} {v}")

if update:
    with open(digest_file, "w") as f:
        f.write("# scenario table rows sha256 (tests/import/test_demo_digest.py --update writes this)\n")
        f.write("\n".join(lines) + "\n")
    print(f"wrote {digest_file}: {len(lines)} tables")
    sys.exit(0)

want = {}
for line in open(digest_file):
    if line.startswith("#") or not line.strip():
        continue
    sc, t, n, h = line.split()
    want[(sc, t)] = f"{n} {h}"
got = {}
for line in lines:
    sc, t, n, h = line.split()
    got[(sc, t)] = f"{n} {h}"
bad = 0
for k in sorted(set(want) | set(got)):
    if want.get(k) != got.get(k):
        bad += 1
        print(f"FAIL {k[0]} {k[1]}: digest {want.get(k, 'missing')}, import {got.get(k, 'missing')}")
print(f"{len(got)} tables compared, {bad} differ")
if bad:
    print("A change that alters imported rows must regenerate the digest on purpose:\n"
          f"  {sys.argv[0]} {cli} {root} --update")
sys.exit(1 if bad else 0)

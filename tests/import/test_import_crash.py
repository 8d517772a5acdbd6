#!/usr/bin/env python3
"""test_import_crash.py - a database that `stallscope import` leaves behind is
always whole, whatever stops the import:

  - SIGKILL at random moments of a first import: the target is absent or a
    complete database equal to a clean import; a temporary file left beside
    it is removed by the next import, which then succeeds;
  - SIGKILL at random moments of an incremental import into an existing
    database: it stays intact, as before or complete (the report, a
    read-only reader, plays back the journal left behind), and importing
    again completes it;
  - a full disk (the file-size limit RLIMIT_FSIZE, with SIGXFSZ ignored as
    a daemon's supervisor would): a first import exits 2 and creates nothing;
    an incremental one exits 2 and leaves the database as it was; neither
    prints a summary that claims segments were imported;
  - an empty or missing directory: exit 1, "no segments found in DIR", and no
    database file.

usage: test_import_crash.py STALLSCOPE_CLI EXAMPLE_RUNTIME
"""
import os
import random
import resource
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

cli, runtime = sys.argv[1], sys.argv[2]
failures = []


def check(cond, msg):
    print(("ok    " if cond else "FAIL  ") + msg, flush=True)
    if not cond:
        failures.append(msg)


TABLES = ("recordings", "segments", "threads", "workers", "tasks", "polls", "parks", "wakes",
          "queue_depths", "samples", "cpu_intervals", "stalls", "stall_captures", "worker_summaries")


def state(db):
    """Row counts per table of a database that passes integrity_check, else None."""
    try:
        d = sqlite3.connect(db)
        if d.execute("PRAGMA integrity_check").fetchone()[0] != "ok":
            return None
        out = tuple(d.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES)
        d.close()
        return out
    except sqlite3.Error as e:
        print("      ", db, e)
        return None


def leftovers(tmp, name):
    return [f for f in os.listdir(tmp) if f.startswith(f".{name}.importing.")]


def run_import(paths, db, limit=None):
    def pre():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        if limit:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return subprocess.run([cli, "import", *paths, "-o", db], capture_output=True, text=True,
                          preexec_fn=pre)


with tempfile.TemporaryDirectory(prefix="stallscope-import-crash.") as tmp:
    seg = os.path.join(tmp, "seg")
    env = dict(os.environ, STALLSCOPE_ENABLED="1", STALLSCOPE_OUTPUT_DIR=seg,
               STALLSCOPE_FILE_PREFIX="crash", STALLSCOPE_MAX_FILE_SIZE="1M",
               STALLSCOPE_ROTATION_COUNT="100")
    subprocess.run([runtime, "--scenario", "steady", "--workers", "4", "--duration", "2",
                    "--rate", "40000", "--seed", "3"], env=env, check=True, capture_output=True)
    files = sorted((os.path.join(seg, f) for f in os.listdir(seg)), key=lambda p: int(p.split(".")[-2]))
    check(len(files) >= 4, f"{len(files)} segments recorded")
    half = files[: len(files) // 2]

    ref_db = os.path.join(tmp, "ref.db")
    t0 = time.monotonic()
    r = run_import([seg], ref_db)
    took = time.monotonic() - t0
    ref = state(ref_db)
    check(r.returncode == 0 and ref, f"reference import ({took:.2f} s)")
    half_db = os.path.join(tmp, "half.db")
    run_import(half, half_db)
    half_state = state(half_db)

    # SIGKILL during a first import.
    rng = random.Random(7)
    outcomes = {"absent": 0, "complete": 0}
    for i in range(10):
        db = os.path.join(tmp, "kill.db")
        if os.path.exists(db):
            os.unlink(db)
        p = subprocess.Popen([cli, "import", "--quiet", seg, "-o", db])
        time.sleep(rng.uniform(0, took * 1.5))
        p.send_signal(signal.SIGKILL)
        p.wait()
        if os.path.exists(db):
            st = state(db)
            check(st == ref, f"first import killed ({i}): the database is complete")
            outcomes["complete"] += 1
        else:
            outcomes["absent"] += 1
        r = run_import([seg], db)
        check(r.returncode == 0 and state(db) == ref, f"first import killed ({i}): the next import completes it")
        check(not leftovers(tmp, "kill.db"), f"first import killed ({i}): no temporary file left")
    print("      outcomes:", outcomes)

    # SIGKILL during an incremental import.
    for i in range(8):
        db = os.path.join(tmp, "inc.db")
        for f in (db, db + "-journal"):
            if os.path.exists(f):
                os.unlink(f)
        run_import(half, db)
        p = subprocess.Popen([cli, "import", "--quiet", seg, "-o", db])
        time.sleep(rng.uniform(0, took))
        p.send_signal(signal.SIGKILL)
        p.wait()
        # A reader (read-only) first: it must cope with the journal left behind.
        rep = subprocess.run([cli, "report", db], capture_output=True, text=True)
        check(rep.returncode == 0, f"incremental import killed ({i}): report reads it ({rep.stderr.strip()[:200]})")
        st = state(db)
        check(st in (half_state, ref), f"incremental import killed ({i}): as before or complete")
        r = run_import([seg], db)
        final = state(db)
        check(r.returncode == 0 and final == ref, f"incremental import killed ({i}): importing again completes it")
        if final != ref:
            print("      ", st, final, ref, r.stderr)

    # A full disk: the file-size limit, well under the database's size.
    size = os.path.getsize(ref_db)
    db = os.path.join(tmp, "full.db")
    r = run_import([seg], db, limit=size // 3)
    check(r.returncode == 2, f"full disk, first import: exit {r.returncode}")
    check(not os.path.exists(db) and not leftovers(tmp, "full.db"), "full disk, first import: nothing created")
    check("segments imported" not in r.stderr and "not created" in r.stderr,
          "full disk, first import: says nothing was imported")
    print("      " + r.stderr.strip().replace("\n", "\n      "))
    run_import(half, db)
    before = state(db)
    r = run_import([seg], db, limit=os.path.getsize(db) + (size - os.path.getsize(db)) // 4)
    check(r.returncode == 2, f"full disk, incremental import: exit {r.returncode}")
    check(state(db) == before, "full disk, incremental import: the database is as it was")
    check("segments imported" not in r.stderr and "as it was" in r.stderr,
          "full disk, incremental import: says nothing was imported")
    r = run_import([seg], db)
    check(r.returncode == 0 and state(db) == ref, "full disk, incremental import: completes once there is room")

    # Nothing to import.
    empty = os.path.join(tmp, "empty")
    os.mkdir(empty)
    db = os.path.join(tmp, "none.db")
    r = run_import([empty], db)
    check(r.returncode == 1 and f"no segments found in {empty}" in r.stderr, "empty directory: says so, exit 1")
    check(not os.path.exists(db), "empty directory: no database left behind")
    r = run_import([os.path.join(tmp, "missing")], db)
    check(r.returncode == 1 and "No such file" in r.stderr and not os.path.exists(db),
          "missing directory: says so, exit 1, no database")

sys.exit(1 if failures else 0)

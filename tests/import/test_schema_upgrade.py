#!/usr/bin/env python3
"""test_schema_upgrade.py - a database of schema version 5 (marks and spans as
tables with a name in every row, polls_by_worker) imported into by this
stallscope is upgraded to version 8 (marks and spans views of mark_rows, and
of span_cells and span_full, names stored once in names; poll_chunks
instead of polls_by_worker; tasks and queue_depths views of task_rows and
queue_rows) and then to version 9 (cpu_intervals a view of cpu_rows, without
cpu_intervals_by_thread) and then to version 10 (worker_summaries a view of
summary_rows, which keeps the level's scale and the bucket's number) and then
to version 11 (queue_depths also a view of the queue reports polls carry; no
50 us summary level: a version 10 database's goes at the upgrade)
and then holds the rows it would hold had it been made by this version: one
demo imported, the database turned back into version 5's layout, a second demo
imported into it, against the same two imports into a database that was never
downgraded. Every table holds the same rows (names and the tables behind the
views are compared through the views, since the upgrade numbers the names
in another order; poll_chunks is built by another rule for the polls that were
there, so it is checked by what it promises: every poll of a worker lies in the
id range of the worker's last chunk starting at or before it, and a worker's
polls in a time range read through it are those a full scan finds), and an
INSERT into the views still lands in them. A demo imported a segment at a
time holds the polls, spans, tasks and queue depths of one import of it.
polls are compared by their version 5 columns (the upgraded database's
queue reports of the first import stay in queue_rows; queue_depths, compared,
lists them all). The viewer draws a database of version 9 (worker_summaries a table) that no
import upgraded yet as it draws the same rows in version 10's layout, and
not as it draws them without summaries.

usage: test_schema_upgrade.py STALLSCOPE_CLI SOURCE_ROOT [STALLSCOPE_VIEWER]
"""
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

cli, root = sys.argv[1], sys.argv[2]
viewer = sys.argv[3] if len(sys.argv) > 3 else None
demo = os.path.join(root, "data", "demo")
failures = 0


def check(ok, msg):
    global failures
    if not ok:
        failures += 1
        print("FAIL " + msg)


def imp(src, db):
    subprocess.run([cli, "import", "--quiet", "--no-symbols", os.path.join(demo, src), "-o", db], check=True)


# Version 5's marks and spans, as schema/stallscope.sql made them.
# worker_summaries as a table, as versions 5 to 9 had it
OLD_SUMMARIES_COLUMNS = """ (bucket_ns INTEGER NOT NULL, worker_id INTEGER NOT NULL REFERENCES workers(id),
  ts INTEGER NOT NULL, busy_ns INTEGER NOT NULL, parked_ns INTEGER NOT NULL, offcpu_ns INTEGER NOT NULL,
  polls INTEGER NOT NULL, max_poll_ns INTEGER NOT NULL, PRIMARY KEY (bucket_ns, worker_id, ts)) WITHOUT ROWID;"""

TO_V5 = """
CREATE TABLE marks_v5 (thread_id INTEGER NOT NULL REFERENCES threads(id), ts INTEGER NOT NULL,
  name TEXT, value INTEGER);
INSERT INTO marks_v5 SELECT thread_id, ts, name, value FROM marks;
CREATE TABLE spans_v5 (thread_id INTEGER NOT NULL REFERENCES threads(id), ts INTEGER NOT NULL,
  dur INTEGER NOT NULL, name TEXT, depth INTEGER NOT NULL, incomplete INTEGER NOT NULL DEFAULT 0,
  span_id INTEGER, parent_span_id INTEGER, fields TEXT, location_id INTEGER REFERENCES locations(id));
INSERT INTO spans_v5 SELECT * FROM spans;
CREATE TABLE tasks_v5 (id INTEGER PRIMARY KEY, recording_id INTEGER NOT NULL REFERENCES recordings(id),
  task INTEGER NOT NULL, location_id INTEGER REFERENCES locations(id),
  parent_task_id INTEGER REFERENCES tasks(id), spawn_ts INTEGER, end_ts INTEGER,
  spawn_thread_id INTEGER REFERENCES threads(id));
INSERT INTO tasks_v5 SELECT * FROM tasks;
CREATE TABLE queue_v5 (thread_id INTEGER NOT NULL REFERENCES threads(id),
  worker_id INTEGER REFERENCES workers(id), ts INTEGER NOT NULL, local INTEGER, global INTEGER);
INSERT INTO queue_v5 SELECT * FROM queue_depths;
DROP VIEW queue_depths;
DROP VIEW poll_view;
ALTER TABLE polls DROP COLUMN queue_lead;
ALTER TABLE polls DROP COLUMN queue_local;
ALTER TABLE polls DROP COLUMN queue_global;
-- version 10 and older had a 50 us level: rows the upgrade deletes
INSERT INTO summary_rows SELECT 1, worker_id, bucket * scale, 1, 2, 0, 3, 4 FROM summary_rows WHERE scale = 2;
INSERT INTO import_open_summary SELECT worker_id, source, 50000, ts, starts, busy_ns, parked_ns, offcpu_ns,
  polls, max_poll_ns, written FROM import_open_summary WHERE bucket_ns = 100000;
CREATE TABLE cpu_v5 (thread_id INTEGER NOT NULL REFERENCES threads(id), ts INTEGER NOT NULL,
  dur INTEGER NOT NULL, state TEXT NOT NULL, cpu INTEGER);
INSERT INTO cpu_v5 SELECT * FROM cpu_intervals;
CREATE TABLE summaries_v5""" + OLD_SUMMARIES_COLUMNS + """
INSERT INTO summaries_v5 SELECT * FROM worker_summaries;
DROP VIEW marks;
DROP VIEW spans;
DROP VIEW tasks;
DROP VIEW cpu_intervals;
DROP VIEW worker_summaries;
DROP TABLE summary_rows;
DROP TABLE cpu_rows;
DROP TABLE mark_rows;
DROP TABLE span_cells;
DROP TABLE span_full;
DROP TABLE task_rows;
DROP TABLE queue_rows;
DROP TABLE names;
-- poll_view names tasks, which is missing until the rename: not checked
PRAGMA legacy_alter_table = ON;
ALTER TABLE tasks_v5 RENAME TO tasks;
ALTER TABLE queue_v5 RENAME TO queue_depths;
ALTER TABLE marks_v5 RENAME TO marks;
ALTER TABLE spans_v5 RENAME TO spans;
ALTER TABLE cpu_v5 RENAME TO cpu_intervals;
ALTER TABLE summaries_v5 RENAME TO worker_summaries;
CREATE INDEX cpu_intervals_by_thread ON cpu_intervals(thread_id, ts);
DROP TABLE poll_chunks;
CREATE INDEX polls_by_worker ON polls(worker_id, ts);
DELETE FROM schema_info;
INSERT INTO schema_info VALUES (5);
"""

SKIP = {"names", "mark_rows", "span_cells", "span_full", "task_rows", "queue_rows", "schema_info",
        "poll_chunks", "cpu_rows", "summary_rows"}
VIEWS = ("marks", "spans", "tasks", "queue_depths", "cpu_intervals", "worker_summaries")
VERSION = 11
# polls as versions 5 to 10 had it (the queue_* columns came with 11)
POLLS_V10 = "SELECT id, worker_id, task_id, location_id, ts, dur, incomplete FROM polls"


def chunk_problems(db):
    """What poll_chunks promises (schema/stallscope.sql), checked on every poll
    and on the lanes of every worker in a few time ranges."""
    d = sqlite3.connect(db)
    out = []
    uncovered = d.execute("SELECT count(*) FROM polls p WHERE p.id NOT BETWEEN"
                          " (SELECT id_lo FROM poll_chunks c WHERE c.worker_id = p.worker_id AND c.ts <= p.ts"
                          "  ORDER BY c.ts DESC LIMIT 1) AND"
                          " (SELECT id_hi FROM poll_chunks c WHERE c.worker_id = p.worker_id AND c.ts <= p.ts"
                          "  ORDER BY c.ts DESC LIMIT 1)").fetchone()[0]
    if uncovered:
        out.append(f"{uncovered} polls outside their chunk")
    lo, hi = d.execute("SELECT min(ts), max(ts) FROM polls").fetchone()
    chunks = ("FROM poll_chunks WHERE worker_id = ?1 AND ts <= ?3 AND ts >= coalesce((SELECT max(ts)"
              " FROM poll_chunks WHERE worker_id = ?1 AND ts <= ?2), ?2)")
    for (w,) in d.execute("SELECT id FROM workers").fetchall():
        for k in range(0, 40):
            a = lo + (hi - lo) * k // 40
            b = a + (hi - lo) // (3 + k % 7)
            full = d.execute("SELECT id FROM polls WHERE worker_id = ?1 AND ts >= coalesce((SELECT max(ts)"
                             " FROM polls WHERE worker_id = ?1 AND ts <= ?2), ?2) AND ts <= ?3 ORDER BY id",
                             (w, a, b)).fetchall()
            fast = d.execute(f"SELECT id FROM polls WHERE worker_id = ?1 AND ts >= coalesce((SELECT max(ts)"
                             f" FROM polls WHERE worker_id = ?1 AND ts <= ?2), ?2) AND ts <= ?3 AND id BETWEEN"
                             f" (SELECT min(id_lo) {chunks}) AND (SELECT max(id_hi) {chunks}) ORDER BY id",
                             (w, a, b)).fetchall()
            if full != fast:
                out.append(f"worker {w} [{a}, {b}]: {len(fast)} polls through poll_chunks, {len(full)} by a scan")
    if d.execute("SELECT count(*) FROM sqlite_master WHERE name = 'polls_by_worker'").fetchone()[0]:
        out.append("polls_by_worker is still there")
    d.close()
    return out


def contents(db):
    d = sqlite3.connect(db)
    out = {}
    for (t,) in d.execute("SELECT name FROM sqlite_master WHERE ((type = 'table' AND name NOT LIKE 'sqlite_%')"
                          " OR (type = 'view' AND name IN ('marks', 'spans', 'tasks', 'queue_depths', 'cpu_intervals',"
                          " 'worker_summaries')))"
                          " ORDER BY name"):
        if t in SKIP:
            continue
        rows = [tuple(r) for r in d.execute(POLLS_V10 if t == "polls" else f'SELECT * FROM "{t}"')]
        out[t] = sorted(rows, key=repr)
    kinds = dict(d.execute("SELECT name, type FROM sqlite_master WHERE name IN ('marks', 'spans', 'tasks',"
                           " 'queue_depths', 'cpu_intervals', 'worker_summaries')"))
    names = sorted(n for (n,) in d.execute("SELECT name FROM names"))
    version = d.execute("SELECT max(version) FROM schema_info").fetchone()[0]
    d.close()
    return out, kinds, names, version


with tempfile.TemporaryDirectory(prefix="stallscope-upgrade.") as tmp:
    ref, old = os.path.join(tmp, "ref.db"), os.path.join(tmp, "old.db")
    imp("leak", ref)
    shutil.copy(ref, old)
    d = sqlite3.connect(old)
    n_marks = d.execute("SELECT count(*) FROM marks").fetchone()[0]
    n_spans = d.execute("SELECT count(*) FROM spans").fetchone()[0]
    check(n_marks > 0 and n_spans > 0, f"the leak demo has marks and spans ({n_marks}, {n_spans})")
    d.executescript(TO_V5)
    d.close()
    # Read as it is (read-only, before any import upgrades it): the report's
    # lane queries go through a temporary poll_chunks view of polls_by_worker.
    reports = [subprocess.run([cli, "report", "--json", db], capture_output=True, text=True) for db in (ref, old)]
    check(all(r.returncode == 0 for r in reports), "report of both: " + " / ".join(r.stderr for r in reports))
    check(reports[0].stdout.replace(ref, "DB") == reports[1].stdout.replace(old, "DB")
          and '"findings"' in reports[0].stdout,
          "the report of the version 5 database differs from the new one's")
    imp("steady", ref)
    imp("steady", old)
    want, want_kinds, want_names, want_version = contents(ref)
    got, got_kinds, got_names, got_version = contents(old)
    check(want_version == VERSION, f"a new database is version {want_version}, not {VERSION}")
    check(got_version == VERSION, f"the upgraded database is version {got_version}, not {VERSION}")
    for db, what in ((ref, "new"), (old, "upgraded")):
        for p in chunk_problems(db):
            check(False, f"{what} database: {p}")
    check(got_kinds == {v: "view" for v in VIEWS}, f"after the upgrade {', '.join(VIEWS)} are {got_kinds}")
    check(got_names == want_names, f"names {got_names} against {want_names}")
    for t in sorted(set(want) | set(got)):
        if t not in want or t not in got:
            check(False, f"{t} is only in the {'upgraded' if t in got else 'new'} database")
        elif want[t] != got[t]:
            check(False, f"{t}: {len(got[t])} rows after the upgrade, {len(want[t])} in a new database,"
                  f" or the same number with other values")
    print(f"{len(want)} tables and views compared, {sum(len(v) for v in want.values())} rows")

    # The views take an INSERT: a new name goes to names, a known one is reused.
    d = sqlite3.connect(old)
    before = d.execute("SELECT count(*) FROM names").fetchone()[0]
    known = d.execute("SELECT name FROM names LIMIT 1").fetchone()[0]
    d.execute("INSERT INTO marks(thread_id, ts, name, value) VALUES (1, -5, 'upgrade test', 7), (1, -6, ?, 8),"
              " (1, -7, NULL, 9)", (known,))
    d.execute("INSERT INTO spans(thread_id, ts, dur, name, depth) VALUES (1, -5, 2, 'upgrade test', 0)")
    check(d.execute("SELECT count(*) FROM names").fetchone()[0] == before + 1, "one new name from the inserts")
    check(d.execute("SELECT count(*) FROM marks WHERE ts < 0 AND ((name = 'upgrade test' AND value = 7) OR"
                    " (name = ? AND value = 8) OR (name IS NULL AND value = 9))", (known,)).fetchone()[0] == 3,
          "marks inserted through the view read back")
    check(d.execute("SELECT incomplete, span_id FROM spans WHERE name = 'upgrade test'").fetchall() == [(0, None)],
          "a span inserted through the view reads back with its defaults")
    d.execute("INSERT INTO spans(thread_id, ts, dur, name, depth, incomplete, span_id, fields)"
              " VALUES (1, -6, 3, NULL, 2, 1, 42, '{}')")
    check(d.execute("SELECT depth, incomplete, span_id, fields FROM spans WHERE ts = -6").fetchall()
          == [(2, 1, 42, '{}')], "a span with extras inserted through the view reads back")
    top = d.execute("SELECT max(id) FROM tasks").fetchone()[0]
    d.execute("INSERT INTO tasks(id, recording_id, task, spawn_ts, end_ts) VALUES (?, 1, ?, 100, 250)",
              (top + 1, top + 1))
    d.execute("INSERT INTO tasks(recording_id, task, spawn_ts, end_ts) VALUES (1, 987654, NULL, 400)")
    check(d.execute("SELECT id - ?, task - ?, spawn_ts, end_ts FROM tasks WHERE id > ? ORDER BY id",
                    (top, top, top)).fetchall() == [(1, 1, 100, 250), (2, 987654 - top, None, 400)],
          "tasks inserted through the view read back")
    try:
        d.execute("INSERT INTO tasks(recording_id, spawn_ts) VALUES (1, 5)")
        check(False, "a task without a task number was accepted")
    except sqlite3.IntegrityError:
        pass
    w, th = d.execute("SELECT id, thread_id FROM workers LIMIT 1").fetchone()
    d.execute("INSERT INTO queue_depths(thread_id, worker_id, ts, local, global) VALUES (?, ?, -5, 3, NULL)",
              (th, w))
    check(d.execute("SELECT worker_id, local, global FROM queue_depths WHERE ts = -5").fetchall() == [(w, 3, None)],
          "a queue depth inserted through the view reads back with its thread's worker")
    # cpu_intervals: the three states as codes, another one as its text, an
    # exact repeat stored once, a missing state, ts, dur or thread refused, a DELETE through it.
    n_cpu = d.execute("SELECT count(*) FROM cpu_rows").fetchone()[0]
    d.executemany("INSERT INTO cpu_intervals(thread_id, ts, dur, state, cpu) VALUES (?, ?, ?, ?, ?)",
                  [(th, -9, 4, "on-cpu", 1), (th, -5, 4, "blocked", None), (th, -1, 2, "preempted", 0),
                   (th, 1, 0, "running", 3), (th, -9, 4, "on-cpu", 1), (th, 2, 0, 7, None)])
    check(d.execute("SELECT ts, dur, state, cpu FROM cpu_intervals WHERE thread_id = ? AND ts BETWEEN -9 AND 2"
                    " ORDER BY ts", (th,)).fetchall()
          == [(-9, 4, "on-cpu", 1), (-5, 4, "blocked", None), (-1, 2, "preempted", 0), (1, 0, "running", 3),
              (2, 0, "7", None)], "cpu intervals inserted through the view read back")
    check(d.execute("SELECT count(*) FROM cpu_rows").fetchone()[0] == n_cpu + 5
          and d.execute("SELECT count(*) FROM cpu_rows WHERE ts < 0 AND typeof(state) = 'integer'").fetchone()[0]
          == 3, "cpu_rows holds the known states as codes and a repeat once")
    for cols, vals, what in (("thread_id, ts, dur", (th, 5, 1), "state"),
                             ("thread_id, dur, state", (th, 1, "on-cpu"), "ts"),
                             ("thread_id, ts, state", (th, 5, "on-cpu"), "dur"),
                             ("ts, dur, state", (5, 1, "on-cpu"), "thread_id")):
        try:
            d.execute("INSERT INTO cpu_intervals(%s) VALUES (?, ?, ?)" % cols, vals)
            check(False, "a cpu interval without its %s was accepted" % what)
        except sqlite3.IntegrityError as e:
            check(("cpu_intervals." + what) in str(e), "a cpu interval without its %s: %s" % (what, e))
    d.execute("DELETE FROM cpu_intervals WHERE thread_id = ? AND ts BETWEEN -9 AND 2 AND state <> 'blocked'",
              (th,))
    check(d.execute("SELECT ts, state FROM cpu_intervals WHERE thread_id = ? AND ts BETWEEN -9 AND 2",
                    (th,)).fetchall() == [(-5, "blocked")]
          and d.execute("SELECT count(*) FROM cpu_rows").fetchone()[0] == n_cpu + 1,
          "a DELETE through the view removes those rows only")
    # worker_summaries: rows inserted through the view read back and land in
    # summary_rows as scale and bucket number; a bucket size that is not a
    # multiple of 50 us, or a start that is not a multiple of it, is refused;
    # a DELETE through it removes those rows only.
    n_sum = d.execute("SELECT count(*) FROM summary_rows").fetchone()[0]
    d.executemany("INSERT INTO worker_summaries VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                  [(1000000, w, -3000000, 5, 6, 7, 8, 9), (50000, w, -50000, 1, 2, 3, 4, 5),
                   (1000000000, w, -2000000000, 10, 20, 30, 40, 50)])
    check(d.execute("SELECT * FROM worker_summaries WHERE worker_id = ? AND ts < 0 ORDER BY bucket_ns",
                    (w,)).fetchall()
          == [(50000, w, -50000, 1, 2, 3, 4, 5), (1000000, w, -3000000, 5, 6, 7, 8, 9),
              (1000000000, w, -2000000000, 10, 20, 30, 40, 50)], "summaries inserted through the view read back")
    check(d.execute("SELECT scale, bucket FROM summary_rows WHERE worker_id = ? AND bucket < 0 ORDER BY scale",
                    (w,)).fetchall() == [(1, -1), (20, -3), (20000, -2)], "summary_rows keeps scale and bucket")
    for vals, what in (((30000, w, 0, 0, 0, 0, 0, 0), "bucket_ns"), ((1000000, w, 500, 0, 0, 0, 0, 0), "ts"),
                       ((None, w, 0, 0, 0, 0, 0, 0), "bucket_ns"), ((50000, w, "x", 0, 0, 0, 0, 0), "ts")):
        try:
            d.execute("INSERT INTO worker_summaries VALUES (?, ?, ?, ?, ?, ?, ?, ?)", vals)
            check(False, "a summary with a %s off the grid was accepted" % what)
        except sqlite3.IntegrityError as e:
            check(("worker_summaries." + what) in str(e), "a summary with a %s off the grid: %s" % (what, e))
    d.execute("DELETE FROM worker_summaries WHERE worker_id = ? AND ts < 0 AND bucket_ns > 50000", (w,))
    check(d.execute("SELECT bucket_ns, ts FROM worker_summaries WHERE worker_id = ? AND ts < 0", (w,)).fetchall()
          == [(50000, -50000)] and d.execute("SELECT count(*) FROM summary_rows").fetchone()[0] == n_sum + 1,
          "a DELETE through the summaries view removes those rows only")
    d.close()

# Imported a segment at a time (open polls continued by the next import, new
# chunks each time): the chunks keep their promise, and the polls are those
# of one import of everything.
with tempfile.TemporaryDirectory(prefix="stallscope-chunks.") as tmp:
    whole, parts = os.path.join(tmp, "whole.db"), os.path.join(tmp, "parts.db")
    imp("leak", whole)
    segs = sorted(os.listdir(os.path.join(demo, "leak")), key=lambda f: int(f.split(".")[1]))
    for f in segs:
        imp(os.path.join("leak", f), parts)
    for p in chunk_problems(parts):
        check(False, f"imported in {len(segs)} steps: {p}")
    for t, n in (("polls", 1000), ("spans", 1000), ("tasks", 1000), ("queue_depths", 100)):
        rows = [sorted(sqlite3.connect(db).execute(POLLS_V10 if t == "polls" else f"SELECT * FROM {t}").fetchall(),
                       key=repr)
                for db in (whole, parts)]
        check(rows[0] == rows[1] and len(rows[0]) > n,
              f"{t} imported in {len(segs)} steps: {len(rows[1])} rows, {len(rows[0])} in one import, or other values")

# A version 10 database written before import_open_summary existed (the
# importer's open-bucket state came later than the tables): its next import
# upgrades it, deleting the 50 us level, and does not fail on the missing table.
TO_V10_NO_OPEN_SUMMARY = """
DROP VIEW queue_depths;
DROP VIEW poll_view;
ALTER TABLE polls DROP COLUMN queue_lead;
ALTER TABLE polls DROP COLUMN queue_local;
ALTER TABLE polls DROP COLUMN queue_global;
INSERT INTO summary_rows SELECT 1, worker_id, bucket * scale, 1, 2, 0, 3, 4 FROM summary_rows WHERE scale = 2;
DROP TABLE import_open_summary;
DELETE FROM schema_info;
INSERT INTO schema_info VALUES (10);
"""
with tempfile.TemporaryDirectory(prefix="stallscope-upgrade-v10.") as tmp:
    db = os.path.join(tmp, "v10.db")
    imp("long-poll", db)
    d = sqlite3.connect(db)
    d.executescript(TO_V10_NO_OPEN_SUMMARY)
    d.close()
    r = subprocess.run([cli, "import", "--quiet", "--no-symbols", os.path.join(demo, "blocking"), "-o", db],
                       capture_output=True, text=True)
    check(r.returncode == 0, "import into a version 10 database without import_open_summary: " + r.stderr + r.stdout)
    if r.returncode == 0:
        d = sqlite3.connect(db)
        check(d.execute("SELECT max(version) FROM schema_info").fetchone()[0] == VERSION
              and d.execute("SELECT count(*) FROM summary_rows WHERE scale = 1").fetchone()[0] == 0,
              "the version 10 database without import_open_summary was not upgraded")
        d.close()

# Version 9's worker_summaries, read by the viewer before any import upgrades
# it: the same picture as version 10's summary_rows, and another one without
# the summaries (so the picture depends on them).
TO_V9_SUMMARIES = """
CREATE TABLE summaries_v9""" + OLD_SUMMARIES_COLUMNS + """
INSERT INTO summaries_v9 SELECT * FROM worker_summaries;
DROP VIEW worker_summaries;
DROP TABLE summary_rows;
ALTER TABLE summaries_v9 RENAME TO worker_summaries;
DELETE FROM schema_info;
INSERT INTO schema_info VALUES (9);
"""
if viewer:
    with tempfile.TemporaryDirectory(prefix="stallscope-upgrade-view.") as tmp:
        dbs = {k: os.path.join(tmp, k + ".db") for k in ("new", "v9", "none")}
        imp("long-poll", dbs["new"])
        for k in ("v9", "none"):
            shutil.copy(dbs["new"], dbs[k])
            d = sqlite3.connect(dbs[k])
            d.executescript(TO_V9_SUMMARIES)
            if k == "none":
                d.execute("DELETE FROM worker_summaries WHERE bucket_ns >= 1000000")
            d.commit()
            d.close()
        env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
        png = {}
        for k, db in dbs.items():
            r = subprocess.run([viewer, "--render-png", db + ".png", "--size", "1000x400", db], env=env,
                               capture_output=True, text=True)
            check(r.returncode == 0, f"render of the {k} database: {r.stderr}")
            png[k] = open(db + ".png", "rb").read() if r.returncode == 0 else b""
        check(png["new"] == png["v9"] and png["new"], "the version 9 database draws unlike version 10's")
        check(png["new"] != png["none"], "the picture does not depend on the summaries")

print("schema upgrade: %s" % ("FAIL" if failures else "ok"))
sys.exit(1 if failures else 0)

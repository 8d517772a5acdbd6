#!/usr/bin/env python3
"""test_schema_upgrade.py - a database of schema version 5 (marks and spans as
tables with a name in every row) imported into by this stallscope is upgraded
to version 6 (marks and spans views of mark_rows and span_rows, names stored
once in names) and then holds the rows it would hold had it been made by this
version: one demo imported, the database turned back into version 5's layout,
a second demo imported into it, against the same two imports into a database
that was never downgraded. Every table holds the same rows (names, mark_rows
and span_rows are compared through the marks and spans views, since the
upgrade numbers the names in another order), and an INSERT into the views
still lands in them.

usage: test_schema_upgrade.py STALLSCOPE_CLI SOURCE_ROOT
"""
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

cli, root = sys.argv[1], sys.argv[2]
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
TO_V5 = """
CREATE TABLE marks_v5 (thread_id INTEGER NOT NULL REFERENCES threads(id), ts INTEGER NOT NULL,
  name TEXT, value INTEGER);
INSERT INTO marks_v5 SELECT thread_id, ts, name, value FROM marks;
CREATE TABLE spans_v5 (thread_id INTEGER NOT NULL REFERENCES threads(id), ts INTEGER NOT NULL,
  dur INTEGER NOT NULL, name TEXT, depth INTEGER NOT NULL, incomplete INTEGER NOT NULL DEFAULT 0,
  span_id INTEGER, parent_span_id INTEGER, fields TEXT, location_id INTEGER REFERENCES locations(id));
INSERT INTO spans_v5 SELECT * FROM spans;
DROP VIEW marks;
DROP VIEW spans;
DROP TABLE mark_rows;
DROP TABLE span_rows;
DROP TABLE names;
ALTER TABLE marks_v5 RENAME TO marks;
ALTER TABLE spans_v5 RENAME TO spans;
DELETE FROM schema_info;
INSERT INTO schema_info VALUES (5);
"""

SKIP = {"names", "mark_rows", "span_rows", "schema_info"}


def contents(db):
    d = sqlite3.connect(db)
    out = {}
    for (t,) in d.execute("SELECT name FROM sqlite_master WHERE ((type = 'table' AND name NOT LIKE 'sqlite_%')"
                          " OR (type = 'view' AND name IN ('marks', 'spans'))) ORDER BY name"):
        if t in SKIP:
            continue
        rows = [tuple(r) for r in d.execute(f'SELECT * FROM "{t}"')]
        out[t] = sorted(rows, key=repr)
    kinds = dict(d.execute("SELECT name, type FROM sqlite_master WHERE name IN ('marks', 'spans')"))
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
    imp("steady", ref)
    imp("steady", old)
    want, want_kinds, want_names, want_version = contents(ref)
    got, got_kinds, got_names, got_version = contents(old)
    check(want_version == 6, f"a new database is version {want_version}, not 6")
    check(got_version == 6, f"the upgraded database is version {got_version}, not 6")
    check(got_kinds == {"marks": "view", "spans": "view"}, f"after the upgrade marks and spans are {got_kinds}")
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
    d.close()

print("schema upgrade: %s" % ("FAIL" if failures else "ok"))
sys.exit(1 if failures else 0)

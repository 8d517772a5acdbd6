#!/usr/bin/env python3
"""test_pg_store.py - the PostgreSQL store against a cluster of its own.

Recordings of the example runtime on two "hosts" (UTS namespaces with their own
host names) go into PostgreSQL and into SQLite, and must give the same rows in
every table: imported whole, one segment at a time (what an archive command
does), and imported again (nothing changes). Then: `report --db` prints what
the SQLite report prints for the same recordings; `export --db` pulls a
recording into an SQLite file that reports the same and that the viewer renders;
the README's `import --db` archive command ships a recording as it is made;
the README's fleet query gives the p99 per host and location that SQLite gives;
concurrent imports of several recordings (two of them twice at once) leave every
row in place once; a dial9 trace gives the same rows as in SQLite; a database
made by an older schema is upgraded in place; `prune --older-than` deletes old recordings, dropping
partitions that hold only them, and leaves the new ones as they were.

usage: test_pg_store.py STALLSCOPE_CLI EXAMPLE_RUNTIME SOURCE_ROOT [VIEWER|'' [MAKE_DIAL9_SEEDS]]
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pgtest  # noqa: E402

cli, runtime, root = sys.argv[1], sys.argv[2], sys.argv[3]
viewer = sys.argv[4] if len(sys.argv) > 4 and sys.argv[4] else None
dial9_seeds = sys.argv[5] if len(sys.argv) > 5 else None
make_early = sys.argv[6] if len(sys.argv) > 6 else None
IGNORE = ("segments.file",)  # the path each import was given


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def record(tmp, host, scenario, secs):
    """A recording made on host `host` (a UTS namespace), rotating every second."""
    out = os.path.join(tmp, host)
    env = dict(os.environ, STALLSCOPE_ENABLED="1", STALLSCOPE_OUTPUT_DIR=out, STALLSCOPE_ROTATION_PERIOD_S="1",
               STALLSCOPE_FILE_PREFIX=host)
    argv = [runtime, "--scenario", scenario, "--duration", str(secs)]
    if shutil.which("unshare") and subprocess.run(["unshare", "--uts", "true"]).returncode == 0:
        argv = ["unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"', host] + argv
    pgtest.run(argv, env=env)
    return out


def segments(d):
    names = [n for n in os.listdir(d) if n.endswith(".bin")]
    return [os.path.join(d, n) for n in sorted(names, key=lambda n: int(n.split(".")[-2]))]


def report(args):
    r = pgtest.run([cli, "report"] + args, ok=(0, 3))
    return r.stdout


def same_report(a, b, what):
    """Equal but for the line (or JSON field) that names the database."""
    la, lb = a.splitlines(), b.splitlines()
    strip = lambda ls: [x for x in ls if not x.startswith("stallscope report: ") and '"database":' not in x]
    if strip(la) != strip(lb):
        import difflib
        print("\n".join(list(difflib.unified_diff(strip(la), strip(lb), lineterm=""))[:40]))
        fail(what)


def sqlite_import(paths, db):
    pgtest.run([cli, "import", "-q"] + paths + ["-o", db])


def pg_import(paths, url):
    pgtest.run([cli, "import", "-q"] + paths + ["--db", url])


def check_same(cluster, dbname, sqlite_db, what):
    problems = pgtest.compare(cluster, dbname, sqlite_db, ignore=IGNORE)
    if problems:
        fail(what + ":\n  " + "\n  ".join(problems))


def main():
    with pgtest.Cluster() as cl, tempfile.TemporaryDirectory(prefix="stallscope-pgtest.") as tmp:
        a = record(tmp, "hosta", "long-poll", 3)
        b = record(tmp, "hostb", "blocking", 3)
        c = record(tmp, "hostc", "steady", 2)
        for d in (a, b):
            if len(segments(d)) < 2:
                fail("%s: fewer than 2 segments" % d)

        # ---- whole recordings, one after the other ------------------------------
        url = cl.createdb("whole")
        ab = os.path.join(tmp, "ab.db")
        for d in (a, b):
            pg_import([d], url)
            sqlite_import([d], ab)
        check_same(cl, "whole", ab, "two hosts imported whole")
        hosts = cl.psql("whole", "SELECT host FROM recordings ORDER BY id").split()
        if hosts != ["hosta", "hostb"] and shutil.which("unshare"):
            fail("hosts are %s" % hosts)
        # Again: nothing changes.
        before = {t: pgtest.pg_rows(cl, "whole", t, pgtest.sqlite_columns(ab, t)) for t in pgtest.TABLES}
        pg_import([a, b], url)
        after = {t: pgtest.pg_rows(cl, "whole", t, pgtest.sqlite_columns(ab, t)) for t in pgtest.TABLES}
        changed = [t for t in pgtest.TABLES if before[t] != after[t]]
        if changed:
            fail("importing the same segments again changed %s" % changed)

        # ---- the README's fleet query: p99 poll by host and spawn location ---------
        readme = open(os.path.join(root, "README.md")).read()
        block = [b for b in readme.split("```sql\n") if b.startswith("-- fleet-query")]
        if not block:
            fail("the README has no '-- fleet-query' SQL block")
        got = [r.split("\t") for r in cl.psql("whole", block[0].split("```")[0]).splitlines()]
        import math
        import sqlite3
        con = sqlite3.connect(ab)
        groups = {}
        for host, loc, dur in con.execute(
                "SELECT r.host, l.function || ' (' || l.file || ':' || l.line || ')', p.dur FROM recordings r"
                " JOIN workers w ON w.recording_id = r.id JOIN polls p ON p.worker_id = w.id"
                " JOIN tasks t ON t.id = p.task_id JOIN locations l ON l.id = t.location_id"):
            groups.setdefault((host or "", loc or ""), []).append(dur)
        con.close()
        if len(got) != min(20, len(groups)) or not got:
            fail("the fleet query returned %d rows for %d host/location groups" % (len(got), len(groups)))
        for host, loc, n, p99 in got:
            durs = sorted(groups.get((host, loc), []))
            want = durs[math.ceil(0.99 * len(durs)) - 1] / 1e6 if durs else None
            if int(n) != len(durs) or want is None or abs(float(p99) - want) > 0.0006:
                fail("fleet query row %s: SQLite says %d polls, p99 %s ms" % ((host, loc, n, p99), len(durs), want))
        if len({r[0] for r in got}) < 2 and shutil.which("unshare"):
            fail("the fleet query shows one host: %s" % got)

        # ---- one segment at a time (an archive command's imports) ----------------
        url_inc = cl.createdb("incremental")
        inc = os.path.join(tmp, "inc.db")
        for d in (a, b):
            for seg in segments(d):
                pg_import([seg], url_inc)
                sqlite_import([seg], inc)
        check_same(cl, "incremental", inc, "segment by segment")

        # ---- samples that reach a segment before their poll's first record --------
        # (per-CPU sample rings are written apart from a worker's hooks: at a
        # segment boundary a sample can land one segment before the poll it falls
        # in). The import of the poll's segment links them: in PostgreSQL only
        # once the recording's workers and polls the stage took back are in the
        # database again. Two built segments make the case every time; small
        # segments of real recordings (a stack at every switch-out) make it when
        # the writer's drains happen to fall so, and must import the same.
        url_early = cl.createdb("early")
        early = os.path.join(tmp, "early.db")

        def import_one_by_one(segs):
            relinked = 0
            for seg in segs:
                unlinked = {r[0] for r in sqlite3.connect(early).execute(
                    "SELECT rowid FROM samples WHERE poll_id IS NULL AND worker_id IS NOT NULL")} \
                    if os.path.exists(early) else set()
                pg_import([seg], url_early)
                sqlite_import([seg], early)
                con = sqlite3.connect(early)
                relinked += sum(1 for (rid,) in con.execute("SELECT rowid FROM samples WHERE poll_id IS NOT NULL")
                                if rid in unlinked)
                con.close()
                problems = pgtest.compare(cl, "early", early, tables=("samples",))
                if problems:
                    fail("after importing %s alone: %s" % (os.path.basename(seg), problems))
            return relinked

        if not make_early:
            fail("no make_early_segments given (argument 6)")
        built = os.path.join(tmp, "built-early")
        os.mkdir(built)
        subprocess.run([make_early, built], check=True)
        if import_one_by_one([os.path.join(built, "early.%d.bin" % i) for i in range(2)]) != 1:
            fail("the built segments' sample at 2.5 s was not linked to the poll of the second segment")
        con = sqlite3.connect(early)
        got = con.execute("SELECT p.ts, p.dur FROM samples s JOIN polls p ON p.id = s.poll_id"
                          " JOIN workers w ON w.id = p.worker_id JOIN recordings r ON r.id = w.recording_id"
                          " WHERE r.host = 'early-host'").fetchall()
        con.close()
        if len(got) != 1 or got[0][1] != 1000000000:
            fail("the built sample's poll: %s (want the 1 s poll of segment 1)" % got)
        relinked = 0
        for attempt in range(2):
            d = os.path.join(tmp, "early%d" % attempt)
            env = dict(os.environ, STALLSCOPE_ENABLED="1", STALLSCOPE_OUTPUT_DIR=d, STALLSCOPE_FILE_PREFIX="early%d" % attempt,
                       STALLSCOPE_MAX_FILE_SIZE="256K", STALLSCOPE_ROTATION_COUNT="1000",
                       STALLSCOPE_OFFCPU_STACKS="all")
            pgtest.run([runtime, "--scenario", "steady", "--duration", "2"], env=env)
            relinked += import_one_by_one(segments(d))
        print("  built segments: the sample linked to the poll of the later segment, the same in both stores;"
              " two recordings of 256 KB segments: %d samples linked to a poll of a later segment" % relinked)
        check_same(cl, "early", early, "small segments, one at a time")

        # ---- the README's import --db archive command, while the program records ----
        readme = open(os.path.join(root, "README.md")).read()
        line = [x for x in readme.splitlines() if x.startswith("STALLSCOPE_ARCHIVE_COMMAND='stallscope import")]
        if not line:
            fail("the README has no 'stallscope import ... --db' archive command")
        url_ar = cl.createdb("archived")
        cmd = line[0].split("'")[1].replace("stallscope", cli, 1)
        cmd = cmd.replace("postgresql://ingest@db.example.com/traces", url_ar.replace("?", "\\?"))
        out = os.path.join(tmp, "archived")
        env = dict(os.environ, STALLSCOPE_ENABLED="1", STALLSCOPE_OUTPUT_DIR=out, STALLSCOPE_ROTATION_PERIOD_S="1",
                   STALLSCOPE_ARCHIVE_COMMAND=cmd, STALLSCOPE_ARCHIVE_TIMEOUT_S="120",
                   STALLSCOPE_METRICS_FILE=os.path.join(out, "metrics.prom"))
        pgtest.run([runtime, "--scenario", "blocking", "--duration", "3"], env=env)
        shipped = [n for n in os.listdir(out) if n.endswith(".bin.shipped")]
        if len(shipped) < 1:
            fail("the import --db archive command shipped nothing while recording")
        # What stop had no time for (a loaded machine: an import of a segment
        # can take seconds) the next runs ship, oldest first.
        for _ in range(8):
            if len(shipped) == len(segments(out)):
                break
            pgtest.run([runtime, "--scenario", "steady", "--duration", "6"],
                       env=dict(env, STALLSCOPE_ROTATION_PERIOD_S="600"))  # one segment more, at stop
            shipped = [n for n in os.listdir(out) if n.endswith(".bin.shipped")]
        if len(shipped) != len(segments(out)):
            fail("the import --db archive command shipped %d of %d segments: %s" % (
                len(shipped), len(segments(out)), open(os.path.join(out, "metrics.prom")).read()))
        # The reference: the same segments imported into SQLite one at a time,
        # recording by recording in the order they reached PostgreSQL (oldest
        # first; one import of the directory would take the recordings in the
        # order of their random session ids instead, and number them so).
        scratch = os.path.join(tmp, "archived-files.db")
        sqlite_import([out], scratch)
        con = sqlite3.connect(scratch)
        files = {}
        for session, f, seq in con.execute("SELECT r.session_id, s.file, s.seq FROM segments s JOIN recordings r"
                                           " ON r.id = s.recording_id ORDER BY s.seq"):
            files.setdefault(str(session), []).append(f)
        con.close()
        arch = os.path.join(tmp, "archived.db")
        for session in cl.psql("archived", "SELECT session_id FROM recordings ORDER BY id").split():
            for f in files[session]:
                sqlite_import([f], arch)
        check_same(cl, "archived", arch, "segments shipped by the import --db archive command")

        # ---- a database of schema version 3 (before dial9's columns) is upgraded to 5 --
        url_up = cl.createdb("upgrade")
        pg_import([a], url_up)
        cl.psql("upgrade", "ALTER TABLE parks DROP COLUMN cpu_begin_ns, DROP COLUMN cpu_end_ns,"
                " DROP COLUMN sched_wait_ns; ALTER TABLE spans DROP COLUMN span_id, DROP COLUMN parent_span_id,"
                " DROP COLUMN fields, DROP COLUMN location_id; ALTER TABLE import_open_spans DROP COLUMN span_id,"
                " DROP COLUMN parent_span_id, DROP COLUMN fields, DROP COLUMN location_id; DROP TABLE other_events;"
                " DELETE FROM schema_info; INSERT INTO schema_info VALUES (3)")
        pg_import([b], url_up)
        check_same(cl, "upgrade", ab, "a version 3 database upgraded by an import")
        if cl.psql("upgrade", "SELECT string_agg(version::text, ',' ORDER BY version) FROM schema_info").strip() != "3,5":
            fail("the upgraded database's schema_info: %s" % cl.psql("upgrade", "SELECT * FROM schema_info"))

        # ---- a dial9 trace (spans with fields, parks with CPU clocks, other_events) ----
        if dial9_seeds:
            seeds, traces = os.path.join(tmp, "d9seeds"), os.path.join(tmp, "d9")
            os.mkdir(seeds)
            os.mkdir(traces)
            pgtest.run([dial9_seeds, seeds])
            shutil.copy(os.path.join(seeds, "synthetic.bin.gz"), os.path.join(traces, "trace.0.bin.gz"))
            url_d9 = cl.createdb("dial9")
            d9 = os.path.join(tmp, "d9.db")
            pg_import([traces], url_d9)
            sqlite_import([traces], d9)
            check_same(cl, "dial9", d9, "a dial9 trace")
            for t, w in (("other_events", "true"), ("spans", "fields IS NOT NULL"),
                         ("parks", "cpu_begin_ns IS NOT NULL")):
                if cl.psql("dial9", "SELECT count(*) FROM %s WHERE %s" % (t, w)).strip() == "0":
                    fail("the dial9 trace has no %s rows where %s in PostgreSQL" % (t, w))

        # ---- report --db is the SQLite report --------------------------------------
        a_only = os.path.join(tmp, "a.db")
        sqlite_import([a], a_only)
        same_report(report([a_only, "--recording", "1"]), report(["--db", url, "--recording", "1"]),
                    "report --db --recording differs from the SQLite report")
        same_report(report([a_only, "--recording", "1", "--json"]),
                    report(["--db", url, "--recording", "1", "--json"]), "report --json differs")
        same_report(report([ab]), report(["--db", url]), "report --db of all recordings differs")
        same_report(report([ab, "--top", "3", "--fail-on", "critical"]),
                    report(["--db", url, "--top", "3", "--fail-on", "critical"]), "report options differ")

        # ---- export --db: a recording pulled into SQLite ----------------------------
        local = os.path.join(tmp, "local.db")
        pgtest.run([cli, "export", "-q", "--db", url, "--recording", "2", "-o", local])
        same_report(report([local]), report(["--db", url, "--host", "hostb", "--from", "-1d", "--to", "now"]),
                    "the pulled recording reports differently from report --db --host")
        for t in pgtest.TABLES:
            if t.startswith("import_"):
                continue
            cols = pgtest.sqlite_columns(local, t)
            mine = pgtest.sqlite_rows(local, t, cols)
            theirs = [r for r in pgtest.sqlite_rows(ab, t, cols)]
            if t in ("recordings",):
                theirs = [r for r in theirs if r[0] == "2"]
            if t == "locations":
                theirs = [r for r in theirs if r in set(mine)]
            owners = {"workers": 1, "threads": 1, "tasks": 1, "segments": 1, "metadata": 0, "mappings": 1, "loss": 0}
            if t in owners:
                theirs = [r for r in theirs if r[owners[t]] == "2"]
            if t not in ("recordings", "locations") + tuple(owners) and len(mine) > len(theirs):
                fail("%s: the pull has rows the import has not" % t)
            if t in ("recordings", "locations") + tuple(owners) and mine != theirs:
                fail("%s: pulled rows differ from the import's" % t)
        pgtest.run([cli, "export", "--db", url, "--recording", "99", "-o", os.path.join(tmp, "x.db")], ok=(1,))
        r = pgtest.run([cli, "export", "--db", url, "--recording", "2", "-o", local], ok=(1,))
        if "exists" not in r.stderr:
            fail("export over an existing file: %s" % r.stderr)
        if viewer:
            png = os.path.join(tmp, "local.png")
            r = subprocess.run([viewer, "--render-png", png, local], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
            if r.returncode != 0 or not os.path.exists(png) or os.path.getsize(png) < 1000:
                fail("the viewer did not render the pulled database: %s" % r.stdout[-1000:])
            with open(png, "rb") as f:
                if f.read(8) != b"\x89PNG\r\n\x1a\n":
                    fail("--render-png did not write a PNG")

        # ---- concurrent imports ------------------------------------------------------
        url_c = cl.createdb("concurrent")
        abc = os.path.join(tmp, "abc.db")
        for d in (a, b, c):
            sqlite_import([d], abc)
        # Order-independent jobs (whole recordings): the outcome of any
        # serialization of them is the same, so it must be that outcome.
        jobs = [[a], [b], [c], [a], [b]]
        procs = [subprocess.Popen([cli, "import", "-q"] + j + ["--db", url_c], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for j in jobs]
        for p, j in zip(procs, jobs):
            out, err = p.communicate(timeout=300)
            if p.returncode != 0:
                fail("concurrent import of %s failed: %s" % (j, err))
        for t in pgtest.TABLES:
            n_sqlite = len(pgtest.sqlite_rows(abc, t, pgtest.sqlite_columns(abc, t)[:1]))
            n_pg = int(cl.psql("concurrent", "SELECT count(*) FROM %s" % t))
            if t == "locations":
                continue  # deduplicated per import; concurrent imports may each add one
            if n_sqlite != n_pg:
                fail("concurrent imports: %s has %d rows, the SQLite import %d" % (t, n_pg, n_sqlite))
        for child, col, parent in [("polls", "worker_id", "workers"), ("polls", "task_id", "tasks"),
                                   ("samples", "thread_id", "threads"), ("wakes", "task_id", "tasks"),
                                   ("workers", "recording_id", "recordings"), ("tasks", "location_id", "locations"),
                                   ("callsites", "frame_id", "frames"), ("frames", "mapping_id", "mappings"),
                                   ("stall_captures", "stall_id", "stalls"), ("samples", "callsite_id", "callsites")]:
            n = int(cl.psql("concurrent", "SELECT count(*) FROM %s x WHERE x.%s IS NOT NULL AND NOT EXISTS"
                            " (SELECT 1 FROM %s y WHERE y.id = x.%s)" % (child, col, parent, col)))
            if n:
                fail("concurrent imports: %d %s.%s point at no %s" % (n, child, col, parent))
        for d, host in ((a, "hosta"), (b, "hostb"), (c, "hostc")):
            one = os.path.join(tmp, host + ".db")
            sqlite_import([d], one)
            s1 = pgtest.run(["sqlite3", one, "SELECT count(*), sum(p.dur), sum(p.ts) FROM polls p"]).stdout.split("|")
            s2 = cl.psql("concurrent", "SELECT count(*), sum(p.dur), sum(p.ts) FROM polls p JOIN workers w ON"
                         " w.id = p.worker_id JOIN recordings r ON r.id = w.recording_id WHERE r.session_id = %s"
                         % pgtest.run(["sqlite3", one, "SELECT session_id FROM recordings"]).stdout.strip()).split("\t")
            if [x.strip() for x in s1] != [x.strip() for x in s2]:
                fail("concurrent imports: %s's polls are %s, alone %s" % (host, s2, s1))

        # ---- prune ----------------------------------------------------------------------
        os.environ["STALLSCOPE_PG_SMALL_PARTITIONS"] = "1"
        url_p = cl.createdb("prune")
        demo = os.path.join(root, "data", "demo")
        old = [os.path.join(demo, d) for d in ("long-poll", "blocking")]
        pg_import(old, url_p)       # recorded long ago
        pg_import([a, b], url_p)    # recorded just now
        del os.environ["STALLSCOPE_PG_SMALL_PARTITIONS"]
        keep = {t: cl.psql("prune", "SELECT count(*) FROM %s t WHERE %s" % (t, w)) for t, w in [
            ("polls", "worker_id IN (SELECT id FROM workers WHERE recording_id IN (3, 4))"),
            ("samples", "thread_id IN (SELECT id FROM threads WHERE recording_id IN (3, 4))"),
            ("tasks", "recording_id IN (3, 4)")]}
        # An age between the demo's (recorded before this run) and the new ones'.
        import time
        demo_end = float(cl.psql("prune", "SELECT max(anchor_real_ns + (last_ts - anchor_mono_ns)) / 1e9 FROM"
                                 " recordings WHERE id IN (1, 2)"))
        new_start = float(cl.psql("prune", "SELECT min(anchor_real_ns + (first_ts - anchor_mono_ns)) / 1e9 FROM"
                                  " recordings WHERE id IN (3, 4)"))
        if new_start - demo_end < 60:
            fail("the demo recordings are not older than this run's (%.0f s apart)" % (new_start - demo_end))
        age = "%ds" % int(time.time() - (demo_end + new_start) / 2)
        r = pgtest.run([cli, "prune", "--db", url_p, "--older-than", age, "--dry-run"])
        if "would delete 2 recordings" not in r.stderr or cl.psql("prune", "SELECT count(*) FROM recordings").strip() != "4":
            fail("prune --dry-run: %s" % r.stderr)
        r = pgtest.run([cli, "prune", "--db", url_p, "--older-than", age])
        if "deleted 2 recordings" not in r.stderr:
            fail("prune: %s" % r.stderr)
        dropped = int(r.stderr.split("recordings older than the cutoff, ")[1].split()[0])
        if dropped < 1:
            fail("prune dropped no partition: %s" % r.stderr)
        left = cl.psql("prune", "SELECT string_agg(host, ',' ORDER BY host) FROM recordings").strip()
        if left != "hosta,hostb" and shutil.which("unshare"):
            fail("after prune the recordings are %s" % left)
        for t, w in [("polls", "true"), ("samples", "true"), ("tasks", "true")]:
            if cl.psql("prune", "SELECT count(*) FROM %s" % t) != keep[t]:
                fail("prune changed the rows of the recordings it kept (%s)" % t)
        for t in ("threads", "workers", "segments", "mappings", "frames", "callsites", "wakes", "stalls"):
            n = cl.psql("prune", "SELECT count(*) FROM %s WHERE %s" % (t, {
                "threads": "recording_id NOT IN (3, 4)", "workers": "recording_id NOT IN (3, 4)",
                "segments": "recording_id NOT IN (3, 4)", "mappings": "recording_id NOT IN (3, 4)",
                "frames": "mapping_id NOT IN (SELECT id FROM mappings)",
                "callsites": "frame_id NOT IN (SELECT id FROM frames)",
                "wakes": "task_id NOT IN (SELECT id FROM tasks)",
                "stalls": "thread_id NOT IN (SELECT id FROM threads)"}[t])).strip()
            if n != "0":
                fail("prune left %s rows of deleted recordings in %s" % (n, t))
        r = pgtest.run([cli, "prune", "--db", url_p, "--older-than", age])
        if "no recording older than" not in r.stderr:
            fail("a second prune: %s" % r.stderr)
        pgtest.run([cli, "prune", "--db", url_p, "--older-than", "soon"], ok=(1,))
        print("pg store: ok")


main()

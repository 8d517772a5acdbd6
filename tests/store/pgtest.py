"""pgtest.py - what the PostgreSQL store's tests share: a throwaway cluster
(initdb in a temporary directory, a Unix socket only, no TCP), table dumps of
both stores in one comparable form, and running the CLI.

A cluster runs as an unprivileged user (PostgreSQL refuses root): `postgres`
when Debian's package made it, else `nobody`. Tests that cannot have one exit
77 (SKIP) with the reason.
"""
import os
import pwd
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import glob

SKIP = 77


def skip(why):
    print("SKIP:", why)
    sys.exit(SKIP)


def pg_bindir():
    for d in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if os.path.exists(os.path.join(d, "initdb")) and os.path.exists(os.path.join(d, "pg_ctl")):
            return d
    p = shutil.which("initdb")
    return os.path.dirname(p) if p else None


class Cluster:
    """initdb + pg_ctl start in a temporary directory; stop() removes it."""

    def __init__(self):
        self.bindir = pg_bindir()
        if not self.bindir:
            skip("PostgreSQL server binaries (initdb, pg_ctl) are not installed (Debian: postgresql)")
        if not shutil.which("psql"):
            skip("psql is not installed (Debian: postgresql-client)")
        self.dir = tempfile.mkdtemp(prefix="stallscope-pg.")
        os.chmod(self.dir, 0o755)
        self.run_as = None
        if os.geteuid() == 0:
            for name in ("postgres", "nobody"):
                try:
                    pw = pwd.getpwnam(name)
                except KeyError:
                    continue
                self.run_as = name
                os.chown(self.dir, pw.pw_uid, pw.pw_gid)
                break
            if not self.run_as:
                skip("running as root and no unprivileged user (postgres, nobody) to run PostgreSQL as")
        self.data = os.path.join(self.dir, "data")
        self.started = False
        r = self._as_user([os.path.join(self.bindir, "initdb"), "-D", self.data, "-A", "trust", "-U", "postgres",
                           "-E", "UTF8", "--locale=C"])
        if r.returncode != 0:
            self.stop()
            skip("initdb failed: " + r.stdout[-500:])
        # No TCP at all: the socket in the cluster's directory is the only way in.
        opts = "-k %s -c listen_addresses= -F -c max_connections=40 -c shared_buffers=64MB" % self.dir
        r = self._as_user([os.path.join(self.bindir, "pg_ctl"), "-D", self.data, "-o", opts, "-l",
                           os.path.join(self.dir, "log"), "-w", "-t", "60", "start"])
        if r.returncode != 0:
            log = open(os.path.join(self.dir, "log")).read() if os.path.exists(os.path.join(self.dir, "log")) else ""
            self.stop()
            skip("the PostgreSQL server did not start: " + (r.stdout + log)[-800:])
        self.started = True

    def _as_user(self, argv):
        if self.run_as:
            argv = ["runuser", "-u", self.run_as, "--"] + argv
        return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=self.dir)

    def url(self, db):
        return "postgresql://postgres@/%s?host=%s" % (db, self.dir)

    def createdb(self, name):
        self.psql("postgres", "CREATE DATABASE %s" % name)
        return self.url(name)

    def psql(self, db, sql):
        r = subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-At", "-F", "\t", self.url(db), "-c", sql],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            raise RuntimeError("psql: %s: %s" % (sql[:200], r.stderr))
        return r.stdout

    def stop(self):
        if self.started:
            self._as_user([os.path.join(self.bindir, "pg_ctl"), "-D", self.data, "-m", "immediate", "-w", "stop"])
            self.started = False
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.stop()


# Columns of SQLite's layout only: polls' queue reports (schema 11) are rows
# of queue_depths, which PostgreSQL keeps as a table, compared as such.
SQLITE_ONLY = {"polls.queue_lead", "polls.queue_local", "polls.queue_global"}


def sqlite_columns(path, table):
    """The columns of an SQLite table that PostgreSQL mirrors."""
    con = sqlite3.connect(path)
    cols = [r[1] for r in con.execute("PRAGMA table_info(%s)" % table)
            if "%s.%s" % (table, r[1]) not in SQLITE_ONLY]
    con.close()
    return cols


TABLES = ["recordings", "metadata", "segments", "loss", "threads", "workers", "locations", "tasks", "polls",
          "parks", "wakes", "queue_depths", "marks", "spans", "cpu_intervals", "samples", "stalls",
          "stall_captures", "task_dumps", "other_events", "mappings", "frames", "callsites", "worker_summaries",
          "import_thread_state", "import_ended_tasks", "import_open_spans", "import_open_summary"]


def q(c):
    return '"%s"' % c


def sqlite_rows(path, table, cols):
    con = sqlite3.connect(path)
    con.text_factory = lambda b: b.decode("utf-8", "replace")
    rows = sorted(tuple("\\N" if v is None else str(v) for v in r)
                  for r in con.execute("SELECT %s FROM %s" % (",".join(q(c) for c in cols), table)))
    con.close()
    return rows


COPY_ESC = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\"}


def copy_field(f):
    """A field of COPY's text format as its value (\\N, NULL, stays as it is)."""
    if f == "\\N" or "\\" not in f:
        return f
    out, i = [], 0
    while i < len(f):
        if f[i] == "\\" and i + 1 < len(f):
            out.append(COPY_ESC.get(f[i + 1], f[i + 1]))
            i += 2
        else:
            out.append(f[i])
            i += 1
    return "".join(out)


def pg_rows(cluster, db, table, cols):
    out = cluster.psql(db, "COPY (SELECT %s FROM %s) TO STDOUT" % (",".join(q(c) for c in cols), table))
    return sorted(tuple(copy_field(f) for f in line.split("\t")) for line in out.splitlines())


def compare(cluster, db, sqlite_path, tables=TABLES, ignore=()):
    """Differences between the two stores, table by table (columns of the
    SQLite schema; 'segments.file' and the like can be ignored)."""
    problems = []
    for t in tables:
        cols = [c for c in sqlite_columns(sqlite_path, t) if "%s.%s" % (t, c) not in ignore]
        a, b = sqlite_rows(sqlite_path, t, cols), pg_rows(cluster, db, t, cols)
        if a != b:
            sa, sb = set(a), set(b)
            problems.append("%s: %d rows in SQLite, %d in PostgreSQL; only in SQLite %s; only in PostgreSQL %s"
                            % (t, len(a), len(b), sorted(sa - sb)[:3], sorted(sb - sa)[:3]))
    return problems


def run(argv, ok=(0,), **kw):
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    if r.returncode not in ok:
        raise RuntimeError("%s exited %d:\n%s%s" % (" ".join(argv), r.returncode, r.stdout[-2000:], r.stderr[-2000:]))
    return r

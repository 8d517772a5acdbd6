#!/usr/bin/env python3
"""bench_poll_blocks.py DB [BLOCK...] - what the polls of an imported database
would take on disk if poll ids were handed out in per-worker blocks (a worker
takes the next BLOCK ids of the counter when its block runs out, at each
POLL_BEGIN in id order), so that rowid order is (worker_id, ts) order within a
block and `polls_by_worker` is not needed. The rows are written as the importer
writes them: when the poll ends, in batches of 32768 sorted by id (a block
still being filled puts its rows in the middle of the table, leaving free
space). Prints the table's bytes and free space for each BLOCK (default 4096
and 65536) against the database's polls and polls_by_worker. An estimate for
a design, not a test: the rows are the database's own (ts, dur, ids), written
into a scratch database beside it with the importer's page size. Schema 7 took
another road (poll_chunks, ids kept; README "Performance"): this script stays
for the figures quoted there, and on a schema 7 database it compares against
polls alone (there is no polls_by_worker to count).
"""
import os
import sqlite3
import sys
import tempfile

BATCH = 32768


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(0 if len(sys.argv) >= 2 else 2)
    src = sys.argv[1]
    if not os.path.isfile(src):
        sys.exit(f"{src}: no such database")
    try:
        blocks = [int(b) for b in sys.argv[2:]] or [4096, 65536]
    except ValueError:
        sys.exit("BLOCK must be a number of ids")
    if any(b < 1 for b in blocks):
        sys.exit("BLOCK must be at least 1")
    s = sqlite3.connect(f"file:{src}?mode=ro", uri=True)
    try:
        rows = s.execute("SELECT id, worker_id, task_id, location_id, ts, dur, incomplete FROM polls"
                         " ORDER BY id").fetchall()
        have = dict(s.execute("SELECT name, sum(pgsize) FROM dbstat WHERE name IN ('polls', 'polls_by_worker')"
                              " GROUP BY name"))
        events = s.execute("SELECT sum(events) FROM segments").fetchone()[0] or 0
    except sqlite3.Error as e:
        sys.exit(f"{src}: {e}")
    s.close()
    now = have.get("polls", 0) + have.get("polls_by_worker", 0)
    print(f"{src}: {len(rows)} polls, {events} events; polls {have.get('polls', 0)} bytes +"
          f" polls_by_worker {have.get('polls_by_worker', 0)} = {now}"
          + (f" ({now / events:.2f} bytes/event)" if events else ""))
    for b in blocks:
        nxt, cur, out = 1, {}, []
        for r in rows:
            lo, hi = cur.get(r[1], (0, 0))
            if lo >= hi:
                lo, hi = nxt, nxt + b
                nxt += b
            cur[r[1]] = (lo + 1, hi)
            out.append((lo,) + tuple(r[1:]))
        out.sort(key=lambda r: r[4] + r[5])
        with tempfile.TemporaryDirectory(prefix="stallscope-poll-blocks.", dir=os.path.dirname(os.path.abspath(src))) as tmp:
            d = sqlite3.connect(os.path.join(tmp, "polls.db"))
            d.execute("PRAGMA page_size=65536")
            d.execute("PRAGMA journal_mode=OFF")
            d.execute("CREATE TABLE polls (id INTEGER PRIMARY KEY, worker_id INTEGER NOT NULL, task_id INTEGER,"
                      " location_id INTEGER, ts INTEGER NOT NULL, dur INTEGER NOT NULL,"
                      " incomplete INTEGER NOT NULL DEFAULT 0)")
            for i in range(0, len(out), BATCH):
                d.executemany("INSERT INTO polls VALUES (?,?,?,?,?,?,?)", sorted(out[i:i + BATCH]))
            d.commit()
            size, unused = d.execute("SELECT sum(pgsize), sum(unused) FROM dbstat WHERE name = 'polls'").fetchone()
            d.close()
        print(f"blocks of {b}: polls {size} bytes ({100.0 * unused / size:.1f}% free), no polls_by_worker:"
              f" {size / now:.3f} of now" + (f", {(now - size) / events:.2f} bytes/event less" if events else ""))


if __name__ == "__main__":
    main()

-- stallscope.sql - the SQLite schema that `stallscope import` writes and that users
-- query with plain SQL (`sqlite3 trace.db`). The table and column names are an
-- interface: scripts depend on them, so names are only ever added, never changed.
--
-- Conventions, for every table:
--  * Times are INTEGER nanoseconds of CLOCK_MONOTONIC on the recording machine:
--    `ts` is where something starts, `dur` how long it lasted. Wall-clock time of a
--    `ts` is recordings.anchor_real_ns + (ts - recordings.anchor_mono_ns).
--    Timestamps of two recordings are comparable only when their boot_id is equal.
--  * `id` columns are synthetic ids given by the importer (stable within one
--    database, meaningless outside it). Operating-system tids are reused, so rows
--    refer to threads through threads.id, never through a tid.
--  * 64-bit unsigned values from the trace (session ids, addresses) are stored as
--    the signed 64-bit integer with the same bits.
--  * `incomplete` = 1 marks an interval whose end is not in the data (the poll,
--    park or span was still open where the imported data ends); its dur then runs
--    to the last event seen on that thread, so it is a lower bound, never a
--    phantom long poll. Filter with `WHERE NOT incomplete` for statistics.
--
-- The file is applied by the importer on every import; every statement is
-- idempotent (IF NOT EXISTS). Indexes are created after bulk loading (see the end).

-- One row per schema version applied; the importer refuses a newer database.
CREATE TABLE IF NOT EXISTS schema_info (
  version INTEGER NOT NULL          -- 11 for this file (an older database gets the
                                    -- columns added since at its next import)
);

-- One row per recorded process run (a recording = a session_id of the segment
-- header: every segment a process wrote between start and stop). A dial9 trace
-- has no session id: the dial9 files of one directory with one file prefix
-- (PREFIX.N.bin, .bin.gz, .bin.active) are one recording, whose session_id is a
-- hash of that directory and prefix; their pid, executable and boot_id are NULL,
-- host is the segment metadata's "host" entry if any, and the anchor is the first
-- clock sync (ClockSyncEvent) of the first file imported.
CREATE TABLE IF NOT EXISTS recordings (
  id INTEGER PRIMARY KEY,
  session_id INTEGER NOT NULL UNIQUE, -- random 64-bit id from the segment headers
  pid INTEGER,                      -- recorded process id
  executable TEXT,                  -- path of the recorded executable
  host TEXT,                        -- uname nodename of the recording machine
  boot_id TEXT,                     -- /proc/sys/kernel/random/boot_id at recording time
  anchor_mono_ns INTEGER,           -- a CLOCK_MONOTONIC reading (ns) ...
  anchor_real_ns INTEGER,           -- ... and the CLOCK_REALTIME reading (ns since 1970) taken with it
  first_ts INTEGER,                 -- earliest event imported (ns), NULL before any
  last_ts INTEGER,                  -- latest event imported (ns)
  arch TEXT                         -- the recording machine's architecture ('x86_64', 'aarch64'),
                                    -- NULL when the segments did not say (older recorders)
);

-- Session metadata (META records): configuration, versions, sampler mode and why
-- other sampler modes were refused. For a dial9 recording: the entries of its
-- segment metadata (SegmentMetadataEvent: service, host, "runtime.NAME" = its
-- worker ids, ...) as they are, plus 'trace.format' = 'dial9-trace-format 1' and
-- 'dial9.sample_period_ns', the CPU sampling period the import estimated (dial9
-- does not record it; it is the weight of each CPU sample).
CREATE TABLE IF NOT EXISTS metadata (
  recording_id INTEGER NOT NULL REFERENCES recordings(id),
  key TEXT NOT NULL,
  value TEXT,
  PRIMARY KEY (recording_id, key)
) WITHOUT ROWID;

-- One row per segment file imported. A segment is identified by (recording_id,
-- seq), not by its path, so `PREFIX.N.bin.active` that later became
-- `PREFIX.N.bin` is the same segment and a re-import only adds what grew.
-- For a dial9 file, blocks are its streams (the batches that begin with a
-- header), offsets count bytes of the decompressed stream, sealed means the name
-- does not end in .active, and damage is that of the first damaged stream (the
-- importer's warnings list every one; reading resumes at the next header).
CREATE TABLE IF NOT EXISTS segments (
  id INTEGER PRIMARY KEY,
  recording_id INTEGER NOT NULL REFERENCES recordings(id),
  file TEXT NOT NULL,               -- path as given to the last import of it
  seq INTEGER NOT NULL,             -- the N of PREFIX.N.bin
  start_ts INTEGER,                 -- segment start (header), ns
  end_ts INTEGER,                   -- segment end: footer end_ts when sealed, else the last imported event, ns
  sealed INTEGER NOT NULL,          -- 1 when a footer was read (the segment is final)
  blocks INTEGER NOT NULL,          -- intact blocks imported so far (footer included)
  bytes INTEGER NOT NULL,           -- file size when imported, bytes
  intact_bytes INTEGER NOT NULL,    -- bytes up to the end of the last intact block
  events INTEGER NOT NULL,          -- event records imported (as the format counts them: LOSS excluded)
  damage TEXT,                      -- NULL, 'truncated', 'corrupt' or 'io': what ended reading
  damage_offset INTEGER,            -- file offset of the damaged block or header, bytes
  damage_block INTEGER,             -- index of the damaged block (NULL for the header)
  damage_reason TEXT,               -- the reader's message
  note TEXT,                        -- non-fatal disagreements (footer counts vs data)
  UNIQUE (recording_id, seq)
);

-- Lost data: events the recorder dropped (LOSS records, source 'events') and
-- samples the sampler lost (SAMPLER_LOSS records, source 'samples').
CREATE TABLE IF NOT EXISTS loss (
  recording_id INTEGER NOT NULL REFERENCES recordings(id),
  thread_id INTEGER REFERENCES threads(id), -- NULL: process-wide, or any thread
  ts INTEGER NOT NULL,              -- first lost item, ns
  dur INTEGER NOT NULL,             -- last lost item minus first, ns
  count INTEGER NOT NULL,           -- items lost
  source TEXT NOT NULL,             -- 'events' or 'samples'
  reason TEXT                       -- e.g. 'buffer-full', 'write-failed', 'kernel', 'throttle'
);

-- Threads. One row per recorder thread number of a recording (numbers are never
-- reused in a session, unlike tids), plus one per tid seen only by the sampler.
CREATE TABLE IF NOT EXISTS threads (
  id INTEGER PRIMARY KEY,
  recording_id INTEGER NOT NULL REFERENCES recordings(id),
  thread INTEGER,                   -- recorder thread number; NULL for sampler-only threads
  tid INTEGER,                      -- OS thread id (reused by the OS: do not join on it)
  name TEXT,                        -- last known name (THREAD_DEF, COMM)
  exit_ts INTEGER                   -- when the thread ended (THREAD_EXIT), ns; NULL if unknown
);

-- Worker lanes: a thread that runs a runtime's tasks (THREAD_DEF worker flag or
-- WORKER_BEGIN). One per thread.
CREATE TABLE IF NOT EXISTS workers (
  id INTEGER PRIMARY KEY,
  recording_id INTEGER NOT NULL REFERENCES recordings(id),
  thread_id INTEGER NOT NULL REFERENCES threads(id),
  runtime TEXT,                     -- runtime name given to stallscope_worker_begin
  idx INTEGER,                      -- worker index within the runtime
  begin_ts INTEGER,                 -- WORKER_BEGIN, ns (NULL: before the data)
  end_ts INTEGER                    -- WORKER_END, ns (NULL: not seen)
);

-- Source locations named by the runtime (spawn and poll sites), deduplicated by
-- content across the whole database.
CREATE TABLE IF NOT EXISTS locations (
  id INTEGER PRIMARY KEY,
  file TEXT,
  line INTEGER,
  function TEXT
);

-- Tasks: one row per task number of a recording, from its SPAWN (or its first
-- appearance when it was spawned before the data began) to its TERMINATE.
-- `tasks` is a view of task_rows with the documented columns (schema version 8
-- moved the rows, and moves those of an older database at its next import):
-- query tasks. task_rows leaves out what the row already says, which was a
-- third of a task's bytes: the task number when it equals id (the importer
-- numbers a recording's tasks as the runtime does, so it mostly does), and the
-- end as a lifetime (a few bytes) instead of a second absolute time (six).
-- An INSERT into tasks still works (a trigger writes task_rows); update and
-- delete task_rows, whose id is tasks.id.
--   tasks: id, recording_id,
--     task,                           -- the runtime's task number
--     location_id, parent_task_id, spawn_ts, -- as in task_rows
--     end_ts,                         -- TERMINATE, ns; NULL while alive at the end of the data
--     spawn_thread_id                 -- as in task_rows
CREATE TABLE IF NOT EXISTS task_rows (
  id INTEGER PRIMARY KEY,
  recording_id INTEGER NOT NULL REFERENCES recordings(id),
  task INTEGER,                     -- the runtime's task number; NULL: equal to id
  location_id INTEGER REFERENCES locations(id), -- spawn location (else first poll location)
  parent_task_id INTEGER REFERENCES task_rows(id), -- the task being polled where it was spawned
  spawn_ts INTEGER,                 -- ns; NULL when spawned before the data
  life INTEGER,                     -- end_ts - spawn_ts, ns (end_ts itself when spawn_ts is NULL);
                                    -- NULL while alive at the end of the data
  spawn_thread_id INTEGER REFERENCES threads(id) -- thread that spawned it
);
CREATE VIEW IF NOT EXISTS tasks AS
SELECT t.id AS id, t.recording_id AS recording_id, coalesce(t.task, t.id) AS task,
       t.location_id AS location_id, t.parent_task_id AS parent_task_id, t.spawn_ts AS spawn_ts,
       coalesce(t.spawn_ts, 0) + t.life AS end_ts, t.spawn_thread_id AS spawn_thread_id
  FROM task_rows t;
CREATE TRIGGER IF NOT EXISTS tasks_insert INSTEAD OF INSERT ON tasks
BEGIN
  SELECT RAISE(ABORT, 'NOT NULL constraint failed: tasks.task') WHERE NEW.task IS NULL;
  INSERT INTO task_rows(id, recording_id, task, location_id, parent_task_id, spawn_ts, life,
                        spawn_thread_id)
    VALUES (NEW.id, NEW.recording_id, CASE WHEN NEW.id IS NULL OR NEW.task <> NEW.id THEN NEW.task END,
            NEW.location_id, NEW.parent_task_id, NEW.spawn_ts, NEW.end_ts - coalesce(NEW.spawn_ts, 0),
            NEW.spawn_thread_id);
END;

-- Polls: a worker running a task from POLL_BEGIN to POLL_END. Polls that cross a
-- segment boundary are one row (stitched through THREAD_DEF's open poll). The
-- thread is workers.thread_id.
-- The queue_* columns hold a row of queue_depths (schema version 11): a
-- runtime reports its queues at every poll, and a row of its own cost a report
-- 19 bytes, in a poll's row 5. Query queue_depths, which lists them.
CREATE TABLE IF NOT EXISTS polls (
  id INTEGER PRIMARY KEY,
  worker_id INTEGER NOT NULL REFERENCES workers(id),
  task_id INTEGER REFERENCES task_rows(id),
  location_id INTEGER REFERENCES locations(id),
  ts INTEGER NOT NULL,              -- POLL_BEGIN, ns
  dur INTEGER NOT NULL,             -- POLL_END - POLL_BEGIN, ns (lower bound when incomplete)
  incomplete INTEGER NOT NULL DEFAULT 0, -- 1: no POLL_END in the data
  queue_lead INTEGER,               -- the worker's last queue report before this poll's end,
                                    -- when it changed the depths: ts minus the report's ts, ns
                                    -- (negative: during the poll); NULL: none here
  queue_local INTEGER,              -- that report's local and global depths, as in
  queue_global INTEGER              -- queue_depths
);

-- How to find a worker's polls in a time range without an index on polls (one
-- would cost a sixth of the database): the importer hands out poll ids in time
-- order across all workers, and writes a row here for each run of up to 64
-- polls of one worker in start order, spanning at most 64 poll ids (never
-- split between polls that start at one ts): its first poll's start and its
-- lowest and highest poll id. Every
-- poll of the worker starting from a chunk's ts up to the next chunk's has an
-- id in that chunk's range, so a worker's polls starting in [A, B] are among
-- the polls with ids between min(id_lo) and max(id_hi) of its chunks with
--   ts <= B AND ts >= coalesce((SELECT max(ts) FROM poll_chunks
--                               WHERE worker_id = W AND ts <= A), A)
-- (a rowid range of polls; README, "Importing into SQLite", shows the query).
-- A program that inserts polls itself must add their chunks (README says how).
-- Schema version 7 replaced the polls_by_worker index with this table, and
-- builds it for an older database at its next import.
CREATE TABLE IF NOT EXISTS poll_chunks (
  worker_id INTEGER NOT NULL REFERENCES workers(id),
  ts INTEGER NOT NULL,              -- start of the chunk's first poll, ns
  id_lo INTEGER NOT NULL,           -- lowest polls.id in the chunk
  id_hi INTEGER NOT NULL,           -- highest polls.id in the chunk
  PRIMARY KEY (worker_id, ts)
) WITHOUT ROWID;

-- Parks: a worker sleeping for lack of work, PARK to UNPARK.
-- Stored in (worker_id, ts) order (a table without rowid, whose key is
-- worker_id, ts, dur, incomplete): a worker's parks in a time range are a range
-- of the table itself, so no index is needed (schema version 5 dropped
-- parks_by_worker, and rebuilt the table of an older database this way). Rows
-- have no rowid. A park equal in all four key columns to one already stored
-- (a zero-length park repeated at one instant, or damaged timestamps) is
-- stored once.
CREATE TABLE IF NOT EXISTS parks (
  worker_id INTEGER NOT NULL REFERENCES workers(id),
  ts INTEGER NOT NULL,              -- PARK, ns
  dur INTEGER NOT NULL,             -- UNPARK - PARK, ns
  incomplete INTEGER NOT NULL DEFAULT 0,
  -- What the runtime measured of the parking thread (dial9 traces; NULL when not
  -- reported): its CPU clock (CLOCK_THREAD_CPUTIME_ID) at the park and at the
  -- unpark, so cpu_end_ns - cpu_begin_ns is CPU burnt while "parked" (spinning)
  -- and the next park's cpu_begin_ns - this cpu_end_ns the CPU of the busy
  -- stretch between; and the time it waited for a CPU (runnable, not running)
  -- between park and unpark, from the kernel's schedstat.
  cpu_begin_ns INTEGER,
  cpu_end_ns INTEGER,
  sched_wait_ns INTEGER,
  PRIMARY KEY (worker_id, ts, dur, incomplete)
) WITHOUT ROWID;

-- Wakes: a thread (usually while polling a task) made a task runnable.
-- Rows with a poll_id are stored in increasing poll_id order (rowid order), so a
-- poll's wake is found by a binary search on rowid without an index (the viewer
-- does this); for SQL, CREATE INDEX wakes_by_poll ON wakes(poll_id) if needed.
CREATE TABLE IF NOT EXISTS wakes (
  task_id INTEGER REFERENCES task_rows(id),  -- the woken task
  ts INTEGER NOT NULL,              -- the wake, ns
  waker_thread_id INTEGER REFERENCES threads(id),
  waker_task_id INTEGER REFERENCES task_rows(id), -- task being polled by the waker, NULL if none
  poll_id INTEGER REFERENCES polls(id),  -- the poll of the woken task that this wake led to
  delay INTEGER                     -- wake-to-poll delay of that poll, ns: from the wake (or,
                                    -- when the wake arrived during a poll of the same task,
                                    -- from that poll's end) to poll_id's start. NULL when
                                    -- no later poll is in the data, or a later wake of the
                                    -- same task before the poll superseded this one.
);

-- Queue depths reported by the runtime (QUEUE records): a row when a thread's
-- reported pair (local, global) differs from its previous report, so the table is
-- the exact step function of the depths without the repeats (runtimes report at
-- every poll). A depth the report does not carry is NULL (dial9 reports a
-- worker's local queue at its polls and parks, and the global queue apart).
-- `queue_depths` is a view of queue_rows, which leaves out the worker: that is
-- the reporting thread's lane in workers (schema version 8; an older database's
-- rows move at its next import), and of the reports a worker's polls carry
-- (polls.queue_*: since schema version 11 a worker's report goes into the
-- next poll it ends, queue_rows keeps the others; rows of an older database
-- stay where they are). Query queue_depths, and order by ts: the view lists
-- queue_rows, then the polls'. An INSERT into it still works (it goes to
-- queue_rows; its worker_id is not stored).
CREATE TABLE IF NOT EXISTS queue_rows (
  thread_id INTEGER NOT NULL REFERENCES threads(id),
  ts INTEGER NOT NULL,
  local INTEGER,                    -- the worker's local run queue length
  global INTEGER                    -- the shared (injection) queue length
);
CREATE VIEW IF NOT EXISTS queue_depths AS
SELECT q.thread_id AS thread_id,
       (SELECT min(w.id) FROM workers w WHERE w.thread_id = q.thread_id) AS worker_id, -- NULL: not a worker
       q.ts AS ts, q.local AS local, q.global AS global
  FROM queue_rows q
UNION ALL
SELECT w.thread_id, w.id, p.ts - p.queue_lead, p.queue_local, p.queue_global
  FROM polls p JOIN workers w ON w.id = p.worker_id
 WHERE p.queue_lead IS NOT NULL;
CREATE TRIGGER IF NOT EXISTS queue_depths_insert INSTEAD OF INSERT ON queue_depths
BEGIN
  INSERT INTO queue_rows(thread_id, ts, local, global) VALUES (NEW.thread_id, NEW.ts, NEW.local, NEW.global);
END;

-- The names of marks and spans, each stored once (a program names its marks
-- and spans with a few constant strings, and a text in every row was a third
-- of their bytes). Ids are stable within one database.
CREATE TABLE IF NOT EXISTS names (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE
);

-- Application marks: a named value at a point in time. `marks` is a view of
-- mark_rows with the name spelled out (schema version 6 moved the rows, and
-- moves those of an older database at its next import); query marks. An
-- INSERT into marks still works (a trigger stores its name in names).
CREATE TABLE IF NOT EXISTS mark_rows (
  thread_id INTEGER NOT NULL REFERENCES threads(id),
  ts INTEGER NOT NULL,
  name_id INTEGER REFERENCES names(id), -- NULL: no name
  value INTEGER
);
CREATE VIEW IF NOT EXISTS marks AS
SELECT m.thread_id AS thread_id, m.ts AS ts, n.name AS name, m.value AS value
  FROM mark_rows m LEFT JOIN names n ON n.id = m.name_id;
CREATE TRIGGER IF NOT EXISTS marks_insert INSTEAD OF INSERT ON marks
BEGIN
  INSERT OR IGNORE INTO names(name) SELECT NEW.name WHERE NEW.name IS NOT NULL;
  INSERT INTO mark_rows(thread_id, ts, name_id, value)
    VALUES (NEW.thread_id, NEW.ts, (SELECT id FROM names WHERE name = NEW.name), NEW.value);
END;

-- Application spans (SPAN_BEGIN..SPAN_END on one thread, properly nested).
-- dial9's tracing spans: one row per enter..exit (an async span entered at each
-- poll is one row per poll, all with its span_id). `spans` is a view with the
-- documented columns below; query spans. Its rows are stored in two tables
-- (schema version 8; version 6 had span_rows, which an older database's next
-- import splits): span_full, a row with every column for a span that has a
-- span id, parent, fields or location (dial9's), and span_cells for the others
-- (a stallscope recording's spans, whose four NULLs were a fifth of a row's
-- bytes), with the depth and incomplete flag in one small integer. Both refer
-- to their name by names.id. The view lists span_cells' rows, then
-- span_full's. An INSERT into spans still works (a trigger stores its name in
-- names and the row in the table it belongs to).
--   spans: thread_id, ts, dur,
--     name,                           -- NULL: no name
--     depth,                          -- nesting depth on the thread, 0 = outermost
--     incomplete,
--     span_id,                        -- the trace's own span id, NULL if none
--     parent_span_id,                 -- the span id of its declared parent, NULL if none
--     fields,                         -- its fields as a JSON object (json_extract(fields, '$.key')), NULL if none
--     location_id                     -- where it is declared (function = target::name), NULL if unknown
CREATE TABLE IF NOT EXISTS span_cells (
  thread_id INTEGER NOT NULL REFERENCES threads(id),
  ts INTEGER NOT NULL,
  dur INTEGER NOT NULL,
  name_id INTEGER REFERENCES names(id), -- NULL: no name
  shape INTEGER NOT NULL            -- depth * 2 + incomplete
);
CREATE TABLE IF NOT EXISTS span_full (
  thread_id INTEGER NOT NULL REFERENCES threads(id),
  ts INTEGER NOT NULL,
  dur INTEGER NOT NULL,
  name_id INTEGER REFERENCES names(id), -- NULL: no name
  depth INTEGER NOT NULL,
  incomplete INTEGER NOT NULL DEFAULT 0,
  span_id INTEGER,
  parent_span_id INTEGER,
  fields TEXT,
  location_id INTEGER REFERENCES locations(id)
);
CREATE VIEW IF NOT EXISTS spans AS
SELECT s.thread_id AS thread_id, s.ts AS ts, s.dur AS dur, n.name AS name, s.shape >> 1 AS depth,
       s.shape & 1 AS incomplete, NULL AS span_id, NULL AS parent_span_id, NULL AS fields,
       NULL AS location_id
  FROM span_cells s LEFT JOIN names n ON n.id = s.name_id
UNION ALL
SELECT f.thread_id, f.ts, f.dur, n.name, f.depth, f.incomplete, f.span_id, f.parent_span_id, f.fields,
       f.location_id
  FROM span_full f LEFT JOIN names n ON n.id = f.name_id;
CREATE TRIGGER IF NOT EXISTS spans_insert INSTEAD OF INSERT ON spans
BEGIN
  INSERT OR IGNORE INTO names(name) SELECT NEW.name WHERE NEW.name IS NOT NULL;
  INSERT INTO span_cells(thread_id, ts, dur, name_id, shape)
    SELECT NEW.thread_id, NEW.ts, NEW.dur, (SELECT id FROM names WHERE name = NEW.name),
           NEW.depth * 2 + (coalesce(NEW.incomplete, 0) <> 0)
     WHERE NEW.span_id IS NULL AND NEW.parent_span_id IS NULL AND NEW.fields IS NULL
       AND NEW.location_id IS NULL;
  INSERT INTO span_full(thread_id, ts, dur, name_id, depth, incomplete, span_id, parent_span_id, fields,
                        location_id)
    SELECT NEW.thread_id, NEW.ts, NEW.dur, (SELECT id FROM names WHERE name = NEW.name), NEW.depth,
           coalesce(NEW.incomplete, 0), NEW.span_id, NEW.parent_span_id, NEW.fields, NEW.location_id
     WHERE NEW.span_id IS NOT NULL OR NEW.parent_span_id IS NOT NULL OR NEW.fields IS NOT NULL
        OR NEW.location_id IS NOT NULL;
END;

-- On/off-CPU intervals of sampled threads, from SWITCH records: 'on-cpu' from a
-- switch-in to the next switch-out, 'blocked' from a switch-out while waiting to
-- the next switch-in, 'preempted' the same when the thread was still runnable.
-- Where a recording's META "switches" says a worker's switches inside its parks
-- were not recorded (FORMAT.md, SWITCH), the worker has no row from each park's
-- start to its end: 'on-cpu' ends at the park and begins again at its end (cpu
-- NULL: the thread runs its unpark, on a CPU not recorded).
-- `cpu_intervals` is a view of cpu_rows (schema version 9; an older database's
-- rows move at its next import), which is stored in (thread_id, ts) order (a
-- table without rowid: a thread's intervals in a time range are a range of the
-- table itself, so the cpu_intervals_by_thread index is gone) and keeps the
-- state as a small integer. Query cpu_intervals. An INSERT into it and a DELETE
-- from it still work (triggers write cpu_rows; update cpu_rows); an interval equal in thread, ts, dur and state
-- to one already stored is stored once, with the first one's cpu (a thread's intervals do not overlap, so only
-- a repeated zero-length interval or a damaged clock makes one).
--   cpu_intervals: thread_id, ts, dur,
--     state,                          -- 'on-cpu', 'blocked' or 'preempted'
--     cpu                             -- CPU of the switch that opened the interval, NULL if unknown
CREATE TABLE IF NOT EXISTS cpu_rows (
  thread_id INTEGER NOT NULL REFERENCES threads(id),
  ts INTEGER NOT NULL,
  dur INTEGER NOT NULL,
  state NOT NULL,                   -- 1 'on-cpu', 2 'blocked', 3 'preempted'; any other state as
                                    -- its text
  cpu INTEGER,                      -- as in cpu_intervals
  PRIMARY KEY (thread_id, ts, dur, state)
) WITHOUT ROWID;
CREATE VIEW IF NOT EXISTS cpu_intervals AS
SELECT c.thread_id AS thread_id, c.ts AS ts, c.dur AS dur,
       CASE c.state WHEN 1 THEN 'on-cpu' WHEN 2 THEN 'blocked' WHEN 3 THEN 'preempted' ELSE c.state END
         AS state,
       c.cpu AS cpu
  FROM cpu_rows c;
CREATE TRIGGER IF NOT EXISTS cpu_intervals_insert INSTEAD OF INSERT ON cpu_intervals
BEGIN
  -- OR IGNORE below would skip a row that breaks NOT NULL: refuse it as the table did
  SELECT RAISE(ABORT, 'NOT NULL constraint failed: cpu_intervals.thread_id') WHERE NEW.thread_id IS NULL;
  SELECT RAISE(ABORT, 'NOT NULL constraint failed: cpu_intervals.ts') WHERE NEW.ts IS NULL;
  SELECT RAISE(ABORT, 'NOT NULL constraint failed: cpu_intervals.dur') WHERE NEW.dur IS NULL;
  SELECT RAISE(ABORT, 'NOT NULL constraint failed: cpu_intervals.state') WHERE NEW.state IS NULL;
  INSERT OR IGNORE INTO cpu_rows(thread_id, ts, dur, state, cpu)
    VALUES (NEW.thread_id, NEW.ts, NEW.dur,
            CASE NEW.state WHEN 'on-cpu' THEN 1 WHEN 'blocked' THEN 2 WHEN 'preempted' THEN 3
              -- as a TEXT column would have stored it
              ELSE CASE WHEN typeof(NEW.state) IN ('integer', 'real') THEN CAST(NEW.state AS TEXT)
                        ELSE NEW.state END END,
            NEW.cpu);
END;
CREATE TRIGGER IF NOT EXISTS cpu_intervals_delete INSTEAD OF DELETE ON cpu_intervals
BEGIN
  DELETE FROM cpu_rows WHERE thread_id = OLD.thread_id AND ts = OLD.ts AND dur = OLD.dur
     AND CASE state WHEN 1 THEN 'on-cpu' WHEN 2 THEN 'blocked' WHEN 3 THEN 'preempted' ELSE state END
         IS OLD.state;
END;

-- CPU samples: 'cpu' samples taken while running (weight = CPU time it stands for)
-- and 'offcpu' samples taken at a switch-out (where the thread blocked; weight 0,
-- its length is the cpu_intervals row starting there).
CREATE TABLE IF NOT EXISTS samples (
  ts INTEGER NOT NULL,
  thread_id INTEGER NOT NULL REFERENCES threads(id),
  worker_id INTEGER REFERENCES workers(id),   -- when the thread is a worker
  poll_id INTEGER REFERENCES polls(id),       -- the poll running on that thread at ts, if any
  callsite_id INTEGER REFERENCES callsites(id), -- the leaf of the stack, NULL when empty
  weight INTEGER NOT NULL,          -- ns of CPU time
  kind TEXT NOT NULL,               -- 'cpu' or 'offcpu'
  cpu INTEGER                       -- CPU number, NULL if unknown
);

-- Stalls: a poll that ran past the recorder's stall threshold (STALL records),
-- one row per stalled poll, with one stall_captures row per capture taken while it
-- lasted (at the threshold T, then 2T, 4T ...).
CREATE TABLE IF NOT EXISTS stalls (
  id INTEGER PRIMARY KEY,
  poll_id INTEGER REFERENCES polls(id),  -- the stalled poll (same worker, same start)
  worker_id INTEGER REFERENCES workers(id),
  task_id INTEGER REFERENCES task_rows(id),
  ts INTEGER NOT NULL,              -- start of the stalled poll, ns
  dur INTEGER,                      -- its length (STALL_END), ns; NULL when it never ended in the data
  kind TEXT,                        -- kind of the first capture: 'running', 'blocked', 'runnable', 'unknown'
  thread_id INTEGER REFERENCES threads(id),
  location_id INTEGER REFERENCES locations(id),
  detected_ts INTEGER               -- time of the first capture, ns
);
CREATE TABLE IF NOT EXISTS stall_captures (
  stall_id INTEGER NOT NULL REFERENCES stalls(id),
  ts INTEGER NOT NULL,              -- when the capture was taken, ns
  kind TEXT,                        -- 'running' (on CPU), 'blocked' (off CPU, in a syscall or
                                    -- a fault), 'runnable' (waiting for a CPU), 'unknown'
  syscall INTEGER,                  -- system call number the thread was in, NULL if none or unknown
  callsite_id INTEGER REFERENCES callsites(id), -- its stack (leaf), NULL when none
  idx INTEGER,                      -- 0 for the capture at the threshold, 1 at 2T, 2 at 4T ...
  reason TEXT,                      -- the recorder's evidence for kind, and how the stack was taken
  syscall_name TEXT                 -- syscall's name on the recording's architecture ('read',
                                    -- 'futex'), NULL when none or unknown; for recordings that
                                    -- do not name their architecture, the importing machine's
);

-- Task dumps: where an idle task was waiting (its stack at the yield point where
-- it returned "not ready"), taken when it then stayed idle (TASK_DUMP records).
-- dial9 writes a dump during the task's next poll: thread_id is that poll's
-- thread, and idle runs to that poll's start (NULL when it is not in the data).
CREATE TABLE IF NOT EXISTS task_dumps (
  task_id INTEGER REFERENCES task_rows(id),
  ts INTEGER NOT NULL,              -- when the task returned pending (began to be idle), ns
  idle INTEGER,                     -- how long it had been idle when dumped, ns
  callsite_id INTEGER REFERENCES callsites(id), -- where it yielded (leaf), NULL when none
  thread_id INTEGER REFERENCES threads(id),     -- the thread of the poll that returned pending
  location_id INTEGER REFERENCES locations(id)
);

-- Events of a trace that none of the tables above holds (dial9: user-defined
-- events, memory profiling, event types of newer versions), kept as they are so
-- that nothing is dropped; `stallscope import` says how many of each it kept.
CREATE TABLE IF NOT EXISTS other_events (
  recording_id INTEGER NOT NULL REFERENCES recordings(id),
  thread_id INTEGER REFERENCES threads(id), -- the thread that wrote it, NULL if unknown
  ts INTEGER,                       -- ns; NULL for an event type without a timestamp
  name TEXT NOT NULL,               -- the event type (dial9: its schema name)
  fields TEXT NOT NULL              -- a JSON object, field name -> value: numbers, strings,
                                    -- stacks as arrays of "0x..." addresses, bytes as hex,
                                    -- absent optional fields null
);

-- Stacks, as Perfetto models them. mappings: executable file mappings of the
-- recorded process (and one '[kernel]' mapping per recording for kernel frames).
CREATE TABLE IF NOT EXISTS mappings (
  id INTEGER PRIMARY KEY,
  recording_id INTEGER NOT NULL REFERENCES recordings(id),
  path TEXT,
  build_id TEXT,                    -- lowercase hex, '' when unknown
  start INTEGER NOT NULL,           -- first address of the mapping
  "end" INTEGER NOT NULL,           -- one past its last address
  "offset" INTEGER NOT NULL         -- file offset mapped at start
);

-- Frames: one code address of a mapping, symbolized. An address inside inlined
-- code gives several rows with the same rel_pc: inline_depth 0 is the function
-- the code was compiled into, 1 the function inlined into it, and so on.
-- A stack the recorder's unwinder could not follow to its end (STALLSCOPE_UNWIND:
-- no CFI, the stack copy ended ...) has one more frame at its root: function
-- '[truncated]' in the '[unknown]' mapping, rel_pc -1, so it never looks whole.
CREATE TABLE IF NOT EXISTS frames (
  id INTEGER PRIMARY KEY,
  mapping_id INTEGER NOT NULL REFERENCES mappings(id),
  rel_pc INTEGER NOT NULL,          -- file offset of the address looked up (return addresses
                                    -- minus 1); for kernel frames the absolute address
  function TEXT,                    -- as people read it: C++ and Rust names demangled;
                                    -- a PLT stub as perf names it ('puts@plt', '.plt' the
                                    -- lazy resolver); NULL when unknown
  file TEXT,                        -- source file, NULL when unknown
  line INTEGER,                     -- source line, NULL when unknown
  inline_depth INTEGER NOT NULL DEFAULT 0,
  symbol_note TEXT,                 -- why a frame has no name or no file ('no debug info',
                                    -- 'PLT stub: ...',
                                    -- 'build-id mismatch: PATH', 'file not found',
                                    -- 'debuginfod: ...', ...)
  mangled TEXT                      -- the symbol's mangled name when function was demangled
                                    -- (_Z..., _R...), NULL otherwise; added later, so a
                                    -- database from before has it only after the next import
);

-- Callsites: a prefix tree of stacks. A row is one frame reached through its
-- parent (its caller); a sample's callsite_id is its leaf.
CREATE TABLE IF NOT EXISTS callsites (
  id INTEGER PRIMARY KEY,
  parent_id INTEGER REFERENCES callsites(id), -- NULL at the root (outermost caller)
  frame_id INTEGER NOT NULL REFERENCES frames(id),
  depth INTEGER NOT NULL            -- distance from the root, root = 0
);

-- Level-of-detail summaries for a viewer: per worker and time bucket, at bucket
-- sizes on a 1-2-5 ladder from 100 us to 1 s. Intervals are split across the
-- buckets they cover, so busy_ns + parked_ns <= bucket_ns.
-- The levels 1 ms, 10 ms, 100 ms and 1 s are FULL: a row for every bucket with
-- time in it, so sum(busy_ns) over a level is all the (complete) polls' time.
-- The others (100, 200, 500 us; 2, 5, 20, 50, 200, 500 ms) are SPARSE: a row only
-- where at least two polls or parks begin in the bucket, and offcpu_ns is 0.
-- What a sparse level leaves out is in the containing bucket of the next full
-- level up (for 100-500 us: 1 ms; for 2 and 5 ms: 10 ms; and so on): a long poll
-- costs no row per 100 us, yet a viewer can still draw dense stretches finely.
-- Databases imported before the sparse levels existed have the full ones only.
-- Schema version 11 dropped the 50 us level (a viewer draws the polls
-- themselves there; it was a third of the rows), and deletes an older
-- database's at its next import.
-- `worker_summaries` is a view of summary_rows (schema version 10; an older
-- database's rows move at its next import), which keeps the level as its
-- bucket size in units of 50 us and the bucket as its number (ts / bucket_ns)
-- instead of two nanosecond values (a sixth of a row's bytes). Query
-- worker_summaries; for a time range of one level, summary_rows' key is
-- (scale, worker_id, bucket): bucket >= A / bucket_ns rounded up, and so on.
-- An INSERT into worker_summaries and a DELETE from it still work (triggers
-- write summary_rows; update summary_rows); bucket_ns must be an integer
-- multiple of 50 us and ts an integer multiple of bucket_ns.
--   worker_summaries: bucket_ns,      -- bucket size in ns: 100000, 200000, 500000, 1000000, ... 1000000000
--     worker_id,
--     ts,                             -- bucket start (a multiple of bucket_ns), ns
--     busy_ns, parked_ns, offcpu_ns, polls, max_poll_ns -- as in summary_rows
CREATE TABLE IF NOT EXISTS summary_rows (
  scale INTEGER NOT NULL,           -- bucket_ns / 50000: 2, 4, 10, 20, ... 20000 (also 1 before version 11)
  worker_id INTEGER NOT NULL REFERENCES workers(id),
  bucket INTEGER NOT NULL,          -- ts / bucket_ns: the bucket starts at bucket * scale * 50000 ns
  busy_ns INTEGER NOT NULL,         -- time inside polls
  parked_ns INTEGER NOT NULL,       -- time parked
  offcpu_ns INTEGER NOT NULL,       -- time switched out (blocked or preempted); 0 at sparse levels
  polls INTEGER NOT NULL,           -- polls that began in the bucket
  max_poll_ns INTEGER NOT NULL,     -- longest poll overlapping the bucket (its whole dur)
  PRIMARY KEY (scale, worker_id, bucket)
) WITHOUT ROWID;
CREATE VIEW IF NOT EXISTS worker_summaries AS
SELECT s.scale * 50000 AS bucket_ns, s.worker_id AS worker_id, s.bucket * s.scale * 50000 AS ts,
       s.busy_ns AS busy_ns, s.parked_ns AS parked_ns, s.offcpu_ns AS offcpu_ns, s.polls AS polls,
       s.max_poll_ns AS max_poll_ns
  FROM summary_rows s;
CREATE TRIGGER IF NOT EXISTS worker_summaries_insert INSTEAD OF INSERT ON worker_summaries
BEGIN
  SELECT RAISE(ABORT, 'worker_summaries.bucket_ns must be a positive multiple of 50000')
   WHERE typeof(NEW.bucket_ns) <> 'integer' OR NEW.bucket_ns <= 0 OR NEW.bucket_ns % 50000 <> 0;
  SELECT RAISE(ABORT, 'worker_summaries.ts must be a multiple of bucket_ns')
   WHERE typeof(NEW.ts) <> 'integer' OR NEW.ts % NEW.bucket_ns <> 0;
  INSERT INTO summary_rows(scale, worker_id, bucket, busy_ns, parked_ns, offcpu_ns, polls, max_poll_ns)
    VALUES (NEW.bucket_ns / 50000, NEW.worker_id, NEW.ts / NEW.bucket_ns, NEW.busy_ns, NEW.parked_ns,
            NEW.offcpu_ns, NEW.polls, NEW.max_poll_ns);
END;
CREATE TRIGGER IF NOT EXISTS worker_summaries_delete INSTEAD OF DELETE ON worker_summaries
BEGIN
  DELETE FROM summary_rows WHERE scale = OLD.bucket_ns / 50000 AND worker_id = OLD.worker_id
     AND bucket = OLD.ts / OLD.bucket_ns;
END;

-- Importer state, not for queries: a wake that had not led to a poll yet where an
-- import ended (its wakes row has poll_id NULL). The next import of the same
-- recording (a grown or new segment) links that row to the poll that follows
-- and sets its delay, then drops the entry.
CREATE TABLE IF NOT EXISTS import_pending_wakes (
  recording_id INTEGER NOT NULL REFERENCES recordings(id),
  wake_rowid INTEGER NOT NULL,      -- rowid of the wakes row
  task_id INTEGER NOT NULL REFERENCES task_rows(id),
  wake_from INTEGER NOT NULL,       -- ns the delay counts from (the wake, or the end of the poll it came in)
  in_poll INTEGER NOT NULL          -- 1: the wake came while the task was being polled
);

-- Importer state, not for queries: what a thread was in the middle of where an
-- import ended, so the next import of the same recording continues it exactly
-- as one import of everything would: its on/off-CPU state (that interval has no
-- end in the data yet, so no cpu_intervals row) and the last queue depths it
-- reported (queue_depths keeps changes only). The next import drops the rows.
CREATE TABLE IF NOT EXISTS import_thread_state (
  thread_id INTEGER PRIMARY KEY REFERENCES threads(id),
  cpu_state INTEGER,                -- 1 on-cpu, 2 blocked, 3 preempted; NULL unknown
  cpu_since INTEGER,                -- ns, when the thread entered that state
  cpu INTEGER,                      -- the CPU it ran on (on-cpu), NULL when unknown
  queue_local INTEGER,              -- the last queue depths, NULL when none
  queue_global INTEGER
);

-- Importer state, not for queries: tasks that ended in the last seconds before
-- an import ended. A record of such a task that comes after its TERMINATE in
-- the files (another thread's, written a moment later) still belongs to it,
-- also when the next import reads it. Since schema version 5 only the oldest
-- and the newest of those tasks have a row: the others are the tasks rows of
-- the recording that ended between them, which the next import reads.
CREATE TABLE IF NOT EXISTS import_ended_tasks (
  recording_id INTEGER NOT NULL REFERENCES recordings(id),
  task INTEGER NOT NULL,            -- the runtime's task number
  task_id INTEGER NOT NULL REFERENCES task_rows(id),
  end_ts INTEGER NOT NULL
);

-- Importer state, not for queries: spans still open where an import ended, by
-- thread and nesting depth (their spans rows are written when they end).
CREATE TABLE IF NOT EXISTS import_open_spans (
  thread_id INTEGER NOT NULL REFERENCES threads(id),
  depth INTEGER NOT NULL,
  ts INTEGER NOT NULL,
  name TEXT,
  span_id INTEGER,                  -- as in spans
  parent_span_id INTEGER,
  fields TEXT,
  location_id INTEGER,
  PRIMARY KEY (thread_id, depth)
) WITHOUT ROWID;

-- Importer state, not for queries: each worker's open summary buckets where an
-- import ended, one per source and level. The next import of the same recording
-- continues them (and adds only what is new to worker_summaries), so importing
-- in several steps gives the same summaries as one import of everything.
CREATE TABLE IF NOT EXISTS import_open_summary (
  worker_id INTEGER NOT NULL REFERENCES workers(id),
  source INTEGER NOT NULL,          -- 0 polls and parks, 1 off-CPU time
  bucket_ns INTEGER NOT NULL,       -- the level
  ts INTEGER NOT NULL,              -- the bucket's start, ns
  starts INTEGER NOT NULL,          -- polls and parks begun in it
  busy_ns INTEGER NOT NULL,
  parked_ns INTEGER NOT NULL,
  offcpu_ns INTEGER NOT NULL,
  polls INTEGER NOT NULL,
  max_poll_ns INTEGER NOT NULL,
  written INTEGER NOT NULL,         -- 1: these amounts are in worker_summaries already
  PRIMARY KEY (worker_id, source, bucket_ns)
) WITHOUT ROWID;

-- A stack leaf first: one row per frame of callsite_id's stack, depth 0 = leaf.
CREATE VIEW IF NOT EXISTS callsite_frames AS
WITH RECURSIVE walk(callsite_id, depth, cs) AS (
  SELECT id, 0, id FROM callsites
  UNION ALL
  SELECT walk.callsite_id, walk.depth + 1, c.parent_id
    FROM walk JOIN callsites c ON c.id = walk.cs
   WHERE c.parent_id IS NOT NULL AND walk.depth < 4096 -- a cycle (a damaged file) ends
)
SELECT walk.callsite_id AS callsite_id, walk.depth AS depth,
       f.function AS function, f.file AS file, f.line AS line,
       f.rel_pc AS rel_pc, m.path AS mapping
  FROM walk
  JOIN callsites c ON c.id = walk.cs
  JOIN frames f ON f.id = c.frame_id
  JOIN mappings m ON m.id = f.mapping_id;

-- ---- Views for the joins everyone writes ----------------------------------------
-- The stack of a callsite as one line, leaf first: "cpu_spin <- culprit_spin <- ...".
-- Unknown functions show as "?".
CREATE VIEW IF NOT EXISTS callsite_text AS
SELECT c.id AS callsite_id,
       (SELECT group_concat(fn, ' <- ') FROM
          (SELECT coalesce(f.function, '?') AS fn FROM callsite_frames f
            WHERE f.callsite_id = c.id ORDER BY f.depth)) AS stack
  FROM callsites c;

-- A poll with its worker, task, location and how it spent its time: on a CPU,
-- blocked (off CPU, not runnable) or preempted (off CPU, runnable), from the
-- thread's cpu_intervals (NULL when the thread has none), and the report's
-- verdict (viewer/analysis/verdict.h): computing when at most 20% blocked and
-- at least 80% on a CPU; waiting for a CPU when at most 20% blocked and at most
-- 20% on a CPU; blocked when at least 80% blocked.
CREATE VIEW IF NOT EXISTS poll_view AS
WITH p0 AS (
  SELECT p.id AS poll_id, p.ts, p.dur, p.incomplete, w.recording_id, p.worker_id,
         coalesce(w.runtime, '?') || '#' || w.idx AS worker, w.thread_id,
         t.task, p.task_id, p.location_id,
         l.function || ' (' || l.file || ':' || l.line || ')' AS location,
         -- the thread's interval open when the poll began, by a seek back on
         -- cpu_rows' key (its intervals do not overlap)
         coalesce((SELECT max(c.ts) FROM cpu_intervals c WHERE c.thread_id = w.thread_id
                    AND c.ts <= p.ts), p.ts) AS lo
    FROM polls p JOIN workers w ON w.id = p.worker_id
    LEFT JOIN tasks t ON t.id = p.task_id
    LEFT JOIN locations l ON l.id = p.location_id),
r AS (
  SELECT p0.*,
         EXISTS (SELECT 1 FROM cpu_intervals c WHERE c.thread_id = p0.thread_id) AS has_cpu,
         (SELECT coalesce(sum(min(c.ts + c.dur, p0.ts + p0.dur) - max(c.ts, p0.ts)), 0) FROM cpu_intervals c
           WHERE c.thread_id = p0.thread_id AND c.state = 'on-cpu' AND c.ts >= p0.lo
             AND c.ts < p0.ts + p0.dur AND c.ts + c.dur > p0.ts) AS on_cpu,
         (SELECT coalesce(sum(min(c.ts + c.dur, p0.ts + p0.dur) - max(c.ts, p0.ts)), 0) FROM cpu_intervals c
           WHERE c.thread_id = p0.thread_id AND c.state = 'blocked' AND c.ts >= p0.lo
             AND c.ts < p0.ts + p0.dur AND c.ts + c.dur > p0.ts) AS blocked,
         (SELECT coalesce(sum(min(c.ts + c.dur, p0.ts + p0.dur) - max(c.ts, p0.ts)), 0) FROM cpu_intervals c
           WHERE c.thread_id = p0.thread_id AND c.state = 'preempted' AND c.ts >= p0.lo
             AND c.ts < p0.ts + p0.dur AND c.ts + c.dur > p0.ts) AS preempted
    FROM p0)
SELECT poll_id, ts, dur, incomplete, recording_id, worker_id, worker, thread_id, task, task_id,
       location_id, location,
       CASE WHEN has_cpu THEN on_cpu END AS on_cpu_ns,
       CASE WHEN has_cpu THEN blocked END AS blocked_ns,
       CASE WHEN has_cpu THEN preempted END AS preempted_ns,
       CASE WHEN NOT has_cpu THEN NULL
            WHEN blocked * 5 <= dur THEN
              CASE WHEN on_cpu * 5 >= dur * 4 THEN 'computing'
                   WHEN on_cpu * 5 <= dur THEN 'waiting for a CPU'
                   ELSE 'computing, but preempted part of the time' END
            WHEN blocked * 5 >= dur * 4 THEN 'blocked'
            ELSE 'partly blocked' END AS verdict
  FROM r;

-- A stalled poll with its worker, task, location, the number of captures, and
-- its first capture's kind, system call, evidence and stack as text.
CREATE VIEW IF NOT EXISTS stall_view AS
SELECT s.id AS stall_id, s.poll_id, s.ts, s.dur, s.kind, w.recording_id, s.worker_id,
       coalesce(w.runtime, '?') || '#' || w.idx AS worker, t.task, s.task_id, s.location_id,
       l.function || ' (' || l.file || ':' || l.line || ')' AS location,
       (SELECT count(*) FROM stall_captures c WHERE c.stall_id = s.id) AS captures,
       c.syscall_name, c.reason, ct.stack
  FROM stalls s LEFT JOIN workers w ON w.id = s.worker_id
  LEFT JOIN tasks t ON t.id = s.task_id
  LEFT JOIN locations l ON l.id = s.location_id
  LEFT JOIN stall_captures c ON c.rowid = (SELECT c2.rowid FROM stall_captures c2 WHERE c2.stall_id = s.id
                                           ORDER BY c2.callsite_id IS NULL, c2.idx LIMIT 1)
  LEFT JOIN callsite_text ct ON ct.callsite_id = c.callsite_id;

-- A CPU sample (kind 'cpu') or off-CPU sample ('offcpu') with its thread,
-- worker, poll and stack as text.
CREATE VIEW IF NOT EXISTS sample_view AS
SELECT s.rowid AS sample_id, s.ts, s.kind, s.thread_id, th.name AS thread, s.worker_id,
       coalesce(w.runtime, '?') || '#' || w.idx AS worker, s.poll_id, s.weight, s.cpu, s.callsite_id,
       ct.stack
  FROM samples s JOIN threads th ON th.id = s.thread_id
  LEFT JOIN workers w ON w.id = s.worker_id
  LEFT JOIN callsite_text ct ON ct.callsite_id = s.callsite_id;

-- @indexes: the importer runs the statements below this line separately from the
-- tables: on a fresh database before its first row (its inserting thread keeps
-- them up while the model decodes, which on two CPUs ends sooner than a sort
-- after the load; viewer/store/sqlite/db.c), otherwise after the load.
-- They serve a thread's samples (the viewer's lanes of polls go through
-- poll_chunks, and parks and cpu_rows are stored in thread or worker, ts order). Joins through ids (wakes.poll_id, poll_id,
-- task_id = tasks.id ...) use the rowid and need none. Add your own for other
-- access paths, e.g. CREATE INDEX polls_by_task ON polls(task_id).
CREATE INDEX IF NOT EXISTS samples_by_thread ON samples(thread_id, ts);
CREATE INDEX IF NOT EXISTS callsites_by_parent ON callsites(parent_id);
CREATE INDEX IF NOT EXISTS threads_by_recording ON threads(recording_id, thread);
-- Small (a few rows per stall), and the viewer's stall panel and the report look
-- captures up by stall.
CREATE INDEX IF NOT EXISTS stall_captures_by_stall ON stall_captures(stall_id);

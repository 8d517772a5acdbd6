/*
 * pg_tables.c - see pg_tables.h. The columns are those of schema/stallscope.sql,
 * in its order; test_pg_tables checks them against the SQLite schema itself.
 */
#include "pg_tables.h"

#include <string.h>

#define I PGC_INT
#define T PGC_TEXT
#define C(n, k) { n, k }

/* Owners per partition: workers (a few dozen per recording), threads (a few
 * hundred) and tasks (up to millions), chosen so a partition holds the rows of
 * roughly a hundred recordings of a typical server. */
#define BY_WORKER "worker_id", ID_WORKER, 1024
#define BY_THREAD "thread_id", ID_THREAD, 4096
#define BY_TASK "task_id", ID_TASK, 1 << 20

const struct pg_table ss_pg_tables[] = {
	{ "schema_info", { C("version", I) }, 1, NULL, 0, 0, NULL, NULL },
	{ "recordings",
	  { C("id", ID_RECORDING), C("session_id", I), C("pid", I), C("executable", T), C("host", T),
	    C("boot_id", T), C("anchor_mono_ns", I), C("anchor_real_ns", I), C("first_ts", I), C("last_ts", I),
	    C("arch", T) },
	  11, NULL, 0, 0, "PRIMARY KEY (id), UNIQUE (session_id)", NULL },
	{ "metadata", { C("recording_id", ID_RECORDING), C("key", T), C("value", T) }, 3, NULL, 0, 0,
	  "PRIMARY KEY (recording_id, key)", NULL },
	{ "segments",
	  { C("id", ID_SEGMENT), C("recording_id", ID_RECORDING), C("file", T), C("seq", I), C("start_ts", I),
	    C("end_ts", I), C("sealed", I), C("blocks", I), C("bytes", I), C("intact_bytes", I), C("events", I),
	    C("damage", T), C("damage_offset", I), C("damage_block", I), C("damage_reason", T), C("note", T) },
	  16, NULL, 0, 0, "PRIMARY KEY (id), UNIQUE (recording_id, seq)", NULL },
	{ "loss",
	  { C("recording_id", ID_RECORDING), C("thread_id", ID_THREAD), C("ts", I), C("dur", I), C("count", I),
	    C("source", T), C("reason", T) },
	  7, NULL, 0, 0, NULL, NULL },
	{ "threads",
	  { C("id", ID_THREAD), C("recording_id", ID_RECORDING), C("thread", I), C("tid", I), C("name", T),
	    C("exit_ts", I) },
	  6, NULL, 0, 0, "PRIMARY KEY (id)", NULL },
	{ "workers",
	  { C("id", ID_WORKER), C("recording_id", ID_RECORDING), C("thread_id", ID_THREAD), C("runtime", T),
	    C("idx", I), C("begin_ts", I), C("end_ts", I) },
	  7, NULL, 0, 0, "PRIMARY KEY (id)", NULL },
	{ "locations", { C("id", ID_LOCATION), C("file", T), C("line", I), C("function", T) }, 4, NULL, 0, 0,
	  "PRIMARY KEY (id)", "id" },
	{ "tasks",
	  { C("id", ID_TASK), C("recording_id", ID_RECORDING), C("task", I), C("location_id", ID_LOCATION),
	    C("parent_task_id", ID_TASK), C("spawn_ts", I), C("end_ts", I), C("spawn_thread_id", ID_THREAD) },
	  8, "id", ID_TASK, 1 << 20, "PRIMARY KEY (id)", NULL },
	{ "polls",
	  { C("id", ID_POLL), C("worker_id", ID_WORKER), C("task_id", ID_TASK), C("location_id", ID_LOCATION),
	    C("ts", I), C("dur", I), C("incomplete", I) },
	  /* No key: ids are unique by construction (reserved ranges), and a second
	   * index would cost a third of the import. */
	  7, BY_WORKER, NULL, NULL },
	{ "parks",
	  { C("worker_id", ID_WORKER), C("ts", I), C("dur", I), C("incomplete", I), C("cpu_begin_ns", I),
	    C("cpu_end_ns", I), C("sched_wait_ns", I) },
	  7, BY_WORKER, NULL, NULL },
	{ "wakes",
	  { C("task_id", ID_TASK), C("ts", I), C("waker_thread_id", ID_THREAD), C("waker_task_id", ID_TASK),
	    C("poll_id", ID_POLL), C("delay", I) },
	  6, BY_TASK, NULL, NULL },
	{ "queue_depths",
	  { C("thread_id", ID_THREAD), C("worker_id", ID_WORKER), C("ts", I), C("local", I), C("global", I) }, 5,
	  BY_THREAD, NULL, NULL },
	{ "marks", { C("thread_id", ID_THREAD), C("ts", I), C("name", T), C("value", I) }, 4, BY_THREAD, NULL, NULL },
	{ "spans",
	  { C("thread_id", ID_THREAD), C("ts", I), C("dur", I), C("name", T), C("depth", I), C("incomplete", I),
	    C("span_id", I), C("parent_span_id", I), C("fields", T), C("location_id", ID_LOCATION) },
	  10, BY_THREAD, NULL, NULL },
	{ "cpu_intervals", { C("thread_id", ID_THREAD), C("ts", I), C("dur", I), C("state", T), C("cpu", I) }, 5,
	  BY_THREAD, NULL, NULL },
	{ "samples",
	  { C("ts", I), C("thread_id", ID_THREAD), C("worker_id", ID_WORKER), C("poll_id", ID_POLL),
	    C("callsite_id", ID_CALLSITE), C("weight", I), C("kind", T), C("cpu", I) },
	  8, BY_THREAD, NULL, NULL },
	{ "stalls",
	  { C("id", ID_STALL), C("poll_id", ID_POLL), C("worker_id", ID_WORKER), C("task_id", ID_TASK), C("ts", I),
	    C("dur", I), C("kind", T), C("thread_id", ID_THREAD), C("location_id", ID_LOCATION),
	    C("detected_ts", I) },
	  10, NULL, 0, 0, "PRIMARY KEY (id)", NULL },
	{ "stall_captures",
	  { C("stall_id", ID_STALL), C("ts", I), C("kind", T), C("syscall", I), C("callsite_id", ID_CALLSITE),
	    C("idx", I), C("reason", T), C("syscall_name", T) },
	  8, NULL, 0, 0, NULL, NULL },
	{ "task_dumps",
	  { C("task_id", ID_TASK), C("ts", I), C("idle", I), C("callsite_id", ID_CALLSITE),
	    C("thread_id", ID_THREAD), C("location_id", ID_LOCATION) },
	  6, NULL, 0, 0, NULL, NULL },
	{ "other_events",
	  { C("recording_id", ID_RECORDING), C("thread_id", ID_THREAD), C("ts", I), C("name", T), C("fields", T) },
	  5, NULL, 0, 0, NULL, NULL },
	{ "mappings",
	  { C("id", ID_MAPPING), C("recording_id", ID_RECORDING), C("path", T), C("build_id", T), C("start", I),
	    C("\"end\"", I), C("\"offset\"", I) },
	  7, NULL, 0, 0, "PRIMARY KEY (id)", "id" },
	{ "frames",
	  { C("id", ID_FRAME), C("mapping_id", ID_MAPPING), C("rel_pc", I), C("function", T), C("file", T),
	    C("line", I), C("inline_depth", I), C("symbol_note", T), C("mangled", T) },
	  9, NULL, 0, 0, "PRIMARY KEY (id)", "id" },
	{ "callsites", { C("id", ID_CALLSITE), C("parent_id", ID_CALLSITE), C("frame_id", ID_FRAME), C("depth", I) },
	  4, NULL, 0, 0, "PRIMARY KEY (id)", "id" },
	{ "worker_summaries",
	  { C("bucket_ns", I), C("worker_id", ID_WORKER), C("ts", I), C("busy_ns", I), C("parked_ns", I),
	    C("offcpu_ns", I), C("polls", I), C("max_poll_ns", I) },
	  8, BY_WORKER, "PRIMARY KEY (bucket_ns, worker_id, ts)", NULL },
	/* The state an incremental import continues from. A pending wake also
	 * keeps its wakes row's content here: PostgreSQL rows have no rowid. */
	{ "import_pending_wakes",
	  { C("recording_id", ID_RECORDING), C("wake_rowid", I), C("task_id", ID_TASK), C("wake_from", I),
	    C("in_poll", I), C("ts", I), C("waker_thread_id", ID_THREAD), C("waker_task_id", ID_TASK) },
	  8, NULL, 0, 0, NULL, NULL },
	{ "import_thread_state",
	  { C("thread_id", ID_THREAD), C("cpu_state", I), C("cpu_since", I), C("cpu", I), C("queue_local", I),
	    C("queue_global", I) },
	  6, NULL, 0, 0, "PRIMARY KEY (thread_id)", NULL },
	{ "import_ended_tasks",
	  { C("recording_id", ID_RECORDING), C("task", I), C("task_id", ID_TASK), C("end_ts", I) }, 4, NULL, 0, 0,
	  NULL, NULL },
	{ "import_open_spans",
	  { C("thread_id", ID_THREAD), C("depth", I), C("ts", I), C("name", T), C("span_id", I),
	    C("parent_span_id", I), C("fields", T), C("location_id", ID_LOCATION) },
	  8, NULL, 0, 0, "PRIMARY KEY (thread_id, depth)", NULL },
	{ "import_open_summary",
	  { C("worker_id", ID_WORKER), C("source", I), C("bucket_ns", I), C("ts", I), C("starts", I),
	    C("busy_ns", I), C("parked_ns", I), C("offcpu_ns", I), C("polls", I), C("max_poll_ns", I),
	    C("written", I) },
	  11, NULL, 0, 0, "PRIMARY KEY (worker_id, source, bucket_ns)", NULL },
};

const size_t ss_pg_n_tables = sizeof ss_pg_tables / sizeof ss_pg_tables[0];

const struct pg_table *ss_pg_table(const char *name)
{
	for (size_t i = 0; i < ss_pg_n_tables; i++)
		if (strcmp(ss_pg_tables[i].name, name) == 0)
			return &ss_pg_tables[i];
	return NULL;
}

/*
 * test_dial9_import.c - dial9 traces through `stallscope import` (the driver,
 * the dial9 source, the model, the SQLite store), on the synthetic Tokio-like
 * trace of d9_synthetic.c whose every row is known:
 *   - polls, parks (CPU clock, scheduler wait), wakes (waker thread and task,
 *     the wake-to-poll delay, from the poll's end when the wake came during
 *     the task's own poll, also when that wake's stream was drained seconds
 *     late), tasks (spawn location, parent, end), queue depths (local and
 *     global apart), spans (names, nesting, ids, parent, fields as JSON,
 *     declaration site), CPU samples (worker found through the tid its parks
 *     report, on/off-CPU, weight = the period measured from the samples,
 *     stacks symbolized by the trace's own symbol table, an unresolved address
 *     kept), a task dump with its idle time, threads and workers with names,
 *     runtime and tids, metadata, the clock anchor, an unmapped event type in
 *     other_events (and named on the import's summary), the segment row;
 *   - the same file gzip-compressed gives the same rows;
 *   - importing the file while it was PREFIX.0.bin.active and again once
 *     sealed gives the rows of one import (symbols aside: they come with the
 *     seal);
 *   - a truncated gzip imports its intact streams and says where it ended;
 *     a re-import is "unchanged"; gzip data that is not a trace, and a trace
 *     of another format version, are refused with what they are.
 *
 * usage: test_dial9_import
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "d9_builder.h"
#include "d9_synthetic.h"
#include "import.h"
#include "soft_check.h"

static char tmp[256];

static void write_file(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
		perror(path);
		exit(2);
	}
}

/* Imports paths into db; returns the log. */
static char *import(const char *db, const char *path, int *rc)
{
	char *log = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&log, &len);
	struct ss_import_options o = { .db_path = db, .log = f };
	struct ss_import_result res;
	const char *paths[1] = { path };
	*rc = ss_import_paths(&o, paths, 1, &res);
	fclose(f);
	return log;
}

/* Rows of sql, columns joined by '|', rows by '\n', NULL as N. */
static char *rows(sqlite3 *db, const char *sql)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		fprintf(f, "SQL ERROR %s", sqlite3_errmsg(db));
	} else {
		bool first = true;
		while (sqlite3_step(st) == SQLITE_ROW) {
			if (!first)
				fputc('\n', f);
			first = false;
			for (int i = 0; i < sqlite3_column_count(st); i++) {
				if (i)
					fputc('|', f);
				const unsigned char *t = sqlite3_column_text(st, i);
				fputs(t ? (const char *)t : "N", f);
			}
		}
		sqlite3_finalize(st);
	}
	fclose(f);
	return out;
}

static sqlite3 *open_db(const char *path)
{
	sqlite3 *db;
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		fprintf(stderr, "cannot open %s\n", path);
		exit(2);
	}
	return db;
}

#define EXPECT(db, sql, want)                                                                \
	do {                                                                                 \
		char *got_ = rows(db, sql);                                                  \
		CHECK(strcmp(got_, want) == 0, "%s\n--- got:\n%s\n--- want:\n%s", sql, got_, want); \
		free(got_);                                                                  \
	} while (0)

/* Times in the trace's milliseconds from its start. */
#define MS(col) "(" col " - 1000000000000) / 1000000"

/* Row sets that do not depend on the ids an import hands out. */
static const char *const semantic[] = {
	"SELECT w.idx, t.task, " MS("p.ts") ", p.dur, p.incomplete, l.file, l.line FROM polls p"
	" JOIN workers w ON w.id = p.worker_id LEFT JOIN tasks t ON t.id = p.task_id"
	" LEFT JOIN locations l ON l.id = p.location_id ORDER BY p.ts",
	"SELECT w.idx, " MS("p.ts") ", p.dur, p.incomplete, p.cpu_begin_ns, p.cpu_end_ns, p.sched_wait_ns"
	" FROM parks p JOIN workers w ON w.id = p.worker_id ORDER BY w.idx, p.ts",
	"SELECT t.task, " MS("k.ts") ", th.thread, wt.task, " MS("p.ts") ", k.delay FROM wakes k"
	" JOIN tasks t ON t.id = k.task_id LEFT JOIN threads th ON th.id = k.waker_thread_id"
	" LEFT JOIN tasks wt ON wt.id = k.waker_task_id LEFT JOIN polls p ON p.id = k.poll_id ORDER BY k.ts",
	"SELECT t.task, " MS("t.spawn_ts") ", " MS("t.end_ts") ", pt.task, st.thread, l.file, l.line FROM tasks t"
	" LEFT JOIN tasks pt ON pt.id = t.parent_task_id LEFT JOIN threads st ON st.id = t.spawn_thread_id"
	" LEFT JOIN locations l ON l.id = t.location_id ORDER BY t.task",
	"SELECT th.thread, " MS("q.ts") ", q.local, q.global, q.worker_id IS NOT NULL FROM queue_depths q"
	" JOIN threads th ON th.id = q.thread_id ORDER BY th.thread, q.ts",
	"SELECT th.thread, " MS("s.ts") ", s.dur, s.name, s.depth, s.incomplete, s.span_id, s.parent_span_id,"
	" s.fields, l.file, l.line, l.function FROM spans s JOIN threads th ON th.id = s.thread_id"
	" LEFT JOIN locations l ON l.id = s.location_id ORDER BY s.ts",
	"SELECT coalesce(th.thread, 'tid ' || th.tid), " MS("s.ts") ", s.kind, s.weight, s.cpu,"
	" s.worker_id IS NOT NULL, s.poll_id IS NOT NULL FROM samples s JOIN threads th ON th.id = s.thread_id"
	" ORDER BY s.ts, th.tid",
	"SELECT t.task, " MS("d.ts") ", d.idle, th.thread FROM task_dumps d JOIN tasks t ON t.id = d.task_id"
	" JOIN threads th ON th.id = d.thread_id",
	"SELECT th.thread, th.tid, th.name FROM threads th ORDER BY th.thread, th.tid",
	"SELECT w.idx, w.runtime, th.thread FROM workers w JOIN threads th ON th.id = w.thread_id ORDER BY w.idx",
	"SELECT th.thread, " MS("o.ts") ", o.name, o.fields FROM other_events o LEFT JOIN threads th"
	" ON th.id = o.thread_id",
	"SELECT key, value FROM metadata ORDER BY key",
	"SELECT host, anchor_mono_ns, anchor_real_ns, " MS("first_ts") ", " MS("last_ts") " FROM recordings",
	"SELECT w.idx, s.bucket_ns, " MS("s.ts") ", s.busy_ns, s.parked_ns, s.polls, s.max_poll_ns"
	" FROM worker_summaries s JOIN workers w ON w.id = s.worker_id WHERE s.bucket_ns = 1000000000"
	" ORDER BY w.idx, s.ts",
};
#define N_SEMANTIC (sizeof semantic / sizeof semantic[0])

static void exact(sqlite3 *db)
{
	/* polls: worker, task, start, dur (ns), incomplete, location */
	EXPECT(db, semantic[0],
	       "0|10|2000|3000000000|0|src/main.rs|10\n"
	       "1|11|8000|1500000000|0|src/lib.rs|20\n"
	       "0|10|11500|2500000000|0|src/main.rs|10\n"
	       "0|12|14500|1500000000|0|src/main.rs|50\n"
	       "0|12|18000|1000000000|1|src/main.rs|50");
	/* parks with the CPU clock at park and unpark and the scheduler wait */
	EXPECT(db, semantic[1],
	       "0|6000|5000000000|0|50000|50500|1200\n"
	       "1|1500|5500000000|0|7000|7100|300\n"
	       "1|9700|9300000000|0|9000|9500|0");
	/* wakes: task, time, waker thread, waker task, the poll, its delay */
	EXPECT(db, semantic[2],
	       "11|3000|1|10|8000|5000000000\n"
	       "10|4000|256|N|11500|6500000000");
	EXPECT(db, semantic[3],
	       "10|1000|17000|N|1|src/main.rs|10\n"
	       "11|2500|9600|10|1|src/lib.rs|20\n"
	       "12|12000|N|N|256|src/main.rs|50");
	EXPECT(db, semantic[4],
	       "1|2000|1|N|1\n1|6000|0|N|1\n1|11000|1|N|1\n1|14500|0|N|1\n"
	       "2|1500|0|N|1\n2|7000|2|N|1\n2|8000|1|N|1\n2|9700|0|N|1\n"
	       "256|5500|N|3|0\n256|15500|N|0|0");
	EXPECT(db, semantic[5],
	       "2|8100|900000000|handler|0|0|7|N|{\"user\":\"alice\"}|src/lib.rs|30|app::handler\n"
	       "2|8200|500000000|db|1|0|8|7|N|src/db.rs|5|app::db");
	/* weight: the 500 ms between the worker's consecutive samples */
	EXPECT(db, semantic[6],
	       "1|2100|cpu|500000000|1|1|1\n1|2600|cpu|500000000|1|1|1\n1|3100|cpu|500000000|1|1|1\n"
	       "1|3600|cpu|500000000|1|1|1\ntid 201|4000|offcpu|0|N|0|0\n1|4100|cpu|500000000|1|1|1\n"
	       "1|12000|cpu|500000000|0|1|1");
	EXPECT(db, semantic[7], "10|5000|6500000000|1");
	EXPECT(db, semantic[8],
	       "N|201|io-thread\n1|101|tokio-rt-worker\n2|102|N\n256|0|other threads (dial9 worker 255)");
	EXPECT(db, semantic[9], "0|main|1\n1|main|2");
	EXPECT(db, semantic[10], "1|5500|MyCustomEvent|{\"count\":42,\"label\":\"x\\\"y\",\"flags\":null}");
	EXPECT(db, semantic[11],
	       "dial9.sample_period_ns|500000000\nhost|testhost\nruntime.main|0,1\nservice|synthetic\n"
	       "trace.format|dial9-trace-format 1");
	EXPECT(db, semantic[12], "testhost|1000000000000|1700000000123456789|1000|19000");
	/* the worker's stack through the trace's symbol table, leaf first; an
	 * address it does not name stays an address */
	EXPECT(db, "SELECT f.depth, f.function, f.file, f.line FROM samples s JOIN callsite_frames f"
		   " ON f.callsite_id = s.callsite_id WHERE s.kind = 'cpu' AND s.ts = 1000000000000 + 2100 * 1000000"
		   " ORDER BY f.depth",
	       "0|inlined_fn|src/lib.rs|33\n1|handler|src/lib.rs|30\n2|main_loop|src/main.rs|10");
	EXPECT(db, "SELECT f.rel_pc, f.function, f.mapping FROM samples s JOIN callsite_frames f"
		   " ON f.callsite_id = s.callsite_id WHERE s.kind = 'offcpu'",
	       "10066329|N|[unknown]");
	EXPECT(db, "SELECT seq, " MS("start_ts") ", " MS("end_ts") ", sealed, blocks, events, damage FROM segments",
	       "0|1000|19000|1|7|44|N");
}

/* Every semantic row set of a equals b's. */
static void same(sqlite3 *a, sqlite3 *b, const char *what, bool symbols)
{
	for (size_t i = 0; i < N_SEMANTIC; i++) {
		char *x = rows(a, semantic[i]), *y = rows(b, semantic[i]);
		CHECK(strcmp(x, y) == 0, "%s: %s\n--- one import:\n%s\n--- this one:\n%s", what, semantic[i], x, y);
		free(x);
		free(y);
	}
	if (symbols) {
		const char *q = "SELECT s.ts, f.depth, f.function FROM samples s JOIN callsite_frames f"
				" ON f.callsite_id = s.callsite_id ORDER BY s.ts, s.thread_id, f.depth";
		char *x = rows(a, q), *y = rows(b, q);
		CHECK(strcmp(x, y) == 0, "%s: stacks differ", what);
		free(x);
		free(y);
	}
}

static void path(char *out, size_t n, const char *dir, const char *name)
{
	snprintf(out, n, "%s/%s", tmp, dir);
	mkdir(out, 0700);
	snprintf(out, n, "%s/%s/%s", tmp, dir, name);
}

int main(void)
{
	const char *base = getenv("TMPDIR");
	snprintf(tmp, sizeof tmp, "%s/stallscope-d9import.XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 2;
	}
	struct d9b full = { 0 };
	d9_synthetic(&full, D9S_BATCHES);

	/* raw */
	char raw[512], db1[512];
	path(raw, sizeof raw, "raw", "trace.0.bin");
	snprintf(db1, sizeof db1, "%s/one.db", tmp);
	write_file(raw, full.buf, full.len);
	int rc;
	char *log = import(db1, raw, &rc);
	CHECK(rc == SS_IMPORT_OK, "import: %d\n%s", rc, log);
	CHECK(strstr(log, "1 events of 1 type not mapped to the schema were kept in other_events: MyCustomEvent (1)"),
	      "the summary names the unmapped type:\n%s", log);
	CHECK(strstr(log, "damaged") && strstr(log, "0 damaged"), "no damage:\n%s", log);
	free(log);
	sqlite3 *one = open_db(db1);
	exact(one);
	/* again: nothing new */
	log = import(db1, raw, &rc);
	CHECK(rc == SS_IMPORT_OK && strstr(log, "0 segments imported, 1 unchanged"), "re-import:\n%s", log);
	free(log);

	/* gzip: the same rows */
	char gz[512], db2[512];
	path(gz, sizeof gz, "gz", "trace.0.bin.gz");
	snprintf(db2, sizeof db2, "%s/gz.db", tmp);
	uint8_t *z;
	size_t zl;
	d9b_gzip(full.buf, full.len, &z, &zl);
	write_file(gz, z, zl);
	log = import(db2, gz, &rc);
	CHECK(rc == SS_IMPORT_OK, "gzip import: %d\n%s", rc, log);
	free(log);
	sqlite3 *two = open_db(db2);
	same(one, two, "gzip", true);
	sqlite3_close(two);

	/* in two steps: while being written, then sealed */
	char active[512], sealed[512], db3[512];
	path(active, sizeof active, "steps", "trace.0.bin.active");
	path(sealed, sizeof sealed, "steps", "trace.0.bin");
	snprintf(db3, sizeof db3, "%s/steps.db", tmp);
	struct d9b part = { 0 };
	d9_synthetic(&part, 5);
	write_file(active, part.buf, part.len);
	log = import(db3, active, &rc);
	CHECK(rc == SS_IMPORT_OK, "first step: %d\n%s", rc, log);
	free(log);
	unlink(active);
	write_file(sealed, full.buf, full.len);
	log = import(db3, sealed, &rc);
	CHECK(rc == SS_IMPORT_OK && strstr(log, "1 segment imported"), "second step: %d\n%s", rc, log);
	free(log);
	sqlite3 *three = open_db(db3);
	same(one, three, "two steps", false);
	EXPECT(three, "SELECT count(*), sum(sealed), sum(blocks) FROM segments", "1|1|7");
	sqlite3_close(three);

	/* a truncated gzip: its intact streams, and where it ended */
	char cut[512], db4[512];
	path(cut, sizeof cut, "cut", "trace.0.bin.gz");
	snprintf(db4, sizeof db4, "%s/cut.db", tmp);
	write_file(cut, z, zl * 3 / 5);
	log = import(db4, cut, &rc);
	CHECK(rc == SS_IMPORT_OK && strstr(log, "gzip data ends early at compressed offset") &&
		      strstr(log, "1 damaged"),
	      "truncated gzip:\n%s", log);
	free(log);
	sqlite3 *four = open_db(db4);
	char *np = rows(four, "SELECT count(*) FROM polls");
	int polls = atoi(np);
	CHECK(polls > 0 && polls <= 5, "polls of the intact part: %s", np);
	free(np);
	/* the last frame the gzip data holds is cut */
	EXPECT(four, "SELECT damage, damage_offset > 0, damage_reason GLOB 'frame (tag 0x0?) runs past the end of the"
		     " data: truncated' FROM segments",
	       "truncated|1|1");
	sqlite3_close(four);

	/* gzip that is not a trace */
	char other[512], db5[512];
	path(other, sizeof other, "other", "notes.bin.gz");
	snprintf(db5, sizeof db5, "%s/other.db", tmp);
	uint8_t *oz;
	size_t ozl;
	d9b_gzip((const uint8_t *)"just some text, not a trace", 27, &oz, &ozl);
	write_file(other, oz, ozl);
	log = import(db5, other, &rc);
	CHECK(rc == SS_IMPORT_NOTHING && strstr(log, "gzip data that is not a dial9 trace"), "other gzip: %d\n%s", rc,
	      log);
	free(log);
	free(oz);

	/* a dial9 header of a version this reader does not know: said so */
	char v2[512], db6[512];
	path(v2, sizeof v2, "v2", "trace.0.bin");
	snprintf(db6, sizeof db6, "%s/v2.db", tmp);
	write_file(v2, "TRC\0\x02\x01\x00", 7);
	log = import(db6, v2, &rc);
	CHECK(rc == SS_IMPORT_NOTHING && strstr(log, "dial9 trace of format version 2 (only version 1 is known)"),
	      "version 2: %d\n%s", rc, log);
	free(log);

	sqlite3_close(one);
	free(z);
	d9b_free(&full);
	d9b_free(&part);
	if (!failures) {
		char cmd[600];
		snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", tmp);
	} else {
		fprintf(stderr, "%d checks failed; files kept in %s\n", failures, tmp);
	}
	return failures ? 1 : 0;
}

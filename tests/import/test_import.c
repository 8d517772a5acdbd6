/*
 * test_import.c - the importer against real and synthetic segments:
 *   demo      every table's row count matches what the reader decodes (the figures
 *             `stallscope dump` prints), summaries add up to the polls and parks;
 *   stitch    polls open across a rotation are one row; a poll open at the end is
 *             incomplete, not a phantom long poll; wakes know their poll and delay;
 *   floors    a run of records that comes in a later block than records 4 s
 *             after it (beyond the merge's window) is imported in time order all
 *             the same: the blocks' floors, read ahead, hold the earlier block's
 *             records back; an .active segment's last block waits for the window;
 *   growth    an .active segment that grows while it is imported is read as far as
 *             its floors were read (whole, or up to the damage they ended at), so
 *             nothing comes late; the next import reads the rest;
 *   known     a thread of an earlier segment whose definition in the next one
 *             comes after its sampler's records there gets it before they are
 *             delivered (its name, its worker lane);
 *   late      records beyond what the merge holds are counted, and the warning
 *             says what it holds;
 *   again     re-importing adds nothing; a grown .active segment adds only its new
 *             blocks and ends equal to a fresh import;
 *   damage    a truncated copy imports its prefix and records the damage; a flipped
 *             byte is caught by the block CRC; the CLI warns with file and offset;
 *   symbols   a test binary's frames get function, file:line and the inline chain,
 *             also through --debug-dir with split debug info; a build-id mismatch
 *             is reported, never used;
 *   sql       typical questions answered by plain SQL over the schema;
 *   parks     with META "switches" saying a worker's switches inside its parks are
 *             not recorded, its CPU state is unknown from each PARK to its UNPARK
 *             (on a CPU until the one, again from the other, a SWITCH inside
 *             ignored); without it the same records give the switches' rows;
 *             the same over a rotation, imported together or one segment at a
 *             time, and with the PARK or the UNPARK in a lost block.
 *
 * Usage: test_import DEMO_DIR STALLSCOPE_CLI SYMTEST OBJCOPY
 */
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "import.h"
#include "model.h"
#include "schema_sql.h"
#include "segment_builder.h"
#include "segment_reader.h"
#include "segment_source.h"
#include "soft_check.h"
#include "sqlite_store.h"

static char tmp[] = "/tmp/stallscope-test-import-XXXXXX";


static int64_t q1(sqlite3 *db, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *sql = sqlite3_vmprintf(fmt, ap);
	va_end(ap);
	sqlite3_stmt *s;
	int64_t v = -1;
	if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK) {
		fprintf(stderr, "SQL error %s in: %s\n", sqlite3_errmsg(db), sql);
		failures++;
	} else {
		if (sqlite3_step(s) == SQLITE_ROW)
			v = sqlite3_column_int64(s, 0);
		sqlite3_finalize(s);
	}
	sqlite3_free(sql);
	return v;
}

static char *qs(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *s;
	char *v = NULL;
	if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK) {
		fprintf(stderr, "SQL error %s in: %s\n", sqlite3_errmsg(db), sql);
		failures++;
		return NULL;
	}
	if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
		v = strdup((const char *)sqlite3_column_text(s, 0));
	sqlite3_finalize(s);
	return v;
}

static sqlite3 *opendb(const char *path)
{
	sqlite3 *db;
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		fprintf(stderr, "cannot open %s\n", path);
		exit(1);
	}
	return db;
}

static int import(const char *db, struct ss_import_result *res, const char *const *debug_dirs, size_t nd,
		  int n, ...)
{
	const char *paths[16];
	va_list ap;
	va_start(ap, n);
	for (int i = 0; i < n && i < 16; i++)
		paths[i] = va_arg(ap, const char *);
	va_end(ap);
	struct ss_import_options o = { .db_path = db, .quiet = true, .debug_dirs = debug_dirs,
				       .n_debug_dirs = nd };
	return ss_import_paths(&o, paths, (size_t)n, res);
}

static char *path_in_tmp(const char *name)
{
	char *p;
	if (asprintf(&p, "%s/%s", tmp, name) < 0)
		exit(1);
	return p;
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *b = malloc((size_t)n + 1);
	*len = fread(b, 1, (size_t)n, f);
	fclose(f);
	return b;
}

static void spit(const char *path, const void *b, size_t len)
{
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(b, 1, len, f) != len)
		exit(1);
	fclose(f);
}

/* ---- demo: counts equal the reader's ------------------------------------------- */

struct totals {
	uint64_t by_type[256], events, lost, files;
	uint64_t first_open_polls, first_open_parks; /* from the first segment's THREAD_DEFs */
};

static void read_totals(const char *path, struct totals *t, bool first_of_recording)
{
	struct ss_reader *r;
	char err[256];
	if (ss_reader_open_file(&r, path, NULL, NULL, err, sizeof err) != 0)
		return;
	struct ss_block_info b;
	struct ss_record rec;
	while (ss_reader_next_block(r, &b))
		while (ss_reader_next_record(r, &rec))
			if (first_of_recording && rec.type == SS_REC_THREAD_DEF &&
			    (rec.u.thread_def.flags & SS_THREAD_F_WORKER)) {
				t->first_open_polls += rec.u.thread_def.open_since != 0;
				t->first_open_parks += rec.u.thread_def.parked_since != 0;
			}
	const struct ss_reader_stats *st = ss_reader_stats(r);
	for (int i = 0; i < 256; i++)
		t->by_type[i] += st->by_type[i];
	t->events += st->events;
	t->lost += st->lost_events;
	t->files++;
	ss_reader_close(r);
}

/* The segment files of the demo, and whether each is the first (lowest seq) of
 * its recording. */
static int list_demo(const char *demo, char files[][512], bool *first, int max)
{
	const char *scen[] = { "blocking", "leak", "long-poll", "mutex", "starvation", "steady" };
	int n = 0;
	for (size_t s = 0; s < 6; s++) {
		int lo = n;
		uint64_t min_seq = UINT64_MAX;
		for (int k = 0; k < 1000 && n < max; k++) {
			snprintf(files[n], 512, "%s/%s/%s.%d.bin", demo, scen[s], scen[s], k);
			if (access(files[n], R_OK) != 0)
				continue;
			if ((uint64_t)k < min_seq)
				min_seq = (uint64_t)k;
			first[n++] = false;
		}
		for (int i = lo; i < n; i++) {
			char want[64];
			snprintf(want, sizeof want, ".%llu.bin", (unsigned long long)min_seq);
			size_t fl = strlen(files[i]), wl = strlen(want);
			first[i] = fl > wl && strcmp(files[i] + fl - wl, want) == 0;
		}
	}
	return n;
}

static void test_demo(const char *demo, const char *dbpath)
{
	static char files[256][512];
	static bool first[256];
	int n = list_demo(demo, files, first, 256);
	struct totals t = { 0 };
	for (int i = 0; i < n; i++)
		read_totals(files[i], &t, first[i]);
	struct ss_import_result res;
	int rc = import(dbpath, &res, NULL, 0, 1, demo);
	CHECK(rc == SS_IMPORT_OK, "rc %d", rc);
	CHECK(res.imported == (uint64_t)n, "imported %llu of %d", (unsigned long long)res.imported, n);
	CHECK(res.events == t.events, "events %llu vs %llu", (unsigned long long)res.events,
	      (unsigned long long)t.events);
	sqlite3 *db = opendb(dbpath);
	CHECK(q1(db, "SELECT count(*) FROM segments") == n, "segments");
	CHECK(q1(db, "SELECT sum(events) FROM segments") == (int64_t)t.events, "segment events");
	CHECK(q1(db, "SELECT count(*) FROM recordings") == 6, "recordings");
	int64_t polls = q1(db, "SELECT count(*) FROM polls");
	CHECK(polls == (int64_t)(t.by_type[SS_REC_POLL_BEGIN] + t.first_open_polls), "polls %lld vs %llu",
	      (long long)polls, (unsigned long long)t.by_type[SS_REC_POLL_BEGIN]);
	CHECK(q1(db, "SELECT count(*) FROM parks") == (int64_t)(t.by_type[SS_REC_PARK] + t.first_open_parks),
	      "parks");
	CHECK(q1(db, "SELECT count(*) FROM wakes") == (int64_t)t.by_type[SS_REC_WAKE], "wakes");
	CHECK(q1(db, "SELECT count(*) FROM tasks WHERE spawn_ts IS NOT NULL") == (int64_t)t.by_type[SS_REC_SPAWN],
	      "spawned tasks");
	CHECK(q1(db, "SELECT count(*) FROM tasks WHERE end_ts IS NOT NULL") == (int64_t)t.by_type[SS_REC_TERMINATE],
	      "terminated tasks");
	CHECK(q1(db, "SELECT count(*) FROM marks") == (int64_t)t.by_type[SS_REC_MARK], "marks");
	CHECK(q1(db, "SELECT count(*) FROM spans") == (int64_t)t.by_type[SS_REC_SPAN_BEGIN], "spans");
	CHECK(q1(db, "SELECT count(*) FROM samples") == (int64_t)t.by_type[SS_REC_SAMPLE], "samples");
	CHECK(q1(db, "SELECT count(*) FROM stall_captures") == (int64_t)t.by_type[SS_REC_STALL], "stall captures");
	CHECK(q1(db, "SELECT count(*) FROM task_dumps") == (int64_t)t.by_type[SS_REC_TASK_DUMP], "task dumps");
	CHECK(q1(db, "SELECT coalesce(sum(count), 0) FROM loss WHERE source = 'events'") == (int64_t)t.lost, "loss");
	int64_t qd = q1(db, "SELECT count(*) FROM queue_depths");
	CHECK(qd <= (int64_t)t.by_type[SS_REC_QUEUE] && (qd > 0) == (t.by_type[SS_REC_QUEUE] > 0), "queue %lld",
	      (long long)qd);
	CHECK(q1(db, "SELECT count(*) FROM workers") > 0, "workers");
	/* Summaries: every level adds up to the complete polls and parks. */
	for (int l = 0; l < 4; l++) {
		int64_t size = l == 0 ? 1000000 : l == 1 ? 10000000 : l == 2 ? 100000000 : 1000000000;
		CHECK(q1(db, "SELECT sum(busy_ns) FROM worker_summaries WHERE bucket_ns = %lld", (long long)size) ==
			      q1(db, "SELECT sum(dur) FROM polls WHERE NOT incomplete"),
		      "busy at level %d", l);
		CHECK(q1(db, "SELECT sum(polls) FROM worker_summaries WHERE bucket_ns = %lld", (long long)size) ==
			      q1(db, "SELECT count(*) FROM polls WHERE NOT incomplete"),
		      "poll count at level %d", l);
		CHECK(q1(db, "SELECT sum(parked_ns) FROM worker_summaries WHERE bucket_ns = %lld", (long long)size) ==
			      q1(db, "SELECT sum(dur) FROM parks WHERE NOT incomplete"),
		      "parked at level %d", l);
		CHECK(q1(db, "SELECT count(*) FROM worker_summaries WHERE bucket_ns = %lld AND"
			     " busy_ns + parked_ns > bucket_ns", (long long)size) == 0, "overfull bucket");
	}
	/* Sparse levels (the 1-2-5 steps between the full ones): each row lies
	 * inside its parent's bucket and holds no more than it; no off-CPU time. */
	static const int64_t sparse[][2] = {
		{ 50000, 1000000 }, { 100000, 1000000 }, { 200000, 1000000 }, { 500000, 1000000 }, { 2000000, 10000000 },
		{ 5000000, 10000000 }, { 20000000, 100000000 }, { 50000000, 100000000 },
		{ 200000000, 1000000000 }, { 500000000, 1000000000 },
	};
	int64_t sparse_rows = 0;
	for (size_t i = 0; i < sizeof sparse / sizeof sparse[0]; i++) {
		long long f = (long long)sparse[i][0], pa = (long long)sparse[i][1];
		sparse_rows += q1(db, "SELECT count(*) FROM worker_summaries WHERE bucket_ns = %lld", f);
		/* the parent through summary_rows' key (the view's computed
		 * columns would make the join a scan per row) */
		CHECK(q1(db, "SELECT count(*) FROM worker_summaries c LEFT JOIN summary_rows p"
			     " ON p.scale = %lld AND p.worker_id = c.worker_id AND p.bucket = c.ts / %lld"
			     " WHERE c.bucket_ns = %lld AND (p.bucket IS NULL OR c.busy_ns > p.busy_ns OR"
			     " c.parked_ns > p.parked_ns OR c.polls > p.polls OR c.offcpu_ns != 0)", pa / 50000, pa,
			 f) == 0,
		      "sparse level %lld ns outside its parent", f);
		CHECK(q1(db, "SELECT coalesce(sum(busy_ns), 0) FROM worker_summaries WHERE bucket_ns = %lld", f) <=
			      q1(db, "SELECT sum(dur) FROM polls WHERE NOT incomplete"),
		      "sparse level %lld ns busy", f);
	}
	CHECK(sparse_rows > 0, "no sparse summary rows at all");
	/* No poll longer than its recording. */
	CHECK(q1(db, "SELECT count(*) FROM polls p JOIN workers w ON w.id = p.worker_id JOIN recordings r"
		     " ON r.id = w.recording_id WHERE p.dur > r.last_ts - r.first_ts + 100000000") == 0,
	      "phantom long poll");

	/* Stitching across rotations in real data: every open poll a THREAD_DEF of
	 * segment N > 0 announces is one complete row that began before the segment. */
	int stitched = 0;
	for (int i = 0; i < n; i++) {
		if (first[i])
			continue;
		struct ss_reader *r;
		char err[256];
		if (ss_reader_open_file(&r, files[i], NULL, NULL, err, sizeof err) != 0)
			continue;
		uint64_t session = ss_reader_header(r)->session_id, start = ss_reader_header(r)->start_ts;
		struct ss_block_info b;
		struct ss_record rec;
		bool first_block = true;
		while (ss_reader_next_block(r, &b) && first_block) {
			first_block = false;
			while (ss_reader_next_record(r, &rec)) {
				if (rec.type != SS_REC_THREAD_DEF || !rec.u.thread_def.open_since)
					continue;
				int64_t c = q1(db, "SELECT count(*) FROM polls p JOIN workers w ON w.id = p.worker_id"
					       " JOIN threads t ON t.id = w.thread_id JOIN recordings r ON r.id = t.recording_id"
					       " WHERE r.session_id = %lld AND t.thread = %lld AND p.ts = %lld"
					       " AND NOT p.incomplete AND p.ts < %lld AND p.ts + p.dur > %lld",
					       (long long)session, (long long)rec.u.thread_def.thread,
					       (long long)rec.u.thread_def.open_since, (long long)start, (long long)start);
				CHECK(c == 1, "stitched poll in %s thread %llu: %lld rows", files[i],
				      (unsigned long long)rec.u.thread_def.thread, (long long)c);
				stitched++;
			}
		}
		ss_reader_close(r);
	}
	CHECK(stitched > 0, "the demo has no poll open across a rotation");
	printf("demo: %d segments, %llu events, %lld polls, %d stitched across rotations\n", n,
	       (unsigned long long)t.events, (long long)polls, stitched);

	/* Every index of the schema is there and holds exactly its table's rows: a
	 * fresh database gets them before its first row, kept up during the load. */
	int indexes = 0;
	for (const char *p = strstr(ss_schema_sql, SS_SCHEMA_INDEX_MARKER); p && (p = strstr(p, "\nCREATE INDEX")); p++)
		indexes++;
	CHECK(indexes > 0, "no index in the schema's index part");
	CHECK(q1(db, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL") == indexes,
	      "indexes after a fresh import: %lld of the schema's %d",
	      (long long)q1(db, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"), indexes);
	char *integrity = qs(db, "PRAGMA integrity_check");
	CHECK(integrity && strcmp(integrity, "ok") == 0, "integrity_check: %s", integrity ? integrity : "(none)");
	free(integrity);

	/* Again: nothing new. */
	rc = import(dbpath, &res, NULL, 0, 1, demo);
	CHECK(rc == SS_IMPORT_OK && res.imported == 0 && res.unchanged == (uint64_t)n && res.events == 0,
	      "re-import: rc %d imported %llu unchanged %llu", rc, (unsigned long long)res.imported,
	      (unsigned long long)res.unchanged);
	CHECK(q1(db, "SELECT count(*) FROM polls") == polls, "re-import changed polls");
	CHECK(q1(db, "SELECT count(*) FROM segments") == n, "re-import changed segments");
	sqlite3_close(db);
}

/* ---- typical questions ----------------------------------------------------- */

static void test_sql(const char *dbpath)
{
	sqlite3 *db = opendb(dbpath);
	/* Longest polls with their locations. */
	char *loc = qs(db, "SELECT l.file || ':' || l.line || ' ' || l.function FROM polls p"
			   " JOIN locations l ON l.id = p.location_id WHERE NOT p.incomplete"
			   " ORDER BY p.dur DESC LIMIT 1");
	CHECK(loc && strchr(loc, ':'), "longest poll location %s", loc ? loc : "(none)");
	printf("sql: longest poll at %s\n", loc ? loc : "?");
	free(loc);
	/* Wake-to-poll p99 per location. */
	int64_t rows = q1(db, "SELECT count(*) FROM ("
			      " WITH d AS (SELECT p.location_id AS loc, w.delay AS delay,"
			      "   row_number() OVER (PARTITION BY p.location_id ORDER BY w.delay) AS rn,"
			      "   count(*) OVER (PARTITION BY p.location_id) AS n"
			      "   FROM wakes w JOIN polls p ON p.id = w.poll_id)"
			      " SELECT loc, min(delay) AS p99 FROM d WHERE rn >= 0.99 * n GROUP BY loc)");
	CHECK(rows > 0, "wake-to-poll p99 rows %lld", (long long)rows);
	/* Samples inside the longest poll that has samples, with their frames. */
	int64_t frames = q1(db, "SELECT count(*) FROM samples s JOIN callsite_frames f ON f.callsite_id = s.callsite_id"
				" WHERE s.poll_id = (SELECT s2.poll_id FROM samples s2 JOIN polls p ON p.id = s2.poll_id"
				" ORDER BY p.dur DESC LIMIT 1) AND f.function IS NOT NULL");
	int64_t samples = q1(db, "SELECT count(*) FROM samples WHERE poll_id IS NOT NULL");
	CHECK(samples == 0 || frames > 0, "frames of samples in the longest poll: %lld", (long long)frames);
	printf("sql: %lld samples inside polls; %lld named frames in the longest sampled poll\n", (long long)samples,
	       (long long)frames);
	sqlite3_close(db);
}

/* ---- synthetic segments: stitching, incomplete, wakes ------------------------- */

static void put_v(uint8_t *b, size_t *n, uint64_t v) { *n += ss_put_varint(b + *n, v); }

static void thread_def_open(struct sb *b, uint64_t thread, uint64_t task, uint64_t since, uint64_t parked)
{
	uint8_t r[128];
	size_t n = 0;
	r[n++] = SS_REC_THREAD_DEF;
	put_v(r, &n, thread);
	put_v(r, &n, 100 + thread);
	put_v(r, &n, 2);
	r[n++] = 'w';
	r[n++] = '0';
	put_v(r, &n, 1);     /* runtime string */
	put_v(r, &n, 0);
	put_v(r, &n, SS_THREAD_F_WORKER);
	put_v(r, &n, task);
	put_v(r, &n, 2);     /* location */
	put_v(r, &n, since);
	put_v(r, &n, parked);
	sb_raw_record(b, r, n);
}

static void defs(struct sb *b)
{
	sb_string(b, 1, "rt");
	sb_string(b, 3, "file.c");
	sb_string(b, 4, "fn");
	sb_location(b, 2, 3, 42, 4);
}

/* A segment begun, its first block open with the definitions of defs(). */
static void segment_begun(struct sb *b, const struct sb_header *h)
{
	sb_init(b, h);
	sb_begin_block(b);
	defs(b);
}

/* Seals b, writes it to name in the test directory and frees it; the path. */
static char *seal_to(struct sb *b, const char *name)
{
	sb_footer(b, SS_SEALED_WRITER, 0);
	char *p = path_in_tmp(name);
	spit(p, b->buf, b->len);
	sb_free(b);
	return p;
}

/* Two segments into db: in one import, or in two (the second one resumes
 * from what the first stored). */
static void import_two(const char *db, bool two, const char *p0, const char *p1, const char *what)
{
	struct ss_import_result res;
	if (two) {
		CHECK(import(db, &res, NULL, 0, 1, p0) == SS_IMPORT_OK, "%s: first import", what);
		CHECK(import(db, &res, NULL, 0, 1, p1) == SS_IMPORT_OK, "%s: second import", what);
	} else {
		CHECK(import(db, &res, NULL, 0, 2, p0, p1) == SS_IMPORT_OK, "%s: import", what);
	}
}

static void test_stitch(void)
{
	struct sb_header h = { .session_id = 77, .pid = 1, .exe = "/x", .hostname = "h", .boot_id = "b",
			       .start_ts = 1000 };
	struct sb s0, s1;
	h.segment_seq = 0;
	segment_begun(&s0, &h);
	thread_def_open(&s0, 1, 0, 0, 0);
	sb_thread_def(&s0, 2, 202, "waker", 0, 0, 0);
	sb_thread(&s0, 2, 1500);
	sb_event(&s0, SS_REC_WAKE, 1500, 1, (uint64_t)7);
	sb_thread(&s0, 1, 2000);
	sb_event(&s0, SS_REC_POLL_BEGIN, 2000, 2, (uint64_t)7, (uint64_t)2);
	sb_end_block(&s0, false);
	sb_footer(&s0, SS_SEALED_WRITER, 0);

	h.segment_seq = 1;
	h.start_ts = 3000;
	segment_begun(&s1, &h);
	thread_def_open(&s1, 1, 7, 2000, 0);
	sb_thread(&s1, 1, 5000);
	sb_event(&s1, SS_REC_POLL_END, 5000, 0);
	sb_event(&s1, SS_REC_POLL_BEGIN, 6000, 2, (uint64_t)8, (uint64_t)2);
	sb_event(&s1, SS_REC_QUEUE, 7000, 2, (uint64_t)3, (uint64_t)250); /* local, global */
	sb_end_block(&s1, false);
	sb_footer(&s1, SS_SEALED_WRITER, 0);

	char *p0 = path_in_tmp("st.0.bin"), *p1 = path_in_tmp("st.1.bin"), *db = path_in_tmp("stitch.db");
	spit(p0, s0.buf, s0.len);
	spit(p1, s1.buf, s1.len);
	struct ss_import_result res;
	/* Given in reverse order: the importer orders by sequence. */
	int rc = import(db, &res, NULL, 0, 2, p1, p0);
	CHECK(rc == SS_IMPORT_OK && res.imported == 2, "stitch import rc %d", rc);
	sqlite3 *d = opendb(db);
	CHECK(q1(d, "SELECT count(*) FROM polls") == 2, "2 polls, got %lld", (long long)q1(d, "SELECT count(*) FROM polls"));
	CHECK(q1(d, "SELECT dur FROM polls WHERE ts = 2000 AND NOT incomplete") == 3000, "stitched dur");
	CHECK(q1(d, "SELECT dur FROM polls WHERE ts = 6000 AND incomplete") == 1000, "incomplete poll dur");
	CHECK(q1(d, "SELECT delay FROM wakes WHERE poll_id = (SELECT id FROM polls WHERE ts = 2000)") == 500,
	      "wake delay");
	CHECK(q1(d, "SELECT count(*) FROM locations WHERE file = 'file.c' AND line = 42") == 1, "location");
	CHECK(q1(d, "SELECT count(*) FROM queue_depths WHERE local = 3 AND global = 250") == 1,
	      "queue depths: local 3 and global 250, as recorded");
	sqlite3_close(d);
	printf("stitch: poll across a rotation is one row, open poll at the end incomplete\n");
	sb_free(&s0);
	sb_free(&s1);
	free(p0), free(p1), free(db);
}

/* Records of several threads in one block, in per-thread runs: thread 1's run
 * (spawn, wake, terminate of task 9) comes first in the file, thread 2's polls
 * of that task, which happened before the terminate, after it. Imported in time
 * order: one task row, its polls and its wake belong to it, the wake's delay
 * runs to the poll it led to. */
/* A segment of a session begun, its first block open: the definitions and
 * worker threads 1 and 2. */
static void two_threads(struct sb *b, struct sb_header *h, uint64_t session)
{
	*h = (struct sb_header){ .session_id = session, .pid = 1, .exe = "/x", .hostname = "h", .boot_id = "b",
				 .start_ts = 1000 };
	segment_begun(b, h);
	thread_def_open(b, 1, 0, 0, 0);
	thread_def_open(b, 2, 0, 0, 0);
}

/* A poll of task on thread from ts to ts + 100. */
static void poll_at(struct sb *b, uint64_t thread, uint64_t ts, uint64_t task)
{
	sb_thread(b, thread, ts);
	sb_event(b, SS_REC_POLL_BEGIN, ts, 2, task, (uint64_t)2);
	sb_event(b, SS_REC_POLL_END, ts + 100, 0);
}

/* A segment begun, its first block open: the definitions and workers 1 to 3. */
static void three_workers(struct sb *b, const struct sb_header *h)
{
	segment_begun(b, h);
	for (uint64_t th = 1; th <= 3; th++)
		thread_def_open(b, th, 0, 0, 0);
}

/* Worker 2 polls at 3 s and thread 1 marks at 7 s in block 0; worker 3's poll
 * at 2 s is in block 1 (which first defines string 1 again where
 * define_again), more than the merge's 2 s window after the mark. The segment
 * is left after block 1. */
static void poll_behind_window(struct sb *b, const struct sb_header *h, bool define_again, bool zstd)
{
	const uint64_t s = 1000000000ull;
	three_workers(b, h);
	poll_at(b, 2, 3 * s, 7);
	sb_thread(b, 1, 7 * s);
	sb_event(b, SS_REC_MARK, 7 * s, 2, (uint64_t)1, (uint64_t)0);
	sb_end_block(b, false);
	sb_begin_block(b);
	if (define_again)
		sb_string(b, 1, "rt");
	poll_at(b, 3, 2 * s, 8);
	sb_end_block(b, zstd);
}

/* poll_behind_window: the window alone releases the 3 s poll before block 1
 * is read and the 2 s one comes late (its poll id above the later poll's);
 * with the blocks' floors read ahead, block 0 waits for block 1's 2 s, and ids
 * grow with the polls' starts. */
static void test_floors(void)
{
	struct sb_header h = { .session_id = 90, .pid = 1, .exe = "/x", .hostname = "h", .boot_id = "b",
			       .start_ts = 1000 };
	const uint64_t s = 1000000000ull;
	for (int sealed = 1; sealed >= 0; sealed--) {
		struct sb b;
		h.session_id = 90 + (uint64_t)sealed;
		poll_behind_window(&b, &h, false, true);
		if (sealed) {
			sb_footer(&b, SS_SEALED_WRITER, 0);
		} else {
			/* An .active segment: its last block read ahead has no
			 * floor after it; the window decides there. */
			sb_begin_block(&b);
			poll_at(&b, 2, 8 * s, 9);
			sb_end_block(&b, false);
		}
		char *p = path_in_tmp(sealed ? "floors.0.bin" : "floors.0.bin.active");
		char *db = path_in_tmp(sealed ? "floors.db" : "floors-active.db");
		spit(p, b.buf, b.len);
		sb_free(&b);
		struct ss_import_result res;
		CHECK(import(db, &res, NULL, 0, 1, p) == SS_IMPORT_OK, "floors: import");
		CHECK(res.late == 0, "floors (%s): %llu records late", sealed ? "sealed" : "active",
		      (unsigned long long)res.late);
		sqlite3 *d = opendb(db);
		CHECK(q1(d, "SELECT count(*) FROM polls") == 3 - sealed, "floors: %lld polls",
		      (long long)q1(d, "SELECT count(*) FROM polls"));
		CHECK(q1(d, "SELECT count(*) FROM polls a JOIN polls b ON a.ts < b.ts AND a.id > b.id") == 0,
		      "floors (%s): a poll's id is above a later poll's: delivered out of time order",
		      sealed ? "sealed" : "active");
		sqlite3_close(d);
		unlink(p);
		free(p), free(db);
	}
	printf("floors: records beyond the window, in a later block than records after them, are in time order\n");
}

/* ---- a segment that grows while it is imported ---------------------------------- */

/* What block_done appends to the file after block 0 is read (the floors were
 * read ahead before that block's release). */
struct grow {
	const char *path;
	const uint8_t *rest;
	size_t rest_len;
	bool done;
};

static void grow_block_done(void *ctx, const struct ss_block_info *b, bool skipped)
{
	(void)skipped;
	struct grow *g = ctx;
	if (!g || b->index != 0 || g->done)
		return;
	int fd = open(g->path, O_WRONLY | O_APPEND);
	CHECK(fd >= 0 && write(fd, g->rest, g->rest_len) == (ssize_t)g->rest_len, "growth: append");
	if (fd >= 0)
		close(fd);
	g->done = true;
}

/* One ss_segment_source_run of path into m, the first skip blocks' events left
 * out as an incremental import leaves them; the reader's damage and blocks. */
static struct ss_segment_run grow_run(struct ss_model *m, const char *path, uint64_t skip, struct grow *g,
				      struct ss_damage *dmg, uint64_t *blocks)
{
	struct ss_segment_run run = { 0 };
	struct ss_reader *rd;
	char err[256];
	if (ss_reader_open_file(&rd, path, NULL, NULL, err, sizeof err) != 0) {
		CHECK(false, "growth: open %s: %s", path, err);
		return run;
	}
	const struct ss_segment_header *h = ss_reader_header(rd);
	struct ss_recording_info info = { h->session_id, h->pid, h->exe, strlen(h->exe), h->hostname, h->boot_id,
					  0, 0 };
	CHECK(ss_model_recording(m, &info) == 0, "growth: recording");
	CHECK(ss_segment_source_run(m, rd, NULL, skip, &run, grow_block_done, g) == 0, "growth: run");
	*dmg = *ss_reader_damage(rd);
	*blocks = ss_reader_stats(rd)->blocks;
	ss_reader_close(rd);
	return run;
}

/* An .active segment that grows while it is imported: blocks of polls at 1.0,
 * 1.5 and 1.6 s, and a block the writer appends while block 0 is read, with a
 * poll at 1.2 s (threads' rings are drained one after another, so a later
 * block can hold earlier times). The floors were read from the three blocks
 * only, so the import reads those three and leaves the fourth to the next
 * import: no record comes late. Whole, or half written when the floors are
 * read (then the import ends where they ended: at that damage). Read on one
 * thread and with the pipeline. A read that went on into the new block
 * released 1.5 s before it and counted its two records late. */
static void test_growth_during_import(void)
{
	const uint64_t s = 1000000000ull;
	struct sb_header h = { .session_id = 95, .pid = 1, .exe = "/x", .hostname = "h", .boot_id = "b",
			       .start_ts = 1000 };
	struct sb b;
	three_workers(&b, &h);
	const uint64_t at[4] = { 1 * s, 1500000000ull, 1600000000ull, 1200000000ull };
	const uint64_t on[4] = { 1, 2, 1, 3 };
	size_t prefix = 0;
	for (int k = 0; k < 4; k++) {
		if (k)
			sb_begin_block(&b);
		poll_at(&b, on[k], at[k], (uint64_t)(7 + k));
		sb_end_block(&b, false);
		if (k == 2)
			prefix = b.len;
	}
	char *p = path_in_tmp("grow.0.bin.active");
	for (int half = 0; half < 2; half++) {
		for (int pipe = 0; pipe < 2; pipe++) {
			/* What is there when the floors are read: three blocks, and
			 * half of the fourth or none of it. */
			size_t there = prefix + (half ? (b.len - prefix) / 2 : 0);
			spit(p, b.buf, there);
			struct grow g = { p, b.buf + there, b.len - there, false };
			setenv("STALLSCOPE_IMPORT_PIPELINE", pipe ? "1" : "0", 1);
			char err[600];
			struct ss_sqlite_store *st = ss_sqlite_open(":memory:", false, err, sizeof err);
			CHECK(st != NULL, "growth: store: %s", err);
			if (!st)
				break;
			struct ss_sink sink;
			ss_sqlite_sink(st, &sink);
			struct ss_model_options mo = { .quiet = true };
			struct ss_model *m = ss_model_new(&mo, &sink, err, sizeof err);
			CHECK(m != NULL, "growth: model: %s", err);
			if (!m) {
				ss_sqlite_close(st);
				break;
			}
			struct ss_damage dmg;
			uint64_t blocks;
			struct ss_segment_run r1 = grow_run(m, p, 0, &g, &dmg, &blocks);
			const char *how = half ? (pipe ? "half a block, pipeline" : "half a block")
					       : (pipe ? "a block, pipeline" : "a block");
			CHECK(g.done, "growth (%s): the file did not grow", how);
			CHECK(ss_model_late(m) == 0, "growth (%s): %llu records late", how,
			      (unsigned long long)ss_model_late(m));
			CHECK(r1.events == 6 && blocks == 3, "growth (%s): %llu events of %llu blocks read, want the"
			      " 6 of the 3 blocks the floors were read from", how, (unsigned long long)r1.events,
			      (unsigned long long)blocks);
			CHECK(dmg.kind == (half ? SS_DAMAGE_TRUNCATED : SS_DAMAGE_NONE) && (!half || dmg.block == 3),
			      "growth (%s): damage %s at block %llu, want %s", how, ss_damage_kind_name(dmg.kind),
			      (unsigned long long)dmg.block, half ? "truncated at 3 (as the floors saw it)" : "none");
			/* The next import: the block written since. */
			struct ss_segment_run r2 = grow_run(m, p, blocks, NULL, &dmg, &blocks);
			CHECK(r2.events == 2 && blocks == 4 && dmg.kind == SS_DAMAGE_NONE && ss_model_late(m) == 0,
			      "growth (%s): the next import read %llu events, %llu blocks, %llu late", how,
			      (unsigned long long)r2.events, (unsigned long long)blocks,
			      (unsigned long long)ss_model_late(m));
			ss_model_recording_end(m);
			ss_model_free(m);
			ss_sqlite_close(st);
		}
	}
	unsetenv("STALLSCOPE_IMPORT_PIPELINE");
	unlink(p);
	free(p);
	sb_free(&b);
	printf("growth: an .active segment that grows while it is imported gives the blocks the floors were"
	       " read from, in time order; the next import the rest\n");
}

/* A thread of an earlier segment whose THREAD_DEF in the next one comes in a
 * later block than its sampler's records there: a rename (COMM) at 2.1 s and
 * a CPU sample at 2.2 s in block 0 of segment 1, the definition that makes
 * it a worker in block 1 (2.5 s). As with the window alone, the definition is
 * read before those records are delivered: the name is the COMM's (the later
 * fact), and the sample is the worker's. Delivered by the floor before the
 * definition, the name was the definition's and the sample had no worker. */
static void test_known_thread_defined_later(void)
{
	const uint64_t s = 1000000000ull;
	struct sb_header h = { .session_id = 96, .pid = 1, .exe = "/x", .hostname = "h", .boot_id = "b",
			       .start_ts = 1000 };
	struct sb s0, s1;
	h.segment_seq = 0;
	segment_begun(&s0, &h);
	sb_thread_def(&s0, 1, 101, "first", 0, 0, 0);
	sb_thread(&s0, 1, 1 * s);
	sb_event(&s0, SS_REC_MARK, 1 * s, 2, (uint64_t)1, (uint64_t)5);
	sb_end_block(&s0, false);
	char *p0 = seal_to(&s0, "known.0.bin");
	h.segment_seq = 1;
	h.start_ts = 2 * s;
	segment_begun(&s1, &h);
	thread_def_open(&s1, 2, 0, 0, 0);
	poll_at(&s1, 2, 2 * s, 7);
	uint8_t comm[32];
	size_t n = 0;
	n += ss_put_varint(comm + n, 1);
	n += ss_put_varint(comm + n, 101);
	n += ss_put_varint(comm + n, 2 * s + s / 10);
	n += ss_put_varint(comm + n, 7);
	memcpy(comm + n, "renamed", 7);
	n += 7;
	sb_ext(&s1, SS_REC_COMM, comm, n);
	sb_cpu_sample(&s1, 1, 101, 2 * s + s / 5, 0);
	sb_end_block(&s1, false);
	sb_begin_block(&s1);
	sb_thread_def(&s1, 1, 101, "first", 1, 0, SS_THREAD_F_WORKER);
	sb_thread(&s1, 1, 2 * s + s / 2);
	sb_event(&s1, SS_REC_MARK, 2 * s + s / 2, 2, (uint64_t)1, (uint64_t)6);
	sb_end_block(&s1, false);
	char *p1 = seal_to(&s1, "known.1.bin");
	for (int two = 0; two < 2; two++) {
		for (int pipe = 0; pipe < 2; pipe++) {
			char name[32];
			snprintf(name, sizeof name, "known-%d-%d.db", two, pipe);
			char *db = path_in_tmp(name);
			setenv("STALLSCOPE_IMPORT_PIPELINE", pipe ? "1" : "0", 1);
			import_two(db, two, p0, p1, "known");
			const char *how = two ? (pipe ? "two imports, pipeline" : "two imports")
					      : (pipe ? "one import, pipeline" : "one import");
			sqlite3 *d = opendb(db);
			char *nm = qs(d, "SELECT name FROM threads WHERE thread = 1");
			CHECK(nm && strcmp(nm, "renamed") == 0, "known (%s): thread 1 is called '%s', want the"
			      " COMM's 'renamed'", how, nm ? nm : "(null)");
			free(nm);
			CHECK(q1(d, "SELECT count(*) FROM samples WHERE worker_id IS NOT NULL") == 1,
			      "known (%s): the sample after the thread became a worker has no worker", how);
			sqlite3_close(d);
			free(db);
		}
	}
	unsetenv("STALLSCOPE_IMPORT_PIPELINE");
	free(p0), free(p1);
	printf("known thread: its definition in a later segment is read before its sampler's records there\n");
}

/* Records late beyond what the merge holds are counted and the import says
 * so, and why: poll_behind_window in a segment that defines a string twice
 * (as the recorder does after a block failed to reach the disk) has no
 * floors, so the window decides, and block 1's poll at 2 s comes after block
 * 0's at 3 s was passed on (stream time 7 s). */
static void test_late_warning(void)
{
	struct sb_header h = { .session_id = 97, .pid = 1, .exe = "/x", .hostname = "h", .boot_id = "b",
			       .start_ts = 1000 };
	struct sb b;
	poll_behind_window(&b, &h, true, false);
	sb_footer(&b, SS_SEALED_WRITER, 0);
	char *p = path_in_tmp("late-warning.0.bin"), *db = path_in_tmp("late-warning.db");
	spit(p, b.buf, b.len);
	sb_free(&b);
	char *text = NULL;
	size_t len = 0;
	FILE *log = open_memstream(&text, &len);
	struct ss_import_options o = { .db_path = db, .log = log };
	const char *paths[] = { p };
	struct ss_import_result res;
	CHECK(ss_import_paths(&o, paths, 1, &res) == SS_IMPORT_OK, "late warning: import");
	fclose(log);
	CHECK(res.late == 2, "late warning: %llu records late, want the 2 of the poll at 2 s",
	      (unsigned long long)res.late);
	CHECK(text && strstr(text, "warning: 2 records came after later ones of other threads had been passed on"
			     " (the merge holds up to 1048576 records, and 2.0 s of trace time where"
			     " blocks' time floors are not known"),
	      "late warning: the import said: %s", text ? text : "(nothing)");
	free(text);
	free(p), free(db);
	printf("late: records beyond what the merge holds are counted, and the warning says what it holds\n");
}

static void test_cross_thread_order(void)
{
	struct sb_header h;
	struct sb b;
	two_threads(&b, &h, 78);
	sb_thread(&b, 1, 1500);
	sb_event(&b, SS_REC_SPAWN, 1500, 2, (uint64_t)9, (uint64_t)2);
	sb_event(&b, SS_REC_WAKE, 2600, 1, (uint64_t)9);
	sb_event(&b, SS_REC_TERMINATE, 4000, 1, (uint64_t)9);
	sb_thread(&b, 2, 2000);
	sb_event(&b, SS_REC_POLL_BEGIN, 2000, 2, (uint64_t)9, (uint64_t)2);
	sb_event(&b, SS_REC_POLL_END, 2500, 0);
	sb_event(&b, SS_REC_POLL_BEGIN, 3000, 2, (uint64_t)9, (uint64_t)2);
	sb_event(&b, SS_REC_POLL_END, 3900, 0);
	sb_end_block(&b, false);
	sb_footer(&b, SS_SEALED_WRITER, 0);
	char *p = path_in_tmp("order.0.bin"), *db = path_in_tmp("order.db");
	spit(p, b.buf, b.len);
	sb_free(&b);
	struct ss_import_result res;
	CHECK(import(db, &res, NULL, 0, 1, p) == SS_IMPORT_OK, "order import");
	sqlite3 *d = opendb(db);
	CHECK(q1(d, "SELECT count(*) FROM tasks") == 1, "%lld task rows for one task",
	      (long long)q1(d, "SELECT count(*) FROM tasks"));
	CHECK(q1(d, "SELECT count(*) FROM tasks WHERE spawn_ts = 1500 AND end_ts = 4000") == 1, "its lifetime");
	CHECK(q1(d, "SELECT count(*) FROM polls p JOIN tasks t ON t.id = p.task_id WHERE t.task = 9") == 2,
	      "both polls are the task's");
	CHECK(q1(d, "SELECT delay FROM wakes WHERE poll_id = (SELECT id FROM polls WHERE ts = 3000)") == 400,
	      "the wake leads to the poll after it, delay %lld",
	      (long long)q1(d, "SELECT delay FROM wakes WHERE poll_id = (SELECT id FROM polls WHERE ts = 3000)"));
	CHECK(res.late == 0, "%llu records late", (unsigned long long)res.late);
	sqlite3_close(d);

	/* A poll of task 9 that comes after its TERMINATE in the files, beyond
	 * the reach of any merge (in the next segment; also what an import that
	 * stopped between them sees): it still belongs to task 9's row, in one
	 * import and in two. */
	struct sb s0, s1;
	h.session_id = 79;
	h.segment_seq = 0;
	segment_begun(&s0, &h);
	thread_def_open(&s0, 1, 0, 0, 0);
	sb_thread(&s0, 1, 1500);
	sb_event(&s0, SS_REC_SPAWN, 1500, 2, (uint64_t)9, (uint64_t)2);
	sb_event(&s0, SS_REC_TERMINATE, 4000, 1, (uint64_t)9);
	sb_end_block(&s0, false);
	char *q0 = seal_to(&s0, "late.0.bin");
	h.segment_seq = 1;
	segment_begun(&s1, &h);
	thread_def_open(&s1, 2, 0, 0, 0);
	sb_thread(&s1, 2, 3000);
	sb_event(&s1, SS_REC_POLL_BEGIN, 3000, 2, (uint64_t)9, (uint64_t)2);
	sb_event(&s1, SS_REC_POLL_END, 3900, 0);
	sb_event(&s1, SS_REC_POLL_BEGIN, 5000, 2, (uint64_t)9, (uint64_t)2); /* after its end: another task */
	sb_event(&s1, SS_REC_POLL_END, 5100, 0);
	sb_end_block(&s1, false);
	char *q1p = seal_to(&s1, "late.1.bin");
	for (int two = 0; two < 2; two++) {
		char *ldb = path_in_tmp(two ? "late-two.db" : "late-one.db");
		import_two(ldb, two, q0, q1p, "late");
		d = opendb(ldb);
		CHECK(q1(d, "SELECT count(*) FROM polls p JOIN tasks t ON t.id = p.task_id"
			    " WHERE p.ts = 3000 AND t.spawn_ts = 1500 AND t.end_ts = 4000") == 1,
		      "late (%s): the late poll belongs to the ended task", two ? "two imports" : "one import");
		CHECK(q1(d, "SELECT count(*) FROM tasks") == 2, "late (%s): %lld task rows, want 2 (the poll after"
		      " its end is another task)", two ? "two imports" : "one import",
		      (long long)q1(d, "SELECT count(*) FROM tasks"));
		sqlite3_close(d);
		free(ldb);
	}
	printf("order: per-thread runs are imported in time order across threads; late records find their ended task\n");
	free(p), free(db), free(q0), free(q1p);
}

/* ---- reading on one thread, tracking on another ------------------------------- */

/* Every table's rows, in rowid order, as one text per table: two imports that
 * give the same text wrote the same rows, ids included. */
static char *all_rows(const char *dbpath)
{
	sqlite3 *d = opendb(dbpath);
	size_t cap = 1 << 20, len = 0;
	char *out = malloc(cap);
	sqlite3_stmt *t;
	sqlite3_prepare_v2(d, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
			      " ORDER BY name", -1, &t, NULL);
	while (sqlite3_step(t) == SQLITE_ROW) {
		char sql[256];
		snprintf(sql, sizeof sql, "SELECT * FROM \"%s\" ORDER BY rowid", (const char *)sqlite3_column_text(t, 0));
		sqlite3_stmt *r;
		if (sqlite3_prepare_v2(d, sql, -1, &r, NULL) != SQLITE_OK) {
			snprintf(sql, sizeof sql, "SELECT * FROM \"%s\"", (const char *)sqlite3_column_text(t, 0));
			sqlite3_prepare_v2(d, sql, -1, &r, NULL);
		}
		len += (size_t)snprintf(out + len, cap - len, "%s\n", (const char *)sqlite3_column_text(t, 0));
		while (sqlite3_step(r) == SQLITE_ROW) {
			for (int c = 0; c < sqlite3_column_count(r); c++) {
				const char *v = (const char *)sqlite3_column_text(r, c);
				size_t need = (v ? strlen(v) : 1) + 2;
				if (len + need + 64 > cap) {
					cap *= 2;
					out = realloc(out, cap);
				}
				len += (size_t)snprintf(out + len, cap - len, "%s|", v ? v : "N");
			}
			out[len++] = '\n';
			out[len] = 0;
		}
		sqlite3_finalize(r);
	}
	sqlite3_finalize(t);
	sqlite3_close(d);
	return out;
}

/* A segment whose records make the reading thread hand over many batches
 * (three threads, 40 blocks of about 2,000 events, more than the pipe holds at
 * once) and whose strings change under the events that name them: string 7 is
 * defined again in every block, and each block's marks, spans and a worker
 * lane name it. Blocks are 3 s apart, so the merge releases each block's
 * events while a later block is read: a name is resolved where its event is
 * delivered. Imported with the reader on a thread of its own
 * (STALLSCOPE_IMPORT_PIPELINE=1) and on one thread (=0): the same rows, every table, with
 * the names of many points of the reading, not only of its end. */
static void test_pipeline(void)
{
	struct sb_header h = { .session_id = 81, .pid = 1, .exe = "/x", .hostname = "h", .boot_id = "b",
			       .start_ts = 1000 };
	struct sb b;
	sb_init(&b, &h);
	uint64_t task = 1, ts = 2000;
	for (int blk = 0; blk < 40; blk++) {
		sb_begin_block(&b);
		if (blk == 0) {
			defs(&b);
			sb_meta(&b, "arch", "x86_64");
			for (uint64_t th = 1; th <= 3; th++)
				thread_def_open(&b, th, 0, 0, 0);
		}
		char name[32];
		snprintf(name, sizeof name, "name-%d", blk);
		sb_string(&b, 7, name);
		for (uint64_t th = 1; th <= 3; th++) {
			uint64_t t = ts + th * 7;
			sb_thread(&b, th, t);
			if (blk % 10 == 0)
				sb_event(&b, SS_REC_WORKER_BEGIN, t, 2, (uint64_t)7, th);
			for (int i = 0; i < 70; i++, task++) {
				sb_event(&b, SS_REC_SPAWN, t += 3, 2, task, (uint64_t)2);
				sb_event(&b, SS_REC_POLL_BEGIN, t += 5, 2, task, (uint64_t)2);
				sb_event(&b, SS_REC_SPAN_BEGIN, t += 1, 1, (uint64_t)7);
				sb_event(&b, SS_REC_MARK, t += 1, 2, (uint64_t)7, (uint64_t)(2 * i));
				sb_event(&b, SS_REC_SPAN_END, t += 1, 1, (uint64_t)7);
				/* a wake of a task of the thread before: across threads */
				sb_event(&b, SS_REC_WAKE, t += 2, 1, task > 70 ? task - 70 : task);
				sb_event(&b, SS_REC_POLL_END, t += 4, 0);
				sb_event(&b, SS_REC_QUEUE, t += 1, 2, (uint64_t)(i & 3), (uint64_t)1);
				sb_event(&b, SS_REC_TERMINATE, t += 2, 1, task);
				sb_event(&b, SS_REC_PARK, t += 1, 0);
				sb_event(&b, SS_REC_UNPARK, t += 9, 0);
			}
		}
		ts += 3000000000ull;
		sb_end_block(&b, blk % 2 == 0);
	}
	sb_footer(&b, SS_SEALED_WRITER, 0);
	char *p = path_in_tmp("pipe.0.bin"), *one = path_in_tmp("pipe-one.db"), *two = path_in_tmp("pipe-two.db");
	spit(p, b.buf, b.len);
	sb_free(&b);
	struct ss_import_result res;
	setenv("STALLSCOPE_IMPORT_PIPELINE", "0", 1);
	CHECK(import(one, &res, NULL, 0, 1, p) == SS_IMPORT_OK, "pipeline: import on one thread");
	setenv("STALLSCOPE_IMPORT_PIPELINE", "1", 1);
	CHECK(import(two, &res, NULL, 0, 1, p) == SS_IMPORT_OK, "pipeline: import on two threads");
	unsetenv("STALLSCOPE_IMPORT_PIPELINE");
	CHECK(res.events > 90000, "pipeline: %llu events", (unsigned long long)res.events);
	char *r1 = all_rows(one), *r2 = all_rows(two);
	CHECK(strcmp(r1, r2) == 0, "pipeline: the two imports wrote different rows (%zu and %zu bytes of rows)",
	      strlen(r1), strlen(r2));
	sqlite3 *d = opendb(two);
	CHECK(q1(d, "SELECT count(*) FROM marks") == 40 * 3 * 70, "pipeline: %lld marks",
	      (long long)q1(d, "SELECT count(*) FROM marks"));
	CHECK(q1(d, "SELECT count(DISTINCT name) FROM marks") >= 39, "pipeline: %lld names of marks",
	      (long long)q1(d, "SELECT count(DISTINCT name) FROM marks"));
	CHECK(q1(d, "SELECT count(DISTINCT name) FROM spans") >= 39, "pipeline: %lld names of spans",
	      (long long)q1(d, "SELECT count(DISTINCT name) FROM spans"));
	CHECK(q1(d, "SELECT count(DISTINCT runtime) FROM workers") == 1 &&
	      q1(d, "SELECT count(*) FROM workers WHERE runtime = 'name-31'") == 3, "pipeline: the lanes' runtime, as string 7 read when block 30's WORKER_BEGIN was delivered");
	sqlite3_close(d);
	printf("pipeline: %llu events read on one thread and tracked on another give the rows of one thread\n",
	       (unsigned long long)res.events);
	free(r1), free(r2), free(p), free(one), free(two);
}

/* A SWITCH record of thread 1 (tid 101): out (blocked unless preempted) or in. */
static void switch_rec(struct sb *b, uint64_t ts, int out, int preempted)
{
	uint8_t body[40];
	size_t k = 0;
	put_v(body, &k, 1);
	put_v(body, &k, 101);
	put_v(body, &k, ts);
	put_v(body, &k, 1); /* cpu 0 */
	put_v(body, &k, (out ? SS_SWITCH_F_OUT : 0) | (preempted ? SS_SWITCH_F_PREEMPT : 0));
	sb_ext(b, SS_REC_SWITCH, body, k);
}

/* One worker's switches around a park, with and without META "switches" saying
 * that parks are not switched (the sched_switch program's recordings). */
static char *parks_rows(uint64_t session, int unswitched)
{
	struct sb_header h = { .session_id = session, .pid = 1, .exe = "/x", .hostname = "h", .boot_id = "b",
			       .start_ts = 1000 };
	struct sb b;
	sb_init(&b, &h);
	sb_begin_block(&b);
	defs(&b);
	if (unswitched)
		sb_meta(&b, SS_META_SWITCHES, SS_SWITCHES_NOT_PARKED ": a BPF program on sched_switch");
	else
		sb_meta(&b, SS_META_SWITCHES, "events: the perf events' switch records");
	thread_def_open(&b, 1, 0, 0, 0);
	switch_rec(&b, 1000, 0, 0);
	sb_thread(&b, 1, 2000);
	sb_event(&b, SS_REC_PARK, 2000, 0);
	switch_rec(&b, 2100, 1, 0); /* inside the park: an edge's leftover when unswitched */
	switch_rec(&b, 2900, 0, 0);
	sb_event(&b, SS_REC_UNPARK, 3000, 0);
	switch_rec(&b, 4000, 1, 0);
	switch_rec(&b, 5000, 0, 0);
	switch_rec(&b, 5500, 1, 1);
	sb_event(&b, SS_REC_POLL_BEGIN, 6000, 2, (uint64_t)9, (uint64_t)2);
	sb_end_block(&b, false);
	sb_footer(&b, SS_SEALED_WRITER, 0);
	char name[64], dbn[64];
	snprintf(name, sizeof name, "parks%d.0.bin", unswitched);
	snprintf(dbn, sizeof dbn, "parks%d.db", unswitched);
	char *p = path_in_tmp(name), *db = path_in_tmp(dbn);
	spit(p, b.buf, b.len);
	sb_free(&b);
	struct ss_import_result res;
	CHECK(import(db, &res, NULL, 0, 1, p) == SS_IMPORT_OK, "parks: import");
	sqlite3 *d = opendb(db);
	char *rows = qs(d, "SELECT group_concat(ts || '+' || dur || ' ' || state, ', ') FROM "
			   "(SELECT * FROM cpu_intervals ORDER BY ts)");
	sqlite3_close(d);
	free(p), free(db);
	return rows ? rows : strdup("");
}

static void test_parks_unswitched(void)
{
	char *un = parks_rows(83, 1), *sw = parks_rows(84, 0);
	const char *want_un = "1000+1000 on-cpu, 3000+1000 on-cpu, 4000+1000 blocked, 5000+500 on-cpu";
	const char *want_sw = "1000+1100 on-cpu, 2100+800 blocked, 2900+1100 on-cpu, 4000+1000 blocked, "
			      "5000+500 on-cpu";
	CHECK(strcmp(un, want_un) == 0, "parks unswitched: cpu_intervals %s, want %s", un, want_un);
	CHECK(strcmp(sw, want_sw) == 0, "parks switched: cpu_intervals %s, want %s", sw, want_sw);
	printf("parks: unswitched, on a CPU until a PARK and again from the UNPARK, nothing between; "
	       "switched, every SWITCH gives its row\n");
	free(un), free(sw);
}

/* The unswitched park of parks_rows() over a rotation, in two segments imported
 * together or one at a time. how: 0 the PARK in segment 0 and the UNPARK in
 * segment 1 (whose THREAD_DEF carries the park on); 1 the PARK lost (segment
 * 1's THREAD_DEF opens the park); 2 the UNPARK lost (segment 1's THREAD_DEF
 * closes it). */
static char *parks_split_rows(uint64_t session, int how, bool two)
{
	struct sb_header h = { .session_id = session, .pid = 1, .exe = "/x", .hostname = "h", .boot_id = "b",
			       .start_ts = 1000 };
	const char *meta = SS_SWITCHES_NOT_PARKED ": a BPF program on sched_switch";
	struct sb s0, s1;
	h.segment_seq = 0;
	segment_begun(&s0, &h);
	sb_meta(&s0, SS_META_SWITCHES, meta);
	thread_def_open(&s0, 1, 0, 0, 0);
	switch_rec(&s0, 1000, 0, 0);
	if (how != 1) {
		sb_thread(&s0, 1, 2000);
		sb_event(&s0, SS_REC_PARK, 2000, 0);
		switch_rec(&s0, 2100, 1, 0);
	}
	sb_end_block(&s0, false);
	char name[64];
	snprintf(name, sizeof name, "parksplit%d.0.bin", how);
	char *p0 = seal_to(&s0, name);

	h.segment_seq = 1;
	h.start_ts = 2500;
	segment_begun(&s1, &h);
	sb_meta(&s1, SS_META_SWITCHES, meta);
	thread_def_open(&s1, 1, 0, 0, how == 2 ? 0 : 2000);
	if (how != 2) {
		switch_rec(&s1, 2900, 0, 0);
		sb_thread(&s1, 1, 3000);
		sb_event(&s1, SS_REC_UNPARK, 3000, 0);
	}
	switch_rec(&s1, 4000, 1, 0);
	switch_rec(&s1, 5000, 0, 0);
	switch_rec(&s1, 5500, 1, 1);
	sb_thread(&s1, 1, 6000);
	sb_event(&s1, SS_REC_POLL_BEGIN, 6000, 2, (uint64_t)9, (uint64_t)2);
	sb_end_block(&s1, false);
	snprintf(name, sizeof name, "parksplit%d.1.bin", how);
	char *p1 = seal_to(&s1, name);

	snprintf(name, sizeof name, "parksplit%d-%d.db", how, two);
	char *db = path_in_tmp(name);
	unlink(db);
	import_two(db, two, p0, p1, "parks split");
	sqlite3 *d = opendb(db);
	char *rows = qs(d, "SELECT group_concat(ts || '+' || dur || ' ' || state, ', ') FROM "
			   "(SELECT * FROM cpu_intervals ORDER BY ts)");
	sqlite3_close(d);
	free(p0), free(p1), free(db);
	return rows ? rows : strdup("");
}

/* An unswitched park across a rotation gives the rows of one segment, whether
 * the segments come in one import or one at a time; where the data lack its
 * PARK (a lost block), the THREAD_DEF that says parked ends the on-CPU row
 * there; where they lack its UNPARK, the state stays unknown until the next
 * SWITCH (when it was left is not in the data). */
static void test_parks_split(void)
{
	static const char *const want[3] = {
		"1000+1000 on-cpu, 3000+1000 on-cpu, 4000+1000 blocked, 5000+500 on-cpu",
		"1000+1000 on-cpu, 3000+1000 on-cpu, 4000+1000 blocked, 5000+500 on-cpu",
		"1000+1000 on-cpu, 4000+1000 blocked, 5000+500 on-cpu",
	};
	for (int how = 0; how < 3; how++)
		for (int two = 0; two < 2; two++) {
			char *rows = parks_split_rows(86 + (uint64_t)how, how, two);
			CHECK(strcmp(rows, want[how]) == 0, "parks split %d, %s: cpu_intervals %s, want %s", how,
			      two ? "one at a time" : "together", rows, want[how]);
			free(rows);
		}
	printf("parks: an unswitched park over a rotation, together or one at a time, PARK or UNPARK lost: "
	       "the rows of one segment\n");
}

/* Task numbers used again and again: number 7 ends and is spawned again 300
 * times on thread 1 (and every tenth time spawned again without an end, the
 * old task's end not being in the data), while thread 2 spawns and polls a
 * task of another number each time (taking cache slots in between). Every poll
 * and wake belongs to the task row alive at its time: a cached task never
 * outlives its number (a cache that kept removed tasks fails here and in
 * test_cross_thread_order). */
static void test_task_reuse(void)
{
	struct sb_header h;
	struct sb b;
	two_threads(&b, &h, 82);
	uint64_t t = 2000;
	for (uint64_t r = 0; r < 300; r++) {
		sb_thread(&b, 1, t);
		sb_event(&b, SS_REC_SPAWN, t, 2, (uint64_t)7, (uint64_t)2);
		sb_event(&b, SS_REC_POLL_BEGIN, t + 10, 2, (uint64_t)7, (uint64_t)2);
		sb_event(&b, SS_REC_WAKE, t + 15, 1, (uint64_t)7);
		sb_event(&b, SS_REC_POLL_END, t + 20, 0);
		sb_event(&b, SS_REC_POLL_BEGIN, t + 30, 2, (uint64_t)7, (uint64_t)2);
		sb_event(&b, SS_REC_POLL_END, t + 40, 0);
		if (r % 10 != 9)
			sb_event(&b, SS_REC_TERMINATE, t + 50, 1, (uint64_t)7);
		/* thread 2: a task of another number */
		sb_thread(&b, 2, t + 1);
		sb_event(&b, SS_REC_SPAWN, t + 1, 2, 7 + 1024 * (r + 1), (uint64_t)2);
		sb_event(&b, SS_REC_POLL_BEGIN, t + 12, 2, 7 + 1024 * (r + 1), (uint64_t)2);
		sb_event(&b, SS_REC_POLL_END, t + 22, 0);
		t += 100;
	}
	sb_end_block(&b, false);
	sb_footer(&b, SS_SEALED_WRITER, 0);
	char *p = path_in_tmp("reuse.0.bin"), *db = path_in_tmp("reuse.db");
	spit(p, b.buf, b.len);
	sb_free(&b);
	struct ss_import_result res;
	CHECK(import(db, &res, NULL, 0, 1, p) == SS_IMPORT_OK, "reuse: import");
	sqlite3 *d = opendb(db);
	CHECK(q1(d, "SELECT count(*) FROM tasks WHERE task = 7") == 300, "reuse: %lld rows of task 7, want 300",
	      (long long)q1(d, "SELECT count(*) FROM tasks WHERE task = 7"));
	CHECK(q1(d, "SELECT count(*) FROM polls p JOIN tasks k ON k.id = p.task_id WHERE k.task = 7 AND"
		    " p.ts >= k.spawn_ts AND p.ts < k.spawn_ts + 100") == 600,
	      "reuse: %lld of 600 polls of number 7 belong to the task alive then",
	      (long long)q1(d, "SELECT count(*) FROM polls p JOIN tasks k ON k.id = p.task_id WHERE k.task = 7 AND"
			       " p.ts >= k.spawn_ts AND p.ts < k.spawn_ts + 100"));
	CHECK(q1(d, "SELECT count(*) FROM wakes w JOIN tasks k ON k.id = w.task_id WHERE k.task = 7 AND"
		    " w.ts = k.spawn_ts + 15") == 300, "reuse: every wake belongs to the task alive then");
	CHECK(q1(d, "SELECT count(*) FROM tasks WHERE task = 7 AND end_ts = spawn_ts + 50") == 270,
	      "reuse: 270 of them ended in the data");
	CHECK(q1(d, "SELECT count(*) FROM polls p JOIN tasks k ON k.id = p.task_id WHERE k.task > 7 AND"
		    " p.ts = k.spawn_ts + 11") == 300, "reuse: thread 2's polls belong to its tasks");
	sqlite3_close(d);
	printf("reuse: a task number used again gets a row of its own, and its polls and wakes follow it\n");
	free(p), free(db);
}

/* ---- memory bounds ------------------------------------------------------------ */

/* 50 worker threads with 6 polls each of its own never-ending tasks, imported
 * with room for 20 threads and 40 live tasks: the import succeeds, keeps the
 * first 20 threads' polls, leaves the rest out with a warning, and writes idle
 * tasks out when the task bound is reached. */
static void test_limits(void)
{
	struct sb_header h = { .session_id = 91, .pid = 1, .exe = "/x", .hostname = "h", .boot_id = "b",
			       .start_ts = 1000 };
	struct sb b;
	segment_begun(&b, &h);
	uint64_t ts = 2000;
	for (uint64_t th = 1; th <= 50; th++) {
		thread_def_open(&b, th, 0, 0, 0);
		sb_thread(&b, th, ts);
		for (uint64_t i = 0; i < 6; i++) {
			uint64_t task = th * 100 + i;
			sb_event(&b, SS_REC_SPAWN, ts, 2, task, (uint64_t)2);
			sb_event(&b, SS_REC_POLL_BEGIN, ts + 10, 2, task, (uint64_t)2);
			sb_event(&b, SS_REC_POLL_END, ts + 20, 0);
			ts += 100;
		}
	}
	sb_end_block(&b, false);
	sb_footer(&b, SS_SEALED_WRITER, 0);
	char *seg = path_in_tmp("lim.0.bin"), *db = path_in_tmp("limits.db"), *logp = path_in_tmp("limits.log");
	spit(seg, b.buf, b.len);
	sb_free(&b);
	FILE *log = fopen(logp, "w+");
	const char *paths[1] = { seg };
	struct ss_import_options o = { .db_path = db, .log = log, .max_threads = 20, .max_live_tasks = 40 };
	struct ss_import_result res;
	int rc = ss_import_paths(&o, paths, 1, &res);
	CHECK(rc == SS_IMPORT_OK, "limits import rc %d", rc);
	char text[4096] = "";
	if (log) {
		rewind(log);
		size_t n = fread(text, 1, sizeof text - 1, log);
		text[n] = 0;
		fclose(log);
	}
	CHECK(strstr(text, "events of threads past the first 20") != NULL, "thread limit warning: %s", text);
	CHECK(strstr(text, "more than 40 live tasks") != NULL, "task limit warning: %s", text);
	sqlite3 *d = opendb(db);
	CHECK(q1(d, "SELECT count(*) FROM threads") == 20, "threads %lld", (long long)q1(d, "SELECT count(*) FROM threads"));
	CHECK(q1(d, "SELECT count(*) FROM polls") == 20 * 6, "polls %lld", (long long)q1(d, "SELECT count(*) FROM polls"));
	CHECK(q1(d, "SELECT count(DISTINCT task) FROM tasks") == 20 * 6 &&
		      q1(d, "SELECT count(*) FROM polls p JOIN tasks t ON t.id = p.task_id") == 20 * 6,
	      "tasks %lld", (long long)q1(d, "SELECT count(DISTINCT task) FROM tasks"));
	sqlite3_close(d);
	printf("limits: 20 of 50 threads kept, idle tasks written out past 40, with warnings\n");
	free(seg), free(db), free(logp);
}

/* ---- growth and damage ------------------------------------------------------- */

/* A segment file's bytes and the offsets of its intact blocks (at most 512);
 * NULL (a failed check) when it cannot be read. */
static uint8_t *slurp_blocks(const char *path, size_t *len, uint64_t offs[512], int *nb)
{
	uint8_t *full = slurp(path, len);
	CHECK(full != NULL, "read %s", path);
	*nb = 0;
	struct ss_reader *r;
	char err[256];
	if (full && ss_reader_open_buffer(&r, full, *len, NULL, NULL, err, sizeof err) == 0) {
		struct ss_block_info b;
		while (ss_reader_next_block(r, &b) && *nb < 512)
			offs[(*nb)++] = b.offset;
		ss_reader_close(r);
	}
	return full;
}

/* Incremental import at every block boundary of a segment: what was open or
 * pending where the first import stopped (polls, parks, wakes) continues in the
 * second, and the result equals a fresh import. */
static void test_growth_every_cut(const char *demo, const char *scenario)
{
	char src[600];
	snprintf(src, sizeof src, "%s/%s/%s.0.bin", demo, scenario, scenario);
	size_t len;
	uint64_t offs[512];
	int nb;
	uint8_t *full = slurp_blocks(src, &len, offs, &nb);
	if (!full)
		return;
	static const char *const q[] = {
		"SELECT count(*) FROM polls",
		"SELECT count(*) FROM polls WHERE incomplete",
		"SELECT sum(dur) FROM polls",
		"SELECT count(*) FROM parks",
		"SELECT count(*) FROM wakes",
		"SELECT count(*) FROM wakes WHERE poll_id IS NOT NULL",
		"SELECT coalesce(sum(delay), -1) FROM wakes",
		"SELECT count(*) FROM wakes w JOIN polls p ON p.id = w.poll_id WHERE p.task_id = w.task_id",
		"SELECT sum(busy_ns) FROM worker_summaries WHERE bucket_ns = 1000000",
		/* every level, sparse ones included, and every kind of time */
		"SELECT count(*) FROM worker_summaries",
		"SELECT sum(busy_ns) + sum(parked_ns) + sum(offcpu_ns) + sum(polls) FROM worker_summaries",
		"SELECT count(*) FROM tasks",
		"SELECT count(*) FROM queue_depths",
		"SELECT count(*) FROM cpu_intervals",
		"SELECT coalesce(sum(dur), -1) FROM cpu_intervals",
		"SELECT count(*) FROM samples",
		"SELECT count(*) FROM spans",
		"SELECT count(*) FROM stalls",
		"SELECT count(*) FROM stalls WHERE dur IS NOT NULL",
		"SELECT count(*) FROM stall_captures",
		"SELECT count(*) FROM task_dumps",
		/* wakes in poll_id order (the viewer's lookup relies on it) */
		"SELECT count(*) FROM (SELECT poll_id, lag(poll_id) OVER (ORDER BY rowid) AS prev FROM wakes"
		" WHERE poll_id IS NOT NULL) WHERE poll_id <= prev",
	};
	enum { NQ = sizeof q / sizeof q[0] };
	int64_t ref[NQ];
	char *dir = path_in_tmp("cuts"), *db = path_in_tmp("cuts.db"), *act = NULL, *fin = NULL;
	mkdir(dir, 0755);
	if (asprintf(&act, "%s/c.0.bin.active", dir) < 0 || asprintf(&fin, "%s/c.0.bin", dir) < 0)
		exit(1);
	struct ss_import_result res;
	spit(fin, full, len);
	unlink(db);
	import(db, &res, NULL, 0, 1, dir);
	sqlite3 *d = opendb(db);
	for (int i = 0; i < NQ; i++)
		ref[i] = q1(d, "%s", q[i]);
	sqlite3_close(d);
	CHECK(ref[5] > 0, "%s: no linked wakes to test with", scenario);
	int bad = 0;
	for (int c = 1; c < nb; c++) {
		unlink(fin);
		unlink(db);
		spit(act, full, offs[c]);
		import(db, &res, NULL, 0, 1, dir);
		unlink(act);
		spit(fin, full, len);
		import(db, &res, NULL, 0, 1, dir);
		d = opendb(db);
		for (int i = 0; i < NQ; i++) {
			int64_t v = q1(d, "%s", q[i]);
			if (v != ref[i] && bad++ < 10)
				CHECK(0, "%s cut at block %d: %s = %lld, fresh import %lld", scenario, c, q[i], (long long)v,
				      (long long)ref[i]);
		}
		sqlite3_close(d);
	}
	CHECK(bad == 0, "%s: %d differences over %d cuts", scenario, bad, nb - 1);
	printf("growth: %s cut at each of %d block boundaries, then grown: same as a fresh import\n", scenario, nb - 1);
	unlink(fin);
	unlink(db);
	rmdir(dir);
	free(act), free(fin), free(dir), free(db), free(full);
}

static void test_growth_and_damage(const char *demo, const char *cli)
{
	char src[600];
	snprintf(src, sizeof src, "%s/long-poll/long-poll.0.bin", demo);
	size_t len;
	uint64_t offs[512];
	int nb;
	uint8_t *full = slurp_blocks(src, &len, offs, &nb);
	if (!full)
		return;
	CHECK(nb > 4, "blocks %d", nb);
	uint64_t cut = offs[nb / 2];

	/* Fresh import of the whole file, for reference. */
	char *ref_dir = path_in_tmp("ref"), *ref_db = path_in_tmp("ref.db");
	mkdir(ref_dir, 0755);
	char *ref_file = NULL;
	if (asprintf(&ref_file, "%s/lp.0.bin", ref_dir) < 0)
		exit(1);
	spit(ref_file, full, len);
	struct ss_import_result res;
	import(ref_db, &res, NULL, 0, 1, ref_dir);
	sqlite3 *d = opendb(ref_db);
	int64_t ref_polls = q1(d, "SELECT count(*) FROM polls"), ref_wakes = q1(d, "SELECT count(*) FROM wakes");
	int64_t ref_busy = q1(d, "SELECT sum(busy_ns) FROM worker_summaries WHERE bucket_ns = 1000000");
	int64_t ref_linked = q1(d, "SELECT count(*) FROM wakes WHERE poll_id IS NOT NULL");
	int64_t ref_delay = q1(d, "SELECT sum(delay) FROM wakes");
	sqlite3_close(d);

	/* An .active segment cut at a block boundary, then grown to the full file. */
	char *gdir = path_in_tmp("grow"), *gdb = path_in_tmp("grow.db"), *act = NULL, *fin = NULL;
	mkdir(gdir, 0755);
	if (asprintf(&act, "%s/lp.0.bin.active", gdir) < 0 || asprintf(&fin, "%s/lp.0.bin", gdir) < 0)
		exit(1);
	spit(act, full, cut);
	int rc = import(gdb, &res, NULL, 0, 1, gdir);
	CHECK(rc == SS_IMPORT_OK && res.imported == 1 && res.damaged == 0, "active import rc %d damaged %llu", rc,
	      (unsigned long long)res.damaged);
	d = opendb(gdb);
	int64_t part = q1(d, "SELECT count(*) FROM polls");
	CHECK(part > 0 && part < ref_polls, "partial polls %lld of %lld", (long long)part, (long long)ref_polls);
	CHECK(q1(d, "SELECT sealed FROM segments") == 0, "active not sealed");
	sqlite3_close(d);
	rc = import(gdb, &res, NULL, 0, 1, gdir);
	CHECK(rc == SS_IMPORT_OK && res.imported == 0 && res.events == 0, "unchanged active re-import");
	unlink(act);
	spit(fin, full, len);
	rc = import(gdb, &res, NULL, 0, 1, gdir);
	CHECK(rc == SS_IMPORT_OK && res.imported == 1, "grown import rc %d", rc);
	d = opendb(gdb);
	CHECK(q1(d, "SELECT count(*) FROM polls") == ref_polls, "grown polls %lld vs %lld",
	      (long long)q1(d, "SELECT count(*) FROM polls"), (long long)ref_polls);
	CHECK(q1(d, "SELECT count(*) FROM wakes") == ref_wakes, "grown wakes");
	/* A wake pending where the first import ended is linked to the poll it
	 * led to in the second, with its delay. */
	CHECK(q1(d, "SELECT count(*) FROM wakes WHERE poll_id IS NOT NULL") == ref_linked &&
		      q1(d, "SELECT sum(delay) FROM wakes") == ref_delay,
	      "grown wakes linked %lld of %lld, delay sum %lld vs %lld",
	      (long long)q1(d, "SELECT count(*) FROM wakes WHERE poll_id IS NOT NULL"), (long long)ref_linked,
	      (long long)q1(d, "SELECT sum(delay) FROM wakes"), (long long)ref_delay);
	CHECK(q1(d, "SELECT count(*) FROM wakes w JOIN polls p ON p.id = w.poll_id WHERE p.task_id != w.task_id") == 0,
	      "a wake linked to another task's poll");
	CHECK(q1(d, "SELECT sum(busy_ns) FROM worker_summaries WHERE bucket_ns = 1000000") == ref_busy, "grown busy");
	CHECK(q1(d, "SELECT count(*) FROM segments") == 1 && q1(d, "SELECT sealed FROM segments") == 1, "one sealed");
	sqlite3_close(d);
	printf("growth: .active cut at block %d/%d, then grown: %lld polls as a fresh import\n", nb / 2, nb,
	       (long long)ref_polls);

	/* A copy cut inside a block: truncated; the CLI warns and exits 0. */
	char *tdir = path_in_tmp("trunc"), *tdb = path_in_tmp("trunc.db"), *tf = NULL;
	mkdir(tdir, 0755);
	if (asprintf(&tf, "%s/lp.0.bin", tdir) < 0)
		exit(1);
	spit(tf, full, cut + 30);
	char cmd[2048], out[4096] = "";
	snprintf(cmd, sizeof cmd, "'%s' import '%s' -o '%s' 2>&1; echo exit=$?", cli, tdir, tdb);
	FILE *pf = popen(cmd, "r");
	size_t got = pf ? fread(out, 1, sizeof out - 1, pf) : 0;
	out[got] = 0;
	if (pf)
		pclose(pf);
	char want[700];
	snprintf(want, sizeof want, "%s: truncated at offset %llu", tf, (unsigned long long)cut);
	CHECK(strstr(out, want) != NULL, "warning '%s' not in: %s", want, out);
	CHECK(strstr(out, "exit=0") != NULL, "exit status: %s", out);
	d = opendb(tdb);
	CHECK(q1(d, "SELECT count(*) FROM segments WHERE damage = 'truncated' AND damage_offset = %lld",
		 (long long)cut) == 1, "truncation recorded");
	CHECK(q1(d, "SELECT count(*) FROM polls") == part, "truncated prefix polls %lld vs %lld",
	      (long long)q1(d, "SELECT count(*) FROM polls"), (long long)part);
	sqlite3_close(d);

	/* A flipped byte inside a block's payload: caught by its CRC. */
	char *cdir = path_in_tmp("corrupt"), *cdb = path_in_tmp("corrupt.db"), *cf = NULL;
	mkdir(cdir, 0755);
	if (asprintf(&cf, "%s/lp.0.bin", cdir) < 0)
		exit(1);
	full[cut + sizeof(struct ss_block_header) + 7] ^= 0x10;
	spit(cf, full, len);
	rc = import(cdb, &res, NULL, 0, 1, cdir);
	CHECK(rc == SS_IMPORT_OK && res.damaged == 1, "corrupt import rc %d", rc);
	d = opendb(cdb);
	char *reason = qs(d, "SELECT damage || ' ' || damage_reason FROM segments");
	CHECK(reason && strstr(reason, "corrupt") && (strstr(reason, "CRC") || strstr(reason, "crc")),
	      "reason: %s", reason ? reason : "(none)");
	printf("damage: truncated copy and flipped byte: %s\n", reason ? reason : "?");
	free(reason);
	CHECK(q1(d, "SELECT count(*) FROM polls") == part, "corrupt prefix polls");
	sqlite3_close(d);

	/* Nothing importable: exit status 1. */
	char *junk = path_in_tmp("junk.bin"), *jdb = path_in_tmp("junk.db");
	spit(junk, "not a segment", 13);
	snprintf(cmd, sizeof cmd, "'%s' import -q '%s' -o '%s' >/dev/null 2>&1", cli, junk, jdb);
	int st = system(cmd);
	CHECK(WEXITSTATUS(st) == 1, "nothing importable exit %d", WEXITSTATUS(st));
	free(full);
	free(ref_dir), free(ref_db), free(ref_file), free(gdir), free(gdb), free(act), free(fin);
	free(tdir), free(tdb), free(tf), free(cdir), free(cdb), free(cf), free(junk), free(jdb);
}

/* ---- symbols ----------------------------------------------------------------- */

static size_t build_id(const char *path, uint8_t *out)
{
	elf_version(EV_CURRENT);
	int fd = open(path, O_RDONLY);
	Elf *e = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	const void *id;
	ssize_t n = e ? dwelf_elf_gnu_build_id(e, &id) : -1;
	if (n > 0)
		memcpy(out, id, (size_t)n);
	if (e)
		elf_end(e);
	if (fd >= 0)
		close(fd);
	return n > 0 ? (size_t)n : 0;
}

struct symrun {
	char path[3000];
	unsigned long long lo, hi, off, pc[3];
	int line[3];
};

/* kernel: the stack starts with two kernel frames (a sample taken in the
 * kernel), so its user leaf is the pc the kernel interrupted. */
static void seg_with_stack_k(const char *file, const struct symrun *s, const char *map_path, const uint8_t *bid,
			     size_t bid_len, bool kernel)
{
	struct sb_header h = { .session_id = 99, .pid = 1, .exe = map_path, .hostname = "h", .boot_id = "x",
			       .start_ts = 1000 };
	struct sb b;
	segment_begun(&b, &h);
	sb_mapping(&b, s->lo, s->hi, s->off, bid, bid_len, map_path);
	uint64_t pcs[5] = { 0xffffffff81000100ull, 0xffffffff81000200ull, s->pc[0], s->pc[1], s->pc[2] };
	if (kernel)
		sb_stack_kernel(&b, 1, pcs, 5, 2);
	else
		sb_stack(&b, 1, pcs + 2, 3);
	thread_def_open(&b, 1, 0, 0, 0);
	sb_thread(&b, 1, 2000);
	sb_event(&b, SS_REC_POLL_BEGIN, 2000, 2, (uint64_t)5, (uint64_t)2);
	sb_event(&b, SS_REC_POLL_END, 9000, 0);
	sb_cpu_sample(&b, 1, 101, 4000, 1);
	sb_end_block(&b, false);
	sb_footer(&b, SS_SEALED_WRITER, 0);
	spit(file, b.buf, b.len);
	sb_free(&b);
}

static void seg_with_stack(const char *file, const struct symrun *s, const char *map_path, const uint8_t *bid,
			   size_t bid_len)
{
	seg_with_stack_k(file, s, map_path, bid, bid_len, false);
}

/* The user leaf below two kernel frames: looked up at its own address (not
 * address - 1, as the return addresses above it are), named. */
static void check_user_leaf(const char *db, const struct symrun *s, const char *what)
{
	sqlite3 *d = opendb(db);
	char *row = qs(d, "SELECT coalesce(function, '') || '|' || rel_pc FROM callsite_frames WHERE callsite_id ="
			  " (SELECT callsite_id FROM samples) AND depth = 2");
	char want[128];
	snprintf(want, sizeof want, "capture_pc|%llu", s->pc[0] - s->lo + s->off);
	CHECK(row && strcmp(row, want) == 0, "%s: the user leaf below kernel frames: %s, want %s", what,
	      row ? row : "(none)", want);
	char *caller = qs(d, "SELECT coalesce(function, '') || '|' || rel_pc FROM callsite_frames WHERE callsite_id ="
			     " (SELECT callsite_id FROM samples) AND depth = 3");
	snprintf(want, sizeof want, "inner_inlined|%llu", s->pc[1] - 1 - s->lo + s->off);
	CHECK(caller && strcmp(caller, want) == 0, "%s: the return address above it: %s, want %s", what,
	      caller ? caller : "(none)", want);
	printf("symbols (%s): user leaf below kernel frames %s, its caller %s\n", what, row ? row : "?",
	       caller ? caller : "?");
	free(row);
	free(caller);
	sqlite3_close(d);
}

static void check_frames(const char *db, const struct symrun *s, bool full, const char *what)
{
	sqlite3 *d = opendb(db);
	CHECK(q1(d, "SELECT count(*) FROM samples WHERE poll_id IS NOT NULL") == 1, "%s: sample in poll", what);
	static const char *const fn[4] = { "capture_pc", "inner_inlined", "outer", "main" };
	int lines[4] = { 0, s->line[0], s->line[1], s->line[2] };
	for (int depth = 0; depth < 4; depth++) {
		char sql[512];
		snprintf(sql, sizeof sql, "SELECT coalesce(function, '') || '|' || coalesce(file, '') || '|' ||"
			 " coalesce(line, 0) FROM callsite_frames WHERE callsite_id = (SELECT callsite_id FROM samples)"
			 " AND depth = %d", depth);
		char *row = qs(d, sql);
		if (full) {
			char want[128];
			snprintf(want, sizeof want, "%s|", fn[depth]);
			CHECK(row && strncmp(row, want, strlen(want)) == 0 && strstr(row, "symtest.c|"),
			      "%s: depth %d: %s", what, depth, row ? row : "(none)");
			if (row && depth > 0) {
				const char *bar = strrchr(row, '|');
				CHECK(bar && atoi(bar + 1) == lines[depth], "%s: depth %d line: %s want %d", what, depth,
				      row, lines[depth]);
			}
		}
		if (row && full)
			printf("symbols (%s): depth %d %s\n", what, depth, row);
		free(row);
	}
	sqlite3_close(d);
}

static void test_symbols(const char *symtest, const char *objcopy, const char *cli)
{
	char cmd[4096];
	snprintf(cmd, sizeof cmd, "'%s'", symtest);
	FILE *p = popen(cmd, "r");
	struct symrun s = { 0 };
	int got = p ? fscanf(p, "%2999s %llx %llx %llx %llx %llx %llx %d %d %d", s.path, &s.lo, &s.hi, &s.off,
			     &s.pc[0], &s.pc[1], &s.pc[2], &s.line[0], &s.line[1], &s.line[2]) : 0;
	if (p)
		pclose(p);
	CHECK(got == 10, "symtest output (%d fields)", got);
	if (got != 10)
		return;
	uint8_t bid[64];
	size_t blen = build_id(symtest, bid);
	CHECK(blen > 0, "symtest has no build id");

	/* 1. The binary where it was recorded. */
	char *f1 = path_in_tmp("sym1/s.0.bin"), *d1 = path_in_tmp("sym1.db"), *dir1 = path_in_tmp("sym1");
	mkdir(dir1, 0755);
	seg_with_stack(f1, &s, s.path, bid, blen);
	struct ss_import_result res;
	CHECK(import(d1, &res, NULL, 0, 1, dir1) == SS_IMPORT_OK, "sym import");
	check_frames(d1, &s, true, "binary");

	/* 2. Stripped binary + split debug info in a --debug-dir (.build-id layout). */
	char *stripped = path_in_tmp("symtest-stripped"), *dbg = path_in_tmp("symtest.debug");
	char *ddir = path_in_tmp("debug"), *bdir = NULL, *bfile = NULL, hex[129];
	for (size_t i = 0; i < blen; i++)
		snprintf(hex + 2 * i, 3, "%02x", bid[i]);
	if (asprintf(&bdir, "%s/.build-id/%.2s", ddir, hex) < 0 || asprintf(&bfile, "%s/%s.debug", bdir, hex + 2) < 0)
		exit(1);
	snprintf(cmd, sizeof cmd, "'%s' --only-keep-debug '%s' '%s' && '%s' --strip-debug '%s' '%s' && mkdir -p '%s' &&"
		 " mv '%s' '%s'", objcopy, symtest, dbg, objcopy, symtest, stripped, bdir, dbg, bfile);
	CHECK(system(cmd) == 0, "objcopy: %s", cmd);
	char *f2 = path_in_tmp("sym2/s.0.bin"), *d2 = path_in_tmp("sym2.db"), *dir2 = path_in_tmp("sym2");
	char *d2b = path_in_tmp("sym2b.db");
	mkdir(dir2, 0755);
	seg_with_stack(f2, &s, stripped, bid, blen);
	CHECK(import(d2b, &res, NULL, 0, 1, dir2) == SS_IMPORT_OK, "stripped import");
	sqlite3 *d = opendb(d2b);
	CHECK(q1(d, "SELECT count(*) FROM frames WHERE file IS NOT NULL AND mapping_id IN"
		    " (SELECT id FROM mappings WHERE path LIKE '%%stripped')") == 0, "stripped has no lines");
	CHECK(q1(d, "SELECT count(*) FROM frames WHERE function = 'outer'") >= 1, "symtab names remain");
	sqlite3_close(d);
	const char *dirs[1] = { ddir };
	CHECK(import(d2, &res, dirs, 1, 1, dir2) == SS_IMPORT_OK, "debug-dir import");
	check_frames(d2, &s, true, "--debug-dir");

	/* 3. A file whose build id differs is never used silently. */
	uint8_t wrong[64];
	memcpy(wrong, bid, blen);
	wrong[0] ^= 0xff;
	char *f3 = path_in_tmp("sym3/s.0.bin"), *d3 = path_in_tmp("sym3.db"), *dir3 = path_in_tmp("sym3");
	mkdir(dir3, 0755);
	seg_with_stack(f3, &s, s.path, wrong, blen);
	CHECK(import(d3, &res, NULL, 0, 1, dir3) == SS_IMPORT_OK, "mismatch import");
	d = opendb(d3);
	CHECK(q1(d, "SELECT count(*) FROM frames WHERE symbol_note LIKE 'build-id mismatch%%' AND function IS NULL")
		      >= 3, "mismatch noted");
	sqlite3_close(d);
	/* 4. `stallscope symbolize` where the binary is, then import after it moved
	 * away: the names come from the segment's own symbol table. */
	char *dir4 = path_in_tmp("sym4"), *f4 = path_in_tmp("sym4/s.0.bin"), *d4 = path_in_tmp("sym4.db");
	char *copy = path_in_tmp("symtest-copy"), *gone = path_in_tmp("symtest-moved-away");
	mkdir(dir4, 0755);
	snprintf(cmd, sizeof cmd, "cp '%s' '%s'", symtest, copy);
	CHECK(system(cmd) == 0, "copy symtest");
	struct symrun s4 = s;
	snprintf(s4.path, sizeof s4.path, "%s", copy);
	seg_with_stack(f4, &s4, copy, bid, blen);
	chmod(f4, 0640); /* as the recorder creates segments */
	snprintf(cmd, sizeof cmd, "'%s' symbolize -q '%s'", cli, dir4);
	CHECK(system(cmd) == 0, "symbolize: %s", cmd);
	struct stat sm;
	CHECK(stat(f4, &sm) == 0 && (sm.st_mode & 07777) == 0640, "symbolize keeps the mode 0640 (%o)",
	      (unsigned)(sm.st_mode & 07777));
	snprintf(cmd, sizeof cmd, "ls -a '%s' | grep -q symbolize", dir4);
	CHECK(system(cmd) != 0, "symbolize leaves no temporary file");
	CHECK(rename(copy, gone) == 0, "move the binary away");
	CHECK(import(d4, &res, NULL, 0, 1, dir4) == SS_IMPORT_OK && res.damaged == 0, "import symbolized");
	check_frames(d4, &s4, true, "symbol table");
	d = opendb(d4);
	CHECK(q1(d, "SELECT count(*) FROM frames WHERE symbol_note LIKE '%%symbol table%%'") >= 4,
	      "frames named from the table");
	sqlite3_close(d);
	/* Symbolizing again leaves the file as it is. */
	struct stat st1, st2;
	stat(f4, &st1);
	snprintf(cmd, sizeof cmd, "'%s' symbolize -q '%s'", cli, dir4);
	CHECK(system(cmd) == 0 && stat(f4, &st2) == 0 && st1.st_size == st2.st_size, "second symbolize");
	free(dir4), free(f4), free(d4), free(copy), free(gone);
	/* 5. A sample taken in the kernel (a switch-out, or one taken while a signal
	 * is delivered, whose user pc is a handler's first instruction): the user
	 * leaf is where the thread was, named by the binary and, after `stallscope
	 * symbolize` and the binary moved away, by the segment's own table. */
	char *dir5 = path_in_tmp("sym5"), *f5 = path_in_tmp("sym5/s.0.bin"), *d5 = path_in_tmp("sym5.db");
	char *d5b = path_in_tmp("sym5b.db"), *copy5 = path_in_tmp("symtest-copy5"), *gone5 = path_in_tmp("symtest-gone5");
	mkdir(dir5, 0755);
	snprintf(cmd, sizeof cmd, "cp '%s' '%s'", symtest, copy5);
	CHECK(system(cmd) == 0, "copy symtest");
	struct symrun s5 = s;
	snprintf(s5.path, sizeof s5.path, "%s", copy5);
	seg_with_stack_k(f5, &s5, copy5, bid, blen, true);
	CHECK(import(d5, &res, NULL, 0, 1, dir5) == SS_IMPORT_OK, "kernel-prefixed import");
	check_user_leaf(d5, &s5, "binary");
	snprintf(cmd, sizeof cmd, "'%s' symbolize -q '%s'", cli, dir5);
	CHECK(system(cmd) == 0, "symbolize: %s", cmd);
	CHECK(rename(copy5, gone5) == 0, "move the binary away");
	CHECK(import(d5b, &res, NULL, 0, 1, dir5) == SS_IMPORT_OK, "import symbolized, kernel-prefixed");
	check_user_leaf(d5b, &s5, "symbol table");
	free(dir5), free(f5), free(d5), free(d5b), free(copy5), free(gone5);
	printf("symbols: binary, split debug info via --debug-dir, build-id mismatch reported, "
	       "embedded symbol table after the binary moved away\n");
	free(f1), free(d1), free(dir1), free(stripped), free(dbg), free(ddir), free(bdir), free(bfile);
	free(f2), free(d2), free(dir2), free(d2b), free(f3), free(d3), free(dir3);
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: test_import DEMO_DIR STALLSCOPE_CLI SYMTEST OBJCOPY\n");
		return 2;
	}
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 2;
	}
	char *demo_db = path_in_tmp("demo.db");
	test_demo(argv[1], demo_db);
	test_sql(demo_db);
	test_stitch();
	test_cross_thread_order();
	test_floors();
	test_parks_unswitched();
	test_parks_split();
	test_growth_during_import();
	test_known_thread_defined_later();
	test_late_warning();
	test_pipeline();
	test_task_reuse();
	test_growth_and_damage(argv[1], argv[2]);
	test_limits();
	test_growth_every_cut(argv[1], "steady");
	test_growth_every_cut(argv[1], "mutex");
	test_symbols(argv[3], argv[4], argv[2]);
	free(demo_db);
	char cmd[256];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
	if (failures == 0 && system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmp);
	if (failures)
		fprintf(stderr, "%d failures (files kept in %s)\n", failures, tmp);
	else
		printf("all import tests passed\n");
	return failures ? 1 : 0;
}

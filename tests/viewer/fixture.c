/*
 * fixture.c - see fixture.h. Rows are inserted with prepared statements inside
 * one transaction, the schema's indexes are created after the data (as the
 * importer does), and worker_summaries are computed here by splitting every
 * interval across the buckets it covers, exactly as the schema documents:
 * full levels hold every bucket with time in it, sparse ones only buckets where
 * two or more polls and parks begin, and no off-CPU time.
 */
#include "fixture.h"
#include "poll_chunks.h"
#include "segment_format.h" /* META "switches" */
#include "summary_levels.h"

#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NLEVELS SS_SUMMARY_LEVELS

struct fx {
	sqlite3 *db;
	sqlite3_stmt *poll, *park, *cpu, *sample;
	int64_t next_poll;
	/* summaries: [worker][level] bucket arrays over [base, base + span) */
	int workers;
	int64_t base, span;
	int64_t *sum[16][NLEVELS][3];
	int64_t *cnt[16][NLEVELS], *maxp[16][NLEVELS], *starts[16][NLEVELS];
};

static int64_t level_ns(int l)
{
	return (int64_t)ss_summary_level_ns[l];
}

static bool sparse(int l)
{
	return ss_summary_level_parent[l] >= 0;
}

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *buf = malloc((size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	if (buf)
		buf[n] = 0;
	fclose(f);
	return buf;
}

static int exec(sqlite3 *db, const char *sql)
{
	char *msg = NULL;
	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		fprintf(stderr, "fixture: %s\n", msg ? msg : "?");
		sqlite3_free(msg);
		return -1;
	}
	return 0;
}

/* Schema without its index part (applied after loading). */
static int open_db(struct fx *x, const char *db_path, const char *schema_path, char **index_part)
{
	remove(db_path);
	char *schema = read_file(schema_path);
	if (!schema) {
		fprintf(stderr, "fixture: cannot read %s\n", schema_path);
		return -1;
	}
	char *mark = strstr(schema, "-- @indexes");
	*index_part = strdup(mark ? mark : "");
	if (mark)
		*mark = 0;
	if (sqlite3_open(db_path, &x->db) != SQLITE_OK || exec(x->db, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;") ||
	    exec(x->db, schema) || exec(x->db, "BEGIN")) {
		free(schema);
		return -1;
	}
	free(schema);
	sqlite3_prepare_v2(x->db, "INSERT INTO polls(id, worker_id, task_id, location_id, ts, dur, incomplete)"
			   " VALUES (?,?,?,?,?,?,0)", -1, &x->poll, NULL);
	sqlite3_prepare_v2(x->db, "INSERT INTO parks(worker_id, ts, dur) VALUES (?,?,?)", -1, &x->park, NULL);
	sqlite3_prepare_v2(x->db, "INSERT INTO cpu_intervals(thread_id, ts, dur, state, cpu) VALUES (?,?,?,?,0)", -1,
			   &x->cpu, NULL);
	sqlite3_prepare_v2(x->db, "INSERT INTO samples(ts, thread_id, worker_id, poll_id, callsite_id, weight, kind, cpu)"
			   " VALUES (?,?,?,?,?,1000000,'cpu',0)", -1, &x->sample, NULL);
	x->next_poll = 1;
	if (!x->poll || !x->park || !x->cpu || !x->sample) {
		fprintf(stderr, "fixture: schema mismatch: %s\n", sqlite3_errmsg(x->db));
		return -1;
	}
	return 0;
}

static void sum_alloc(struct fx *x, int workers, int64_t base, int64_t span)
{
	x->workers = workers;
	x->base = base;
	x->span = span;
	for (int w = 0; w < workers; w++)
		for (int l = 0; l < NLEVELS; l++) {
			size_t n = (size_t)(span / level_ns(l) + 2);
			for (int k = 0; k < 3; k++)
				x->sum[w][l][k] = calloc(n, sizeof(int64_t));
			x->cnt[w][l] = calloc(n, sizeof(int64_t));
			x->maxp[w][l] = calloc(n, sizeof(int64_t));
			x->starts[w][l] = calloc(n, sizeof(int64_t));
		}
}

/* kind 0 busy, 1 parked, 2 offcpu; worker index w (0-based). */
static void sum_add(struct fx *x, int w, int kind, int64_t ts, int64_t dur)
{
	for (int l = 0; l < NLEVELS; l++) {
		int64_t B = level_ns(l);
		if (kind == 2 && sparse(l))
			continue;
		int64_t rel = ts - x->base, end = rel + dur;
		if (rel < 0)
			rel = 0;
		for (int64_t b = rel / B; b * B < end && b <= x->span / B + 1; b++) {
			int64_t s0 = b * B > rel ? b * B : rel, s1 = (b + 1) * B < end ? (b + 1) * B : end;
			x->sum[w][l][kind][b] += s1 - s0;
			if (kind == 0 && dur > x->maxp[w][l][b])
				x->maxp[w][l][b] = dur;
		}
		if (kind == 0)
			x->cnt[w][l][rel / B]++;
		if (kind != 2)
			x->starts[w][l][rel / B]++;
	}
}

static int sum_write(struct fx *x, const int64_t *worker_ids)
{
	sqlite3_stmt *s;
	sqlite3_prepare_v2(x->db, "INSERT INTO worker_summaries VALUES (?,?,?,?,?,?,?,?)", -1, &s, NULL);
	for (int w = 0; w < x->workers; w++)
		for (int l = 0; l < NLEVELS; l++) {
			int64_t n = x->span / level_ns(l) + 2;
			for (int64_t b = 0; b < n; b++) {
				int64_t *busy = x->sum[w][l][0], *park = x->sum[w][l][1], *off = x->sum[w][l][2];
				if (!busy[b] && !park[b] && !off[b] && !x->cnt[w][l][b])
					continue;
				if (sparse(l) && x->starts[w][l][b] < 2)
					continue;
				sqlite3_bind_int64(s, 1, level_ns(l));
				sqlite3_bind_int64(s, 2, worker_ids[w]);
				/* Buckets are aligned to multiples of bucket_ns in trace time. */
				sqlite3_bind_int64(s, 3, x->base + b * level_ns(l));
				sqlite3_bind_int64(s, 4, busy[b]);
				sqlite3_bind_int64(s, 5, park[b]);
				sqlite3_bind_int64(s, 6, off[b]);
				sqlite3_bind_int64(s, 7, x->cnt[w][l][b]);
				sqlite3_bind_int64(s, 8, x->maxp[w][l][b]);
				sqlite3_step(s);
				sqlite3_reset(s);
			}
			for (int k = 0; k < 3; k++)
				free(x->sum[w][l][k]);
			free(x->cnt[w][l]);
			free(x->maxp[w][l]);
			free(x->starts[w][l]);
		}
	sqlite3_finalize(s);
	return 0;
}

static int64_t poll(struct fx *x, int w, int64_t worker, int64_t thread, int64_t task, int64_t loc, int64_t ts, int64_t dur)
{
	int64_t id = x->next_poll++;
	sqlite3_bind_int64(x->poll, 1, id);
	sqlite3_bind_int64(x->poll, 2, worker);
	sqlite3_bind_int64(x->poll, 3, task);
	sqlite3_bind_int64(x->poll, 4, loc);
	sqlite3_bind_int64(x->poll, 5, ts);
	sqlite3_bind_int64(x->poll, 6, dur);
	(void)thread; /* polls and parks reach their thread through workers */
	if (sqlite3_step(x->poll) != SQLITE_DONE)
		fprintf(stderr, "fixture: poll: %s\n", sqlite3_errmsg(x->db));
	sqlite3_reset(x->poll);
	sum_add(x, w, 0, ts, dur);
	return id;
}

static void park(struct fx *x, int w, int64_t worker, int64_t thread, int64_t ts, int64_t dur)
{
	sqlite3_bind_int64(x->park, 1, worker);
	sqlite3_bind_int64(x->park, 2, ts);
	sqlite3_bind_int64(x->park, 3, dur);
	(void)thread;
	if (sqlite3_step(x->park) != SQLITE_DONE)
		fprintf(stderr, "fixture: park: %s\n", sqlite3_errmsg(x->db));
	sqlite3_reset(x->park);
	sum_add(x, w, 1, ts, dur);
}

static void cpu(struct fx *x, int w, int64_t thread, int64_t ts, int64_t dur, const char *state)
{
	sqlite3_bind_int64(x->cpu, 1, thread);
	sqlite3_bind_int64(x->cpu, 2, ts);
	sqlite3_bind_int64(x->cpu, 3, dur);
	sqlite3_bind_text(x->cpu, 4, state, -1, SQLITE_STATIC);
	if (sqlite3_step(x->cpu) != SQLITE_DONE)
		fprintf(stderr, "fixture: cpu: %s\n", sqlite3_errmsg(x->db));
	sqlite3_reset(x->cpu);
	if (w >= 0 && state[0] != 'o')
		sum_add(x, w, 2, ts, dur);
}

static void sample(struct fx *x, int64_t ts, int64_t thread, int64_t worker, int64_t poll_id, int64_t callsite)
{
	sqlite3_bind_int64(x->sample, 1, ts);
	sqlite3_bind_int64(x->sample, 2, thread);
	if (worker)
		sqlite3_bind_int64(x->sample, 3, worker);
	else
		sqlite3_bind_null(x->sample, 3);
	if (poll_id)
		sqlite3_bind_int64(x->sample, 4, poll_id);
	else
		sqlite3_bind_null(x->sample, 4);
	if (callsite)
		sqlite3_bind_int64(x->sample, 5, callsite);
	else
		sqlite3_bind_null(x->sample, 5);
	if (sqlite3_step(x->sample) != SQLITE_DONE)
		fprintf(stderr, "fixture: sample: %s\n", sqlite3_errmsg(x->db));
	sqlite3_reset(x->sample);
}

static int finish(struct fx *x, char *index_part, const int64_t *worker_ids)
{
	sum_write(x, worker_ids);
	sqlite3_finalize(x->poll);
	sqlite3_finalize(x->park);
	sqlite3_finalize(x->cpu);
	sqlite3_finalize(x->sample);
	/* The polls' chunks, as an import writes them (poll_chunks.h). */
	int rc = exec(x->db, SS_POLL_CHUNKS_BUILD) || exec(x->db, "COMMIT") || exec(x->db, index_part) ||
			 exec(x->db, "ANALYZE")
		 ? -1
		 : 0;
	free(index_part);
	sqlite3_close(x->db);
	return rc;
}

static const char *common_rows =
	"INSERT INTO schema_info VALUES (1);"
	"INSERT INTO recordings(id, session_id, pid, executable, host, boot_id, anchor_mono_ns, anchor_real_ns,"
	" first_ts, last_ts) VALUES (1, 42, 4242, '/usr/bin/demo', 'testhost', 'boot', 1000000000000,"
	" 1700000000000000000, 1000000000000, 1001000000000);"
	"INSERT INTO threads VALUES (1, 1, 0, 100, 'main', NULL), (2, 1, 1, 101, 'rt-w0', NULL),"
	" (3, 1, 2, 102, 'rt-w1', NULL), (4, 1, 3, 103, 'rt-w2', NULL), (5, 1, 4, 104, 'io-thread', NULL);"
	"INSERT INTO workers VALUES (1, 1, 2, 'demo', 0, 1000000000000, NULL), (2, 1, 3, 'demo', 1, 1000000000000, NULL),"
	" (3, 1, 4, 'demo', 2, 1000000000000, NULL);"
	"INSERT INTO locations VALUES (1, 'src/server.c', 10, 'handle_request'), (2, 'src/cache.c', 20, 'flush_cache'),"
	" (3, 'src/hash.c', 30, 'compute_hash');"
	"INSERT INTO mappings VALUES (1, 1, '/usr/bin/demo', 'abcd', 4096, 1048576, 0);"
	"INSERT INTO frames(id, mapping_id, rel_pc, function, file, line, inline_depth, symbol_note) VALUES (1, 1, 100, 'main', 'src/main.c', 5, 0, NULL), (2, 1, 200, 'handle_request', 'src/server.c', 12, 0, NULL),"
	" (3, 1, 300, 'compute_hash', 'src/hash.c', 33, 0, NULL), (4, 1, 400, 'sha256_block', 'src/sha.c', 77, 0, NULL),"
	" (5, 1, 500, 'read', NULL, NULL, 0, 'no debug info');"
	"INSERT INTO callsites VALUES (1, NULL, 1, 0), (2, 1, 3, 1), (3, 2, 4, 2), (4, 2, 5, 2);";

int fixture_build_small(const char *db_path, const char *schema_path)
{
	struct fx x = { 0 };
	char *index_part;
	if (open_db(&x, db_path, schema_path, &index_part) != 0)
		return -1;
	if (exec(x.db, common_rows))
		return -1;
	sum_alloc(&x, 3, FX_BASE, 1000000000);
	/* w0 */
	int64_t t1 = 1, t2 = 2, t3 = 3;
	poll(&x, 0, 1, 2, t1, 1, FX_MS(100), FX_MS(150) - FX_MS(100));
	poll(&x, 0, 1, 2, t2, 2, FX_MS(200), FX_MS(210) - FX_MS(200));
	int64_t stall_poll = poll(&x, 0, 1, 2, t3, 3, FX_MS(300), FX_MS(500) - FX_MS(300));
	park(&x, 0, 1, 2, FX_MS(150), FX_MS(50) - FX_MS(0));
	park(&x, 0, 1, 2, FX_MS(210), FX_MS(90) - FX_MS(0));
	park(&x, 0, 1, 2, FX_MS(500), FX_MS(400) - FX_MS(0));
	cpu(&x, 0, 2, FX_MS(100), FX_MS(50) - FX_MS(0), "on-cpu");
	cpu(&x, 0, 2, FX_MS(150), FX_MS(50) - FX_MS(0), "blocked");
	cpu(&x, 0, 2, FX_MS(200), FX_MS(10) - FX_MS(0), "on-cpu");
	cpu(&x, 0, 2, FX_MS(210), FX_MS(90) - FX_MS(0), "blocked");
	cpu(&x, 0, 2, FX_MS(300), FX_MS(50) - FX_MS(0), "on-cpu");
	cpu(&x, 0, 2, FX_MS(350), FX_MS(70) - FX_MS(0), "blocked");
	cpu(&x, 0, 2, FX_MS(420), FX_MS(20) - FX_MS(0), "preempted");
	cpu(&x, 0, 2, FX_MS(440), FX_MS(60) - FX_MS(0), "on-cpu");
	cpu(&x, 0, 2, FX_MS(500), FX_MS(400) - FX_MS(0), "blocked");
	for (int ms = 100; ms < 500; ms++) {
		bool on = (ms < 150) || (ms >= 200 && ms < 210) || (ms >= 300 && ms < 350) || (ms >= 440);
		if (on)
			sample(&x, FX_MS(ms + 0.5), 2, 1, ms >= 300 ? stall_poll : ms >= 200 ? 2 : 1, ms >= 300 ? 3 : 2);
	}
	/* w1: 5 ms polls every 20 ms */
	int64_t task = 10;
	for (int ms = 0; ms < 1000; ms += 20) {
		poll(&x, 1, 2, 3, task++, 2, FX_MS(ms), FX_MS(5) - FX_MS(0));
		park(&x, 1, 2, 3, FX_MS(ms + 5), FX_MS(15) - FX_MS(0));
	}
	/* w2: 1 ms polls every 2 ms in [0,400), then parked */
	for (int ms = 0; ms < 400; ms += 2) {
		poll(&x, 2, 3, 4, 500 + ms, 1, FX_MS(ms), FX_MS(1) - FX_MS(0));
		park(&x, 2, 3, 4, FX_MS(ms + 1), FX_MS(1) - FX_MS(0));
	}
	park(&x, 2, 3, 4, FX_MS(400), FX_MS(600) - FX_MS(0));
	/* io-thread samples */
	for (int ms = 0; ms < 1000; ms += 5)
		sample(&x, FX_MS(ms + 1), 5, 0, 0, 4);
	char sql[2048];
	snprintf(sql, sizeof sql,
		 "INSERT INTO tasks(id, recording_id, task, location_id, spawn_ts) VALUES (1, 1, 1, 1, %lld), (2, 1, 2, 2, %lld), (3, 1, 3, 3, %lld);"
		 "INSERT INTO stalls VALUES (1, %lld, 1, 3, %lld, %lld, 'running', 2, 3, %lld);"
		 "INSERT INTO stall_captures(stall_id, ts, kind, syscall, callsite_id, idx, reason, syscall_name)"
		 " VALUES (1, %lld, 'running', NULL, 3, 0, 'on CPU at the threshold', NULL),"
		 " (1, %lld, 'blocked', 0, 4, 1, 'off CPU in read(2)', 'read');"
		 "INSERT INTO wakes VALUES (3, %lld, 3, 10, %lld, %lld);"
		 "INSERT INTO loss VALUES (1, 4, %lld, %lld, 1234, 'events', 'buffer-full'),"
		 " (1, NULL, %lld, %lld, 77, 'samples', 'throttle');",
		 (long long)FX_MS(90), (long long)FX_MS(190), (long long)FX_MS(250),
		 (long long)stall_poll, (long long)FX_MS(300), (long long)(FX_MS(500) - FX_MS(300)), (long long)FX_MS(310),
		 (long long)FX_MS(310), (long long)FX_MS(320),
		 (long long)FX_MS(290), (long long)stall_poll, (long long)(FX_MS(300) - FX_MS(290)),
		 (long long)FX_MS(600), (long long)(FX_MS(700) - FX_MS(600)),
		 (long long)FX_MS(950), (long long)(FX_MS(960) - FX_MS(950)));
	if (exec(x.db, sql))
		return -1;
	const int64_t wids[3] = { 1, 2, 3 };
	return finish(&x, index_part, wids);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

int fixture_build_synthetic(const char *db_path, const char *schema_path, uint64_t n_events, int workers)
{
	struct fx x = { 0 };
	char *index_part;
	if (workers > 16)
		workers = 16;
	if (open_db(&x, db_path, schema_path, &index_part) != 0)
		return -1;
	/* Per worker: each cycle is a poll, a park (every 4th cycle), two CPU
	 * intervals and a sample: about 4.25 rows per cycle. A cycle is 40 us on
	 * average, so 20M rows are about 8 workers x 23 s. */
	uint64_t cycles = n_events * 4 / 17 / (uint64_t)workers;
	int64_t span = (int64_t)cycles * 40000 + 1000000000;
	char sql[512];
	snprintf(sql, sizeof sql,
		 "INSERT INTO schema_info VALUES (1);"
		 "INSERT INTO recordings(id, session_id, pid, executable, host, boot_id, anchor_mono_ns, anchor_real_ns,"
		 " first_ts, last_ts) VALUES (1, 7, 77, '/usr/bin/synthetic', 'host', 'boot', %lld, 1700000000000000000,"
		 " %lld, %lld);",
		 (long long)FX_BASE, (long long)FX_BASE, (long long)(FX_BASE + span));
	exec(x.db, sql);
	exec(x.db, "INSERT INTO locations VALUES (1,'a.c',1,'accept'),(2,'b.c',2,'parse'),(3,'c.c',3,'query'),"
		   "(4,'d.c',4,'render'),(5,'e.c',5,'flush'),(6,'f.c',6,'timer');");
	sum_alloc(&x, workers, FX_BASE, span);
	int64_t wids[16];
	for (int w = 0; w < workers; w++) {
		snprintf(sql, sizeof sql,
			 "INSERT INTO threads VALUES (%d, 1, %d, %d, 'syn-w%d', NULL);"
			 "INSERT INTO workers VALUES (%d, 1, %d, 'synthetic', %d, NULL, NULL);",
			 w + 1, w, 1000 + w, w, w + 1, w + 1, w);
		exec(x.db, sql);
		wids[w] = w + 1;
	}
	for (int w = 0; w < workers; w++) {
		int64_t t = FX_BASE, thread = w + 1;
		for (uint64_t c = 0; c < cycles; c++) {
			uint64_t r = rnd();
			/* Mostly short polls, now and then a long one (the tail). */
			int64_t dur = 2000 + (int64_t)(r % 30000);
			if ((r >> 32) % 1000 == 0)
				dur = 1000000 + (int64_t)((r >> 40) % 20000000);
			int64_t id = poll(&x, w, w + 1, thread, (int64_t)c, 1 + (int64_t)((r >> 20) % 6), t, dur);
			cpu(&x, w, thread, t, dur, "on-cpu");
			sample(&x, t + dur / 2, thread, w + 1, id, 0);
			t += dur;
			int64_t gap = 1000 + (int64_t)((r >> 24) % 16000);
			if (c % 4 == 0)
				park(&x, w, w + 1, thread, t, gap);
			cpu(&x, w, thread, t, gap, "blocked");
			t += gap;
		}
	}
	return finish(&x, index_part, wids);
}

static int build_light(const char *db_path, const char *schema_path, bool unswitched)
{
	struct fx x = { 0 };
	char *index_part;
	if (open_db(&x, db_path, schema_path, &index_part) != 0)
		return -1;
	const int64_t span = INT64_C(12000000000), cycle = 2000000;
	static const int64_t busy_us[4] = { 20, 60, 200, 600 }; /* of each 2 ms: 1%, 3%, 10%, 30% */
	char sql[512];
	snprintf(sql, sizeof sql,
		 "INSERT INTO schema_info VALUES (1);"
		 "INSERT INTO recordings(id, session_id, pid, executable, host, boot_id, anchor_mono_ns, anchor_real_ns,"
		 " first_ts, last_ts) VALUES (1, 9, 99, '/usr/bin/light', 'host', 'boot', %lld, 1700000000000000000,"
		 " %lld, %lld);"
		 "INSERT INTO locations VALUES (1, 'src/light.c', 1, 'serve');",
		 (long long)FX_BASE, (long long)FX_BASE, (long long)(FX_BASE + span));
	if (exec(x.db, sql))
		return -1;
	sum_alloc(&x, 4, FX_BASE, span);
	int64_t wids[4];
	for (int w = 0; w < 4; w++) {
		snprintf(sql, sizeof sql,
			 "INSERT INTO threads VALUES (%d, 1, %d, %d, 'light-w%d', NULL);"
			 "INSERT INTO workers VALUES (%d, 1, %d, 'light', %d, %lld, NULL);",
			 w + 1, w, 2000 + w, w, w + 1, w + 1, w, (long long)FX_BASE);
		exec(x.db, sql);
		wids[w] = w + 1;
		int64_t dur = busy_us[w] * 1000;
		for (int64_t t = FX_BASE, c = 0; t + cycle <= FX_BASE + span; t += cycle, c++) {
			poll(&x, w, w + 1, w + 1, (int64_t)w * 100000 + c, 1, t, dur);
			cpu(&x, w, w + 1, t, dur, "on-cpu");
			park(&x, w, w + 1, w + 1, t + dur, cycle - dur);
			if (!unswitched)
				cpu(&x, w, w + 1, t + dur, cycle - dur, "blocked");
		}
	}
	if (unswitched &&
	    exec(x.db, "INSERT INTO metadata VALUES (1, '" SS_META_SWITCHES "', '" SS_SWITCHES_NOT_PARKED
		       ": none of a worker from its park to its unpark')"))
		return -1;
	return finish(&x, index_part, wids);
}

int fixture_build_light(const char *db_path, const char *schema_path)
{
	return build_light(db_path, schema_path, false);
}

int fixture_build_light_unswitched(const char *db_path, const char *schema_path)
{
	return build_light(db_path, schema_path, true);
}

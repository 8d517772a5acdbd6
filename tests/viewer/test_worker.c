/*
 * test_worker.c - the window's query worker and scene fetching, without a
 * display (a GLib main loop only), on the small fixture:
 *  - jobs run on another thread and deliver on this one;
 *  - a queued job superseded by a newer one under its key never runs;
 *  - a running one is interrupted (sqlite3_interrupt) within a bound the
 *    query itself (minutes, under a 120 s budget) could not meet, its later
 *    statements fail too, and the interrupt does not leak into the next job,
 *    which reads correct rows;
 *  - a finished job superseded before its result was delivered is discarded;
 *  - every job's data is freed exactly once; shutting down during a long
 *    query returns at once and delivers nothing afterwards; an idle worker
 *    holds no lock on the database;
 *  - ss_scene_fetch: a scene fetched on the worker is the scene
 *    tl_scene_update builds inline; a jump supersedes the request in flight, a
 *    small step waits for it; a scene built for another view maps onto the
 *    new one (tl_scene_map) where the new view puts the same times; a view
 *    seen a moment ago is drawn from its kept scene without a query.
 * Built twice: plain, and with ASan+UBSan (the -san test, suite sanitize).
 * usage: test_worker SCHEMA.sql OUTDIR
 */
#include <glib.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "fixture.h"
#include "soft_check.h"
#include "ss_scene_fetch.h"
#include "ss_session.h"
#include "ss_worker.h"
#include "tl_db.h"
#include "tl_scene.h"
#include "tl_view.h"

static GThread *main_thread;
static int freed;

struct job {
	const char *sql;           /* counted: its first column, or NULL for a slow query */
	gint started, finished;
	int rc, rc2;        /* rc2: a second statement after the slow one */
	int64_t value;
	GThread *ran_on;
	gint64 end_us;
	bool done, done_on_main;
};

static void job_run(struct tl_db *db, void *p)
{
	struct job *j = p;
	j->ran_on = g_thread_self();
	tl_db_arm(db, 120);   /* only an interrupt stops the slow one early */
	g_atomic_int_set(&j->started, 1);
	const char *sql = j->sql ? j->sql
				 : "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 4000000000)"
				   " SELECT count(*) FROM c";
	sqlite3_stmt *s = NULL;
	int rc = sqlite3_prepare_v2(db->db, sql, -1, &s, NULL);
	if (rc == SQLITE_OK)
		while ((rc = sqlite3_step(s)) == SQLITE_ROW)
			j->value = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	j->rc = rc;
	if (!j->sql) {
		/* Once interrupted, the rest of the job fails at once too. */
		s = NULL;
		j->rc2 = sqlite3_prepare_v2(db->db, "SELECT count(*) FROM polls", -1, &s, NULL);
		if (j->rc2 == SQLITE_OK)
			while ((j->rc2 = sqlite3_step(s)) == SQLITE_ROW)
				;
		sqlite3_finalize(s);
	}
	j->end_us = g_get_monotonic_time();
	g_atomic_int_set(&j->finished, 1);
}

static void job_done(void *p, void *user)
{
	(void)user;
	struct job *j = p;
	j->done = true;
	j->done_on_main = g_thread_self() == main_thread;
}

/* Jobs live in the test's frames; free_data only counts. */
static void job_freed(void *p)
{
	(void)p;
	freed++;
}

static void submit(SsSession *s, const void *key, struct job *j)
{
	ss_session_submit(s, key, job_run, job_done, j, job_freed, NULL);
}

static bool wait_flag(gint *flag)
{
	gint64 end = g_get_monotonic_time() + 20 * G_USEC_PER_SEC;
	while (!g_atomic_int_get(flag) && g_get_monotonic_time() < end) {
		g_main_context_iteration(NULL, FALSE);
		g_usleep(500);
	}
	return g_atomic_int_get(flag);
}

static bool settle(SsSession *s)
{
	gint64 end = g_get_monotonic_time() + 20 * G_USEC_PER_SEC;
	while (g_get_monotonic_time() < end) {
		while (g_main_context_iteration(NULL, FALSE))
			;
		if (ss_session_idle(s))
			return true;
		g_usleep(500);
	}
	return false;
}

/* Whether a writer can lock the whole database now (BEGIN EXCLUSIVE: refused
 * while any connection holds a read transaction). */
static bool writable(const char *dbp)
{
	sqlite3 *wdb = NULL;
	bool ok = sqlite3_open_v2(dbp, &wdb, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK &&
		  sqlite3_exec(wdb, "BEGIN EXCLUSIVE", NULL, NULL, NULL) == SQLITE_OK;
	if (ok)
		sqlite3_exec(wdb, "ROLLBACK", NULL, NULL, NULL);
	sqlite3_close(wdb);
	return ok;
}

static void test_jobs(SsSession *s, const char *dbp)
{
	struct ss_worker *w = ss_session_get_worker(s);
	static int k_a, k_slow, k_b;

	/* Delivery: run elsewhere, done here, with the right rows. */
	struct job count = { .sql = "SELECT count(*) FROM polls" };
	submit(s, &k_a, &count);
	CHECK(settle(s), "a job ran");
	CHECK(count.done && count.done_on_main && count.ran_on != main_thread, "run on the worker, done on main");
	CHECK(count.rc == SQLITE_DONE && count.value == 253, "253 polls in the fixture: %lld (rc %d)",
	      (long long)count.value, count.rc);

	/* A queued job superseded by a newer one under its key never runs. */
	struct ss_worker_stats s0 = ss_worker_get_stats(w);
	struct job slow = { 0 }, b1 = { .sql = "SELECT 1" }, b2 = { .sql = "SELECT count(*) FROM parks" };
	submit(s, &k_slow, &slow);
	CHECK(wait_flag(&slow.started), "the slow query started");
	submit(s, &k_b, &b1);
	submit(s, &k_b, &b2);
	CHECK(ss_worker_pending(w, &k_b), "key b has a job");
	struct ss_worker_stats s1 = ss_worker_get_stats(w);
	CHECK(s1.superseded == s0.superseded + 1, "the older queued job was dropped (%u)", s1.superseded - s0.superseded);
	CHECK(!g_atomic_int_get(&b1.started), "and never ran");

	/* The running slow query is interrupted by a cancel of its key. */
	gint64 t_cancel = g_get_monotonic_time();
	ss_session_cancel(s, &k_slow);
	CHECK(!ss_worker_pending(w, &k_slow), "key slow has nothing pending once cancelled");
	CHECK(settle(s), "the worker got through its queue");
	CHECK(slow.rc == SQLITE_INTERRUPT, "the slow query was interrupted (rc %d)", slow.rc);
	CHECK(slow.rc2 == SQLITE_INTERRUPT, "and so was the job's next statement (rc %d): one interrupt stops a job",
	      slow.rc2);
	CHECK(slow.end_us - t_cancel < 2 * G_USEC_PER_SEC, "within %.0f ms of the cancel",
	      (double)(slow.end_us - t_cancel) / 1000);
	CHECK(!slow.done && !b1.done && !b1.started, "neither the interrupted nor the dropped job was delivered");
	/* The interrupt does not reach the next job. */
	CHECK(b2.done && b2.rc == SQLITE_DONE && b2.value > 0, "the job after it read its rows (rc %d, %lld)", b2.rc,
	      (long long)b2.value);
	struct ss_worker_stats s2 = ss_worker_get_stats(w);
	CHECK(s2.interrupted == s1.interrupted + 1, "one interrupted");

	/* Finished but not delivered yet: discarded by a newer job. */
	struct job c1 = { .sql = "SELECT 41" }, c2 = { .sql = "SELECT 42" };
	submit(s, &k_a, &c1);
	while (!g_atomic_int_get(&c1.finished))
		g_usleep(500);   /* the main loop is not run: c1's result waits */
	g_usleep(20000);
	submit(s, &k_a, &c2);
	CHECK(settle(s), "c2 delivered");
	struct ss_worker_stats s3 = ss_worker_get_stats(w);
	CHECK(!c1.done && c2.done && c2.value == 42, "the stale result was discarded, the newer delivered");
	CHECK(s3.discarded == s2.discarded + 1, "one discarded");
	/* The worker keeps its read transaction only while jobs keep coming: idle,
	 * it lets a writer (an import into the same file) have the database. */
	gint64 end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
	bool w_ok = false;
	while (!(w_ok = writable(dbp)) && g_get_monotonic_time() < end)
		g_usleep(50000);
	CHECK(w_ok, "a writer could lock the database once the worker was idle");
	CHECK(s3.submitted == s3.delivered + s3.superseded + s3.interrupted + s3.discarded,
	      "every job accounted for: %u = %u + %u + %u + %u", s3.submitted, s3.delivered, s3.superseded,
	      s3.interrupted, s3.discarded);
}

static void arrived(void *user)
{
	(*(int *)user)++;
}

static bool wait_arrival(SsSession *s, struct ss_scene_fetch *f)
{
	gint64 end = g_get_monotonic_time() + 20 * G_USEC_PER_SEC;
	while (f->inflight && g_get_monotonic_time() < end)
		g_main_context_iteration(NULL, TRUE);
	return settle(s) && !f->inflight;
}

static void test_scenes(SsSession *s, const char *dbp)
{
	struct tl_db *db = ss_session_get_db(s);
	struct tl_layout l;
	tl_layout_compute(&l, db);
	int n_arrived = 0;
	struct ss_scene_fetch f;
	ss_scene_fetch_init(&f, s, arrived, &n_arrived);

	/* 0.39 ms a pixel: real polls, not summaries. */
	struct tl_view v = { .width = 1200, .height = 400, .legend = true };
	tl_view_set_range(&v, db, FX_MS(200), FX_MS(600));
	ss_scene_fetch_want(&f, &l, &v);
	CHECK(f.inflight && f.requested == 1, "a request in flight");
	CHECK(wait_arrival(s, &f) && n_arrived == 1 && f.ready, "the scene arrived");
	CHECK(f.ready && tl_scene_matches(f.ready, &v), "for the view asked");

	/* The same scene as the inline build, on a connection of its own. */
	char err[512];
	struct tl_db *db2 = tl_db_open(dbp, err, sizeof err);
	CHECK(db2 != NULL, "second connection: %s", db2 ? "" : err);
	if (db2 && f.ready) {
		struct tl_scene sc;
		tl_scene_init(&sc);
		tl_scene_update(&sc, db2, &l, &v);
		CHECK(sc.n_lanes == f.ready->n_lanes && sc.rows == f.ready->rows && sc.summary_bucket == f.ready->summary_bucket,
		      "worker and inline scenes agree (%llu / %llu rows)", (unsigned long long)f.ready->rows,
		      (unsigned long long)sc.rows);
		for (size_t i = 0; i < sc.n_lanes && i < f.ready->n_lanes; i++) {
			const struct tl_lane_scene *a = &sc.lanes[i], *b = &f.ready->lanes[i];
			CHECK(a->n_boxes == b->n_boxes && a->n_parks == b->n_parks && a->n_cpu == b->n_cpu &&
				      a->n_ticks == b->n_ticks && a->summary == b->summary,
			      "lane %zu: the same boxes, parks, CPU spans and ticks", i);
			/* Field by field: a culprit's string belongs to each
			 * connection's examiner, so only its text can agree. */
			bool same = a->n_boxes == b->n_boxes;
			for (size_t k = 0; same && k < a->n_boxes; k++) {
				const struct tl_box *x = &a->boxes[k], *y = &b->boxes[k];
				same = x->x0 == y->x0 && x->x1 == y->x1 && x->poll_id == y->poll_id &&
				       x->task_id == y->task_id && x->location_id == y->location_id && x->dur == y->dur &&
				       x->n == y->n && x->flags == y->flags &&
				       g_strcmp0(x->culprit, y->culprit) == 0;
			}
			CHECK(same, "lane %zu boxes", i);
		}
		tl_scene_free(&sc);
	}
	tl_db_close(db2);

	/* Drawn for another view, a scene's times land where that view puts
	 * them: the start of the 200 ms stall on w0 (lane 0). */
	struct tl_view v2 = v;
	tl_view_set_range(&v2, db, FX_MS(250), FX_MS(410));
	double k, off;
	CHECK(f.ready && tl_scene_map(f.ready, &v2, &k, &off), "a built scene maps");
	if (f.ready) {
		const struct tl_box *stall = tl_scene_box_at(f.ready, 0, tl_view_x(&v, FX_MS(300)) + 0.5, 1);
		CHECK(stall && fabs(off + k * stall->x0 - tl_view_x(&v2, FX_MS(300))) < 1,
		      "the stalled poll maps to %.1f, the new view has it at %.1f", stall ? off + k * stall->x0 : -1,
		      tl_view_x(&v2, FX_MS(300)));
		CHECK(fabs(k - 2.5) < 1e-9, "a 2.5x zoom stretches by 2.5: %.6f", k);
		tl_scene_map(f.ready, &v, &k, &off);
		CHECK(k == 1 && off == 0, "its own view maps exactly (k %g, off %g)", k, off);
	}

	/* While the worker is busy: a jump supersedes the request in flight, a
	 * small step waits for it. */
	static int k_slow;
	struct job slow = { 0 };
	submit(s, &k_slow, &slow);
	CHECK(wait_flag(&slow.started), "slow query started");
	struct ss_worker_stats w0 = ss_worker_get_stats(ss_session_get_worker(s));
	ss_scene_fetch_want(&f, &l, &v2);
	struct tl_view v3 = v;
	tl_view_set_range(&v3, db, FX_MS(700), FX_MS(800));   /* nowhere near v2 */
	ss_scene_fetch_want(&f, &l, &v3);
	struct tl_view v4 = v3;
	tl_view_pan(&v4, db, 30);                              /* a small step from v3 */
	ss_scene_fetch_want(&f, &l, &v4);
	struct ss_worker_stats w1 = ss_worker_get_stats(ss_session_get_worker(s));
	CHECK(f.requested == 3, "v2 and v3 requested, v4 waits for v3: %u", f.requested);
	CHECK(w1.superseded == w0.superseded + 1, "v2's request dropped unrun");
	ss_session_cancel(s, &k_slow);
	CHECK(wait_arrival(s, &f), "v3's scene arrived");
	CHECK(f.ready && tl_scene_matches(f.ready, &v3) && n_arrived == 2, "the scene is v3's (%d arrivals)", n_arrived);
	/* What the widget does on arrival: ask for the view it has now. */
	ss_scene_fetch_want(&f, &l, &v4);
	CHECK(f.requested == 4 && wait_arrival(s, &f) && f.ready && tl_scene_matches(f.ready, &v4), "then v4's");
	ss_scene_fetch_want(&f, &l, &v4);
	CHECK(f.requested == 4 && !f.inflight, "nothing more to fetch for the same view");
	/* Back to a view seen before: its scene is drawn again, no query. */
	guint reused = f.reused;
	ss_scene_fetch_want(&f, &l, &v3);
	CHECK(f.requested == 4 && !f.inflight && f.reused == reused + 1 && f.ready && tl_scene_matches(f.ready, &v3),
	      "v3 again from its kept scene (%u requests, %u reused)", f.requested, f.reused - reused);
	ss_scene_fetch_want(&f, &l, &v4);
	CHECK(f.requested == 4 && f.ready && tl_scene_matches(f.ready, &v4), "and v4 again");
	struct tl_view v5 = v4;
	tl_view_pan(&v5, db, 200);
	ss_scene_fetch_want(&f, &l, &v5);
	CHECK(f.requested == 5 && f.inflight, "a view not seen before is fetched");
	CHECK(wait_arrival(s, &f) && f.ready && tl_scene_matches(f.ready, &v5), "v5's scene");

	ss_scene_fetch_reset(&f);
	tl_layout_free(&l);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: test_worker SCHEMA.sql OUTDIR\n");
		return 2;
	}
	main_thread = g_thread_self();
	g_mkdir_with_parents(argv[2], 0755);
	char dbp[4096], err[512];
	snprintf(dbp, sizeof dbp, "%s/worker-fixture.db", argv[2]);
	if (fixture_build_small(dbp, argv[1]) != 0)
		return 1;
	struct tl_db *db = tl_db_open(dbp, err, sizeof err);
	if (!db) {
		fprintf(stderr, "test_worker: %s\n", err);
		return 1;
	}
	SsSession *s = ss_session_new();
	CHECK(ss_session_idle(s) && !ss_session_get_worker(s), "no worker without a trace");
	int before = freed;
	struct job none = { .sql = "SELECT 1" };
	submit(s, &none, &none);
	CHECK(freed == before + 1 && !none.started, "without a trace a job is dropped and freed");
	ss_session_set_db(s, db);

	test_jobs(s, dbp);
	test_scenes(s, dbp);

	/* Shutting down during a long query: prompt, and nothing delivered. */
	static int k_slow;
	struct job slow = { 0 }, after = { .sql = "SELECT 1" };
	submit(s, &k_slow, &slow);
	CHECK(wait_flag(&slow.started), "a last slow query started");
	static int k_after;
	submit(s, &k_after, &after);
	gint64 t0 = g_get_monotonic_time();
	ss_session_set_db(s, NULL);
	gint64 took = g_get_monotonic_time() - t0;
	CHECK(took < 2 * G_USEC_PER_SEC, "closing the trace took %.0f ms", (double)took / 1000);
	CHECK(slow.rc == SQLITE_INTERRUPT && !slow.done, "the query was interrupted and not delivered");
	for (int i = 0; i < 20; i++)
		g_main_context_iteration(NULL, FALSE);
	CHECK(!after.done && !after.started, "the queued job was dropped");
	g_object_unref(s);
	/* count, slow, b1, b2, c1, c2, the scene test's slow, the last two, the dropped one */
	CHECK(freed == 10, "every job's data freed once: %d", freed);
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("worker: all checks passed\n");
	return 0;
}

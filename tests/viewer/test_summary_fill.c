/*
 * test_summary_fill.c - the viewer's use of sparse summary levels
 * (tl_scene.c, fetch_summary): a 2 ms level that has rows for only some of a
 * 10 ms bucket's children. The children present are drawn as they are; what
 * the parent holds beyond them is spread evenly over the missing children;
 * off-CPU time (not kept at sparse levels) comes from the parent. Also: the
 * level picked for a zoom, and that an old database without sparse levels
 * still gets its full levels.
 * usage: test_summary_fill SCHEMA.sql OUTDIR
 */
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>

#include "fixture.h"
#include "tl_db.h"
#include "tl_scene.h"
#include "tl_view.h"
#include "soft_check.h"


#define MS 1000000LL
/* A 10 ms bucket of worker 1, at 600 ms into the small fixture (w0 is parked
 * there, so its own summaries are replaced by the test's). */
#define B (FX_BASE + 600 * MS)

static int exec(const char *path, const char *sql)
{
	sqlite3 *db;
	char *msg = NULL;
	int rc = sqlite3_open(path, &db) == SQLITE_OK ? sqlite3_exec(db, sql, NULL, NULL, &msg) : SQLITE_ERROR;
	if (rc != SQLITE_OK)
		fprintf(stderr, "%s\n", msg ? msg : sqlite3_errmsg(db));
	sqlite3_free(msg);
	sqlite3_close(db);
	return rc == SQLITE_OK ? 0 : -1;
}

/* The scene of worker 1 over [t0, t1) at plot_w columns. */
static const struct tl_lane_scene *scene(struct tl_db *db, struct tl_scene *sc, struct tl_layout *l,
					 int64_t t0, int64_t t1, int plot_w)
{
	struct tl_view v = { .t0 = t0, .t1 = t1, .width = TL_LABEL_W + plot_w, .height = 2000 };
	tl_scene_update(sc, db, l, &v);
	int lane = tl_db_lane_of_worker(db, 1);
	return lane >= 0 ? &sc->lanes[lane] : NULL;
}

static bool near(double a, double b) { return fabs(a - b) < 1e-4; }

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: test_summary_fill SCHEMA.sql OUTDIR\n");
		return 2;
	}
	char path[4096], err[512], sql[2048];
	snprintf(path, sizeof path, "%s/summary-fill.db", argv[2]);
	if (fixture_build_small(path, argv[1]) != 0)
		return 1;
	/* Parent: busy 6 ms, parked 2 ms, off-CPU 4 ms, 7 polls, longest 3 ms.
	 * Children present: slot 0 (busy 1.5 ms, 3 polls) and slot 2 (busy
	 * 0.5 ms, parked 0.5 ms, 2 polls, longest 1 ms); slots 1, 3, 4 missing. */
	snprintf(sql, sizeof sql,
		 "DELETE FROM worker_summaries WHERE worker_id = 1 AND bucket_ns IN (2000000, 10000000)"
		 " AND ts >= %lld AND ts < %lld;"
		 "INSERT INTO worker_summaries VALUES (10000000, 1, %lld, 6000000, 2000000, 4000000, 7, 3000000);"
		 "INSERT INTO worker_summaries VALUES (2000000, 1, %lld, 1500000, 0, 0, 3, 3000000);"
		 "INSERT INTO worker_summaries VALUES (2000000, 1, %lld, 500000, 500000, 0, 2, 1000000);",
		 (long long)(B - 20 * MS), (long long)(B + 30 * MS), (long long)B, (long long)B,
		 (long long)(B + 4 * MS));
	if (exec(path, sql) != 0)
		return 1;

	struct tl_db *db = tl_db_open(path, err, sizeof err);
	if (!db) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	bool has2 = false;
	for (size_t i = 0; i < db->n_levels; i++)
		if (db->levels[i] == 2 * MS)
			has2 = db->level_parent[i] == 10 * MS;
	CHECK(has2, "2 ms level with parent 10 ms");

	struct tl_layout l;
	tl_layout_compute(&l, db);
	struct tl_scene sc;
	tl_scene_init(&sc);
	/* 2 ms per column: the 2 ms level (at most 1.5 columns per bucket). */
	const struct tl_lane_scene *ls = scene(db, &sc, &l, B, B + 10 * MS, 5);
	CHECK(sc.summary_bucket == 2 * MS, "picked %lld", (long long)sc.summary_bucket);
	if (ls && ls->summary && ls->cols) {
		const double busy[5] = { 0.75, 4.0 / 3 / 2, 0.25, 4.0 / 3 / 2, 4.0 / 3 / 2 };
		const double parked[5] = { 0, 0.25, 0.25, 0.25, 0.25 };
		for (int c = 0; c < 5; c++) {
			CHECK(near(ls->cols[c].busy, busy[c]), "col %d busy %.4f want %.4f", c, ls->cols[c].busy, busy[c]);
			CHECK(near(ls->cols[c].parked, parked[c]), "col %d parked %.4f want %.4f", c, ls->cols[c].parked,
			      parked[c]);
			CHECK(near(ls->cols[c].offcpu, 0.4), "col %d off-CPU %.4f", c, ls->cols[c].offcpu);
		}
		/* Polls: 3 and 2 where rows are, the other 2 in the first missing
		 * slot; the longest poll of the parent marks the missing ones. */
		CHECK(ls->cols[0].polls == 3 && ls->cols[1].polls == 2 && ls->cols[2].polls == 2 &&
			      ls->cols[3].polls == 0 && ls->cols[4].polls == 0,
		      "polls %u %u %u %u %u", ls->cols[0].polls, ls->cols[1].polls, ls->cols[2].polls,
		      ls->cols[3].polls, ls->cols[4].polls);
		CHECK(ls->cols[2].max_poll == 1000000 && ls->cols[3].max_poll == 3000000, "longest polls");
	} else {
		CHECK(0, "worker 1 has no summary columns");
	}
	/* 10 ms per column picks the full level: the parent as it is. */
	ls = scene(db, &sc, &l, B, B + 50 * MS, 5);
	CHECK(sc.summary_bucket == 10 * MS, "picked %lld", (long long)sc.summary_bucket);
	if (ls && ls->cols)
		CHECK(near(ls->cols[0].busy, 0.6) && near(ls->cols[0].offcpu, 0.4), "full level busy %.4f",
		      ls->cols[0].busy);
	tl_scene_free(&sc);
	tl_layout_free(&l);
	tl_db_close(db);

	/* A database from before the sparse levels: only 1 ms, 10 ms, 100 ms, 1 s. */
	if (exec(path, "DELETE FROM worker_summaries WHERE bucket_ns NOT IN (1000000, 10000000, 100000000,"
		       " 1000000000)") != 0)
		return 1;
	db = tl_db_open(path, err, sizeof err);
	if (!db) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	CHECK(db->n_levels == 4 && db->levels[0] == MS && db->level_parent[0] == 0, "old database levels %zu",
	      db->n_levels);
	tl_layout_compute(&l, db);
	tl_scene_init(&sc);
	scene(db, &sc, &l, B, B + 10 * MS, 5);
	CHECK(sc.summary_bucket == MS, "old database, 2 ms per column: picked %lld", (long long)sc.summary_bucket);
	tl_scene_free(&sc);
	tl_layout_free(&l);
	tl_db_close(db);
	remove(path);
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("summary fill: all checks passed\n");
	return 0;
}

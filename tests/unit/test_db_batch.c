/*
 * test_db_batch.c - the importer's row path into SQLite (db_pipe.c, db_batch.c),
 * with and without the inserting thread:
 *   - polls written in a scrambled id order, with gaps (a poll still open) and
 *     ids below the table's maximum, across several batches, keep exactly the
 *     ids they were given;
 *   - a row written outside the batches between two flushes (as a resumed import
 *     does) does not shift the ids of the next batch;
 *   - a batch whose ids lie far apart (a poll open all along, written with
 *     much later ones) keeps them too (the sort that does not place ids by
 *     their distance from the smallest);
 *   - texts, NULLs and a statement with a literal in its VALUES list (samples)
 *     arrive intact.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db.h"
#include "soft_check.h"


#define N_POLLS 9000

static void put_poll(struct ss_db *d, int64_t id)
{
	struct ss_row *r = ss_row(d, ST_INS_POLL);
	ss_bind_i(r, 1, id);
	ss_bind_i(r, 2, 1 + id % 3);
	ss_bind_z(r, 3, id % 5);          /* every fifth task_id NULL */
	ss_bind_i(r, 4, 7);
	ss_bind_i(r, 5, id * 1000);
	ss_bind_i(r, 6, id * 3);
	ss_bind_i(r, 7, 0);
	ss_db_step(d, ST_INS_POLL);
}

static int64_t query(struct ss_db *d, const char *sql)
{
	sqlite3_stmt *s;
	int64_t v = -1;
	if (sqlite3_prepare_v2(d->db, sql, -1, &s, NULL) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return v;
}

static void run(const char *path, bool threaded)
{
	struct ss_db d;
	unlink(path);
	if (ss_db_open(&d, path) != 0 || ss_db_prepare(&d, threaded) != 0) {
		CHECK(0, "open %s: %s", path, d.err);
		ss_db_close(&d);
		return;
	}
	/* Ids 1..N_POLLS, written in the order a two-worker runtime with some long
	 * polls produces: pairs swapped, every 97th held back to the end, and the
	 * ids 5000..5099 never written (their polls were lost). */
	int64_t *order = malloc(sizeof *order * N_POLLS);
	int n = 0;
	for (int64_t id = 1; id <= N_POLLS; id += 2) {
		if (id + 1 <= N_POLLS)
			order[n++] = id + 1;
		order[n++] = id;
	}
	int m = 0;
	for (int i = 0; i < n; i++)
		if (order[i] % 97 != 0 && (order[i] < 5000 || order[i] >= 5100))
			order[m++] = order[i];
	for (int64_t id = 97; id <= N_POLLS; id += 97)
		if (id < 5000 || id >= 5100)
			order[m++] = id;
	for (int i = 0; i < m; i++)
		put_poll(&d, order[i]);

	/* Text, NULL, and a literal NULL in the VALUES list (a span with fields:
	 * a span_full row). */
	struct ss_row *r = ss_row(&d, ST_INS_SPAN_EXTRA);
	ss_bind_i(r, 1, 3);
	ss_bind_i(r, 2, 100);
	ss_bind_i(r, 3, 50);
	ss_bind_null(r, 4);
	ss_bind_i(r, 5, 0);
	ss_bind_i(r, 6, 1);
	ss_bind_st(r, 9, "span fields \xc3\xa9");
	ss_db_step(&d, ST_INS_SPAN_EXTRA);
	r = ss_row(&d, ST_INS_SAMPLE);
	ss_bind_i(r, 1, 4242);
	ss_bind_i(r, 2, 3);
	ss_bind_null(r, 3);
	ss_bind_i(r, 4, 11);
	ss_bind_i(r, 5, 2);
	ss_bind_i(r, 6, 1);
	ss_bind_i(r, 7, 0);
	ss_db_step(&d, ST_INS_SAMPLE);
	CHECK(ss_db_flush(&d) == 0, "flush: %s", d.err);

	CHECK(query(&d, "SELECT count(*) FROM polls") == m, "%lld polls, %d written",
	      (long long)query(&d, "SELECT count(*) FROM polls"), m);
	CHECK(query(&d, "SELECT count(*) FROM polls WHERE ts != id * 1000 OR dur != id * 3"
		  " OR worker_id != 1 + id % 3") == 0, "a poll's row does not match its id");
	CHECK(query(&d, "SELECT count(*) FROM polls WHERE task_id IS NULL") ==
	      query(&d, "SELECT count(*) FROM polls WHERE id % 5 = 0"), "NULL task ids");
	CHECK(query(&d, "SELECT count(*) FROM polls WHERE id BETWEEN 5000 AND 5099") == 0,
	      "a gap was filled");
	CHECK(query(&d, "SELECT count(*) FROM spans WHERE fields = 'span fields \xc3\xa9' AND dur = 50"
		  " AND incomplete = 1 AND depth = 0 AND thread_id = 3 AND name IS NULL AND span_id IS NULL") == 1,
	      "span text");
	CHECK(query(&d, "SELECT count(*) FROM samples WHERE ts = 4242 AND worker_id IS NULL"
		  " AND poll_id IS NULL AND callsite_id = 11 AND weight = 2 AND kind = 1") == 1,
	      "sample row");

	/* Written outside the batch path: the next batch must not reuse its id. */
	CHECK(ss_db_exec(&d, "INSERT INTO polls(id, worker_id, ts, dur) VALUES(9001, 1, 9001000, 27003)")
	      == 0, "%s", d.err);
	for (int64_t id = 9002; id <= 9100; id++)
		put_poll(&d, id);
	CHECK(ss_db_flush(&d) == 0, "flush: %s", d.err);
	CHECK(query(&d, "SELECT count(*) FROM polls WHERE id > 9000") == 100, "later polls");
	CHECK(query(&d, "SELECT count(*) FROM polls WHERE ts != id * 1000") == 0, "later ids shifted");

	for (int64_t id = 20000; id < 21000; id += 2) {
		put_poll(&d, id + 1);
		put_poll(&d, id);
	}
	put_poll(&d, 9500);
	CHECK(ss_db_flush(&d) == 0, "flush: %s", d.err);
	CHECK(query(&d, "SELECT count(*) FROM polls WHERE id >= 9500") == 1001, "%lld polls far apart",
	      (long long)query(&d, "SELECT count(*) FROM polls WHERE id >= 9500"));
	CHECK(query(&d, "SELECT count(*) FROM polls WHERE ts != id * 1000") == 0, "ids far apart shifted");
	free(order);
	ss_db_close(&d);
	unlink(path);
}

int main(void)
{
	char dir[] = "/tmp/stallscope-test-db-XXXXXX";
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	char path[64];
	snprintf(path, sizeof path, "%s/t.db", dir);
	run(path, false);
	run(path, true);
	rmdir(dir);
	if (failures) {
		fprintf(stderr, "%d checks failed\n", failures);
		return 1;
	}
	printf("ok: ids kept through sorted batches, inline and threaded\n");
	return 0;
}

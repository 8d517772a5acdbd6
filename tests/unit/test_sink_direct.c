/*
 * test_sink_direct.c - the SQLite sink's direct writes wait for the inserting
 * thread. Where an import ends, the model queues a task's row and then writes
 * the task's graveyard entry (ended_task) straight on the connection, task
 * after task; the state writes once ran while the inserting thread was still
 * inserting queued rows, two threads on one connection opened without its
 * mutex, which corrupted the database or hung sqlite3_close. Here: rows of
 * many tasks queued, each followed by direct writes (thread_state, open_span,
 * open_summary; ended_task is kept until the end), with the inserting thread on; the import finishes,
 * `PRAGMA integrity_check` says ok, and every row is there. Run several times,
 * since a race shows only sometimes.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sink.h"
#include "sqlite_store.h"

#define N_TASKS 60000
#define ROUNDS 3

static int fail(const char *what)
{
	printf("FAIL: %s\n", what);
	return 1;
}

static int64_t query(const char *path, const char *sql, char *text, size_t n)
{
	sqlite3 *db;
	sqlite3_stmt *s;
	int64_t v = -1;
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW) {
		v = sqlite3_column_int64(s, 0);
		if (text)
			snprintf(text, n, "%s", (const char *)sqlite3_column_text(s, 0));
		sqlite3_finalize(s);
	}
	sqlite3_close(db);
	return v;
}

static int one_round(const char *path)
{
	char err[512];
	unlink(path);
	struct ss_sqlite_store *st = ss_sqlite_open(path, true, err, sizeof err);
	if (!st) {
		printf("FAIL: open: %s\n", err);
		return 1;
	}
	struct ss_sink k;
	ss_sqlite_sink(st, &k);
	int rc = 0;
	for (int64_t i = 1; i <= N_TASKS && !rc; i++) {
		struct ss_task_row t = { .id = i, .recording_id = 1, .task = (uint64_t)i, .spawn_ts = i * 10,
					 .end_ts = i * 10 + 5 };
		rc |= k.task(k.ctx, &t);
		if (i % 2 == 0) {
			struct ss_ended_task e = { 1, (uint64_t)i, i, i * 10 + 5 };
			rc |= k.ended_task(k.ctx, &e);
		}
		if (i % 1000 == 0) {
			struct ss_thread_state ts = { .thread_id = i, .cpu_state = 1, .cpu_since = i, .cpu = -1 };
			rc |= k.thread_state(k.ctx, &ts);
			struct ss_open_span sp = { .thread_id = i, .depth = 0, .ts = i };
			rc |= k.open_span(k.ctx, &sp);
			struct ss_open_summary su = { .worker_id = i, .source = 0, .level = 0, .ts = i };
			rc |= k.open_summary(k.ctx, &su);
		}
	}
	if (rc) {
		printf("FAIL: a sink call failed: %s\n", k.error ? k.error(k.ctx) : "?");
		ss_sqlite_close(st);
		return 1;
	}
	if (ss_sqlite_finish(st, NULL, NULL, false, NULL) != 0) {
		ss_sqlite_close(st);
		return fail("finish");
	}
	ss_sqlite_close(st);
	char check[64] = "";
	query(path, "PRAGMA integrity_check", check, sizeof check);
	if (strcmp(check, "ok") != 0) {
		printf("FAIL: integrity_check: %s\n", check);
		return 1;
	}
	if (query(path, "SELECT count(*) FROM tasks", NULL, 0) != N_TASKS)
		return fail("tasks rows");
	/* The graveyard is kept as its oldest and newest entries (the rest are
	 * tasks rows), written at the end. */
	if (query(path, "SELECT count(*) FROM import_ended_tasks", NULL, 0) != 2 ||
	    query(path, "SELECT min(end_ts) FROM import_ended_tasks", NULL, 0) != 25 ||
	    query(path, "SELECT max(task_id) FROM import_ended_tasks", NULL, 0) != N_TASKS)
		return fail("import_ended_tasks rows");
	if (query(path, "SELECT count(*) FROM import_thread_state", NULL, 0) != N_TASKS / 1000)
		return fail("import_thread_state rows");
	return 0;
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : ".";
	char path[4096];
	snprintf(path, sizeof path, "%s/sink-direct-%d.db", dir, (int)getpid());
	for (int r = 0; r < ROUNDS; r++) {
		if (one_round(path) != 0) {
			printf("  (round %d of %d)\n", r + 1, ROUNDS);
			unlink(path);
			return 1;
		}
	}
	unlink(path);
	printf("sink direct writes: ok (%d rounds of %d tasks)\n", ROUNDS, N_TASKS);
	return 0;
}

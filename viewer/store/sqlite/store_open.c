/*
 * store_open.c - see store_open.h.
 */
#include "store_open.h"
#include "store_mmap.h"
#include "poll_chunks.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The first bytes of every SQLite 3 database file. */
static const char sqlite_magic[16] = "SQLite format 3";

int ss_store_open_readonly(const char *path, bool need_tables, sqlite3 **out, char *err, size_t errlen)
{
	*out = NULL;
	struct stat st;
	if (stat(path, &st) != 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s is a directory, not a database (give the file 'stallscope import -o'"
			 " wrote)", path);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s is not a regular file", path);
		return -1;
	}
	if (st.st_size == 0) {
		snprintf(err, errlen, "%s is empty, not a stallscope database", path);
		return -1;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char head[16] = { 0 };
	ssize_t got = fd >= 0 ? read(fd, head, sizeof head) : -1;
	int rerr = errno;
	if (fd >= 0)
		close(fd);
	if (got < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(rerr));
		return -1;
	}
	if (got != (ssize_t)sizeof head || memcmp(head, sqlite_magic, sizeof head) != 0) {
		snprintf(err, errlen, "%s is not an SQLite database", path);
		return -1;
	}
	sqlite3 *db = NULL;
	int n = -1;
	for (int attempt = 0; attempt < 2; attempt++) {
		if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, ss_store_mmap_vfs()) !=
		    SQLITE_OK) {
			snprintf(err, errlen, "%s: %s", path, db ? sqlite3_errmsg(db) : "out of memory");
			sqlite3_close(db);
			return -1;
		}
		sqlite3_extended_result_codes(db, 1);
		/* Reading the schema is the first read of the file: damage shows here. */
		sqlite3_stmt *s = NULL;
		if (sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN"
				       " ('recordings', 'workers', 'polls')", -1, &s, NULL) == SQLITE_OK &&
		    sqlite3_step(s) == SQLITE_ROW)
			n = sqlite3_column_int(s, 0);
		sqlite3_finalize(s);
		if (n >= 0 || attempt || sqlite3_extended_errcode(db) != SQLITE_READONLY_ROLLBACK)
			break;
		/* An import into it was killed: its rollback journal must be played
		 * back before anyone can read it, and that takes a write. */
		sqlite3_close(db);
		db = NULL;
		sqlite3 *rw = NULL;
		int ok = sqlite3_open_v2(path, &rw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) == SQLITE_OK &&
			 sqlite3_exec(rw, "SELECT count(*) FROM sqlite_master", NULL, NULL, NULL) == SQLITE_OK;
		sqlite3_close(rw);
		if (!ok) {
			snprintf(err, errlen, "%s: an import into it was interrupted, and finishing its rollback"
				 " needs write access (import into it again, or open it as its owner)", path);
			return -1;
		}
	}
	if (n < 0) {
		int code = sqlite3_errcode(db);
		snprintf(err, errlen, "%s: %s%s", path, sqlite3_errmsg(db),
			 code == SQLITE_CORRUPT || code == SQLITE_NOTADB ? " (the file is damaged)" : "");
		sqlite3_close(db);
		return -1;
	}
	if (need_tables && n != 3) {
		snprintf(err, errlen, "%s is an SQLite database but not a stallscope one (no recordings, workers"
			 " and polls tables; make one with 'stallscope import')", path);
		sqlite3_close(db);
		return -1;
	}
	/* A database of schema 6 or older: poll_chunks as a view of its
	 * polls_by_worker (poll_chunks.h), in the connection's temp schema. */
	if (n == 3) {
		sqlite3_stmt *q = NULL;
		int have = 1;
		if (sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master WHERE name = 'poll_chunks'", -1, &q,
				       NULL) == SQLITE_OK &&
		    sqlite3_step(q) == SQLITE_ROW)
			have = sqlite3_column_int(q, 0);
		sqlite3_finalize(q);
		if (!have && sqlite3_exec(db, SS_POLL_CHUNKS_COMPAT_VIEW, NULL, NULL, NULL) != SQLITE_OK) {
			snprintf(err, errlen, "%s: %s", path, sqlite3_errmsg(db));
			sqlite3_close(db);
			return -1;
		}
	}
	/* Pages read straight from a mapping of the file, not copied out of
	 * the kernel one pread at a time (store_mmap.h: limits, truncation). */
	ss_store_mmap_enable(db);
	*out = db;
	return 0;
}

static int on_progress(void *ctx)
{
	struct ss_store_budget *b = ctx;
	if (b->expired)
		return 1;
	if (b->deadline_ns && now_ns() > b->deadline_ns) {
		b->expired = true;
		return 1;
	}
	return 0;
}

void ss_store_budget(sqlite3 *db, struct ss_store_budget *b, double seconds)
{
	if (!b) {
		sqlite3_progress_handler(db, 0, NULL, NULL);
		return;
	}
	b->expired = false;
	b->seconds = seconds;
	b->deadline_ns = seconds > 0 ? now_ns() + (int64_t)(seconds * 1e9) : 0;
	/* About every 10 us of work: the clock read costs well under 1% of it. */
	sqlite3_progress_handler(db, 4000, on_progress, b);
}

void ss_store_error(sqlite3 *db, const struct ss_store_budget *b, char *err, size_t errlen)
{
	if (b && b->expired)
		snprintf(err, errlen, "reading the database took longer than %.0f s, and was stopped (a damaged"
			 " or hostile database? a bigger budget: --timeout)", b->seconds);
	else
		snprintf(err, errlen, "%s", sqlite3_errmsg(db));
}

/*
 * test_truncated.c - the viewer's memory-mapped reads (store_mmap.h) on files
 * cut short, on the light fixture:
 *  - mapped reads give the same answers as reads through the default VFS;
 *  - a database truncated to 40% while it is open and mapped (someone copies
 *    over it) is read on: scenes over the whole trace are built without a
 *    crash, statements that reach the missing pages fail with an error, and
 *    the SIGBUS handler counted the pages it replaced (so the faults did
 *    happen and were caught, not avoided);
 *  - a copy truncated before it is opened (a trace someone sent, cut short)
 *    either fails to open with a message or opens and draws what it can;
 *  - SIGBUS that is not ours still ends the process: one sent with kill, and
 *    a fault in a mapping of another file.
 * Built twice: plain, and with ASan+UBSan (the -san test, suite sanitize).
 * usage: test_truncated SCHEMA.sql OUTDIR
 */
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixture.h"
#include "soft_check.h"
#include "store_mmap.h"
#include "tl_db.h"
#include "tl_scene.h"
#include "tl_view.h"

static int copy_prefix(const char *from, const char *to, double share)
{
	FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
	if (!in || !out)
		return -1;
	fseek(in, 0, SEEK_END);
	long n = (long)(ftell(in) * share);
	fseek(in, 0, SEEK_SET);
	char buf[65536];
	while (n > 0) {
		size_t k = fread(buf, 1, n < (long)sizeof buf ? (size_t)n : sizeof buf, in);
		if (k == 0 || fwrite(buf, 1, k, out) != k)
			return -1;
		n -= (long)k;
	}
	fclose(in);
	return fclose(out) == 0 ? 0 : -1;
}

/* count(*) and sum(dur) of polls, and the statement's result code. */
static int poll_totals(sqlite3 *db, int64_t *count, int64_t *sum)
{
	sqlite3_stmt *s = NULL;
	int rc = sqlite3_prepare_v2(db, "SELECT count(*), coalesce(sum(dur), 0) FROM polls", -1, &s, NULL);
	if (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		*count = sqlite3_column_int64(s, 0);
		*sum = sqlite3_column_int64(s, 1);
	}
	sqlite3_finalize(s);
	return rc;
}

/* Scenes over the whole trace and its halves and quarters; returns rows read. */
static uint64_t draw_everything(struct tl_db *d)
{
	struct tl_layout l;
	tl_layout_compute(&l, d);
	struct tl_scene sc;
	tl_scene_init(&sc);
	struct tl_view v = { .width = 1200, .height = 600 };
	tl_view_fit(&v, d);
	int64_t span = d->last_ts - d->first_ts;
	uint64_t rows = 0;
	for (int parts = 1; parts <= 4; parts *= 2)
		for (int i = 0; i < parts; i++) {
			int64_t t0 = d->first_ts + span * i / parts;
			tl_view_set_range(&v, d, t0, t0 + span / parts);
			tl_scene_invalidate(&sc);
			tl_scene_update(&sc, d, &l, &v);
			rows += sc.rows;
		}
	tl_scene_free(&sc);
	tl_layout_free(&l);
	return rows;
}

/* Runs what in a child; true when the child did not come back alive. */
static bool child_dies(void (*what)(const char *), const char *arg)
{
	pid_t pid = fork();
	if (pid == 0) {
		what(arg);
		_exit(0);   /* survived: the handler swallowed a SIGBUS that was not its */
	}
	int st = 0;
	waitpid(pid, &st, 0);
	return !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void sent_sigbus(const char *unused)
{
	(void)unused;
	kill(getpid(), SIGBUS);
}

static void foreign_fault(const char *path)
{
	FILE *f = fopen(path, "wb");
	char page[8192] = { 1 };
	if (!f || fwrite(page, 1, sizeof page, f) != sizeof page || fclose(f) != 0)
		return;
	int fd = open(path, O_RDONLY);
	volatile char *p = mmap(NULL, sizeof page, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return;
	if (truncate(path, 0) != 0)
		return;
	char c = p[4096];   /* past the end: SIGBUS */
	(void)c;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: test_truncated SCHEMA.sql OUTDIR\n");
		return 2;
	}
	if (!ss_store_mmap_vfs()) {
		printf("SKIP: memory-mapped reads are off (STALLSCOPE_MMAP=off, or no VFS)\n");
		return 77;
	}
	char src[4096], live[4096], sent[4096], other[4096], err[512];
	snprintf(src, sizeof src, "%s/truncated-src.db", argv[2]);
	snprintf(live, sizeof live, "%s/truncated-live.db", argv[2]);
	snprintf(sent, sizeof sent, "%s/truncated-sent.db", argv[2]);
	snprintf(other, sizeof other, "%s/truncated-other.bin", argv[2]);
	unlink(src);
	if (fixture_build_light(src, argv[1]) != 0)
		return 1;

	/* Mapped and plain reads agree. */
	struct tl_db *d = tl_db_open(src, err, sizeof err);
	CHECK(d, "open: %s", err);
	if (!d)
		return 1;
	sqlite3 *plain = NULL;
	CHECK(sqlite3_open_v2(src, &plain, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK, "plain open");
	int64_t c1 = -1, s1 = -1, c2 = -2, s2 = -2;
	CHECK(poll_totals(d->db, &c1, &s1) == SQLITE_ROW, "mapped read: %s", sqlite3_errmsg(d->db));
	CHECK(poll_totals(plain, &c2, &s2) == SQLITE_ROW, "plain read");
	CHECK(c1 == c2 && s1 == s2 && c1 > 1000, "mapped %lld/%lld, plain %lld/%lld", (long long)c1, (long long)s1,
	      (long long)c2, (long long)s2);
	sqlite3_close(plain);
	sqlite3_stmt *q = NULL;
	int64_t mm = 0;
	if (sqlite3_prepare_v2(d->db, "PRAGMA mmap_size", -1, &q, NULL) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW)
		mm = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	CHECK(mm > 0, "the viewer's connection does not fetch mapped pages (mmap_size %lld)", (long long)mm);
	tl_db_close(d);

	/* Truncated under the open, mapped connection. */
	CHECK(copy_prefix(src, live, 1.0) == 0, "copy");
	d = tl_db_open(live, err, sizeof err);
	CHECK(d, "open the copy: %s", err);
	if (!d)
		return 1;
	uint64_t before = draw_everything(d);
	CHECK(before > 1000, "the intact copy drew %llu rows", (unsigned long long)before);
	/* A read transaction held open across the truncation, as the query
	 * worker holds one while jobs keep coming (ss_worker.c): a new one would
	 * see the file shorter than its header says and fail at once. */
	sqlite3_stmt *keep = NULL;
	CHECK(sqlite3_prepare_v2(d->db, "SELECT 1 FROM sqlite_schema", -1, &keep, NULL) == SQLITE_OK &&
	      sqlite3_step(keep) == SQLITE_ROW, "begin a read");
	struct stat st;
	stat(live, &st);
	uint64_t f0 = ss_store_mmap_faults();
	CHECK(truncate(live, st.st_size * 4 / 10) == 0, "truncate");
	uint64_t after = draw_everything(d);   /* must come back */
	/* quick_check reads every page: it must see the damage. */
	sqlite3_stmt *qc = NULL;
	int rc = sqlite3_prepare_v2(d->db, "PRAGMA quick_check", -1, &qc, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(qc);
	bool saw = rc != SQLITE_ROW || strcmp((const char *)sqlite3_column_text(qc, 0), "ok") != 0;
	CHECK(saw, "quick_check found the truncated file intact");
	sqlite3_finalize(qc);
	CHECK(ss_store_mmap_faults() > f0, "no fault was caught: the truncated pages were not read through the mapping");
	printf("truncated while open: %llu rows drawn before, %llu after; quick_check: %s; %llu pages replaced\n",
	       (unsigned long long)before, (unsigned long long)after, sqlite3_errstr(rc),
	       (unsigned long long)(ss_store_mmap_faults() - f0));
	sqlite3_finalize(keep);
	/* The next read transaction sees the short file: it fails, cleanly. */
	int64_t c3 = 0, s3 = 0;
	rc = poll_totals(d->db, &c3, &s3);
	CHECK(rc != SQLITE_ROW && rc != SQLITE_OK, "a count on the short file succeeded");
	tl_db_close(d);

	/* Truncated before it is opened. */
	for (int k = 1; k <= 9; k += 4) {
		CHECK(copy_prefix(src, sent, k / 10.0) == 0, "copy a prefix");
		err[0] = 0;
		d = tl_db_open(sent, err, sizeof err);
		if (!d) {
			CHECK(err[0], "a failed open without a message");
			printf("%d0%% of the file: open fails: %s\n", k, err);
			continue;
		}
		uint64_t rows = draw_everything(d);
		rc = poll_totals(d->db, &c3, &s3);
		printf("%d0%% of the file: opens, %llu rows drawn, count: %s\n", k, (unsigned long long)rows,
		       sqlite3_errstr(rc));
		tl_db_close(d);
	}

	/* A SIGBUS that is not about a mapped database still ends the process
	 * (under ASan its report of the two follows on stderr). */
	CHECK(child_dies(sent_sigbus, NULL), "a SIGBUS sent with kill was swallowed");
	CHECK(child_dies(foreign_fault, other), "a fault in another file's mapping was swallowed");
	unlink(other);
	unlink(live);
	unlink(sent);
	unlink(src);
	if (failures)
		return 1;
	printf("truncated: ok\n");
	return 0;
}

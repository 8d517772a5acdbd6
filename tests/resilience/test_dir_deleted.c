/*
 * test_dir_deleted.c - removing the output directory while recording does not stop
 * the host or the recording: the directory removed mid-run (renamed away, then
 * `rm -rf`) while threads keep producing for more than 500 ms; the writer
 * notices, recreates the directory and
 * continues. After stop the directory holds new segments that decode, with the
 * events produced after the deletion and a LOSS record (WRITE_FAILED) that accounts
 * for every event lost with the vanished file (== stats events_lost_on_disk);
 * stats count errors; disk_usage_bytes forgets the deleted files and matches the
 * files now on disk.
 *
 * Then again in an idle spell: the directory is removed when the writer has
 * had nothing to write for two cycles. The writer notices while still idle
 * (the directory is back, the error counted, with no event made), and every
 * event made after that is in the new segments: none went into the vanished
 * file with a first block written there.
 */
#include <stallscope/stallscope.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "resil.h"
#include "trace_check.h"
#include "writer_cycles.h"

#define NPROD 2

/* Renames dir away, then removes it: gone from its path at one moment. */
static void remove_dir(const char *dir)
{
	struct stat st;
	char trash[4200];
	snprintf(trash, sizeof trash, "%s.removed", dir);
	CHECK(rename(dir, trash) == 0, "rename %s: %s", dir, strerror(errno));
	tc_rmrf(trash);
	CHECK(stat(trash, &st) != 0, "could not remove %s", trash);
}

/* NPROD producers of 50 marks a millisecond, tags 1 and up. */
static void producers_start(struct rs_producer *p)
{
	memset(p, 0, NPROD * sizeof *p);
	for (int i = 0; i < NPROD; i++) {
		p[i].tag = (uint64_t)i + 1;
		p[i].burst = 50;
		p[i].pause_us = 1000;
	}
	rs_producers_start(p, NPROD);
}

/* The deletion in an idle spell (see the top). */
static void idle_deletion(void)
{
	char *dir = tc_tmpdir("dirdel-idle");
	struct stallscope_config cfg;
	rs_hooks_only(&cfg, dir, "di", 10);
	cfg.rotation_count = 64;
	cfg.rotation_period_s = UINT32_MAX;
	struct stallscope_stats s0, s1;
	CHECK(stallscope_start(&cfg) == 0, "start: %s", stallscope_last_error());
	struct rs_producer p[NPROD];
	producers_start(p);
	rs_sleep_ms(100);
	rs_producers_stop(p, NPROD);
	/* Their last events and exits written, then two cycles with nothing. */
	for (int i = 0; i < 3; i++)
		CHECK(writer_cycle_wait() == 0, "the writer ran no cycle in 60 s");
	stallscope_get_stats(&s0);
	remove_dir(dir);
	struct stat st;
	uint64_t t0 = rs_now();
	for (;;) {
		stallscope_get_stats(&s1);
		if ((stat(dir, &st) == 0 && s1.errors > s0.errors) || rs_now() - t0 > 5000000000ull)
			break;
		rs_sleep_ms(10);
	}
	printf("idle: the directory %s %.0f ms after its removal, with no event made\n",
	       stat(dir, &st) == 0 ? "was back" : "was not back", (double)(rs_now() - t0) / 1e6);
	CHECK(stat(dir, &st) == 0 && s1.errors > s0.errors, "an idle writer did not notice its "
	      "directory gone in 5 s");
	for (int i = 0; i < NPROD; i++)
		p[i].tag = (uint64_t)i + 3;
	rs_producers_start(p, NPROD);
	rs_sleep_ms(100);
	rs_producers_stop(p, NPROD);
	CHECK(stallscope_stop() == 0, "stop: %s", stallscope_last_error());
	struct tc_trace t;
	CHECK(tc_load_dir(&t, dir, "di", true) == 0, "load");
	for (int i = 0; i < NPROD; i++) {
		uint64_t n = 0;
		for (size_t k = 0; k < t.nevents; k++)
			n += t.events[k].type == SS_REC_MARK &&
			     (t.events[k].b >> RS_SEQ_BITS) == p[i].tag;
		printf("idle: producer %d made %llu marks after the deletion, %llu on disk\n", i,
		       (unsigned long long)atomic_load(&p[i].produced), (unsigned long long)n);
		CHECK(n == atomic_load(&p[i].produced), "producer %d: %llu of %llu marks made after "
		      "an idle writer's directory was removed are on disk", i, (unsigned long long)n,
		      (unsigned long long)atomic_load(&p[i].produced));
	}
	tc_free(&t);
	tc_rmrf(dir);
	free(dir);
}

int main(void)
{
	char *dir = tc_tmpdir("dirdel");
	struct stallscope_config cfg;
	rs_hooks_only(&cfg, dir, "dd", 10);
	cfg.max_file_size = 65536;
	cfg.rotation_count = 64; /* nothing recorded after the deletion is evicted */
	cfg.rotation_period_s = UINT32_MAX;

	struct stallscope_stats s0, s1, s2;
	stallscope_get_stats(&s0);
	CHECK(stallscope_start(&cfg) == 0, "start: %s", stallscope_last_error());
	struct rs_producer p[NPROD];
	producers_start(p);
	/* Record until a few segments were sealed, so there is something to lose. */
	uint64_t t0 = rs_now();
	do {
		rs_sleep_ms(20);
		stallscope_get_stats(&s1);
	} while ((s1.segments_sealed - s0.segments_sealed < 3 || rs_now() - t0 < 300000000ull) &&
		 rs_now() - t0 < 20000000000ull);
	CHECK(s1.segments_sealed - s0.segments_sealed >= 3, "no rotation before the deletion");
	uint64_t usage_before = s1.disk_usage_bytes;

	/* rm -rf, with the directory gone from its path at one moment: renamed away,
	 * then removed. (rm -rf in place races the writer, which recreates the
	 * directory: a second pass then deletes the segment holding the LOSS record
	 * of the first pass's segment, and the trace can no longer account for it.) */
	struct stat st;
	remove_dir(dir);
	uint64_t deleted_ts = rs_now();
	printf("directory removed (renamed away, then rm -rf)\n");

	/* At least 700 ms of recording after it, and until the writer has noticed
	 * (the error counted, the directory back): a loaded machine may hold the
	 * writer off longer than that. */
	uint64_t t1 = rs_now();
	do {
		rs_sleep_ms(20);
		stallscope_get_stats(&s2);
	} while ((rs_now() - t1 < 700000000ull || s2.errors == s0.errors || stat(dir, &st) != 0) &&
		 rs_now() - t1 < 20000000000ull);
	uint64_t on_disk = rs_dir_bytes(dir, "dd");
	rs_sleep_ms(100);
	rs_producers_stop(p, NPROD);
	CHECK(stallscope_is_recording(), "recording stopped by the deletion");
	int rc = stallscope_stop();
	CHECK(rc == 0, "stop: %s", stallscope_last_error());
	stallscope_get_stats(&s1);

	CHECK(stat(dir, &st) == 0 && S_ISDIR(st.st_mode), "directory not recreated");
	CHECK(s1.errors > s0.errors, "no error counted");
	/* While running, after the deletion: the usage counts the new files only. */
	printf("usage before deletion %llu, 700 ms after %llu (files %llu)\n",
	       (unsigned long long)usage_before, (unsigned long long)s2.disk_usage_bytes,
	       (unsigned long long)on_disk);
	CHECK(s2.disk_usage_bytes <= on_disk + 65536, "usage %llu but %llu bytes on disk",
	      (unsigned long long)s2.disk_usage_bytes, (unsigned long long)on_disk);
	uint64_t now_disk = rs_dir_bytes(dir, "dd");
	CHECK(s1.disk_usage_bytes == now_disk, "after stop: usage %llu, files %llu",
	      (unsigned long long)s1.disk_usage_bytes, (unsigned long long)now_disk);

	struct tc_trace t;
	CHECK(tc_load_dir(&t, dir, "dd", true) == 0, "load");
	CHECK(t.nsegs >= 1, "no segment after the deletion");
	for (size_t i = 0; i < t.nsegs; i++)
		CHECK(t.segs[i].sealed && t.segs[i].damage == SS_DAMAGE_NONE, "%s: %s",
		      t.segs[i].path, t.segs[i].damage_reason);
	uint64_t after = 0;
	for (size_t i = 0; i < t.nevents; i++)
		after += t.events[i].type == SS_REC_MARK && t.events[i].ts > deleted_ts;
	uint64_t lost_write = t.lost_by_reason[SS_LOSS_WRITE_FAILED];
	uint64_t lost_stats = s1.events_lost_on_disk - s0.events_lost_on_disk;
	printf("%llu marks after the deletion on disk; LOSS WRITE_FAILED %llu, stats lost %llu\n",
	       (unsigned long long)after, (unsigned long long)lost_write,
	       (unsigned long long)lost_stats);
	CHECK(after > 1000, "only %llu events after the deletion", (unsigned long long)after);
	CHECK(lost_write > 0, "no LOSS record for the vanished segment");
	CHECK(lost_write == lost_stats, "trace reports %llu lost, stats %llu",
	      (unsigned long long)lost_write, (unsigned long long)lost_stats);
	/* Every event after the first one on disk is there: per producer, the marks
	 * form a contiguous run up to the last one produced. */
	for (int i = 0; i < NPROD; i++) {
		uint64_t lo = UINT64_MAX, hi = 0, n = 0;
		for (size_t k = 0; k < t.nevents; k++) {
			const struct tc_event *e = &t.events[k];
			if (e->type != SS_REC_MARK || (e->b >> RS_SEQ_BITS) != p[i].tag)
				continue;
			uint64_t sq = e->b & RS_SEQ_MASK;
			lo = sq < lo ? sq : lo;
			hi = sq > hi ? sq : hi;
			n++;
		}
		CHECK(n && hi + 1 == atomic_load(&p[i].produced), "producer %d: last on disk %llu of %llu",
		      i, (unsigned long long)hi, (unsigned long long)atomic_load(&p[i].produced));
		CHECK(n == hi - lo + 1, "producer %d: %llu marks in [%llu, %llu]", i,
		      (unsigned long long)n, (unsigned long long)lo, (unsigned long long)hi);
	}
	tc_free(&t);
	tc_rmrf(dir);
	free(dir);
	idle_deletion();
	printf("test_dir_deleted: ok\n");
	return 0;
}

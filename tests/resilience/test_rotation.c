/*
 * test_rotation.c - rotation keeps the disk budget and the segment boundaries:
 *  (a) size rotation: while two threads record flat out, the bytes on disk never
 *      exceed budget + one segment; sealed files stay within max_file_size; the
 *      retained numbers are contiguous; old segments are evicted; segment time
 *      ranges do not overlap and every event lies inside its segment's range;
 *  (b) period rotation: rotation_period_s = 1 gives a segment per second;
 *  (c) restart: a new session numbers after the highest existing N, and segments of
 *      an earlier session count against its budget and are evicted oldest first;
 *  (d) orphan recovery: a .active file left by a SIGKILLed process is sealed at
 *      the next start (sealed_by RECOVERY), renamed, and holds exactly the intact
 *      prefix of events it held before.
 */
#include <stallscope/stallscope.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "resil.h"
#include "segment_format.h"
#include "trace_check.h"

#define SEG 65536u

static void base_config(struct stallscope_config *cfg, const char *dir, const char *prefix)
{
	stallscope_config_init(cfg);
	cfg->output_dir = dir;
	cfg->file_prefix = prefix;
	cfg->max_file_size = SEG;
	cfg->rotation_period_s = UINT32_MAX;
	cfg->cpu_sampling = 0;
}

/* Checks the time ranges of consecutive segments; prints every violation.
 * Returns the number of violations. */
static int check_time_ranges(const struct tc_trace *t, const char *what)
{
	int bad = 0;
	for (size_t i = 0; i < t->nsegs; i++) {
		const struct tc_segment *s = &t->segs[i];
		if (!s->sealed)
			continue;
		uint64_t st = s->header.start_ts, en = s->footer.end_ts;
		if (s->events && (s->first_ts < st || s->last_ts > en)) {
			fprintf(stderr, "%s: segment %llu: events [%llu, %llu] outside [%llu, %llu] "
				"(early by %lld ns, late by %lld ns)\n", what,
				(unsigned long long)s->seq, (unsigned long long)s->first_ts,
				(unsigned long long)s->last_ts, (unsigned long long)st,
				(unsigned long long)en, (long long)(st - s->first_ts),
				(long long)(s->last_ts - en));
			bad++;
		}
		if (i + 1 < t->nsegs && t->segs[i + 1].seq == s->seq + 1 &&
		    en > t->segs[i + 1].header.start_ts) {
			fprintf(stderr, "%s: end_ts of %llu (%llu) > start_ts of %llu (%llu) by %llu ns\n",
				what, (unsigned long long)s->seq, (unsigned long long)en,
				(unsigned long long)t->segs[i + 1].seq,
				(unsigned long long)t->segs[i + 1].header.start_ts,
				(unsigned long long)(en - t->segs[i + 1].header.start_ts));
			bad++;
		}
	}
	return bad;
}

static void test_size_rotation(void)
{
	char *dir = tc_tmpdir("rot-size");
	struct stallscope_config cfg;
	base_config(&cfg, dir, "rs");
	cfg.rotation_count = 4;
	const uint64_t budget = (uint64_t)SEG * 4, bound = budget + SEG;

	struct stallscope_stats s0, s1;
	stallscope_get_stats(&s0);
	CHECK(stallscope_start(&cfg) == 0, "start: %s", stallscope_last_error());
	struct rs_producer p[2];
	memset(p, 0, sizeof p);
	for (int i = 0; i < 2; i++) {
		p[i].tag = (uint64_t)i + 1;
		p[i].burst = 100;
		p[i].pause_us = 1000;
		p[i].noisy = true;
	}
	rs_producers_start(p, 2);
	uint64_t t0 = rs_now(), max_total = 0, samples = 0;
	for (;;) {
		uint64_t total = rs_dir_bytes(dir, "rs");
		samples++;
		if (total > max_total)
			max_total = total;
		CHECK(total <= bound, "%llu bytes on disk > budget %llu + one segment",
		      (unsigned long long)total, (unsigned long long)budget);
		stallscope_get_stats(&s1);
		uint64_t el = rs_now() - t0;
		if ((s1.segments_sealed - s0.segments_sealed >= 16 && el > 1500000000ull) ||
		    el > 20000000000ull)
			break;
		rs_sleep_ms(3);
	}
	rs_producers_stop(p, 2);
	CHECK(stallscope_stop() == 0, "stop: %s", stallscope_last_error());
	stallscope_get_stats(&s1);
	uint64_t sealed = s1.segments_sealed - s0.segments_sealed;
	uint64_t evicted = s1.segments_evicted - s0.segments_evicted;
	printf("size rotation: %llu samples, max on disk %llu (bound %llu), %llu sealed, %llu evicted\n",
	       (unsigned long long)samples, (unsigned long long)max_total,
	       (unsigned long long)bound, (unsigned long long)sealed, (unsigned long long)evicted);
	CHECK(sealed >= 8, "only %llu segments sealed", (unsigned long long)sealed);
	CHECK(evicted > 0, "no segment evicted");
	CHECK(rs_dir_bytes(dir, "rs") <= bound, "over budget after stop");

	struct rs_file files[64];
	int n = rs_list(dir, "rs", files, 64);
	CHECK(n >= 2, "%d files retained", n);
	uint64_t max_size = 0;
	for (int i = 0; i < n; i++) {
		CHECK(!files[i].active && files[i].regular, "%s left behind", files[i].name);
		CHECK(i == 0 || files[i].seq == files[i - 1].seq + 1, "numbering gap at %s",
		      files[i].name);
		if (files[i].size > max_size)
			max_size = files[i].size;
	}
	printf("size rotation: largest sealed file %llu bytes (max_file_size %u, overshoot %lld)\n",
	       (unsigned long long)max_size, SEG, (long long)max_size - (long long)SEG);
	CHECK(max_size <= SEG, "a sealed file has %llu bytes > max_file_size %u",
	      (unsigned long long)max_size, SEG);

	struct tc_trace t;
	CHECK(tc_load_dir(&t, dir, "rs", false) == 0, "load");
	for (size_t i = 0; i < t.nsegs; i++) {
		CHECK(t.segs[i].damage == SS_DAMAGE_NONE && t.segs[i].sealed, "%s: %s",
		      t.segs[i].path, t.segs[i].damage_reason);
		CHECK(t.segs[i].footer.events == t.segs[i].events, "%s: footer %llu events, read %llu",
		      t.segs[i].path, (unsigned long long)t.segs[i].footer.events,
		      (unsigned long long)t.segs[i].events);
	}
	int bad = check_time_ranges(&t, "size rotation");
	CHECK(bad == 0, "%d time range violations (listed above)", bad);
	tc_free(&t);
	tc_rmrf(dir);
	free(dir);
}

static void test_period_rotation(void)
{
	char *dir = tc_tmpdir("rot-period");
	struct stallscope_config cfg;
	base_config(&cfg, dir, "rp");
	cfg.max_file_size = 0; /* default, 100 MiB: only time rotates */
	cfg.rotation_period_s = 1;
	CHECK(stallscope_start(&cfg) == 0, "start: %s", stallscope_last_error());
	struct rs_producer p = {.tag = 9, .burst = 10, .pause_us = 10000};
	rs_producers_start(&p, 1);
	rs_sleep_ms(3500);
	rs_producers_stop(&p, 1);
	CHECK(stallscope_stop() == 0, "stop: %s", stallscope_last_error());

	struct tc_trace t;
	CHECK(tc_load_dir(&t, dir, "rp", false) == 0, "load");
	printf("period rotation: %zu segments in 3.5 s\n", t.nsegs);
	CHECK(t.nsegs >= 3, "only %zu segments after 3.5 s with a 1 s period", t.nsegs);
	for (size_t i = 0; i < t.nsegs; i++) {
		const struct tc_segment *s = &t.segs[i];
		CHECK(s->sealed && s->damage == SS_DAMAGE_NONE, "%s: %s", s->path, s->damage_reason);
		CHECK(s->events > 0, "%s holds no event", s->path);
		uint64_t len = s->footer.end_ts - s->header.start_ts;
		if (i + 1 < t.nsegs)
			CHECK(len >= 1000000000ull && len < 3000000000ull,
			      "segment %llu spans %llu ns", (unsigned long long)s->seq,
			      (unsigned long long)len);
	}
	int bad = check_time_ranges(&t, "period rotation");
	CHECK(bad == 0, "%d time range violations (listed above)", bad);
	tc_free(&t);
	tc_rmrf(dir);
	free(dir);
}

static void produce_until_sealed(uint64_t want, uint64_t tag)
{
	struct stallscope_stats s0, s1;
	stallscope_get_stats(&s0);
	struct rs_producer p[2];
	memset(p, 0, sizeof p);
	for (int i = 0; i < 2; i++) {
		p[i].tag = tag + (uint64_t)i;
		p[i].burst = 100;
		p[i].pause_us = 1000;
		p[i].noisy = true;
	}
	rs_producers_start(p, 2);
	uint64_t t0 = rs_now();
	do {
		rs_sleep_ms(10);
		stallscope_get_stats(&s1);
	} while (s1.segments_sealed - s0.segments_sealed < want && rs_now() - t0 < 20000000000ull);
	rs_producers_stop(p, 2);
	CHECK(s1.segments_sealed - s0.segments_sealed >= want, "only %llu of %llu segments sealed",
	      (unsigned long long)(s1.segments_sealed - s0.segments_sealed), (unsigned long long)want);
}

static void test_restart(void)
{
	char *dir = tc_tmpdir("rot-restart");
	struct stallscope_config cfg;
	base_config(&cfg, dir, "rr");
	cfg.rotation_count = 100;
	CHECK(stallscope_start(&cfg) == 0, "start 1: %s", stallscope_last_error());
	produce_until_sealed(6, 20);
	CHECK(stallscope_stop() == 0, "stop 1: %s", stallscope_last_error());

	struct rs_file old[128], now[128];
	int nold = rs_list(dir, "rr", old, 128);
	CHECK(nold >= 7, "first session left %d files", nold);
	for (int i = 0; i < nold; i++)
		CHECK(!old[i].active && old[i].seq == (uint64_t)i, "first session file %s", old[i].name);
	uint64_t highest = old[nold - 1].seq;

	struct stallscope_stats s0, s1;
	stallscope_get_stats(&s0);
	cfg.rotation_count = 3;
	CHECK(stallscope_start(&cfg) == 0, "start 2: %s", stallscope_last_error());
	/* Right after start: the old segments were evicted down to the budget, oldest
	 * first, and the new segment numbers after the highest one. */
	int n = rs_list(dir, "rr", now, 128);
	stallscope_get_stats(&s1);
	CHECK(n >= 2, "%d files after restart", n);
	CHECK(now[n - 1].active && now[n - 1].seq == highest + 1,
	      "new active segment is %s, want rr.%llu.bin.active", now[n - 1].name,
	      (unsigned long long)(highest + 1));
	uint64_t old_kept = 0;
	for (int i = 0; i + 1 < n; i++) {
		CHECK(!now[i].active && now[i].seq <= highest, "unexpected %s", now[i].name);
		CHECK(i == 0 || now[i].seq == now[i - 1].seq + 1, "gap before %s", now[i].name);
		old_kept += now[i].size;
	}
	CHECK(now[n - 2].seq == highest, "newest old segment was evicted");
	CHECK(old_kept + SEG <= (uint64_t)SEG * 3 || n == 2,
	      "old segments kept %llu bytes: over the new budget", (unsigned long long)old_kept);
	CHECK(s1.segments_evicted - s0.segments_evicted == (uint64_t)(nold - (n - 1)),
	      "evicted %llu, files went from %d to %d",
	      (unsigned long long)(s1.segments_evicted - s0.segments_evicted), nold, n - 1);
	printf("restart: %d old segments, %d kept at start, new numbering from %llu\n", nold, n - 1,
	       (unsigned long long)(highest + 1));

	produce_until_sealed(4, 30);
	CHECK(stallscope_stop() == 0, "stop 2: %s", stallscope_last_error());
	n = rs_list(dir, "rr", now, 128);
	CHECK(n >= 2 && n <= 4, "%d files at the end", n);
	for (int i = 0; i < n; i++) {
		CHECK(!now[i].active, "%s left behind", now[i].name);
		CHECK(i == 0 || now[i].seq == now[i - 1].seq + 1,
		      "retained segments are not the newest contiguous run: gap before %s", now[i].name);
	}
	CHECK(now[0].seq > highest, "old segment %s outlived newer ones", now[0].name);
	tc_rmrf(dir);
	free(dir);
}

static void child_record_and_die(const char *dir)
{
	struct stallscope_config cfg;
	base_config(&cfg, dir, "or");
	cfg.rotation_count = 100;
	if (stallscope_start(&cfg) != 0)
		_exit(3);
	struct rs_producer p[2];
	memset(p, 0, sizeof p);
	for (int i = 0; i < 2; i++) {
		p[i].tag = 40 + (uint64_t)i;
		p[i].burst = 200;
		p[i].pause_us = 500;
	}
	rs_producers_start(p, 2);
	rs_sleep_ms(350);
	raise(SIGKILL);
	_exit(4);
}

/* A kill between a segment's creation and its header's write leaves a file with
 * nothing to recover, which recovery removes (segment_file.c); the orphan this
 * test seals must hold its whole header. */
static bool has_whole_header(const char *dir, const char *name)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	size_t len = 0;
	char *data = rs_read_file(path, &len);
	struct ss_file_header h;
	bool whole = data && len >= sizeof h;
	if (whole) {
		memcpy(&h, data, sizeof h);
		whole = len >= (size_t)h.header_size;
	}
	free(data);
	return whole;
}

static void test_orphan(void)
{
	char *dir = NULL;
	struct rs_file files[128];
	int n = 0, orphan = -1;
	for (int attempt = 0; attempt < 8 && orphan < 0; attempt++) {
		if (dir) {
			tc_rmrf(dir);
			free(dir);
		}
		dir = tc_tmpdir("rot-orphan");
		fflush(NULL);
		pid_t pid = fork();
		CHECK(pid >= 0, "fork");
		if (pid == 0)
			child_record_and_die(dir);
		int status;
		CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
		CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "child status 0x%x", status);
		n = rs_list(dir, "or", files, 128);
		for (int i = 0; i < n; i++)
			if (files[i].active && has_whole_header(dir, files[i].name))
				orphan = i;
	}
	CHECK(orphan >= 0, "no .active file with its whole header left by eight killed children");
	uint64_t oseq = files[orphan].seq;

	struct tc_trace before, after;
	CHECK(tc_load_dir(&before, dir, "or", true) == 0, "load before");
	size_t bi = 0;
	while (bi < before.nsegs && !(before.segs[bi].seq == oseq && before.segs[bi].active))
		bi++;
	CHECK(bi < before.nsegs, "orphan not loaded");
	const struct tc_segment *bs = &before.segs[bi];
	CHECK(bs->damage == SS_DAMAGE_NONE || bs->damage == SS_DAMAGE_TRUNCATED,
	      "orphan before recovery: %s", bs->damage_reason);
	/* Killed between the footer and the rename: the footer is there already. */
	uint32_t want_by = bs->sealed ? SS_SEALED_WRITER : SS_SEALED_RECOVERY;

	struct stallscope_config cfg;
	base_config(&cfg, dir, "or");
	cfg.rotation_count = 100;
	CHECK(stallscope_start(&cfg) == 0, "start: %s", stallscope_last_error());
	CHECK(stallscope_stop() == 0, "stop: %s", stallscope_last_error());

	CHECK(tc_load_dir(&after, dir, "or", true) == 0, "load after");
	size_t ai = 0;
	while (ai < after.nsegs && after.segs[ai].seq != oseq)
		ai++;
	CHECK(ai < after.nsegs, "orphan %llu gone after recovery", (unsigned long long)oseq);
	const struct tc_segment *as = &after.segs[ai];
	CHECK(!as->active, "orphan still .active");
	CHECK(as->sealed && as->footer.sealed_by == want_by, "sealed %d by %u, want %u", as->sealed,
	      as->footer.sealed_by, want_by);
	CHECK(as->damage == SS_DAMAGE_NONE, "recovered orphan: %s", as->damage_reason);
	CHECK(as->events == bs->events && as->footer.events == as->events,
	      "events before %llu, after %llu, footer %llu", (unsigned long long)bs->events,
	      (unsigned long long)as->events, (unsigned long long)as->footer.events);
	CHECK(as->header.start_ts == as->footer.start_ts && as->footer.end_ts >= as->last_ts,
	      "recovered footer range");
	/* The same events, in the same order, field for field. */
	size_t i = 0, j = 0, same = 0;
	for (;;) {
		while (i < before.nevents && before.events[i].segment != bi)
			i++;
		while (j < after.nevents && after.events[j].segment != ai)
			j++;
		if (i >= before.nevents || j >= after.nevents)
			break;
		const struct tc_event *x = &before.events[i++], *y = &after.events[j++];
		CHECK(x->ts == y->ts && x->type == y->type && x->a == y->a && x->b == y->b &&
		      x->c == y->c, "event %zu of the orphan changed in recovery", same);
		same++;
	}
	CHECK(i >= before.nevents && j >= after.nevents, "event counts differ");
	/* Every other segment decodes cleanly too. */
	for (size_t k = 0; k < after.nsegs; k++)
		CHECK(after.segs[k].sealed && after.segs[k].damage == SS_DAMAGE_NONE, "%s: %s",
		      after.segs[k].path, after.segs[k].damage_reason);
	printf("orphan: segment %llu (%s before) recovered with %zu events\n",
	       (unsigned long long)oseq, ss_damage_kind_name(bs->damage), same);
	tc_free(&before);
	tc_free(&after);
	tc_rmrf(dir);
	free(dir);
}

int main(void)
{
	test_size_rotation();
	test_period_rotation();
	test_restart();
	test_orphan();
	printf("test_rotation: ok\n");
	return 0;
}

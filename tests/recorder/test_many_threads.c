/*
 * test_many_threads.c - many producer threads, exact accounting.
 *
 * Phase 1: 8 worker threads each make 1,000,000 hooks (poll_begin/poll_end pairs
 * whose task ids encode the thread and the sequence number) into rings big enough
 * for all of them. Every event decodes exactly once, in order per thread, with
 * non-decreasing time, and nothing is reported lost.
 *
 * Phase 2: the same producers flat out into 64-entry rings. Now most events are
 * dropped, and the books must still balance exactly, per thread and in total:
 * decoded events + the counts of LOSS records == events produced, and the
 * stallscope_get_stats() counters (events, events_dropped) agree with what was
 * decoded.
 *
 * Counts are scaled down 4x under AddressSanitizer to keep the -san run short.
 */
#include <stallscope/stallscope.h>

#include <pthread.h>
#include <string.h>

#include "trace_check.h"

#define NTHREADS 8u

/* Defined when the program is linked with AddressSanitizer (the -san variant, whose
 * test sources themselves are not instrumented). */
extern void __asan_init(void) __attribute__((weak));

static uint32_t EVENTS_PER_THREAD = 1000000u;
static uint32_t PAIRS;

static uint32_t loc;
static pthread_barrier_t go;

struct producer {
	uint32_t index;
	int worker; /* phase 1 announces the thread as a worker */
	pthread_t th;
};

static uint64_t task_id(uint32_t thread, uint32_t seq)
{
	return ((uint64_t)(thread + 1) << 32) | seq;
}

static void *produce(void *arg)
{
	struct producer *p = arg;
	if (p->worker)
		stallscope_worker_begin("many", p->index);
	else
		stallscope_thread_attach();
	pthread_barrier_wait(&go);
	for (uint32_t k = 0; k < PAIRS; k++) {
		stallscope_poll_begin(task_id(p->index, k), loc);
		stallscope_poll_end();
	}
	return NULL;
}

static void run_producers(int worker)
{
	struct producer p[NTHREADS];
	CHECK(pthread_barrier_init(&go, NULL, NTHREADS) == 0, "barrier");
	for (uint32_t i = 0; i < NTHREADS; i++) {
		p[i].index = i;
		p[i].worker = worker;
		CHECK(pthread_create(&p[i].th, NULL, produce, &p[i]) == 0, "pthread_create");
	}
	for (uint32_t i = 0; i < NTHREADS; i++)
		pthread_join(p[i].th, NULL);
	pthread_barrier_destroy(&go);
}

/* Per decoded thread: which producer it is and where its sequence stands. */
struct lane {
	uint64_t thread;
	int producer;          /* -1 until known */
	uint64_t next;         /* phase 1: next event number (0 = WORKER_BEGIN) */
	int64_t last_seq;      /* phase 2: last poll_begin sequence seen */
	int open;              /* phase 2: a poll_begin waits for its poll_end */
	uint64_t last_ts;
	uint64_t decoded;      /* events of the producer (THREAD_EXIT excluded) */
	uint64_t lost;         /* LOSS counts on this lane */
	uint64_t exits;
};

struct walk {
	int phase;
	struct lane lanes[64];
	size_t nlanes;
	uint64_t process_lost;
};

static struct lane *lane_of(struct walk *w, uint64_t thread)
{
	for (size_t i = 0; i < w->nlanes; i++)
		if (w->lanes[i].thread == thread)
			return &w->lanes[i];
	CHECK(w->nlanes < 64, "more than 64 threads decoded");
	struct lane *l = &w->lanes[w->nlanes++];
	memset(l, 0, sizeof *l);
	l->thread = thread;
	l->producer = -1;
	l->last_seq = -1;
	return l;
}

static void phase1_record(struct lane *l, const struct ss_record *rec)
{
	if (rec->type == SS_REC_WORKER_BEGIN) {
		CHECK(l->next == 0, "thread %llu: WORKER_BEGIN at event %llu",
		      (unsigned long long)l->thread, (unsigned long long)l->next);
		CHECK(rec->u.worker_begin.index < NTHREADS, "worker index %llu",
		      (unsigned long long)rec->u.worker_begin.index);
		l->producer = (int)rec->u.worker_begin.index;
		l->next = 1;
		return;
	}
	CHECK(l->producer >= 0, "thread %llu: event 0x%x before its WORKER_BEGIN",
	      (unsigned long long)l->thread, rec->type);
	uint64_t n = l->next - 1; /* 0-based index of poll events */
	CHECK(n < EVENTS_PER_THREAD, "producer %d: more than %u events", l->producer,
	      EVENTS_PER_THREAD);
	if (n % 2 == 0) {
		CHECK(rec->type == SS_REC_POLL_BEGIN, "producer %d event %llu: type 0x%x, want POLL_BEGIN",
		      l->producer, (unsigned long long)n, rec->type);
		CHECK(rec->u.poll_begin.task == task_id((uint32_t)l->producer, (uint32_t)(n / 2)),
		      "producer %d event %llu: task %#llx, want %#llx", l->producer,
		      (unsigned long long)n, (unsigned long long)rec->u.poll_begin.task,
		      (unsigned long long)task_id((uint32_t)l->producer, (uint32_t)(n / 2)));
		CHECK(rec->u.poll_begin.location == loc, "location %llu",
		      (unsigned long long)rec->u.poll_begin.location);
	} else {
		CHECK(rec->type == SS_REC_POLL_END, "producer %d event %llu: type 0x%x, want POLL_END",
		      l->producer, (unsigned long long)n, rec->type);
	}
	l->next++;
}

static void phase2_record(struct lane *l, const struct ss_record *rec)
{
	if (rec->type == SS_REC_POLL_BEGIN) {
		uint64_t task = rec->u.poll_begin.task;
		int producer = (int)(task >> 32) - 1;
		uint64_t seq = task & 0xffffffffu;
		CHECK(producer >= 0 && producer < (int)NTHREADS && seq < PAIRS, "task %#llx",
		      (unsigned long long)task);
		if (l->producer < 0)
			l->producer = producer;
		CHECK(l->producer == producer, "thread %llu carries tasks of producers %d and %d",
		      (unsigned long long)l->thread, l->producer, producer);
		CHECK((int64_t)seq > l->last_seq, "producer %d: sequence %llu after %lld", producer,
		      (unsigned long long)seq, (long long)l->last_seq);
		l->last_seq = (int64_t)seq;
		l->open = 1;
	} else {
		CHECK(rec->type == SS_REC_POLL_END, "unexpected event type 0x%x", rec->type);
		l->open = 0;
	}
}

static int on_record(void *ctx, const struct ss_block_info *b, const struct ss_record *rec)
{
	(void)b;
	struct walk *w = ctx;
	if (!rec->is_event)
		return 0;
	if (rec->thread == 0) {
		CHECK(rec->type == SS_REC_LOSS, "process-wide event type 0x%x", rec->type);
		w->process_lost += rec->u.loss.count;
		return 0;
	}
	struct lane *l = lane_of(w, rec->thread);
	CHECK(rec->ts >= l->last_ts, "thread %llu: time went back", (unsigned long long)l->thread);
	l->last_ts = rec->ts;
	if (rec->type == SS_REC_THREAD_EXIT) {
		l->exits++;
		return 0;
	}
	CHECK(!l->exits, "thread %llu: event after THREAD_EXIT", (unsigned long long)l->thread);
	if (rec->type == SS_REC_LOSS) {
		CHECK(w->phase == 2, "phase 1 lost %llu events (reason %llu)",
		      (unsigned long long)rec->u.loss.count, (unsigned long long)rec->u.loss.reason);
		CHECK(rec->u.loss.reason == SS_LOSS_BUFFER_FULL, "loss reason %llu",
		      (unsigned long long)rec->u.loss.reason);
		l->lost += rec->u.loss.count;
		return 0;
	}
	l->decoded++;
	if (w->phase == 1)
		phase1_record(l, rec);
	else
		phase2_record(l, rec);
	return 0;
}

/* Streams every segment of dir (in sequence order) through on_record. */
static void walk_dir(struct walk *w, const char *dir, const char *prefix, struct tc_trace *t)
{
	CHECK(tc_load_dir(t, dir, prefix, false) == 0, "load %s", dir);
	CHECK(t->nsegs >= 1, "no segments in %s", dir);
	CHECK(t->header_failures == 0 && t->corrupt_segments == 0 && t->truncated_segments == 0,
	      "damaged segments: %llu %llu %llu", (unsigned long long)t->header_failures,
	      (unsigned long long)t->corrupt_segments, (unsigned long long)t->truncated_segments);
	for (size_t i = 0; i < t->nsegs; i++) {
		CHECK(t->segs[i].sealed && !t->segs[i].active, "%s not sealed", t->segs[i].path);
		CHECK(t->segs[i].footer.events == t->segs[i].events, "%s: footer says %llu events, read %llu",
		      t->segs[i].path, (unsigned long long)t->segs[i].footer.events,
		      (unsigned long long)t->segs[i].events);
		struct ss_reader *r;
		char err[256];
		CHECK(ss_reader_open_file(&r, t->segs[i].path, NULL, NULL, err, sizeof err) == 0,
		      "open %s: %s", t->segs[i].path, err);
		struct ss_visitor v = {.record = on_record};
		CHECK(ss_reader_run(r, &v, w) == 0, "walk");
		CHECK(ss_reader_damage(r)->kind == SS_DAMAGE_NONE, "%s: %s", t->segs[i].path,
		      ss_reader_damage(r)->reason);
		ss_reader_close(r);
	}
}

static void config(struct stallscope_config *cfg, const char *dir, uint32_t buffer_events)
{
	stallscope_config_init(cfg);
	cfg->output_dir = dir;
	cfg->file_prefix = "many";
	cfg->buffer_events = buffer_events;
	cfg->max_threads = 16;
	cfg->max_file_size = 1ull << 30;   /* big: nothing is evicted */
	cfg->rotation_count = 1000;
	cfg->rotation_period_s = UINT32_MAX;
	cfg->cpu_sampling = 0;
}

static void phase1(void)
{
	char *dir = tc_tmpdir("many1");
	struct stallscope_config cfg;
	/* Every ring holds all of its thread's events: the writer need not keep up. */
	config(&cfg, dir, 1u << 20);
	CHECK(stallscope_start(&cfg) == 0, "start: %s", stallscope_last_error());
	run_producers(1);
	CHECK(stallscope_stop() == 0, "stop: %s", stallscope_last_error());

	static struct walk w;
	memset(&w, 0, sizeof w);
	w.phase = 1;
	struct tc_trace t;
	walk_dir(&w, dir, "many", &t);
	CHECK(t.lost == 0 && w.process_lost == 0, "lost %llu", (unsigned long long)t.lost);
	CHECK(w.nlanes == NTHREADS, "%zu threads decoded, want %u", w.nlanes, NTHREADS);
	int seen[NTHREADS] = {0};
	for (size_t i = 0; i < w.nlanes; i++) {
		struct lane *l = &w.lanes[i];
		CHECK(l->producer >= 0 && !seen[l->producer], "lane %zu producer %d", i, l->producer);
		seen[l->producer] = 1;
		CHECK(l->next == 1u + EVENTS_PER_THREAD, "producer %d: decoded %llu of %u events",
		      l->producer, (unsigned long long)(l->next - 1), EVENTS_PER_THREAD);
		CHECK(l->exits == 1, "producer %d: %llu THREAD_EXIT records", l->producer,
		      (unsigned long long)l->exits);
		const struct tc_thread *th = tc_thread(&t, l->thread);
		CHECK(th && th->exited, "producer %d: thread definition / exit", l->producer);
	}
	printf("phase 1: %u threads x %u events decoded exactly in %zu segment(s)\n", NTHREADS,
	       EVENTS_PER_THREAD, t.nsegs);
	tc_free(&t);
	tc_rmrf(dir);
	free(dir);
}

static void phase2(void)
{
	char *dir = tc_tmpdir("many2");
	struct stallscope_config cfg;
	config(&cfg, dir, 64);
	struct stallscope_stats before, after;
	stallscope_get_stats(&before);
	CHECK(stallscope_start(&cfg) == 0, "start: %s", stallscope_last_error());
	run_producers(0);
	CHECK(stallscope_stop() == 0, "stop: %s", stallscope_last_error());
	stallscope_get_stats(&after);

	static struct walk w;
	memset(&w, 0, sizeof w);
	w.phase = 2;
	struct tc_trace t;
	walk_dir(&w, dir, "many", &t);
	CHECK(w.process_lost == 0, "process-wide loss %llu", (unsigned long long)w.process_lost);
	CHECK(w.nlanes == NTHREADS, "%zu threads decoded, want %u", w.nlanes, NTHREADS);
	uint64_t decoded = 0, lost = 0;
	for (size_t i = 0; i < w.nlanes; i++) {
		struct lane *l = &w.lanes[i];
		CHECK(l->producer >= 0, "lane of thread %llu has no poll", (unsigned long long)l->thread);
		CHECK(l->decoded + l->lost == EVENTS_PER_THREAD,
		      "producer %d: decoded %llu + lost %llu != produced %u", l->producer,
		      (unsigned long long)l->decoded, (unsigned long long)l->lost, EVENTS_PER_THREAD);
		CHECK(l->exits == 1, "producer %d: %llu THREAD_EXIT records", l->producer,
		      (unsigned long long)l->exits);
		decoded += l->decoded;
		lost += l->lost;
	}
	uint64_t produced = (uint64_t)NTHREADS * EVENTS_PER_THREAD;
	CHECK(decoded + lost == produced, "decoded %llu + lost %llu != produced %llu",
	      (unsigned long long)decoded, (unsigned long long)lost, (unsigned long long)produced);
	CHECK(t.lost == lost, "LOSS sum %llu vs %llu", (unsigned long long)t.lost,
	      (unsigned long long)lost);
	CHECK(lost > 0, "64-entry rings and flat-out producers lost nothing?");
	/* The counters are process totals: compare what this session added. */
	CHECK(after.events - before.events == decoded, "stats.events grew by %llu, decoded %llu",
	      (unsigned long long)(after.events - before.events), (unsigned long long)decoded);
	CHECK(after.events_dropped - before.events_dropped == lost,
	      "stats.events_dropped grew by %llu, LOSS sum %llu",
	      (unsigned long long)(after.events_dropped - before.events_dropped),
	      (unsigned long long)lost);
	CHECK(after.events_lost_on_disk == before.events_lost_on_disk, "events lost on disk");
	printf("phase 2: produced %llu, decoded %llu, lost %llu (all accounted for)\n",
	       (unsigned long long)produced, (unsigned long long)decoded, (unsigned long long)lost);
	tc_free(&t);
	tc_rmrf(dir);
	free(dir);
}

int main(void)
{
	if (__asan_init)
		EVENTS_PER_THREAD /= 4;
	PAIRS = EVENTS_PER_THREAD / 2;
	loc = STALLSCOPE_LOCATION();
	phase1();
	phase2();
	printf("many_threads: ok\n");
	return 0;
}

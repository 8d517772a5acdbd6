/*
 * test_offcpu_filter.c - off-CPU stacks only inside polls (sampler_bpf.c's
 * off-CPU filter reading the in-poll cells the hooks write, sampler_inpoll.c),
 * public API only.
 *
 * A worker alternates ROUNDS times: parked (stallscope_park) for a 5 ms sleep,
 * then inside a poll for a 5 ms sleep. From the decoded segments:
 *   (a) defaults, where the filter is loaded (root: CAP_BPF; META "sampler" says
 *       "inside polls only"): no off-CPU sample of the worker lies inside a park,
 *       and every poll's sleep has one (each sleep is a blocked switch-out);
 *   (b) STALLSCOPE_OFFCPU_ALL: the fallback forced; META says so, and the parks'
 *       sleeps have off-CPU samples again (so (a) would fail without the filter),
 *       as do the polls';
 *   (c) root only: the bpf() refusal, made by dropping CAP_BPF and CAP_SYS_ADMIN
 *       from the effective set of the thread that starts the session (the
 *       writer inherits it; CAP_PERFMON keeps kernel samples): META says the
 *       filter was refused and why, and the result is (b)'s.
 * Without off-CPU stacks at all (unprivileged at perf_event_paranoid 2) there is
 * nothing to check: SKIP (77) with the META line.
 */
#include <stallscope/stallscope.h>

#include <linux/capability.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "trace_check.h"
#include "writer_cycles.h"

#define ROUNDS 12
#define SLEEP_NS 5000000L

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct window {
	uint64_t b, e;
};

struct run {
	uint32_t tid;
	struct window park[ROUNDS], poll[ROUNDS];
};

static void sleep_5ms(void)
{
	struct timespec ts = { 0, SLEEP_NS };
	nanosleep(&ts, NULL);
}

static void *worker(void *arg)
{
	struct run *r = arg;
	r->tid = (uint32_t)gettid();
	stallscope_worker_begin("offcpu-filter-test", 0);
	uint32_t loc = STALLSCOPE_LOCATION();
	/* The writer follows a worker in the cycle that drains its first events: wait
	 * for it, parked (a park before the cell exists is not what (a) tests). A
	 * cycle counted as begun after the park drains it, and it has ended once
	 * the next one is counted: two cycles, however late a loaded machine runs
	 * them (a fixed 150 ms was not always enough). */
	stallscope_park();
	CHECK(writer_cycle_wait() == 0, "the writer ran no whole cycle in 60 s");
	stallscope_unpark();
	for (int i = 0; i < ROUNDS; i++) {
		stallscope_park();
		r->park[i].b = now_ns();
		sleep_5ms();
		r->park[i].e = now_ns();
		stallscope_unpark();
		stallscope_poll_begin(1000 + (uint64_t)i, loc);
		r->poll[i].b = now_ns();
		sleep_5ms();
		r->poll[i].e = now_ns();
		stallscope_poll_end();
	}
	stallscope_worker_end();
	return NULL;
}

struct result {
	char sampler[1024];
	int offcpu;              /* META says off-CPU stacks are on */
	int in_polls;            /* META says inside polls only */
	size_t parks_hit, polls_hit; /* windows holding an off-CPU sample of the worker */
	size_t in_parks;         /* off-CPU samples inside parks */
};

static size_t hits(const struct tc_trace *t, uint32_t tid, const struct window *w,
		   size_t *total)
{
	size_t n = 0;
	for (int i = 0; i < ROUNDS; i++) {
		size_t here = 0;
		for (size_t k = 0; k < t->nsamples; k++) {
			const struct tc_sample *sm = &t->samples[k];
			here += sm->tid == tid && sm->kind == SS_SAMPLE_KIND_OFFCPU &&
				sm->ts >= w[i].b && sm->ts <= w[i].e;
		}
		*total += here;
		n += here > 0;
	}
	return n;
}

static void record(struct result *res, const char *tag, int offcpu_stacks)
{
	memset(res, 0, sizeof *res);
	struct stallscope_config cfg;
	stallscope_config_init(&cfg);
	char *dir = tc_tmpdir(tag);
	cfg.output_dir = dir;
	cfg.offcpu_stacks = offcpu_stacks;
	CHECK(stallscope_start(&cfg) == 0, "start: %s", stallscope_last_error());
	struct run r;
	memset(&r, 0, sizeof r);
	pthread_t th;
	CHECK(pthread_create(&th, NULL, worker, &r) == 0, "pthread_create");
	pthread_join(th, NULL);
	CHECK(stallscope_stop() == 0, "stop: %s", stallscope_last_error());

	struct tc_trace t;
	CHECK(tc_load_dir(&t, dir, "stallscope", true) == 0, "load %s", dir);
	CHECK(t.corrupt_segments == 0 && t.truncated_segments == 0, "segments damaged");
	const char *m = tc_meta(&t, "sampler");
	CHECK(m, "no META \"sampler\" record");
	snprintf(res->sampler, sizeof res->sampler, "%s", m);
	res->offcpu = strstr(m, "off-CPU stacks on") != NULL;
	res->in_polls = strstr(m, "off-CPU stacks inside polls only") != NULL;
	size_t in_polls = 0;
	res->parks_hit = hits(&t, r.tid, r.park, &res->in_parks);
	res->polls_hit = hits(&t, r.tid, r.poll, &in_polls);
	printf("  %s: META sampler: %s\n", tag, m);
	printf("  %s: off-CPU samples in %zu of %d parks (%zu samples), in %zu of %d polls "
	       "(%zu samples)\n", tag, res->parks_hit, ROUNDS, res->in_parks, res->polls_hit,
	       ROUNDS, in_polls);
	tc_free(&t);
	tc_rmrf(dir);
	free(dir);
}

/* The effective capabilities of the calling thread: get, or set to eff. */
static int caps(struct __user_cap_data_struct d[2], int set)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	return (int)syscall(set ? SYS_capset : SYS_capget, &h, d);
}

static void cap_clear(struct __user_cap_data_struct d[2], int cap)
{
	d[cap / 32].effective &= ~(1u << (cap % 32));
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	struct result a, b;

	printf("session 1: defaults\n");
	record(&a, "offcpu-filter-auto", STALLSCOPE_OFFCPU_AUTO);
	if (!a.offcpu) {
		printf("SKIP: no off-CPU stacks here: %s\n", a.sampler);
		return 77;
	}
	if (a.in_polls) {
		CHECK(a.in_parks == 0, "filter on: %zu off-CPU samples inside parks", a.in_parks);
		CHECK(a.polls_hit == ROUNDS, "filter on: off-CPU samples in %zu of %d polls",
		      a.polls_hit, ROUNDS);
	} else {
		CHECK(geteuid() != 0, "root, yet the filter is not on: %s", a.sampler);
		CHECK(strstr(a.sampler, "in-poll filter refused"), "no reason given: %s", a.sampler);
		printf("  (filter refused, not root: session 1 is the fallback)\n");
	}

	printf("session 2: offcpu_stacks = STALLSCOPE_OFFCPU_ALL\n");
	record(&b, "offcpu-filter-all", STALLSCOPE_OFFCPU_ALL);
	CHECK(b.offcpu && !b.in_polls && strstr(b.sampler, "every switch-out (asked)"),
	      "ALL asked for: %s", b.sampler);
	/* Each park sleeps 5 ms: a blocked switch-out, unless the ring lost it. */
	CHECK(b.parks_hit >= ROUNDS / 2, "fallback: off-CPU samples in only %zu of %d parks",
	      b.parks_hit, ROUNDS);
	CHECK(b.polls_hit == ROUNDS, "fallback: off-CPU samples in %zu of %d polls", b.polls_hit,
	      ROUNDS);

	if (geteuid() == 0) {
		printf("session 3: CAP_BPF and CAP_SYS_ADMIN dropped (bpf() refused)\n");
		struct __user_cap_data_struct keep[2], d[2];
		CHECK(caps(keep, 0) == 0, "capget");
		memcpy(d, keep, sizeof d);
		cap_clear(d, CAP_BPF);
		cap_clear(d, CAP_SYS_ADMIN);
		CHECK(caps(d, 1) == 0, "capset");
		record(&b, "offcpu-filter-refused", STALLSCOPE_OFFCPU_AUTO);
		CHECK(caps(keep, 1) == 0, "capset (restore)");
		if (!b.offcpu) {
			printf("  (no off-CPU stacks without CAP_SYS_ADMIN here: %s)\n", b.sampler);
		} else {
			CHECK(!b.in_polls && strstr(b.sampler, "in-poll filter refused: "),
			      "refused, META: %s", b.sampler);
			CHECK(b.parks_hit >= ROUNDS / 2,
			      "refused: off-CPU samples in only %zu of %d parks", b.parks_hit, ROUNDS);
			CHECK(b.polls_hit == ROUNDS, "refused: off-CPU samples in %zu of %d polls",
			      b.polls_hit, ROUNDS);
		}
	}
	printf("ok\n");
	return 0;
}

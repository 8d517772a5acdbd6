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

#include "park_poll.h"
#include "trace_check.h"

#define ROUNDS PP_ROUNDS

struct result {
	char sampler[1024];
	int offcpu;              /* META says off-CPU stacks are on */
	int in_polls;            /* META says inside polls only */
	size_t parks_hit, polls_hit; /* windows holding an off-CPU sample of the worker */
	size_t in_parks;         /* off-CPU samples inside parks */
};

static size_t hits(const struct tc_trace *t, uint32_t tid, const struct pp_window *w,
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
	struct pp_run r;
	struct tc_trace t;
	char *dir;
	pp_record(&r, "offcpu-filter-test", tag, offcpu_stacks, &t, &dir);
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

/*
 * test_parked_switches.c - where the sched_switch program writes the switches
 * (sampler_swtp.c: root or CAP_BPF + CAP_PERFMON, the process's per-CPU events),
 * a parked worker's switches are left out and the segments say so; public API
 * only.
 *
 * A worker alternates ROUNDS times: parked (stallscope_park) for a 5 ms sleep,
 * then inside a poll for a 5 ms sleep. From the decoded segments:
 *   (a) defaults: META "switches" begins with SS_SWITCHES_NOT_PARKED, no SWITCH
 *       of the worker lies inside a park (its sleep switches it out and in), and
 *       every poll's sleep has a blocked switch-out with an off-CPU sample;
 *   (b) STALLSCOPE_SWITCH_SOURCE=events: META says the events' switch records,
 *       and the parks' sleeps have their blocked switch-outs again (so (a) would
 *       fail if parks were not left out);
 *   (c) STALLSCOPE_OFFCPU_ALL: a stack at every switch-out asked for, parks
 *       included: the program writes a parked worker's switches too, and META
 *       does not say they are left out.
 *   (d) STALLSCOPE_SAMPLE_ALL_THREADS: a worker that ends while parked stays
 *       followed as a plain thread; its later sleeps (once the writer has seen
 *       the end) give their blocked switch-outs: its cell no longer says parked.
 *   (e) the program's refusals, forced, each in a child process: its attach
 *       refused (a seccomp filter answers bpf(BPF_RAW_TRACEPOINT_OPEN) with
 *       EINVAL), the kernel's BTF empty or garbage (a file bind-mounted over
 *       /sys/kernel/btf/vmlinux in a mount namespace of its own; SKIP where
 *       unshare or mount is refused), or the BTF of a kernel before 5.18 whose
 *       task_struct has no state to read instead of prev_state: META "switches"
 *       says the events' switch records and names the refusal, and every poll
 *       still has its blocked switch-out and off-CPU sample;
 *   (f) the running kernel's BTF made to say sched_switch has no prev_state
 *       (its typedef pointed at a 3-argument tracepoint's): the program reads
 *       prev's state from task_struct, META "sampler" says so, parks are left
 *       out, and every poll has its blocked switch-out (a state misread as
 *       runnable would make them preemptions) and off-CPU sample.
 * Where the program is not used (not root, another pid namespace) there is
 * nothing to check: SKIP (77) with the META line.
 */
#include <stallscope/stallscope.h>

#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "btf_image.h"
#include "park_poll.h"
#include "trace_check.h"

#define ROUNDS PP_ROUNDS

struct result {
	char switches[1024], sampler[2048]; /* META */
	size_t in_parks;          /* SWITCH records of the worker inside parks */
	size_t parks_out;         /* parks with a blocked switch-out of the worker */
	size_t polls_out;         /* polls with a blocked switch-out ... */
	size_t polls_stack;       /* ... and with an off-CPU sample */
};

static void record(struct result *res, const char *tag, int offcpu_stacks)
{
	memset(res, 0, sizeof *res);
	struct pp_run r;
	struct tc_trace t;
	char *dir;
	pp_record(&r, "parked-switches-test", tag, offcpu_stacks, &t, &dir);
	const char *m = tc_meta(&t, SS_META_SWITCHES);
	snprintf(res->switches, sizeof res->switches, "%s", m ? m : "(none)");
	m = tc_meta(&t, "sampler");
	snprintf(res->sampler, sizeof res->sampler, "%s", m ? m : "(none)");
	for (int i = 0; i < ROUNDS; i++) {
		int park_out = 0, poll_out = 0, poll_stack = 0;
		for (size_t k = 0; k < t.nswitches; k++) {
			const struct tc_switch *s = &t.switches[k];
			if (s->tid != r.tid)
				continue;
			int blocked_out = (s->flags & SS_SWITCH_F_OUT) && !(s->flags & SS_SWITCH_F_PREEMPT);
			if (pp_inside(&r.park[i], s->ts)) {
				res->in_parks++;
				park_out |= blocked_out;
			}
			poll_out |= blocked_out && pp_inside(&r.poll[i], s->ts);
		}
		for (size_t k = 0; k < t.nsamples; k++)
			poll_stack |= t.samples[k].tid == r.tid &&
				      t.samples[k].kind == SS_SAMPLE_KIND_OFFCPU &&
				      pp_inside(&r.poll[i], t.samples[k].ts);
		res->parks_out += park_out;
		res->polls_out += poll_out;
		res->polls_stack += poll_out && poll_stack;
	}
	printf("  %s: META switches: %s\n", tag, res->switches);
	printf("  %s: %zu switch records inside %d parks (%zu parks with a blocked switch-out); "
	       "%zu of %d polls with a blocked switch-out, %zu of those with an off-CPU sample\n",
	       tag, res->in_parks, ROUNDS, res->parks_out, res->polls_out, ROUNDS, res->polls_stack);
	tc_free(&t);
	tc_rmrf(dir);
	free(dir);
}

static int not_parked(const struct result *r)
{
	return !strncmp(r->switches, SS_SWITCHES_NOT_PARKED, strlen(SS_SWITCHES_NOT_PARKED));
}

/* (d): the thread of a worker ended in a park, followed under all-threads
 * sampling: ROUNDS 5 ms sleeps after the writer has drained the end. */
static struct pp_window after_end[ROUNDS];
static uint32_t ended_tid;

static void *ends_parked(void *x)
{
	(void)x;
	ended_tid = (uint32_t)gettid();
	stallscope_worker_begin("ends-parked", 0);
	/* followed, with its cell, after a whole cycle; the next park says so in it */
	stallscope_park();
	CHECK(writer_cycle_wait() == 0, "the writer ran no whole cycle in 60 s");
	stallscope_unpark();
	stallscope_park();
	stallscope_worker_end();
	CHECK(writer_cycle_wait() == 0, "the writer ran no whole cycle in 60 s");
	for (int i = 0; i < ROUNDS; i++)
		pp_sleep(&after_end[i]);
	return NULL;
}

static size_t ended_in_park(void)
{
	struct stallscope_config cfg;
	stallscope_config_init(&cfg);
	char *dir = tc_tmpdir("parked-switches-ended");
	cfg.output_dir = dir;
	cfg.sample_all_threads = 1;
	CHECK(stallscope_start(&cfg) == 0, "start: %s", stallscope_last_error());
	pthread_t th;
	CHECK(pthread_create(&th, NULL, ends_parked, NULL) == 0, "pthread_create");
	pthread_join(th, NULL);
	CHECK(stallscope_stop() == 0, "stop: %s", stallscope_last_error());
	struct tc_trace t;
	CHECK(tc_load_dir(&t, dir, "stallscope", true) == 0, "load %s", dir);
	size_t outs = 0;
	for (int i = 0; i < ROUNDS; i++) {
		int o = 0;
		for (size_t k = 0; k < t.nswitches; k++)
			o |= t.switches[k].tid == ended_tid && (t.switches[k].flags & SS_SWITCH_F_OUT) &&
			     !(t.switches[k].flags & SS_SWITCH_F_PREEMPT) &&
			     pp_inside(&after_end[i], t.switches[k].ts);
		outs += o;
	}
	printf("  ended parked, all threads sampled: %zu of %d later sleeps with a blocked "
	       "switch-out\n", outs, ROUNDS);
	tc_free(&t);
	tc_rmrf(dir);
	free(dir);
	return outs;
}

/* (e): refusals of the program, forced in a child process; and (f) a kernel
 * before 5.18, whose sched_switch has no prev_state. */
enum refusal { ATTACH_EINVAL, BTF_EMPTY, BTF_GARBAGE, BTF_3ARGS, BTF_PRE518 };

static int refuse_attach(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_bpf, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, BPF_RAW_TRACEPOINT_OPEN, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EINVAL & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof f / sizeof f[0], f };
	CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
	      prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0, "seccomp filter: %s",
	      strerror(errno));
	return 0;
}

/* Offset of the string s in a BTF string section, 0 where absent. */
static uint32_t btf_name(const uint8_t *strs, size_t len, const char *s)
{
	char want[64];
	size_t n = (size_t)snprintf(want, sizeof want, "%c%s", 0, s) + 1;
	const uint8_t *at = memmem(strs, len, want, n);
	return at ? (uint32_t)(at - strs) + 1 : 0;
}

/* The TYPEDEF named name in a BTF type section (its 12-byte head). */
static uint8_t *btf_typedef(uint8_t *types, size_t len, uint32_t name)
{
	for (size_t i = 0; name && i + 12 <= len; i += 4) {
		uint32_t w[2];
		memcpy(w, types + i, 8);
		if (w[0] == name && w[1] == 8u << 24)
			return types + i;
	}
	return NULL;
}

/* The running kernel's BTF (into *b, n bytes) made to say what one before
 * 5.18 says: its btf_trace_sched_switch typedef points where
 * btf_trace_sched_process_exec's does, a FUNC_PROTO of 3 arguments. The
 * program then reads prev's state from task_struct, the tracepoint's own
 * arguments being there still. 0 where the BTF cannot be had. */
static size_t btf_before_518(uint8_t **b)
{
	int fd = open("/sys/kernel/btf/vmlinux", O_RDONLY | O_CLOEXEC);
	size_t cap = 64u << 20, n = 0;
	*b = malloc(cap);
	CHECK(*b, "malloc");
	for (ssize_t r = 1; fd >= 0 && r > 0 && n < cap; n += r > 0 ? (size_t)r : 0)
		r = read(fd, *b + n, cap - n);
	if (fd >= 0)
		close(fd);
	uint32_t h[6];
	if (n < 24)
		return 0;
	memcpy(h, *b, 24);
	if ((h[0] & 0xffff) != 0xeB9F || (uint64_t)h[1] + h[2] + h[3] > n || (uint64_t)h[1] + h[4] + h[5] > n)
		return 0;
	uint8_t *types = *b + h[1] + h[2], *strs = *b + h[1] + h[4];
	uint8_t *sw = btf_typedef(types, h[3], btf_name(strs, h[5], "btf_trace_sched_switch"));
	uint8_t *ex = btf_typedef(types, h[3], btf_name(strs, h[5], "btf_trace_sched_process_exec"));
	if (!sw || !ex)
		return 0;
	memcpy(sw + 8, ex + 8, 4);
	return n;
}

/* A file bind-mounted over the kernel's BTF in a mount namespace of this
 * process's own: empty, 4 KiB of garbage, the BTF of a kernel whose
 * sched_switch has no prev_state (before 5.18) and whose task_struct has no
 * state, or the running kernel's made to say it is before 5.18; 77 where that
 * is refused. */
static int junk_btf(enum refusal how)
{
	char *dir = tc_tmpdir("parked-switches-btf"), path[600];
	snprintf(path, sizeof path, "%s/vmlinux", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	CHECK(fd >= 0, "create %s", path);
	static uint8_t junk[4096];
	uint8_t *b = junk;
	size_t n = how == BTF_EMPTY ? 0 : sizeof junk;
	memset(junk, 'x', sizeof junk);
	if (how == BTF_3ARGS) {
		struct btf_img g;
		bi_init(&g), bi_task(&g, 0x4a0 * 8, 0x4a4 * 8, 0, "stats");
		bi_tracepoint(&g, "sched_switch", 3);
		n = bi_bytes(&g, junk, sizeof junk);
	} else if (how == BTF_PRE518) {
		/* Session 1 ran the program on this BTF: its tracepoint typedefs are
		 * there, so a miss is this test's own patching gone wrong. */
		n = btf_before_518(&b);
		CHECK(n, "could not make the kernel's BTF look like one before Linux 5.18 (no "
		      "btf_trace_sched_switch and btf_trace_sched_process_exec found)");
	}
	CHECK(write(fd, b, n) == (ssize_t)n, "write %s", path);
	if (b != junk)
		free(b);
	close(fd);
	const char *why = NULL;
	if (unshare(CLONE_NEWNS) != 0)
		why = "unshare(CLONE_NEWNS)";
	else if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		why = "mount(/, MS_PRIVATE)";
	else if (mount(path, "/sys/kernel/btf/vmlinux", NULL, MS_BIND, NULL) != 0)
		why = "mount --bind over /sys/kernel/btf/vmlinux";
	if (why)
		printf("SKIP: %s refused: %s\n", why, strerror(errno));
	unlink(path);
	tc_rmrf(dir);
	free(dir);
	return why ? 77 : 0;
}

static const char *const refusal_tag[] = { "parked-switches-noattach", "parked-switches-btf-empty",
					    "parked-switches-btf-garbage", "parked-switches-btf-3args",
					    "parked-switches-before-518" };
static const char *const refusal_reason[] = {
	"sched_switch program not attached: bpf(RAW_TRACEPOINT_OPEN, sched_switch): EINVAL",
	"sched_switch program refused: /sys/kernel/btf/vmlinux: empty",
	"sched_switch program refused: /sys/kernel/btf/vmlinux: not BTF",
	"sched_switch program refused: sched_switch has 3 arguments, no prev_state (Linux 5.18 "
	"added it), and task_struct no state",
	"the program reads the state from task_struct",
};

/* The refused (or pre-5.18) session, in a process of its own (the BTF is read
 * once a process): its exit status, 77 when the case could not be forced. */
static int refused_child(enum refusal how)
{
	int r = how == ATTACH_EINVAL ? refuse_attach() : junk_btf(how);
	if (r)
		return r;
	struct result res;
	const char *tag = refusal_tag[how], *reason = refusal_reason[how];
	record(&res, tag, STALLSCOPE_OFFCPU_AUTO);
	if (how == BTF_PRE518) {
		/* the program, with prev's state from task_struct: a blocked
		 * switch-out read as preempted would have neither */
		CHECK(not_parked(&res) && strstr(res.sampler, reason), "%s: META switches %s, "
		      "sampler %s", tag, res.switches, res.sampler);
		CHECK(res.in_parks == 0, "%s: %zu switch records inside parks", tag, res.in_parks);
	} else {
		CHECK(!strncmp(res.switches, "events:", 7) && strstr(res.switches, reason),
		      "%s: META switches %s, want the events' and \"%s\"", tag, res.switches, reason);
	}
	CHECK(res.polls_out == ROUNDS, "%s: blocked switch-outs in %zu of %d polls", tag, res.polls_out,
	      ROUNDS);
	CHECK(res.polls_stack == ROUNDS, "%s: off-CPU samples in %zu of %d polls", tag,
	      res.polls_stack, ROUNDS);
	return 0;
}

/* 0 passed, 77 skipped (the refusal could not be forced); fails otherwise. */
static int refused(enum refusal how)
{
	fflush(stdout);
	pid_t pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		char arg[16];
		snprintf(arg, sizeof arg, "%d", (int)how);
		execl("/proc/self/exe", "test_parked_switches", "--refused", arg, (char *)NULL);
		_exit(127);
	}
	int st = 0;
	CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	CHECK(WIFEXITED(st) && (WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 77), "%s: child status %#x",
	      refusal_tag[how], st);
	return WEXITSTATUS(st);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && !strcmp(argv[1], "--refused"))
		return refused_child((enum refusal)atoi(argv[2]));
	struct result a, b;

	printf("session 1: defaults\n");
	record(&a, "parked-switches-auto", STALLSCOPE_OFFCPU_AUTO);
	if (!not_parked(&a)) {
		CHECK(geteuid() != 0 || strstr(a.switches, "events:"),
		      "root, yet neither the program nor the events: %s", a.switches);
		printf("SKIP: switches not from the sched_switch program here: %s\n", a.switches);
		return 77;
	}
	CHECK(a.in_parks == 0, "program: %zu switch records inside parks", a.in_parks);
	CHECK(a.polls_out == ROUNDS, "program: blocked switch-outs in %zu of %d polls", a.polls_out,
	      ROUNDS);
	CHECK(a.polls_stack == ROUNDS, "program: off-CPU samples in %zu of %d polls", a.polls_stack,
	      ROUNDS);

	printf("session 2: STALLSCOPE_SWITCH_SOURCE=events\n");
	setenv("STALLSCOPE_SWITCH_SOURCE", "events", 1);
	record(&b, "parked-switches-events", STALLSCOPE_OFFCPU_AUTO);
	unsetenv("STALLSCOPE_SWITCH_SOURCE");
	CHECK(!strncmp(b.switches, "events:", 7), "events asked for: META %s", b.switches);
	/* Each park sleeps 5 ms: a blocked switch-out, unless the ring lost it. */
	CHECK(b.parks_out >= ROUNDS / 2, "events: blocked switch-outs in only %zu of %d parks",
	      b.parks_out, ROUNDS);
	CHECK(b.polls_out == ROUNDS, "events: blocked switch-outs in %zu of %d polls", b.polls_out,
	      ROUNDS);

	printf("session 3: offcpu_stacks = STALLSCOPE_OFFCPU_ALL\n");
	record(&b, "parked-switches-all", STALLSCOPE_OFFCPU_ALL);
	CHECK(!not_parked(&b) && !strncmp(b.switches, "sched_switch program:", 21),
	      "every switch-out's stack asked for: META %s", b.switches);
	CHECK(b.parks_out >= ROUNDS / 2, "all: blocked switch-outs in only %zu of %d parks",
	      b.parks_out, ROUNDS);
	CHECK(b.polls_stack == ROUNDS, "all: off-CPU samples in %zu of %d polls", b.polls_stack,
	      ROUNDS);
	printf("session 4: STALLSCOPE_SAMPLE_ALL_THREADS, a worker ended while parked\n");
	size_t ended = ended_in_park();
	CHECK(ended == ROUNDS, "ended parked: blocked switch-outs in %zu of %d sleeps after the end",
	      ended, ROUNDS);
	printf("session 5: the sched_switch program's attach refused (EINVAL)\n");
	refused(ATTACH_EINVAL);
	printf("session 6: the kernel's BTF an empty file\n");
	int skipped = refused(BTF_EMPTY);
	printf("session 7: the kernel's BTF garbage\n");
	skipped += refused(BTF_GARBAGE);
	printf("session 8: sched_switch without prev_state, task_struct without a state\n");
	skipped += refused(BTF_3ARGS);
	printf("session 9: the kernel's BTF says it is before 5.18: prev's state from task_struct\n");
	skipped += refused(BTF_PRE518);
	printf(skipped ? "ok (BTF refusals not forced: see SKIP)\n" : "ok\n");
	return 0;
}

/*
 * test_stalls.c - stalled polls and task dumps end to end, in process: this
 * program's own workers poll through the public hooks, the library records, and
 * the segments are read back with the real reader. Stack frames are matched to
 * this program's functions with dladdr1 (the executable exports its symbols), so
 * no symbolizer is involved.
 *
 *   long-poll   every 60 ms spin gets a capture classified running whose stack
 *               holds the spinning function and its caller, and a STALL_END
 *   blocking    a read() on a pipe is classified blocked in read
 *   mutex       a contended pthread mutex is classified blocked in futex
 *   starvation  three spinning workers pinned to one CPU: some capture finds a
 *               worker runnable but not running
 *   eintr       a worker alternating spins and blocking reads while captures
 *               fire never sees EINTR
 *   task dumps  tasks left idle after stallscope_task_pending() are dumped with
 *               the yielding function in the stack; none with the feature off
 *   quiet       a quiet spell thins the looks out, and the first poll after
 *               it is still captured, without a burst
 *   pace        the looks come once per 2T while every poll is short and once
 *               per T after a long one; first captures by 2T after short polls
 *               only, at T while long polls are around; among back-to-back
 *               polls of 3-5 ms no two looks closer than 1.5T (a young poll's
 *               look at its 2T mark)
 *   fork        a child forked while a poll of the parent is held past the
 *               threshold records its own session: its captures hold its own
 *               stack, and nothing of the parent's stalled poll (the watchdog's
 *               slots and the capture cells stay mapped from one session to the
 *               next, so the child starts with the parent's in its pages)
 *   deaf        a worker that keeps the signal blocked through a 700 ms poll
 *               has one capture signal queued, not one a capture, and each
 *               capture after the first is planned from the end of the one
 *               before (which waited 50 ms for an answer), not back to back
 *   exit        a worker that exits inside its stalled poll while the capture
 *               waits for its answer: the capture says it ended, and its slot
 *               is free for the next thread at once, not at the writer's next
 *               paced cycle (up to a second later)
 *   closed-fds  the host closes the descriptor a capture keeps open and puts
 *               a file of its own at that number (a PID file, "12345"): the
 *               recorder neither closes it nor takes it for the syscall file
 *               (no "system call 12345"), and captures still work
 *   two-threads long-poll, blocking, mutex and exit again with the watchdog on
 *               a thread of its own (task dumps on), the other path of slot
 *               releases and capture steps
 */
#include <dlfcn.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <stallscope/stallscope.h>

#include "threads_asleep.h"
#include "trace_check.h"

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* ---- what the trace says ---------------------------------------------------- */

#define MAXF 64
struct stall {
	uint64_t thread, tid, task, poll_ts, ts, index, kind, syscall1;
	uint32_t nframes;
	uint64_t frames[MAXF];
	char reason[200];
};
struct stall_end {
	uint64_t task, poll_ts, ts, captures;
};
struct dump {
	uint64_t task, idle_ns;
	uint32_t nframes;
	uint64_t frames[MAXF];
};
struct stack {
	uint64_t id;
	uint32_t n;
	uint64_t f[MAXF];
};

static struct {
	struct stall s[512];
	size_t ns;
	struct stall_end e[512];
	size_t ne;
	struct dump d[2048];
	size_t nd;
	struct stack st[4096];
	size_t nst;
} R;

static const struct stack *find_stack(uint64_t id)
{
	for (size_t i = R.nst; i-- > 0;)
		if (R.st[i].id == id)
			return &R.st[i];
	return NULL;
}

static void load(const char *dir)
{
	memset(&R, 0, sizeof R);
	DIR *d = opendir(dir);
	CHECK(d, "opendir %s", dir);
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strstr(de->d_name, ".bin"))
			continue;
		char path[1024];
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		struct ss_reader *r;
		char err[256];
		if (ss_reader_open_file(&r, path, NULL, NULL, err, sizeof err) != 0)
			continue;
		struct ss_block_info b;
		struct ss_record rec;
		while (ss_reader_next_block(r, &b)) {
			while (ss_reader_next_record(r, &rec)) {
				if (rec.type == SS_REC_STACK && R.nst < 4096) {
					struct stack *s = &R.st[R.nst++];
					s->id = rec.u.stack.id;
					s->n = (uint32_t)ss_stack_frames(&rec, s->f, MAXF);
				} else if (rec.type == SS_REC_STALL && R.ns < 512) {
					struct stall *s = &R.s[R.ns++];
					s->thread = rec.u.stall.thread;
					s->tid = rec.u.stall.tid;
					s->task = rec.u.stall.task;
					s->poll_ts = rec.u.stall.poll_ts;
					s->ts = rec.ts;
					s->index = rec.u.stall.index;
					s->kind = rec.u.stall.kind;
					s->syscall1 = rec.u.stall.syscall1;
					size_t rl = rec.u.stall.reason_len < 199 ? rec.u.stall.reason_len : 199;
					memcpy(s->reason, rec.u.stall.reason, rl);
					const struct stack *st = find_stack(rec.u.stall.stack);
					if (st) {
						s->nframes = st->n;
						memcpy(s->frames, st->f, st->n * sizeof st->f[0]);
					}
				} else if (rec.type == SS_REC_STALL_END && R.ne < 512) {
					struct stall_end *e = &R.e[R.ne++];
					e->task = rec.u.stall_end.task;
					e->poll_ts = rec.u.stall_end.poll_ts;
					e->ts = rec.ts;
					e->captures = rec.u.stall_end.captures;
				} else if (rec.type == SS_REC_TASK_DUMP && R.nd < 2048) {
					struct dump *x = &R.d[R.nd++];
					x->task = rec.u.task_dump.task;
					x->idle_ns = rec.u.task_dump.idle_ns;
					const struct stack *st = find_stack(rec.u.task_dump.stack);
					if (st) {
						x->nframes = st->n;
						memcpy(x->frames, st->f, st->n * sizeof st->f[0]);
					}
				}
			}
		}
		CHECK(ss_reader_damage(r)->kind == SS_DAMAGE_NONE, "%s damaged: %s", path,
		      ss_reader_damage(r)->reason);
		ss_reader_close(r);
	}
	closedir(d);
}

enum { CAP_ANY, CAP_FUTEX, CAP_RUNNING };

/* STALL records of task (of one kind: any, blocked in futex, running) already
 * in the segments of a recording that is still running: the tail of the
 * active segment may be cut mid-block, which is fine here. */
static int captures_seen(const char *dir, uint64_t task, int which)
{
	int n = 0;
	DIR *d = opendir(dir);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (!strstr(de->d_name, ".bin"))
			continue;
		char path[1024];
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		struct ss_reader *r;
		char err[256];
		if (ss_reader_open_file(&r, path, NULL, NULL, err, sizeof err) != 0)
			continue;
		struct ss_block_info b;
		struct ss_record rec;
		while (ss_reader_next_block(r, &b))
			while (ss_reader_next_record(r, &rec))
				n += rec.type == SS_REC_STALL && rec.u.stall.task == task &&
				     (which == CAP_ANY ||
				      (which == CAP_FUTEX && rec.u.stall.kind == SS_STALL_BLOCKED &&
				       rec.u.stall.syscall1 == SYS_futex + 1) ||
				      (which == CAP_RUNNING && rec.u.stall.kind == SS_STALL_RUNNING));
		ss_reader_close(r);
	}
	if (d)
		closedir(d);
	return n;
}

/* Keeps a stalled poll going until the watchdog's captures of it are in the
 * data (or 30 s pass): on a loaded machine the watchdog may run late, and a
 * poll of fixed length would then end before it was seen twice. What the test
 * asserts (captures at 1x and 2x the threshold, their classification, their
 * stacks) does not depend on how long the poll ran. */
static void wait_captures(const char *dir, uint64_t task, int want, int which)
{
	for (int i = 0; i < 1500 && captures_seen(dir, task, which) < want; i++)
		sleep_ms(20);
}

/* A spinning poll: at least two captures, one of them running; or all eight
 * a poll gets (on a machine so loaded that the thread never ran in a 1 ms
 * check window, each is "runnable" instead). */
static void wait_spin_captures(const char *dir, uint64_t task)
{
	for (int i = 0; i < 1500; i++) {
		int any = captures_seen(dir, task, CAP_ANY);
		if (any >= 8 || (any >= 2 && captures_seen(dir, task, CAP_RUNNING) >= 1))
			return;
		sleep_ms(20);
	}
}

/* Whether other work takes this machine's CPUs: a 50 ms spin gets less than
 * 80% of it as CPU time. */
static int machine_loaded(void)
{
	struct timespec c0, c1;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
	uint64_t w0 = now_ns();
	while (now_ns() - w0 < 50000000)
		;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
	double cpu = (double)(c1.tv_sec - c0.tv_sec) * 1e9 + (double)(c1.tv_nsec - c0.tv_nsec);
	return cpu < 0.8 * (double)(now_ns() - w0);
}

struct range {
	uint64_t lo, hi;
	const char *name;
};

static struct range fn_range(void *fn, const char *name)
{
	Dl_info info;
	const ElfW(Sym) *sym = NULL;
	struct range r = { (uint64_t)(uintptr_t)fn, (uint64_t)(uintptr_t)fn + 256, name };
	if (dladdr1(fn, &info, (void **)&sym, RTLD_DL_SYMENT) && sym && sym->st_size)
		r.hi = r.lo + sym->st_size;
	return r;
}

/* Frame i of a stack is in r; return addresses (i > 0) are looked up at addr - 1. */
static int frame_in(const uint64_t *f, uint32_t n, uint32_t i, struct range r)
{
	if (i >= n)
		return 0;
	uint64_t a = i ? f[i] - 1 : f[i];
	return a >= r.lo && a < r.hi;
}

/* Index of the first frame in r, or -1. */
static int find_frame(const uint64_t *f, uint32_t n, struct range r)
{
	for (uint32_t i = 0; i < n; i++)
		if (frame_in(f, n, i, r))
			return (int)i;
	return -1;
}

static void print_stall(const struct stall *s)
{
	printf("    task %llu #%llu kind %llu syscall+1 %llu at %.1f ms, %u frames: %s\n",
	       (unsigned long long)s->task, (unsigned long long)s->index,
	       (unsigned long long)s->kind, (unsigned long long)s->syscall1,
	       (double)(s->ts - s->poll_ts) / 1e6, s->nframes, s->reason);
	if (!getenv("STALL_TEST_FRAMES"))
		return;
	for (uint32_t i = 0; i < s->nframes; i++) {
		Dl_info info;
		uint64_t a = i ? s->frames[i] - 1 : s->frames[i];
		int ok = dladdr((void *)(uintptr_t)a, &info);
		printf("      #%u 0x%llx +0x%llx %s (%s)\n", i, (unsigned long long)s->frames[i], ok ? (unsigned long long)(a - (uint64_t)(uintptr_t)info.dli_fbase) : 0ull,
		       ok && info.dli_sname ? info.dli_sname : "?", ok && info.dli_fname ? info.dli_fname : "?");
	}
}

/* ---- sessions ----------------------------------------------------------------- */

/* The watchdog on a thread of its own (task dumps on make it so; no task
 * here yields, so none is dumped), and the slots sessions get (0: default),
 * flush interval (0: default). */
static int two_threads;
static uint32_t max_threads_cfg, flush_ms_cfg;

static char *start(const char *tag, uint32_t threshold_ms, int dumps, uint32_t dump_ms)
{
	char *dir = tc_tmpdir(tag);
	struct stallscope_config cfg;
	stallscope_config_init(&cfg);
	cfg.output_dir = dir;
	cfg.stall_threshold_ms = threshold_ms;
	cfg.task_dump_enabled = dumps || two_threads;
	cfg.task_dump_idle_threshold_ms = dump_ms;
	if (max_threads_cfg)
		cfg.max_threads = max_threads_cfg;
	if (flush_ms_cfg)
		cfg.flush_interval_ms = flush_ms_cfg;
	cfg.cpu_sampling = 0; /* the captures are what we test */
	CHECK(stallscope_start(&cfg) == 0, "start: %s", stallscope_last_error());
	return dir;
}

static void finish(char *dir)
{
	CHECK(stallscope_stop() == 0, "stop: %s", stallscope_last_error());
	load(dir);
	tc_rmrf(dir);
	free(dir);
}

/* ---- culprits (exported, noinline, with frames of their own) ---- */

static volatile uint64_t sink_v;

__attribute__((noinline)) void culprit_spin(uint64_t ns);
__attribute__((noinline)) void long_poll_body(uint64_t ns);
__attribute__((noinline)) int culprit_blocking_read(int fd);
__attribute__((noinline)) void culprit_mutex_wait(pthread_mutex_t *m);
__attribute__((noinline)) void culprit_yield_wait(void);
__attribute__((noinline)) void fork_child_poll(const char *dir, uint64_t task);

/* The task whose poll culprit_spin is running, and the last task the test
 * let go: a held poll spins on until the test has seen its captures. */
static _Atomic uint64_t spinning_task, released_task;

void culprit_spin(uint64_t ns)
{
	volatile uint64_t x = ns;
	uint64_t end = now_ns() + ns, task = atomic_load(&spinning_task);
	while (now_ns() < end || (task && atomic_load(&released_task) < task))
		for (int i = 0; i < 1000; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
	sink_v += x;
}

void long_poll_body(uint64_t ns)
{
	culprit_spin(ns);
	sink_v++; /* not a tail call: this frame stays on the stack */
}

int culprit_blocking_read(int fd)
{
	char c;
	ssize_t n = read(fd, &c, 1);
	sink_v++;
	return n == 1 ? 0 : errno ? errno : -1;
}

void culprit_mutex_wait(pthread_mutex_t *m)
{
	pthread_mutex_lock(m);
	sink_v++;
	pthread_mutex_unlock(m);
}

void culprit_yield_wait(void)
{
	stallscope_task_pending();
	sink_v++;
}

static int captures_seen(const char *dir, uint64_t task, int which);

/* The forked child's poll: spins (20 ms at a time, no system call inside a
 * stretch) until its own captures are in its recording, at most 30 s. */
void fork_child_poll(const char *dir, uint64_t task)
{
	volatile uint64_t x = task;
	for (int i = 0; i < 1500 && captures_seen(dir, task, CAP_ANY) < 3; i++) {
		uint64_t end = now_ns() + 20000000u;
		while (now_ns() < end)
			for (int k = 0; k < 1000; k++)
				x = x * 6364136223846793005ull + 1442695040888963407ull;
	}
	sink_v += x;
}

/* ---- workers ---- */

enum job { J_LONG, J_BLOCK, J_MUTEX, J_STARVE, J_EINTR, J_YIELD, J_YIELD_REPOLL, J_QUIET, J_PACE,
	   J_DEAF, J_EXIT };

/* The real-time signal the captures use: the one with a handler taking
 * siginfo (the library's, claimed at start; this program installs none). */
static int capture_signal(void)
{
	for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++) {
		struct sigaction sa;
		if (sigaction(sig, NULL, &sa) == 0 && (sa.sa_flags & SA_SIGINFO) &&
		    sa.sa_sigaction != NULL)
			return sig;
	}
	return 0;
}

/* J_DEAF's count of capture signals queued at the end of its poll; J_EXIT's
 * wait for the first one (it then exits, inside the poll). */
static _Atomic int deaf_queued = -1;
/* J_EXIT: when it returned (then its thread ends). */
static _Atomic uint64_t exit_ret_ns;
#define DEAF_POLL_NS 700000000ull

/* J_QUIET's worker stays parked until this is set. */
static _Atomic int quiet_go;

/* J_PACE's worker: polls of 100 us, 1 ms apart, until stop; when asked for
 * more long polls than it made, one of long_ns (task PACE_LONG0 + its number)
 * after a pause of 0 to PACE_T_MS ms, so that it begins at any moment between
 * two looks. short_max: its longest short poll (ns, hooks included) since the
 * test last cleared it. */
#define PACE_T_MS 40u
#define PACE_LONG0 7000u
static struct {
	_Atomic int stop;
	_Atomic uint32_t want, done;
	_Atomic uint64_t short_max;
	uint64_t long_ns;
	_Atomic int b2b;           /* polls of 3-5 ms back to back, no 1 ms sleep */
	_Atomic uint64_t stretch_at; /* when one of those last ended T/2 old or more */
} pace;

struct worker {
	pthread_t th;
	enum job job;
	uint64_t task0;
	int cpu;          /* pin to this CPU, or -1 */
	int fd;           /* read end for J_BLOCK / J_EINTR */
	pthread_mutex_t *mu;
	_Atomic int eintr, reads;
};

static void *worker_main(void *p)
{
	struct worker *w = p;
	if (w->cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(w->cpu, &set);
		CHECK(sched_setaffinity(0, sizeof set, &set) == 0, "sched_setaffinity");
	}
	stallscope_worker_begin("test", (uint32_t)w->task0);
	switch (w->job) {
	case J_LONG:
		for (uint64_t i = 0; i < 4; i++) {
			stallscope_poll_begin(w->task0 + i, 0);
			atomic_store(&spinning_task, w->task0 + i);
			long_poll_body(60000000);
			atomic_store(&spinning_task, 0);
			stallscope_poll_end();
			stallscope_park();
			sleep_ms(5);
			stallscope_unpark();
		}
		break;
	case J_BLOCK:
		for (uint64_t i = 0; i < 3; i++) {
			stallscope_poll_begin(w->task0 + i, 0);
			int e = culprit_blocking_read(w->fd);
			CHECK(e == 0, "read: %s", strerror(e));
			stallscope_poll_end();
		}
		break;
	case J_MUTEX:
		stallscope_poll_begin(w->task0, 0);
		culprit_mutex_wait(w->mu);
		stallscope_poll_end();
		break;
	case J_STARVE:
		for (uint64_t i = 0; i < 3; i++) {
			stallscope_poll_begin(w->task0 + i, 0);
			long_poll_body(100000000);
			stallscope_poll_end();
		}
		break;
	case J_EINTR: {
		stallscope_poll_begin(w->task0, 0);
		uint64_t end = now_ns() + 400000000u;
		while (now_ns() < end) {
			culprit_spin(2000000);
			char c;
			ssize_t n = read(w->fd, &c, 1);
			if (n < 0 && errno == EINTR)
				atomic_fetch_add(&w->eintr, 1);
			if (n == 1)
				atomic_fetch_add(&w->reads, 1);
		}
		stallscope_poll_end();
		break;
	}
	case J_QUIET:
		stallscope_park();
		while (!atomic_load(&quiet_go))
			sleep_ms(5);
		stallscope_unpark();
		stallscope_poll_begin(w->task0, 0);
		atomic_store(&spinning_task, w->task0);
		long_poll_body(60000000);
		atomic_store(&spinning_task, 0);
		stallscope_poll_end();
		break;
	case J_PACE: {
		unsigned seed = 17;
		for (uint64_t k = 0; !atomic_load(&pace.stop); k++) {
			uint32_t done = atomic_load(&pace.done);
			if (atomic_load(&pace.want) > done) {
				sleep_ms((unsigned)rand_r(&seed) % PACE_T_MS);
				stallscope_poll_begin(PACE_LONG0 + done, 0);
				culprit_spin(pace.long_ns);
				stallscope_poll_end();
				atomic_store(&pace.done, done + 1);
				continue;
			}
			/* Back to back, asleep: a poll that spun would be
			 * preempted past T/2 on a loaded machine. */
			int b2b = atomic_load(&pace.b2b);
			uint64_t t0 = now_ns();
			stallscope_poll_begin(w->task0 + k % 1000, 0);
			if (b2b)
				sleep_ms(3 + (unsigned)rand_r(&seed) % 3);
			else
				culprit_spin(100000);
			stallscope_poll_end();
			uint64_t d = now_ns() - t0;
			if (d > atomic_load(&pace.short_max))
				atomic_store(&pace.short_max, d);
			if (b2b && d >= PACE_T_MS * 1000000ull / 2)
				atomic_store(&pace.stretch_at, now_ns());
			if (!b2b)
				sleep_ms(1);
		}
		break;
	}
	case J_DEAF:
	case J_EXIT: {
		int sig = capture_signal();
		CHECK(sig, "no real-time signal with the library's handler");
		sigset_t all, one;
		sigfillset(&all);
		sigemptyset(&one);
		sigaddset(&one, sig);
		stallscope_poll_begin(w->task0, 0);
		pthread_sigmask(SIG_BLOCK, &all, NULL);
		if (w->job == J_EXIT) {
			/* Until a capture has signalled (at most 20 s), then gone. */
			uint64_t end = now_ns() + 20000000000ull;
			sigset_t pend;
			do {
				culprit_spin(100000);
				sigpending(&pend);
			} while (!sigismember(&pend, sig) && now_ns() < end);
			atomic_store(&exit_ret_ns, now_ns());
			return NULL;
		}
		culprit_spin(DEAF_POLL_NS);
		/* The signals queued for it, taken here so no handler runs. */
		int n = 0;
		struct timespec zero = { 0, 0 };
		while (sigtimedwait(&one, NULL, &zero) == sig)
			n++;
		atomic_store(&deaf_queued, n);
		stallscope_poll_end();
		break;
	}
	case J_YIELD:
	case J_YIELD_REPOLL:
		for (uint64_t i = 0; i < 20; i++) {
			stallscope_poll_begin(w->task0 + i, 0);
			culprit_yield_wait();
			stallscope_poll_end();
			if (w->job == J_YIELD_REPOLL) {
				stallscope_poll_begin(w->task0 + i, 0);
				stallscope_poll_end();
			}
		}
		break;
	}
	stallscope_worker_end();
	return NULL;
}

static void run(struct worker *w, size_t n)
{
	for (size_t i = 0; i < n; i++)
		CHECK(pthread_create(&w[i].th, NULL, worker_main, &w[i]) == 0, "pthread_create");
}

static void join(struct worker *w, size_t n)
{
	for (size_t i = 0; i < n; i++)
		pthread_join(w[i].th, NULL);
}

/* Writes one byte into fd every period_ms until *stop. */
struct feeder {
	pthread_t th;
	int fd;
	unsigned period_ms, count;
	_Atomic int stop;
};

static void *feeder_main(void *p)
{
	struct feeder *f = p;
	for (unsigned i = 0; (!f->count || i < f->count) && !atomic_load(&f->stop); i++) {
		sleep_ms(f->period_ms);
		char c = 'x';
		CHECK(write(f->fd, &c, 1) == 1, "write");
	}
	return NULL;
}

static struct range R_spin, R_body, R_read, R_mutex, R_yield;

/* The stack of a blocked thread is found by scanning its stack memory for the
 * frame chain; ASan's interceptors (read, pthread_mutex_lock) leave stale frame
 * records that the scan can take for live ones, so that check is not made under
 * ASan. */
extern void __asan_init(void) __attribute__((weak));
static int under_asan(void)
{
	return &__asan_init != NULL;
}

static void test_long_poll(void)
{
	printf("long-poll\n");
	/* On a machine busy enough that every capture of a poll found its spinning
	 * thread waiting for a CPU ("runnable"), that is the right answer but not
	 * the one this test looks for: the scenario runs again (at most 3 times)
	 * when the machine is measured to be loaded. */
	for (int attempt = 0;; attempt++) {
		char *dir = start("stall-long", 10, 0, 10);
		struct worker w[1] = { { .job = J_LONG, .task0 = 100, .cpu = -1 } };
		atomic_store(&released_task, 0);
		run(w, 1);
		for (uint64_t t = 100; t < 104; t++) {
			wait_spin_captures(dir, t);
			atomic_store(&released_task, t);
		}
		join(w, 1);
		finish(dir);
		int all_good = 1, starved = 1;
		for (uint64_t t = 100; t < 104; t++) {
			int good = 0;
			for (size_t i = 0; i < R.ns; i++) {
				const struct stall *s = &R.s[i];
				if (s->task != t)
					continue;
				int a = find_frame(s->frames, s->nframes, R_spin);
				int b = find_frame(s->frames, s->nframes, R_body);
				good |= s->kind == SS_STALL_RUNNING && a >= 0 && b == a + 1;
				starved &= s->kind == SS_STALL_RUNNABLE || s->kind == SS_STALL_RUNNING;
			}
			all_good &= good;
		}
		if (all_good || attempt == 2 || !starved || !machine_loaded())
			break;
		printf("  a poll was only ever seen waiting for a CPU, and the machine is loaded: again\n");
	}
	for (uint64_t t = 100; t < 104; t++) {
		int good = 0, caps = 0;
		for (size_t i = 0; i < R.ns; i++) {
			const struct stall *s = &R.s[i];
			if (s->task != t)
				continue;
			caps++;
			print_stall(s);
			int a = find_frame(s->frames, s->nframes, R_spin);
			int b = find_frame(s->frames, s->nframes, R_body);
			if (s->kind == SS_STALL_RUNNING && a >= 0 && b == a + 1)
				good = 1;
			/* Captured at 1x, 2x, 4x ... the threshold of the poll's age. */
			CHECK(s->ts - s->poll_ts >= (10000000ull << s->index), "task %llu: capture #%llu at %llu ns",
			      (unsigned long long)t, (unsigned long long)s->index,
			      (unsigned long long)(s->ts - s->poll_ts));
		}
		CHECK(caps >= 2, "task %llu: %d captures of a poll held past 2x the 10 ms threshold (want >= 2)",
		      (unsigned long long)t, caps);
		CHECK(good, "task %llu: no running capture with culprit_spin <- long_poll_body",
		      (unsigned long long)t);
		int ended = 0;
		for (size_t i = 0; i < R.ne; i++)
			if (R.e[i].task == t) {
				uint64_t dur = R.e[i].ts - R.e[i].poll_ts;
				CHECK(dur >= 60000000 && dur < 30000000000ull, "task %llu: STALL_END says %llu ns",
				      (unsigned long long)t, (unsigned long long)dur);
				ended = 1;
			}
		CHECK(ended, "task %llu: no STALL_END", (unsigned long long)t);
	}
}

static void test_blocking(void)
{
	printf("blocking\n");
	int fds[2];
	CHECK(pipe(fds) == 0, "pipe");
	char *dir = start("stall-block", 10, 0, 10);
	struct worker w[1] = { { .job = J_BLOCK, .task0 = 200, .cpu = -1, .fd = fds[0] } };
	struct feeder f = { .fd = fds[1], .period_ms = 50, .count = 3 };
	run(w, 1);
	pthread_create(&f.th, NULL, feeder_main, &f);
	join(w, 1);
	pthread_join(f.th, NULL);
	finish(dir);
	int with_stack = 0;
	for (uint64_t t = 200; t < 203; t++) {
		int good = 0;
		for (size_t i = 0; i < R.ns; i++) {
			const struct stall *s = &R.s[i];
			if (s->task != t)
				continue;
			print_stall(s);
			if (s->kind == SS_STALL_BLOCKED && s->syscall1 == SYS_read + 1) {
				good = 1;
				with_stack += find_frame(s->frames, s->nframes, R_read) >= 0;
			}
		}
		CHECK(good, "task %llu: no capture classified blocked in read", (unsigned long long)t);
	}
	printf("  %d blocked captures name culprit_blocking_read in their stack\n", with_stack);
	CHECK(with_stack > 0 || under_asan(), "no blocked capture's stack holds culprit_blocking_read");
	close(fds[0]);
	close(fds[1]);
}

static void test_mutex(void)
{
	printf("mutex\n");
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	char *dir = start("stall-mutex", 10, 0, 10);
	pthread_mutex_lock(&mu);
	struct worker w[1] = { { .job = J_MUTEX, .task0 = 300, .cpu = -1, .mu = &mu } };
	run(w, 1);
	/* Held until the waiter has been captured blocked in futex. */
	sleep_ms(60);
	wait_captures(dir, 300, 1, CAP_FUTEX);
	pthread_mutex_unlock(&mu);
	join(w, 1);
	finish(dir);
	int good = 0, with_stack = 0;
	for (size_t i = 0; i < R.ns; i++) {
		const struct stall *s = &R.s[i];
		print_stall(s);
		if (s->task == 300 && s->kind == SS_STALL_BLOCKED && s->syscall1 == SYS_futex + 1) {
			good = 1;
			with_stack += find_frame(s->frames, s->nframes, R_mutex) >= 0;
		}
	}
	CHECK(good, "no capture classified blocked in futex");
	printf("  %d futex captures name culprit_mutex_wait in their stack\n", with_stack);
	CHECK(with_stack > 0 || under_asan(), "no futex capture's stack holds culprit_mutex_wait");
	pthread_mutex_destroy(&mu);
}

static void test_starvation(void)
{
	printf("starvation\n");
	cpu_set_t set;
	CHECK(sched_getaffinity(0, sizeof set, &set) == 0, "sched_getaffinity");
	int cpu = 0;
	while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &set))
		cpu++;
	char *dir = start("stall-starve", 10, 0, 10);
	struct worker w[3];
	for (int i = 0; i < 3; i++)
		w[i] = (struct worker){ .job = J_STARVE, .task0 = 400 + 10 * (uint64_t)i, .cpu = cpu };
	run(w, 3);
	join(w, 3);
	finish(dir);
	int runnable = 0;
	for (size_t i = 0; i < R.ns; i++) {
		if (R.s[i].kind == SS_STALL_RUNNABLE) {
			runnable++;
			print_stall(&R.s[i]);
		}
	}
	printf("  %d of %zu captures runnable but not running\n", runnable, R.ns);
	CHECK(runnable > 0, "no capture of three workers sharing CPU %d was runnable", cpu);
}

static void test_eintr(void)
{
	printf("eintr\n");
	int fds[2];
	CHECK(pipe(fds) == 0, "pipe");
	char *dir = start("stall-eintr", 5, 0, 10);
	struct worker w[1] = { { .job = J_EINTR, .task0 = 500, .cpu = -1, .fd = fds[0] } };
	struct feeder f = { .fd = fds[1], .period_ms = 3 };
	run(w, 1);
	pthread_create(&f.th, NULL, feeder_main, &f);
	join(w, 1);
	atomic_store(&f.stop, 1);
	pthread_join(f.th, NULL);
	finish(dir);
	int running = 0, blocked = 0;
	for (size_t i = 0; i < R.ns; i++) {
		running += R.s[i].kind == SS_STALL_RUNNING || R.s[i].kind == SS_STALL_RUNNABLE;
		blocked += R.s[i].kind == SS_STALL_BLOCKED;
	}
	printf("  %d reads, %d EINTR, %zu captures (%d signalled, %d blocked)\n",
	       atomic_load(&w[0].reads), atomic_load(&w[0].eintr), R.ns, running, blocked);
	CHECK(atomic_load(&w[0].eintr) == 0, "read() saw EINTR %d times", atomic_load(&w[0].eintr));
	CHECK(R.ns >= 4, "only %zu captures of a 400 ms poll at 5 ms", R.ns);
	close(fds[0]);
	close(fds[1]);
}

static void test_task_dumps(void)
{
	printf("task dumps\n");
	char *dir = start("stall-dump", 0, 1, 5);
	struct worker w[2] = { { .job = J_YIELD, .task0 = 1000, .cpu = -1 },
			       { .job = J_YIELD_REPOLL, .task0 = 2000, .cpu = -1 } };
	run(w, 2);
	join(w, 2);
	sleep_ms(200); /* tasks 1000.. stay idle; nothing polls them again */
	finish(dir);
	int idle_dumped = 0, named = 0, repolled_dumped = 0;
	for (size_t i = 0; i < R.nd; i++) {
		const struct dump *d = &R.d[i];
		if (d->task >= 1000 && d->task < 1020) {
			idle_dumped++;
			/* frame 0 is stallscope_task_pending, frame 1 the yielding function */
			named += frame_in(d->frames, d->nframes, 1, R_yield);
		} else if (d->task >= 2000 && d->task < 2020) {
			repolled_dumped++;
		}
	}
	printf("  %d of 20 idle tasks dumped (%d name culprit_yield_wait), %d of 20 re-polled at once\n",
	       idle_dumped, named, repolled_dumped);
	CHECK(idle_dumped == 20, "%d of 20 tasks idle for 200 ms (mean threshold 5 ms) dumped",
	      idle_dumped);
	CHECK(named == 20, "%d dumps name culprit_yield_wait", named);
	/* P(threshold < the re-poll gap of microseconds) is tiny, but not zero. */
	CHECK(repolled_dumped <= 3, "%d re-polled tasks dumped", repolled_dumped);

	dir = start("stall-dump-off", 0, 0, 5);
	w[0] = (struct worker){ .job = J_YIELD, .task0 = 1000, .cpu = -1 };
	run(w, 1);
	join(w, 1);
	sleep_ms(50);
	finish(dir);
	CHECK(R.nd == 0, "%zu task dumps with the feature off", R.nd);
}

/* A counter of the metrics text (key: "\nNAME "), -1 when absent. */
static long long metric_counter(const char *key)
{
	static char buf[65536];
	stallscope_metrics_text(buf, sizeof buf);
	const char *p = strstr(buf, key);
	CHECK(p != NULL, "no%s in the metrics text", key);
	return p ? atoll(p + strlen(key)) : -1;
}

/* The watchdog's looks so far. */
static long long watchdog_looks(void)
{
	return metric_counter("\nstallscope_watchdog_looks_total ");
}

/* The captures the watchdog says it took. */
static long long captures_taken(void)
{
	return metric_counter("\nstallscope_stall_captures_total ");
}

/* The power of two of the threshold an age has reached: 0 at 1x, 1 at 2x ... */
static int age_bucket(uint64_t age)
{
	int b = 0;
	while (b < 62 && age >= (10000000ull << (b + 1)))
		b++;
	return b;
}

/* A quiet spell (the only worker parked: no poll begins or ends) thins the
 * watchdog's looks out to one per 8 thresholds, and the first poll after it is
 * still captured: no earlier than the threshold, each later capture at a power
 * of two of the threshold the poll had not reached at the one before (a late
 * first look is not followed by a burst). Load only delays looks, so the bound
 * on their number holds on any machine. */
static void test_quiet(void)
{
	printf("quiet\n");
	long long taken0 = captures_taken();
	char *dir = start("stall-quiet", 10, 0, 10);
	struct worker w[1] = { { .job = J_QUIET, .task0 = 500, .cpu = -1 } };
	atomic_store(&quiet_go, 0);
	atomic_store(&released_task, 0);
	run(w, 1);
	sleep_ms(100); /* the park seen, the spell begun */
	long long l0 = watchdog_looks();
	sleep_ms(400);
	long long looks = watchdog_looks() - l0;
	printf("  %lld watchdog looks in 400 ms of quiet (one a threshold would be 40)\n", looks);
	CHECK(looks <= 12, "%lld watchdog looks in 400 ms with no poll (want <= 12)", looks);
	atomic_store(&quiet_go, 1);
	wait_spin_captures(dir, 500);
	atomic_store(&released_task, 500);
	join(w, 1);
	finish(dir);
	int caps = 0, last = -1;
	for (size_t i = 0; i < R.ns; i++) {
		const struct stall *s = &R.s[i];
		if (s->task != 500)
			continue;
		print_stall(s);
		uint64_t age = s->ts - s->poll_ts;
		CHECK(age >= (10000000ull << s->index), "capture #%llu at %llu ns",
		      (unsigned long long)s->index, (unsigned long long)age);
		CHECK(age_bucket(age) > last, "capture #%llu at %llu ns: no later power of two of "
		      "the threshold than the capture before", (unsigned long long)s->index,
		      (unsigned long long)age);
		last = age_bucket(age);
		caps++;
	}
	CHECK(caps >= 2, "%d captures of the poll after the quiet spell (want >= 2)", caps);
	long long taken = captures_taken() - taken0;
	printf("  stallscope_stall_captures_total went up by %lld, %zu captures decoded\n", taken, R.ns);
	CHECK(taken == (long long)R.ns, "the metric counted %lld captures, the segments hold %zu",
	      taken, R.ns);
}

/* ---- the looks' pace: 2T while polls are short, T while long ones are around ---- */

#define PACE_LOOKS 12   /* looks timed at a stretch */
#define PACE_POLLS 6    /* long polls at random moments while long polls are around */

#define PACE_GAPS 8    /* gaps between looks timed among back-to-back polls */

struct pace_run {
	uint64_t short_max[3]; /* the longest short poll in stretches 1, 5 and 0 (ns) */
	int stretched0;        /* 0: one of its polls took T/2 within 1.2 s before or
				* while its gaps were timed, in each of its tries */
	uint64_t gap_min;      /* 0: the shortest of PACE_GAPS gaps between looks
				* while a poll of 3-5 ms is always open (0: none in 20 s) */
	uint64_t span[3];      /* the wall time of PACE_LOOKS looks: 1 short polls only,
				* 3 right after a long poll, 5 the first stretch as far
				* apart as 1 after the long polls (0: none within 10 s) */
	uint64_t first;        /* 2: the first long poll's first capture (its age, ns) */
	uint64_t ages[PACE_POLLS];
	size_t nages;
};

/* The wall time the watchdog takes for PACE_LOOKS looks from now: each of them
 * comes after the clock read here, and the last before the clock read after
 * it, so load (late looks, a late reader) only makes it longer. 0 when they
 * did not come within 20 s. */
static uint64_t looks_span(void)
{
	uint64_t t0 = now_ns();
	long long c0 = watchdog_looks();
	while (watchdog_looks() < c0 + PACE_LOOKS + 1) {
		if (now_ns() - t0 > 20000000000ull)
			return 0;
		sleep_ms(1);
	}
	return now_ns() - t0;
}

/* The shortest of PACE_GAPS gaps between looks from now, each taken at its
 * longest: a look the count shows first at a read came after the clock read
 * before the read before it, and before the clock read after it; two looks
 * between reads are at most that far apart. Reads come every millisecond or
 * so; a late one (a loaded machine) only makes a gap look longer. 0 when
 * they did not come within 20 s. */
static uint64_t looks_gap_min(void)
{
	uint64_t t0 = now_ns(), before = now_ns(), since = 0, least = UINT64_MAX;
	long long c = watchdog_looks();
	for (int gaps = -1; gaps < PACE_GAPS;) {
		if (now_ns() - t0 > 20000000000ull)
			return 0;
		sleep_ms(1);
		uint64_t b = now_ns();
		long long c1 = watchdog_looks();
		uint64_t t = now_ns();
		if (c1 != c) {
			if (gaps >= 0 && t - since < least)
				least = t - since;
			if (c1 > c + 1 && t - before < least)
				least = t - before;
			gaps += (int)(c1 - c);
			since = before;
			c = c1;
		}
		before = b;
	}
	return least;
}

/* Asks the worker for a long poll and waits (at most 30 s) until it made it. */
static void pace_long_poll(void)
{
	uint32_t want = atomic_fetch_add(&pace.want, 1) + 1;
	for (int i = 0; i < 3000 && atomic_load(&pace.done) < want; i++)
		sleep_ms(10);
	CHECK(atomic_load(&pace.done) >= want, "the worker's long poll %u did not end", want);
}

static void pace_once(struct pace_run *r)
{
	const uint64_t T = PACE_T_MS * 1000000ull;
	memset(r, 0, sizeof *r);
	memset(&pace, 0, sizeof pace);
	pace.long_ns = 3 * T;
	char *dir = start("stall-pace", PACE_T_MS, 0, 10);
	struct worker w[1] = { { .job = J_PACE, .task0 = 600, .cpu = -1 } };
	atomic_store(&pace.b2b, 1);
	run(w, 1);
	/* 0. Back-to-back polls of 3-5 ms: every look sees a poll open younger
	 * than T/2, and the next comes at that poll's 2T mark (at least 2T less
	 * 5 ms later), not at its T mark. A poll a loaded machine stretched to
	 * T/2 is a long one, and keeps the looks at T for max(1 s, 8T): timed
	 * again then, up to 5 times. */
	for (int i = 0; i < 5; i++) {
		atomic_store(&pace.short_max, 0);
		uint64_t from = now_ns();
		r->gap_min = looks_gap_min();
		r->short_max[2] = atomic_load(&pace.short_max);
		uint64_t at = atomic_load(&pace.stretch_at);
		r->stretched0 = at && at + 1200000000u > from;
		if (r->gap_min >= 3 * T / 2 || !r->stretched0)
			break;
		sleep_ms(1200);
	}
	atomic_store(&pace.b2b, 0);
	atomic_store(&pace.short_max, 0);
	/* 1. Only short polls since the start. */
	r->span[0] = looks_span();
	r->short_max[0] = atomic_load(&pace.short_max);
	/* 2. The first long poll; 3. the looks right after it. */
	pace_long_poll();
	r->span[1] = looks_span();
	/* 4. Long polls around: more of them, at any moment between looks. */
	for (int i = 0; i < PACE_POLLS; i++)
		pace_long_poll();
	/* 5. Short polls only again: after max(1 s, 8T) of them the looks space
	 * out again; timed stretch after stretch for at most 10 s. */
	atomic_store(&pace.short_max, 0);
	uint64_t t5 = now_ns();
	while (now_ns() - t5 < 10000000000ull) {
		uint64_t span = looks_span();
		if (span >= PACE_LOOKS * 3 * T / 2) {
			r->span[2] = span;
			break;
		}
	}
	r->short_max[1] = atomic_load(&pace.short_max);
	atomic_store(&pace.stop, 1);
	join(w, 1);
	finish(dir);
	for (size_t i = 0; i < R.ns; i++) {
		const struct stall *s = &R.s[i];
		if (s->task < PACE_LONG0 || s->task > PACE_LONG0 + PACE_POLLS || s->index != 0)
			continue;
		print_stall(s);
		if (s->task == PACE_LONG0)
			r->first = s->ts - s->poll_ts;
		else if (r->nages < PACE_POLLS)
			r->ages[r->nages++] = s->ts - s->poll_ts;
	}
}

/* The watchdog looks once per 2T while every poll it sees is short (a poll
 * seen open younger than T/2 gets a look at its 2T mark, so no two looks are
 * closer than 1.5T), and once per T for max(1 s, 8T) after it saw a poll T/2
 * old or took a capture. Timed by the looks' count: a stretch of PACE_LOOKS
 * looks among short polls takes at least PACE_LOOKS x 1.5T however loaded the
 * machine (load only delays looks), and with looks once a threshold about
 * PACE_LOOKS x T. What load can spoil, it is run again for (at most three
 * times, when the machine is measured to be loaded or a 100 us poll took T/2):
 * a short poll stretched past T/2 is a long one; the stretch right after a
 * long poll must be shorter than the 1.5T spacing allows (about PACE_LOOKS x
 * T: fewer than that many looks in it only with late wake-ups); and first
 * captures are checked with T/2 of lateness allowed: the first long poll after
 * only short ones by 2T, and those begun at any moment while long polls are
 * around by T (at 2T looks about a quarter of them would come later than
 * 1.5T, with a young poll's look at its 2T mark). Each gap between looks is
 * checked among back-to-back polls of 3-5 ms (asleep), always one open and
 * younger than T/2: its look at its 2T mark puts them at least 2T less 5 ms
 * apart, at its T mark (the rule broken) about T apart. Each gap is taken at
 * its longest, so a late read never shortens it; a poll stretched to T/2 (a
 * long one) has the gaps timed again. */
static void test_pace(void)
{
	printf("pace\n");
	const uint64_t T = PACE_T_MS * 1000000ull, stretch = PACE_LOOKS * 3 * T / 2;
	struct pace_run r;
	for (int attempt = 0;; attempt++) {
		pace_once(&r);
		printf("  back-to-back polls of 3-5 ms (longest %.2f ms): looks at least %.1f ms apart "
		       "(%d gaps)\n", (double)r.short_max[2] / 1e6, (double)r.gap_min / 1e6, PACE_GAPS);
		printf("  %d looks: %.0f ms among short polls (longest %.2f ms), %.0f ms right after "
		       "a long poll, %.0f ms once short polls were alone again (longest %.2f ms); at "
		       "least %.0f ms apart: spaced out as 2T\n", PACE_LOOKS, (double)r.span[0] / 1e6,
		       (double)r.short_max[0] / 1e6, (double)r.span[1] / 1e6, (double)r.span[2] / 1e6,
		       (double)r.short_max[1] / 1e6, (double)stretch / 1e6);
		printf("  first captures: %.1f ms after short polls only; %zu while long polls are "
		       "around:", (double)r.first / 1e6, r.nages);
		int late = 0;
		for (size_t i = 0; i < r.nages; i++) {
			printf(" %.1f", (double)r.ages[i] / 1e6);
			late |= r.ages[i] > 3 * T / 2;
		}
		printf(" ms (threshold %u ms)\n", PACE_T_MS);
		int stretched = r.short_max[0] >= T / 2 || r.short_max[1] >= T / 2 ||
				(r.stretched0 && r.gap_min < 3 * T / 2);
		int ok = !stretched && r.gap_min >= 3 * T / 2 && r.span[0] >= stretch && r.span[1] &&
			 r.span[1] < stretch &&
			 r.span[2] && r.first && r.first <= 5 * T / 2 && r.nages == PACE_POLLS && !late;
		if (ok || attempt == 2 || (!stretched && !machine_loaded()))
			break;
		printf("  the machine is loaded%s: again\n", stretched ? " (a short poll took T/2)" : "");
	}
	CHECK(r.short_max[0] < T / 2 && r.short_max[1] < T / 2 &&
	      (!r.stretched0 || r.gap_min >= 3 * T / 2),
	      "polls of 100 us took up to %.1f and %.1f ms, of 3-5 ms up to %.1f ms: the machine is "
	      "too loaded to keep them short", (double)r.short_max[0] / 1e6,
	      (double)r.short_max[1] / 1e6, (double)r.short_max[2] / 1e6);
	CHECK(r.gap_min >= 3 * T / 2, "looks among back-to-back polls of 3-5 ms came %.1f ms apart: "
	      "a young poll's look at its T mark, not its 2T one (want at least 1.5T, %.1f ms)",
	      (double)r.gap_min / 1e6, (double)(3 * T / 2) / 1e6);
	CHECK(r.span[0] >= stretch, "%d looks among short polls only took %.1f ms: closer than "
	      "1.5T (%.1f ms for them)", PACE_LOOKS, (double)r.span[0] / 1e6, (double)stretch / 1e6);
	CHECK(r.first >= T && r.first <= 5 * T / 2, "the first long poll after short ones was first "
	      "captured at %.1f ms (want T to 2T + T/2 of lateness, T = %u ms)", (double)r.first / 1e6,
	      PACE_T_MS);
	CHECK(r.span[1] && r.span[1] < stretch, "%d looks right after a long poll took %.1f ms: not "
	      "once a threshold (%.1f ms is the least for 1.5T apart)", PACE_LOOKS,
	      (double)r.span[1] / 1e6, (double)stretch / 1e6);
	CHECK(r.nages == PACE_POLLS, "%zu of %d long polls were captured", r.nages, PACE_POLLS);
	for (size_t i = 0; i < r.nages; i++)
		CHECK(r.ages[i] >= T && r.ages[i] <= 3 * T / 2, "a long poll while long ones are around "
		      "was first captured at %.1f ms (want T to T + T/2 of lateness, T = %u ms)",
		      (double)r.ages[i] / 1e6, PACE_T_MS);
	CHECK(r.span[2], "the looks were not spaced out again within 10 s of short polls only");
}

/* A worker that keeps every signal blocked through a 700 ms poll (threshold
 * 10 ms): each capture signals it, or finds the last signal still queued and
 * stands on it; each waits the whole 50 ms for an answer that never comes.
 * One signal is queued at the end, not one a capture (each further one
 * counts against the user's RLIMIT_SIGPENDING), and each capture after the
 * first begins at the first power of two of the threshold past the end of
 * the capture before (planned from its begin, the next one came right after
 * it: at 61-70 ms, not 80). Counts and order: load only delays captures. */
static void test_deaf(void)
{
	printf("deaf\n");
	const uint64_t T = 10000000u, ANSWER = 50000000u;
	atomic_store(&deaf_queued, -1);
	char *dir = start("stall-deaf", 10, 0, 10);
	struct worker w[1] = { { .job = J_DEAF, .task0 = 900, .cpu = -1 } };
	run(w, 1);
	join(w, 1);
	finish(dir);
	int caps = 0, unanswered = 0;
	uint64_t prev_end = 0;
	for (size_t i = 0; i < R.ns; i++) {
		const struct stall *s = &R.s[i];
		if (s->task != 900)
			continue;
		print_stall(s);
		uint64_t age = s->ts - s->poll_ts;
		caps++;
		unanswered += strstr(s->reason, "did not answer") != NULL;
		if (prev_end) {
			uint64_t mark = T;
			while (mark <= prev_end)
				mark *= 2;
			CHECK(age >= mark, "capture #%llu at %.1f ms: before %.0f ms, the first power "
			      "of two of the threshold after the capture before ended (%.1f ms)",
			      (unsigned long long)s->index, (double)age / 1e6, (double)mark / 1e6,
			      (double)prev_end / 1e6);
		}
		prev_end = age + ANSWER;
	}
	int queued = atomic_load(&deaf_queued);
	printf("  %d captures, %d unanswered; %d capture signals queued at the poll's end\n", caps,
	       unanswered, queued);
	CHECK(caps >= 2 && unanswered == caps, "%d captures of the deaf poll, %d said it did not "
	      "answer", caps, unanswered);
	CHECK(queued == 1, "%d capture signals queued on a thread that blocks them (want 1)",
	      queued);
}

/* Whether a thread of this process can take a slot now: a mark from a new
 * thread, which is dropped (and counted) when no slot is free. */
static void *probe_main(void *arg)
{
	int *ok = arg;
	struct stallscope_stats a, b;
	stallscope_get_stats(&a);
	stallscope_mark(stallscope_name("probe"), 1);
	stallscope_get_stats(&b);
	*ok = b.events_dropped == a.events_dropped;
	return NULL;
}

static int slot_free(void)
{
	pthread_t th;
	int ok = 0;
	CHECK(pthread_create(&th, NULL, probe_main, &ok) == 0, "pthread_create");
	pthread_join(th, NULL);
	return ok;
}

/* One slot for the whole session: a worker blocks every signal in a poll and
 * exits inside it once a capture has signalled it (the capture is then
 * waiting for its answer). The capture ends with "ended before it answered"
 * (not "did not answer in 50 ms"), and the slot is free for a new thread
 * within 300 ms of the exit: with a flush interval of 2 s the writer's paced
 * cycles come a second apart, so the release must come from the capture's
 * end. */
static void test_exit(void)
{
	printf("exit%s\n", two_threads ? " (watchdog thread)" : "");
	for (int attempt = 1;; attempt++) {
		max_threads_cfg = 1;
		flush_ms_cfg = 2000;
		char *dir = start("stall-exit", 10, 0, 10);
		max_threads_cfg = flush_ms_cfg = 0;
		atomic_store(&exit_ret_ns, 0);
		struct worker w[1] = { { .job = J_EXIT, .task0 = 950, .cpu = -1 } };
		run(w, 1);
		join(w, 1);
		uint64_t gone = now_ns(), freed = 0;
		while (now_ns() - gone < 5000000000ull) {
			if (slot_free()) {
				freed = now_ns() - gone;
				break;
			}
			sleep_ms(2);
		}
		finish(dir);
		int ended = 0, caps = 0, late = 0;
		uint64_t ret = atomic_load(&exit_ret_ns);
		for (size_t i = 0; i < R.ns; i++) {
			const struct stall *s = &R.s[i];
			if (s->task != 950)
				continue;
			print_stall(s);
			caps++;
			ended += strstr(s->reason, "ended before it answered") != NULL;
			/* The thread still there 45 ms after the capture began (its
			 * answer is due 50 ms after the signal): "did not answer" was
			 * the truth, the machine kept the exiting thread off the CPU. */
			late += strstr(s->reason, "did not answer") != NULL && ret > s->ts + 45000000u;
		}
		printf("  slot free %.1f ms after the thread's exit\n", (double)freed / 1e6);
		if (ended == 0 && caps >= 1 && late == caps && attempt < 3) {
			printf("  again: the thread returned after its capture's answer was due (load)\n");
			continue;
		}
		/* A release kept waiting for a CPU (the paced-cycle regression frees
		 * it about a second later in every attempt). */
		if (ended == 1 && (!freed || freed >= 300000000u) && machine_loaded() && attempt < 3) {
			printf("  again: the slot came free %.1f ms after the exit on a loaded machine\n",
			       (double)freed / 1e6);
			continue;
		}
		CHECK(caps >= 1 && ended == 1, "%d captures of the poll its thread left, %d say it ended "
		      "(want 1)", caps, ended);
		CHECK(freed && freed < 300000000u, "the slot of a thread that exited while its capture "
		      "waited was free %.1f ms after (want < 300 ms; 0: not in 5 s)", (double)freed / 1e6);
		break;
	}
}

/* The descriptor a capture keeps open on /proc/self/task/TID/syscall of
 * thread tid: its number, or -1. */
static int syscall_fd(pid_t tid)
{
	char want[64];
	snprintf(want, sizeof want, "/proc/%d/task/%d/syscall", (int)getpid(), (int)tid);
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int fd = -1;
	while (d && fd < 0 && (de = readdir(d))) {
		char path[300], link[256];
		snprintf(path, sizeof path, "/proc/self/fd/%s", de->d_name);
		ssize_t n = readlink(path, link, sizeof link - 1);
		if (n > 0) {
			link[n] = 0;
			if (strcmp(link, want) == 0)
				fd = atoi(de->d_name);
		}
	}
	if (d)
		closedir(d);
	return fd;
}

static _Atomic pid_t long_tid;

static void *closed_fds_worker(void *arg)
{
	(void)arg;
	atomic_store(&long_tid, (pid_t)syscall(SYS_gettid));
	stallscope_worker_begin("test", 980);
	stallscope_poll_begin(980, 0);
	atomic_store(&spinning_task, 980);
	long_poll_body(20000000);
	atomic_store(&spinning_task, 0);
	stallscope_poll_end();
	stallscope_worker_end();
	return NULL;
}

/* A host that closes every descriptor it did not open (a daemon's
 * closefrom) closes the one a capture keeps on the worker's syscall file,
 * and its next open takes that number. The recorder must not close the
 * host's file (at a later capture, which then finds it is not its own, or at
 * stop) nor take what it reads for the syscall file: the captures after it
 * still say running. */
static void test_closed_fds(void)
{
	printf("closed-fds\n");
	char *dir = start("stall-fds", 10, 0, 10);
	atomic_store(&released_task, 0);
	pthread_t th;
	CHECK(pthread_create(&th, NULL, closed_fds_worker, NULL) == 0, "pthread_create");
	wait_spin_captures(dir, 980);
	int fd = syscall_fd(atomic_load(&long_tid));
	CHECK(fd >= 0, "no descriptor kept on the stalled worker's syscall file");
	/* Digits first: a loose reader took it for "in system call 12345". */
	char pidfile[] = "/tmp/stallscope-pidfile-XXXXXX";
	int mine = mkstemp(pidfile);
	CHECK(mine >= 0 && write(mine, "12345\n", 6) == 6, "a PID file in /tmp");
	unlink(pidfile);
	CHECK(dup2(mine, fd) == fd, "dup2");
	close(mine);
	int before = captures_seen(dir, 980, CAP_ANY);
	wait_captures(dir, 980, before + 1, CAP_ANY);
	atomic_store(&released_task, 980);
	pthread_join(th, NULL);
	finish(dir);
	int ours = fcntl(fd, F_GETFD) >= 0;
	int running_after = 0, caps = 0;
	for (size_t i = 0; i < R.ns; i++) {
		const struct stall *s = &R.s[i];
		if (s->task != 980)
			continue;
		print_stall(s);
		running_after += caps++ >= before &&
				 (s->kind == SS_STALL_RUNNING || s->kind == SS_STALL_RUNNABLE);
	}
	printf("  descriptor %d: %s after the stop; %d of %d captures after the swap running\n",
	       fd, ours ? "still the program's" : "closed", running_after, caps - before);
	CHECK(ours, "the recorder closed descriptor %d, the program's file since it closed the "
	      "recorder's", fd);
	CHECK(caps > before && running_after == caps - before, "captures after the swap: %d, "
	      "running %d", caps - before, running_after);
	close(fd);
}

static void test_long_poll(void);
static void test_blocking(void);
static void test_mutex(void);

static void test_two_threads(void)
{
	printf("two-threads\n");
	two_threads = 1;
	test_long_poll();
	test_blocking();
	test_mutex();
	test_exit();
	two_threads = 0;
}

static struct range R_child;

static void test_fork(void)
{
	printf("fork\n");
	char *dir = start("stall-fork", 10, 0, 10);
	struct worker w[1] = { { .job = J_LONG, .task0 = 400, .cpu = -1 } };
	atomic_store(&released_task, 0);
	run(w, 1);
	/* The parent's poll is open in its watchdog slot and its captures have
	 * used the capture cells when the child is made. */
	wait_spin_captures(dir, 400);
	/* The recorder's threads (ss-writer, ss-watchdog) not caught allocating:
	 * under ASan the child would wait for ever on its allocator's lock. */
	threads_asleep("ss-");
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		atomic_store(&spinning_task, 0); /* the parent's worker is not here */
		char *cdir = start("stall-fork-child", 10, 0, 10);
		stallscope_worker_begin("child", 1);
		stallscope_poll_begin(500, 0);
		fork_child_poll(cdir, 500);
		stallscope_poll_end();
		stallscope_worker_end();
		finish(cdir);
		int mine = 0, stacks = 0;
		for (size_t i = 0; i < R.ns; i++) {
			const struct stall *s = &R.s[i];
			print_stall(s);
			CHECK(s->task == 500, "the child's recording holds a capture of task %llu (the parent's)",
			      (unsigned long long)s->task);
			mine++;
			stacks += find_frame(s->frames, s->nframes, R_child) >= 0;
			CHECK(s->nframes == 0 || find_frame(s->frames, s->nframes, R_child) >= 0 ||
				      s->kind != SS_STALL_RUNNING,
			      "a running capture of the child's poll does not hold fork_child_poll: another thread's stack");
		}
		for (size_t i = 0; i < R.ne; i++)
			CHECK(R.e[i].task == 500, "the child's recording holds a STALL_END of task %llu (the parent's)",
			      (unsigned long long)R.e[i].task);
		CHECK(mine >= 1, "the child's poll held 60 ms or more has no capture");
		CHECK(stacks >= 1, "no capture of the child's poll holds fork_child_poll");
		printf("  child: %d captures of its own poll, %d with fork_child_poll in the stack\n", mine, stacks);
		fflush(NULL);
		_exit(0);
	}
	int st = 0;
	CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	for (uint64_t t = 400; t < 404; t++) {
		wait_spin_captures(dir, t);
		atomic_store(&released_task, t);
	}
	join(w, 1);
	finish(dir);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the forked child failed (status %d)", st);
	int ended = 0;
	for (size_t i = 0; i < R.ne; i++)
		ended += R.e[i].task >= 400 && R.e[i].task < 404;
	CHECK(ended == 4, "the parent's recording has %d STALL_ENDs of its 4 held polls", ended);
}

int main(int argc, char **argv)
{
	R_spin = fn_range((void *)culprit_spin, "culprit_spin");
	R_body = fn_range((void *)long_poll_body, "long_poll_body");
	R_read = fn_range((void *)culprit_blocking_read, "culprit_blocking_read");
	R_mutex = fn_range((void *)culprit_mutex_wait, "culprit_mutex_wait");
	R_yield = fn_range((void *)culprit_yield_wait, "culprit_yield_wait");
	R_child = fn_range((void *)fork_child_poll, "fork_child_poll");
	const char *only = argc > 1 ? argv[1] : NULL;
#define RUN(name, fn) if (!only || strcmp(only, name) == 0) fn()
	RUN("long-poll", test_long_poll);
	RUN("blocking", test_blocking);
	RUN("mutex", test_mutex);
	RUN("starvation", test_starvation);
	RUN("eintr", test_eintr);
	RUN("task-dumps", test_task_dumps);
	RUN("quiet", test_quiet);
	RUN("pace", test_pace);
	RUN("fork", test_fork);
	RUN("deaf", test_deaf);
	RUN("exit", test_exit);
	RUN("closed-fds", test_closed_fds);
	RUN("two-threads", test_two_threads);
	printf("PASS\n");
	return 0;
}

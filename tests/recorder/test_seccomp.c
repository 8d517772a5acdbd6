/*
 * test_seccomp.c - the hook path makes no system call, proven by the kernel.
 *
 * A worker thread attaches (stallscope_worker_begin, a control call that may make
 * system calls), then confines itself with seccomp so that only read, write, exit
 * and sigreturn are allowed and any other system call is fatal. It then makes
 * ~1,000,000 hooks of every kind (poll, park, spawn, terminate, wake, queue, mark,
 * span) into a ring small enough to overflow, so the drop path runs too, and
 * leaves with a raw SYS_exit. Surviving that is the proof; the trace must then
 * balance exactly: decoded events + LOSS counts == produced.
 *
 * The confinement is SECCOMP_MODE_STRICT when the clock works under it. On x86,
 * strict mode also disables the TSC for the thread (TIF_NOTSC), so a vDSO
 * clock_gettime() on the tsc clocksource faults (SIGSEGV) without making any
 * system call; there the same allow-list is installed as a SECCOMP_MODE_FILTER
 * program whose default action is SECCOMP_RET_KILL_PROCESS, which proves the same
 * thing and leaves the TSC alone. A probe child decides which mode is usable.
 *
 * Everything runs in forked children, so a killed thread or process cannot take
 * the test runner's process with it; the parent checks the child's status and
 * decodes the directory. CPU sampling is off: this is about the hooks. Skips (77)
 * when the kernel has no seccomp, or when clock_gettime() is a system call here
 * (no vDSO clock: no hook can be syscall-free on such a machine).
 */
#include <stallscope/stallscope.h>

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "trace_check.h"

#define ITERATIONS 90910u   /* 11 hooks each: 1,000,010 hooks */
#define HOOKS_PER_ITER 11u

static uint32_t loc, name_span, name_mark;
static _Atomic int thread_state; /* 0 running, 1 finished the loop, -errno prctl failed */
static int use_filter;           /* 1: the filter program, 0: SECCOMP_MODE_STRICT */

#if defined(__x86_64__)
#define TEST_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define TEST_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

/* Strict mode's allow-list as a filter: read, write, exit, rt_sigreturn; anything
 * else kills the whole process (SIGSYS). Applies to the calling thread only. */
static int enter_filter(void)
{
	struct sock_filter f[] = {
#ifdef TEST_AUDIT_ARCH
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TEST_AUDIT_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
#endif
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_read, 4, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_write, 3, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_exit, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_rt_sigreturn, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = (unsigned short)(sizeof f / sizeof f[0]), .filter = f};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
}

static int confine(void)
{
	return use_filter ? enter_filter() : prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT, 0, 0, 0);
}

static void *strict_worker(void *arg)
{
	(void)arg;
	stallscope_worker_begin("seccomp", 0); /* attaches: gettid etc. happen here */
	if (confine() != 0) {
		atomic_store(&thread_state, -errno);
		return NULL;
	}
	/* From here on, any system call but read/write/exit/sigreturn is fatal. */
	for (uint32_t i = 0; i < ITERATIONS; i++) {
		uint64_t task = (uint64_t)i + 1;
		stallscope_poll_begin(task, loc);
		stallscope_span_begin(name_span);
		stallscope_mark(name_mark, -(int64_t)i);
		stallscope_queue_depth(i, i / 2);
		stallscope_task_spawn(task + 1000000, loc);
		stallscope_task_wake(task + 1000000);
		stallscope_span_end(name_span);
		stallscope_poll_end();
		stallscope_task_terminate(task);
		stallscope_park();
		stallscope_unpark();
	}
	atomic_store(&thread_state, 1);
	/* Not a return: glibc's thread exit path may make other system calls. */
	syscall(SYS_exit, 0);
	return NULL;
}

/* The recording child. Exit 0: done; 2: the thread was killed; 1: other failure. */
static int child_main(const char *dir)
{
	struct stallscope_config cfg;
	stallscope_config_init(&cfg);
	cfg.output_dir = dir;
	cfg.file_prefix = "sc";
	cfg.cpu_sampling = 0;
	cfg.buffer_events = 4096;
	cfg.max_file_size = 1ull << 30;
	cfg.rotation_count = 100;
	loc = STALLSCOPE_LOCATION();
	name_span = STALLSCOPE_NAME("strict-span");
	name_mark = STALLSCOPE_NAME("strict-mark");
	if (stallscope_start(&cfg) != 0) {
		fprintf(stderr, "child: start: %s\n", stallscope_last_error());
		return 1;
	}
	pthread_t th;
	if (pthread_create(&th, NULL, strict_worker, NULL) != 0)
		return 1;
	pthread_join(th, NULL);
	int st = atomic_load(&thread_state);
	if (stallscope_stop() != 0) {
		fprintf(stderr, "child: stop: %s\n", stallscope_last_error());
		return 1;
	}
	if (st < 0) {
		fprintf(stderr, "child: entering seccomp: %s\n", strerror(-st));
		return 1;
	}
	if (st != 1) {
		fprintf(stderr, "child: the strict thread did not finish its hooks (killed by seccomp: "
				"a hook made a system call)\n");
		return 2;
	}
	return 0;
}

/* Runs clock_gettime(CLOCK_MONOTONIC) confined in a child; returns its status. */
static int probe(int filter)
{
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		use_filter = filter;
		if (confine() != 0)
			_exit(errno == EINVAL ? 77 : 1);
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		syscall(SYS_exit, 0);
		_exit(1);
	}
	int status;
	CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
	return status;
}

static void choose_mode(void)
{
	int status = probe(0);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		printf("seccomp: using SECCOMP_MODE_STRICT\n");
		return;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
		SKIP("seccomp is not available (prctl(PR_SET_SECCOMP) returned EINVAL)");
	CHECK(WIFSIGNALED(status), "strict probe child status %#x", status);
	/* SIGSEGV: strict mode disabled the TSC (TIF_NOTSC) and the vDSO clock faulted
	 * (under ASan its fault handler's system calls then turn that into SIGKILL).
	 * SIGKILL: the clock may also be a real system call. The filter tells which. */
	int strict_sig = WTERMSIG(status);
	status = probe(1);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
		SKIP("seccomp filters are not available (EINVAL)");
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS)
		SKIP("clock_gettime(CLOCK_MONOTONIC) is a system call here, so no hook can be "
		     "syscall-free on this machine");
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "filter probe child status %#x", status);
	use_filter = 1;
	printf("seccomp: the clock dies under strict mode here (signal %d: strict mode disables "
	       "the TSC); using a SECCOMP_MODE_FILTER program with the same allow-list\n",
	       strict_sig);
}

int main(void)
{
	choose_mode();
	char *dir = tc_tmpdir("seccomp");
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0)
		_exit(child_main(dir));
	int status;
	CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
	CHECK(!WIFSIGNALED(status), "the recording child was killed by signal %d",
	      WTERMSIG(status));
	CHECK(WIFEXITED(status), "child status %#x", status);
	CHECK(WEXITSTATUS(status) == 0, "child exited with %d", WEXITSTATUS(status));
	/* (A system call on the hook path would have killed the child: SIGKILL in strict
	 * mode, SIGSYS with the filter; status 2 if only the thread died.) */

	struct tc_trace t;
	CHECK(tc_load_dir(&t, dir, "sc", false) == 0, "load");
	CHECK(t.nsegs >= 1, "no segment");
	CHECK(t.header_failures == 0 && t.corrupt_segments == 0 && t.truncated_segments == 0,
	      "damaged segments");
	for (size_t i = 0; i < t.nsegs; i++)
		CHECK(t.segs[i].sealed, "%s not sealed", t.segs[i].path);
	/* The thread never ran its exit path, so there is no THREAD_EXIT to discount. */
	uint64_t produced = 1 /* WORKER_BEGIN */ + (uint64_t)ITERATIONS * HOOKS_PER_ITER;
	uint64_t decoded = tc_real_events(&t);
	CHECK(t.by_type[SS_REC_THREAD_EXIT] == 0, "THREAD_EXIT of a thread that left by SYS_exit");
	CHECK(t.by_type[SS_REC_WORKER_BEGIN] == 1, "WORKER_BEGIN %llu",
	      (unsigned long long)t.by_type[SS_REC_WORKER_BEGIN]);
	CHECK(decoded + t.lost == produced, "decoded %llu + lost %llu != produced %llu",
	      (unsigned long long)decoded, (unsigned long long)t.lost, (unsigned long long)produced);
	CHECK(t.lost == t.lost_by_reason[SS_LOSS_BUFFER_FULL], "loss reasons other than buffer full");
	static const uint8_t kinds[] = {SS_REC_POLL_BEGIN, SS_REC_POLL_END, SS_REC_PARK,
					SS_REC_UNPARK, SS_REC_SPAWN, SS_REC_TERMINATE, SS_REC_WAKE,
					SS_REC_QUEUE, SS_REC_MARK, SS_REC_SPAN_BEGIN, SS_REC_SPAN_END};
	for (size_t i = 0; i < sizeof kinds; i++)
		CHECK(t.by_type[kinds[i]] > 0, "no record of type 0x%x", kinds[i]);
	printf("seccomp: %llu hooks under SECCOMP_MODE_%s: %llu decoded, %llu lost\n",
	       (unsigned long long)produced, use_filter ? "FILTER" : "STRICT", (unsigned long long)decoded, (unsigned long long)t.lost);
	tc_free(&t);
	tc_rmrf(dir);
	free(dir);
	printf("seccomp: ok\n");
	return 0;
}

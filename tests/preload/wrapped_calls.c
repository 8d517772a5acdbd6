/*
 * wrapped_calls.c - calls every function family the preload shim wraps and
 * checks what a program sees: return values and errno, for a timeout, an error
 * (EBADF, EINVAL) and an interruption by a signal (EINTR, the handler installed
 * without SA_RESTART). It does not link libstallscope: test_preload.sh runs it
 * plain and under `stallscope record` (shim loaded, recording on) and both runs
 * must pass. errno is primed with a sentinel before each call so a wrapper that
 * touched errno on success would show.
 *
 * usage: wrapped_calls [fork|exec]   (fork: also fork a child that waits, for the
 *                               --follow-children test; exec: a failed execv)
 */
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "soft_check.h"
#include "threads_asleep.h"

#define SENTINEL 12345

static void on_alarm(int sig)
{
	(void)sig;
}

/* Interrupts the calling thread's next blocking call: SIGALRM every 20 ms until
 * disarm_interrupt. Not once: on a loaded machine a single signal can land before
 * the thread reaches the call, which then waits for ever (no timeout) or until
 * its timeout, with no EINTR to see. */
static void arm_interrupt(void)
{
	struct itimerval it = { {0, 20000}, {0, 20000} };
	setitimer(ITIMER_REAL, &it, NULL);
}

static void disarm_interrupt(void)
{
	struct itimerval it = { {0, 0}, {0, 0} };
	setitimer(ITIMER_REAL, &it, NULL);
}

static struct timespec in_ms(clockid_t clk, long ms)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	ts.tv_nsec += ms * 1000000L;
	ts.tv_sec += ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	return ts;
}

static void test_poll_family(void)
{
	int p[2];
	CHECK(pipe(p) == 0, "pipe");
	struct pollfd fd = { .fd = p[0], .events = POLLIN };
	errno = SENTINEL;
	CHECK(poll(&fd, 1, 10) == 0 && errno == SENTINEL, "poll timeout: %d", errno);
	arm_interrupt();
	errno = SENTINEL;
	CHECK(poll(&fd, 1, 2000) == -1 && errno == EINTR, "poll EINTR: errno %d", errno);
	disarm_interrupt();
	CHECK(write(p[1], "x", 1) == 1, "write");
	errno = SENTINEL;
	CHECK(poll(&fd, 1, 1000) == 1 && errno == SENTINEL && (fd.revents & POLLIN), "poll ready");
	errno = SENTINEL;
	CHECK(poll(&fd, 1, 0) == 1 && errno == SENTINEL, "poll zero timeout");
	char c;
	CHECK(read(p[0], &c, 1) == 1, "read");
	struct timespec ts = { 0, 10000000 };
	errno = SENTINEL;
	CHECK(ppoll(&fd, 1, &ts, NULL) == 0 && errno == SENTINEL, "ppoll timeout");
	arm_interrupt();
	errno = SENTINEL;
	CHECK(ppoll(&fd, 1, NULL, NULL) == -1 && errno == EINTR, "ppoll EINTR: %d", errno);
	disarm_interrupt();
	/* select: a timeout, a bad descriptor, EINTR */
	fd_set rd;
	FD_ZERO(&rd);
	FD_SET(p[0], &rd);
	struct timeval tv = { 0, 10000 };
	errno = SENTINEL;
	CHECK(select(p[0] + 1, &rd, NULL, NULL, &tv) == 0 && errno == SENTINEL, "select timeout");
	FD_ZERO(&rd);
	FD_SET(p[0], &rd);
	close(p[1]);
	int bad = p[1];
	fd_set bd;
	FD_ZERO(&bd);
	FD_SET(bad, &bd);
	tv = (struct timeval){ 1, 0 };
	errno = SENTINEL;
	CHECK(select(bad + 1, &bd, NULL, NULL, &tv) == -1 && errno == EBADF, "select EBADF: %d", errno);
	arm_interrupt();
	sigset_t none;
	sigemptyset(&none);
	int q[2];
	CHECK(pipe(q) == 0, "pipe");
	fd_set qd;
	FD_ZERO(&qd);
	FD_SET(q[0], &qd);
	errno = SENTINEL;
	CHECK(pselect(q[0] + 1, &qd, NULL, NULL, NULL, &none) == -1 && errno == EINTR,
	      "pselect EINTR: %d", errno);
	disarm_interrupt();
	close(q[0]);
	close(q[1]);
	close(p[0]);
}

/* Built with -D_FORTIFY_SOURCE=2 and a non-constant count, these calls become
 * __poll_chk / __ppoll_chk (fortify_calls.c). */
int fortified_poll(struct pollfd *fds, nfds_t n, int timeout);
int fortified_ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts);

static void test_fortified(void)
{
	int p[2];
	CHECK(pipe(p) == 0, "pipe");
	struct pollfd fd = { .fd = p[0], .events = POLLIN };
	errno = SENTINEL;
	CHECK(fortified_poll(&fd, 1, 10) == 0 && errno == SENTINEL, "__poll_chk timeout");
	arm_interrupt();
	errno = SENTINEL;
	CHECK(fortified_poll(&fd, 1, 2000) == -1 && errno == EINTR, "__poll_chk EINTR");
	disarm_interrupt();
	struct timespec ts = { 0, 10000000 };
	errno = SENTINEL;
	CHECK(fortified_ppoll(&fd, 1, &ts) == 0 && errno == SENTINEL, "__ppoll_chk timeout");
	close(p[0]);
	close(p[1]);
}

static void test_epoll(void)
{
	int ep = epoll_create1(EPOLL_CLOEXEC);
	int p[2];
	CHECK(ep >= 0 && pipe(p) == 0, "epoll_create1/pipe");
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = p[0] }, out[4];
	CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev) == 0, "epoll_ctl");
	errno = SENTINEL;
	CHECK(epoll_wait(ep, out, 4, 10) == 0 && errno == SENTINEL, "epoll_wait timeout");
	arm_interrupt();
	errno = SENTINEL;
	CHECK(epoll_wait(ep, out, 4, -1) == -1 && errno == EINTR, "epoll_wait EINTR: %d", errno);
	disarm_interrupt();
	errno = SENTINEL;
	CHECK(epoll_wait(p[1], out, 4, 10) == -1 && errno == EINVAL, "epoll_wait EINVAL: %d", errno);
	errno = SENTINEL;
	CHECK(epoll_wait(ep, out, 0, 10) == -1 && errno == EINVAL, "epoll_wait maxevents 0");
	CHECK(write(p[1], "x", 1) == 1, "write");
	errno = SENTINEL;
	CHECK(epoll_wait(ep, out, 4, 1000) == 1 && out[0].data.fd == p[0] && errno == SENTINEL,
	      "epoll_wait ready");
	sigset_t none;
	sigemptyset(&none);
	char c;
	CHECK(read(p[0], &c, 1) == 1, "read");
	errno = SENTINEL;
	CHECK(epoll_pwait(ep, out, 4, 10, &none) == 0 && errno == SENTINEL, "epoll_pwait timeout");
	arm_interrupt();
	errno = SENTINEL;
	CHECK(epoll_pwait(ep, out, 4, -1, &none) == -1 && errno == EINTR, "epoll_pwait EINTR");
	disarm_interrupt();
	struct timespec ts = { 0, 10000000 };
	errno = SENTINEL;
	int r = epoll_pwait2(ep, out, 4, &ts, NULL);
	CHECK((r == 0 && errno == SENTINEL) || (r == -1 && errno == ENOSYS), "epoll_pwait2 timeout");
	close(p[0]);
	close(p[1]);
	close(ep);
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int flag;

static void *signaller(void *arg)
{
	(void)arg;
	struct timespec d = { 0, 20000000 };
	nanosleep(&d, NULL);
	pthread_mutex_lock(&mu);
	flag = 1;
	pthread_cond_signal(&cv);
	pthread_mutex_unlock(&mu);
	return NULL;
}

static void test_cond_sem(void)
{
	/* pthread_cond_* return the error; errno stays as it was */
	pthread_mutex_lock(&mu);
	struct timespec t = in_ms(CLOCK_REALTIME, 10);
	errno = SENTINEL;
	CHECK(pthread_cond_timedwait(&cv, &mu, &t) == ETIMEDOUT && errno == SENTINEL,
	      "cond_timedwait ETIMEDOUT");
	t = in_ms(CLOCK_MONOTONIC, 10);
	errno = SENTINEL;
	CHECK(pthread_cond_clockwait(&cv, &mu, CLOCK_MONOTONIC, &t) == ETIMEDOUT && errno == SENTINEL,
	      "cond_clockwait ETIMEDOUT");
	errno = SENTINEL;
	CHECK(pthread_cond_clockwait(&cv, &mu, CLOCK_PROCESS_CPUTIME_ID, &t) == EINVAL &&
	      errno == SENTINEL, "cond_clockwait EINVAL");
	pthread_t th;
	flag = 0;
	CHECK(pthread_create(&th, NULL, signaller, NULL) == 0, "pthread_create");
	errno = SENTINEL;
	int r = 0;
	while (!flag && r == 0)
		r = pthread_cond_wait(&cv, &mu);
	CHECK(r == 0 && flag && errno == SENTINEL, "cond_wait woken");
	pthread_mutex_unlock(&mu);
	CHECK(pthread_join(th, NULL) == 0, "join");

	/* semaphores set errno */
	sem_t s;
	sem_init(&s, 0, 0);
	t = in_ms(CLOCK_REALTIME, 10);
	errno = SENTINEL;
	CHECK(sem_timedwait(&s, &t) == -1 && errno == ETIMEDOUT, "sem_timedwait ETIMEDOUT: %d", errno);
	t = in_ms(CLOCK_MONOTONIC, 10);
	errno = SENTINEL;
	CHECK(sem_clockwait(&s, CLOCK_MONOTONIC, &t) == -1 && errno == ETIMEDOUT, "sem_clockwait");
	arm_interrupt();
	errno = SENTINEL;
	CHECK(sem_wait(&s) == -1 && errno == EINTR, "sem_wait EINTR: %d", errno);
	disarm_interrupt();
	sem_post(&s);
	errno = SENTINEL;
	CHECK(sem_wait(&s) == 0 && errno == SENTINEL, "sem_wait");
	t = (struct timespec){ 0, 2000000000L }; /* tv_nsec out of range */
	errno = SENTINEL;
	CHECK(sem_timedwait(&s, &t) == -1 && errno == EINVAL, "sem_timedwait EINVAL: %d", errno);
	sem_destroy(&s);
}

/* The compat symbol version of pthread_cond_timedwait (GLIBC_2.2.5), as a program
 * built before 2003 would import it: the shim forwards it to the same version. */
int compat_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *t);
int compat_cond_destroy(pthread_cond_t *c);

static void test_compat(void)
{
	pthread_cond_t c;
	memset(&c, 0, sizeof c);
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutex_lock(&m);
	struct timespec t = in_ms(CLOCK_REALTIME, 10);
	errno = SENTINEL;
	CHECK(compat_cond_timedwait(&c, &m, &t) == ETIMEDOUT && errno == SENTINEL,
	      "compat cond_timedwait");
	pthread_mutex_unlock(&m);
	compat_cond_destroy(&c);
}

/* liburing, when installed, through the global scope (the shim's wrappers come
 * first there, as for a program linked with -luring). */
static void test_uring(void)
{
	void *h = dlopen("liburing.so.2", RTLD_NOW | RTLD_GLOBAL);
	if (!h) {
		printf("io_uring: skipped (liburing.so.2 not installed)\n");
		return;
	}
	int (*init)(unsigned, void *, unsigned) = (int (*)(unsigned, void *, unsigned))dlsym(h, "io_uring_queue_init");
	void (*fini)(void *) = (void (*)(void *))dlsym(h, "io_uring_queue_exit");
	int (*wait_to)(void *, void **, void *) =
		(int (*)(void *, void **, void *))dlsym(RTLD_DEFAULT, "io_uring_wait_cqe_timeout");
	int (*wait_cqes)(void *, void **, unsigned, void *, void *) =
		(int (*)(void *, void **, unsigned, void *, void *))dlsym(RTLD_DEFAULT, "io_uring_wait_cqes");
	CHECK(init && fini && wait_to && wait_cqes, "liburing symbols");
	if (!init || !fini || !wait_to || !wait_cqes)
		return;
	static _Alignas(64) unsigned char ring[1024]; /* struct io_uring is ~216 bytes */
	int r = init(8, ring, 0);
	if (r < 0) {
		printf("io_uring: skipped (io_uring_queue_init: %s)\n", strerror(-r));
		return;
	}
	struct { long long tv_sec, tv_nsec; } ts = { 0, 10000000 };
	void *cqe = NULL;
	errno = SENTINEL;
	r = wait_to(ring, &cqe, &ts);
	CHECK(r == -ETIME && errno == SENTINEL, "io_uring_wait_cqe_timeout: %d", r);
	errno = SENTINEL;
	r = wait_cqes(ring, &cqe, 1, &ts, NULL);
	CHECK(r == -ETIME && errno == SENTINEL, "io_uring_wait_cqes: %d", r);
	fini(ring);
	printf("io_uring: ok\n");
}

/* Each family on a thread of its own, named after it, so the recording can be
 * checked lane by lane: the first file-descriptor wait makes a thread an event
 * loop, after which a condition wait would be part of an iteration. */
struct family {
	const char *name;
	void (*fn)(void);
};

static void *family_main(void *arg)
{
	const struct family *f = arg;
	pthread_setname_np(pthread_self(), f->name);
	f->fn();
	return NULL;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_alarm }; /* no SA_RESTART: EINTR */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	static const struct family fams[] = {
		{"w-poll", test_poll_family}, {"w-fortify", test_fortified}, {"w-epoll", test_epoll},
		{"w-cond-sem", test_cond_sem}, {"w-compat", test_compat}, {"w-uring", test_uring},
	};
	for (size_t i = 0; i < sizeof fams / sizeof fams[0]; i++) {
		/* SIGALRM goes to whichever thread does not block it: only this one. */
		sigset_t alrm;
		sigemptyset(&alrm);
		sigaddset(&alrm, SIGALRM);
		pthread_sigmask(SIG_BLOCK, &alrm, NULL);
		pthread_t th;
		sigset_t none;
		sigemptyset(&none);
		pthread_attr_t at;
		pthread_attr_init(&at);
		pthread_attr_setsigmask_np(&at, &none);
		CHECK(pthread_create(&th, &at, family_main, (void *)&fams[i]) == 0, "thread");
		pthread_attr_destroy(&at);
		pthread_join(th, NULL);
		pthread_sigmask(SIG_UNBLOCK, &alrm, NULL);
	}
	if (argc > 1 && !strcmp(argv[1], "exec")) {
		/* A failed exec: the recording is sealed before it and restarted after,
		 * and the program sees exec's own result. */
		char *const args[] = { (char *)"/nonexistent/program", NULL };
		errno = SENTINEL;
		CHECK(execv(args[0], args) == -1 && errno == ENOENT, "failed execv: errno %d", errno);
		for (int i = 0; i < 3; i++)
			poll(NULL, 0, 5);
	}
	if (argc > 1 && !strcmp(argv[1], "fork")) {
		threads_asleep(NULL); /* threads_asleep.h says why */
		pid_t p = fork();
		if (p == 0) {
			/* The child waits a few times, then leaves with _exit. */
			for (int i = 0; i < 5; i++)
				poll(NULL, 0, 5);
			_exit(0);
		}
		int st = 0;
		CHECK(p > 0 && waitpid(p, &st, 0) == p && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "forked child");
	}
	printf("wrapped_calls: %s (%d failed checks)\n", failures ? "FAIL" : "ok", failures);
	return failures ? 1 : 0;
}

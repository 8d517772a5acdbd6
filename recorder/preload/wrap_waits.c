/*
 * wrap_waits.c - the calls where a thread waits for work, wrapped: each one
 * that can block is a park, and on a thread that waits on file descriptors the
 * time between two such waits is a loop iteration (recorder/src/shim_lanes.c).
 *
 * Wrapped (glibc 2.36 and liburing 2.x names, as programs import them):
 *   epoll_wait, epoll_pwait, epoll_pwait2; poll, __poll_chk, ppoll, __ppoll_chk;
 *   select, pselect; __io_uring_get_cqe (behind the inline io_uring_wait_cqe,
 *   io_uring_peek_cqe ...), io_uring_wait_cqes, io_uring_wait_cqe_timeout,
 *   io_uring_submit_and_wait, io_uring_submit_and_wait_timeout;
 *   pthread_cond_wait and pthread_cond_timedwait (both symbol versions,
 *   GLIBC_2.3.2 and the GLIBC_2.2.5 compat one, each forwarded to its own),
 *   pthread_cond_clockwait; sem_wait, sem_timedwait, sem_clockwait.
 * A call that cannot block (zero timeout, io_uring wait_nr 0) is passed through
 * untouched: it is a check, not a wait.
 *
 * Return values are the real call's, errno is what the real call left (and what
 * the caller left going in), no signal is blocked or changed, and nothing
 * allocates or locks: the recording costs one clock read before and one after.
 */
#include "preload.h"

#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stddef.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <time.h>

/* ---- epoll ---------------------------------------------------------------------- */

static int (*r_epoll_wait)(int, struct epoll_event *, int, int);
static int (*r_epoll_pwait)(int, struct epoll_event *, int, int, const sigset_t *);
static int (*r_epoll_pwait2)(int, struct epoll_event *, int, const struct timespec *,
			     const sigset_t *);

static int ts_zero(const struct timespec *ts)
{
	return ts && ts->tv_sec == 0 && ts->tv_nsec == 0;
}

int epoll_wait(int epfd, struct epoll_event *ev, int maxevents, int timeout)
{
	__typeof__(r_epoll_wait) f = SS_REAL(r_epoll_wait, "epoll_wait", NULL);
	if (timeout == 0)
		return f(epfd, ev, maxevents, timeout);
	SS_WAIT_CALL(SS_SHIM_WAIT_EPOLL, int, f(epfd, ev, maxevents, timeout));
}

int epoll_pwait(int epfd, struct epoll_event *ev, int maxevents, int timeout,
		const sigset_t *sigmask)
{
	__typeof__(r_epoll_pwait) f = SS_REAL(r_epoll_pwait, "epoll_pwait", NULL);
	if (timeout == 0)
		return f(epfd, ev, maxevents, timeout, sigmask);
	SS_WAIT_CALL(SS_SHIM_WAIT_EPOLL, int, f(epfd, ev, maxevents, timeout, sigmask));
}

int epoll_pwait2(int epfd, struct epoll_event *ev, int maxevents, const struct timespec *timeout,
		 const sigset_t *sigmask)
{
	__typeof__(r_epoll_pwait2) f = SS_REAL(r_epoll_pwait2, "epoll_pwait2", NULL);
	if (ts_zero(timeout))
		return f(epfd, ev, maxevents, timeout, sigmask);
	SS_WAIT_CALL(SS_SHIM_WAIT_EPOLL, int, f(epfd, ev, maxevents, timeout, sigmask));
}

/* ---- poll and select -------------------------------------------------------------- */

static int (*r_poll)(struct pollfd *, nfds_t, int);
static int (*r_poll_chk)(struct pollfd *, nfds_t, int, size_t);
static int (*r_ppoll)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
static int (*r_ppoll_chk)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *,
			  size_t);
static int (*r_select)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
static int (*r_pselect)(int, fd_set *, fd_set *, fd_set *, const struct timespec *,
			const sigset_t *);

int poll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	__typeof__(r_poll) f = SS_REAL(r_poll, "poll", NULL);
	if (timeout == 0)
		return f(fds, nfds, timeout);
	SS_WAIT_CALL(SS_SHIM_WAIT_POLL, int, f(fds, nfds, timeout));
}

/* Fortified builds call this instead of poll (-D_FORTIFY_SOURCE, nfds not a
 * constant); the real one checks fdslen and aborts as it always did. */
int __poll_chk(struct pollfd *fds, nfds_t nfds, int timeout, size_t fdslen);
int __poll_chk(struct pollfd *fds, nfds_t nfds, int timeout, size_t fdslen)
{
	__typeof__(r_poll_chk) f = SS_REAL(r_poll_chk, "__poll_chk", NULL);
	if (timeout == 0)
		return f(fds, nfds, timeout, fdslen);
	SS_WAIT_CALL(SS_SHIM_WAIT_POLL, int, f(fds, nfds, timeout, fdslen));
}

int ppoll(struct pollfd *fds, nfds_t nfds, const struct timespec *timeout, const sigset_t *sigmask)
{
	__typeof__(r_ppoll) f = SS_REAL(r_ppoll, "ppoll", NULL);
	if (ts_zero(timeout))
		return f(fds, nfds, timeout, sigmask);
	SS_WAIT_CALL(SS_SHIM_WAIT_POLL, int, f(fds, nfds, timeout, sigmask));
}

int __ppoll_chk(struct pollfd *fds, nfds_t nfds, const struct timespec *timeout,
		const sigset_t *sigmask, size_t fdslen);
int __ppoll_chk(struct pollfd *fds, nfds_t nfds, const struct timespec *timeout,
		const sigset_t *sigmask, size_t fdslen)
{
	__typeof__(r_ppoll_chk) f = SS_REAL(r_ppoll_chk, "__ppoll_chk", NULL);
	if (ts_zero(timeout))
		return f(fds, nfds, timeout, sigmask, fdslen);
	SS_WAIT_CALL(SS_SHIM_WAIT_POLL, int, f(fds, nfds, timeout, sigmask, fdslen));
}

int select(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, struct timeval *timeout)
{
	__typeof__(r_select) f = SS_REAL(r_select, "select", NULL);
	if (timeout && timeout->tv_sec == 0 && timeout->tv_usec == 0)
		return f(nfds, rd, wr, ex, timeout);
	SS_WAIT_CALL(SS_SHIM_WAIT_SELECT, int, f(nfds, rd, wr, ex, timeout));
}

int pselect(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, const struct timespec *timeout,
	    const sigset_t *sigmask)
{
	__typeof__(r_pselect) f = SS_REAL(r_pselect, "pselect", NULL);
	if (ts_zero(timeout))
		return f(nfds, rd, wr, ex, timeout, sigmask);
	SS_WAIT_CALL(SS_SHIM_WAIT_SELECT, int, f(nfds, rd, wr, ex, timeout, sigmask));
}

/* ---- io_uring (liburing's exported functions; its own raw syscalls are not seen) -- */

struct io_uring;
struct io_uring_cqe;
struct __kernel_timespec;

static int (*r_get_cqe)(struct io_uring *, struct io_uring_cqe **, unsigned, unsigned, sigset_t *);
static int (*r_wait_cqes)(struct io_uring *, struct io_uring_cqe **, unsigned,
			  struct __kernel_timespec *, sigset_t *);
static int (*r_wait_cqe_timeout)(struct io_uring *, struct io_uring_cqe **,
				 struct __kernel_timespec *);
static int (*r_submit_and_wait)(struct io_uring *, unsigned);
static int (*r_submit_and_wait_timeout)(struct io_uring *, struct io_uring_cqe **, unsigned,
					struct __kernel_timespec *, sigset_t *);

/* liburing returns -errno and leaves errno alone; a library we cannot find is
 * answered the same way. */
#define URING_REAL(ptr, name)                                                        \
	__typeof__(ptr) f = SS_REAL(ptr, name, NULL);                                \
	if (!f)                                                                      \
		return -ENOSYS

int __io_uring_get_cqe(struct io_uring *ring, struct io_uring_cqe **cqe, unsigned submit,
		       unsigned wait_nr, sigset_t *sigmask);
int __io_uring_get_cqe(struct io_uring *ring, struct io_uring_cqe **cqe, unsigned submit,
		       unsigned wait_nr, sigset_t *sigmask)
{
	URING_REAL(r_get_cqe, "__io_uring_get_cqe");
	if (wait_nr == 0)
		return f(ring, cqe, submit, wait_nr, sigmask);
	SS_WAIT_CALL(SS_SHIM_WAIT_URING, int, f(ring, cqe, submit, wait_nr, sigmask));
}

int io_uring_wait_cqes(struct io_uring *ring, struct io_uring_cqe **cqe, unsigned wait_nr,
		       struct __kernel_timespec *ts, sigset_t *sigmask);
int io_uring_wait_cqes(struct io_uring *ring, struct io_uring_cqe **cqe, unsigned wait_nr,
		       struct __kernel_timespec *ts, sigset_t *sigmask)
{
	URING_REAL(r_wait_cqes, "io_uring_wait_cqes");
	if (wait_nr == 0)
		return f(ring, cqe, wait_nr, ts, sigmask);
	SS_WAIT_CALL(SS_SHIM_WAIT_URING, int, f(ring, cqe, wait_nr, ts, sigmask));
}

int io_uring_wait_cqe_timeout(struct io_uring *ring, struct io_uring_cqe **cqe,
			      struct __kernel_timespec *ts);
int io_uring_wait_cqe_timeout(struct io_uring *ring, struct io_uring_cqe **cqe,
			      struct __kernel_timespec *ts)
{
	URING_REAL(r_wait_cqe_timeout, "io_uring_wait_cqe_timeout");
	SS_WAIT_CALL(SS_SHIM_WAIT_URING, int, f(ring, cqe, ts));
}

int io_uring_submit_and_wait(struct io_uring *ring, unsigned wait_nr);
int io_uring_submit_and_wait(struct io_uring *ring, unsigned wait_nr)
{
	URING_REAL(r_submit_and_wait, "io_uring_submit_and_wait");
	if (wait_nr == 0)
		return f(ring, wait_nr);
	SS_WAIT_CALL(SS_SHIM_WAIT_URING, int, f(ring, wait_nr));
}

int io_uring_submit_and_wait_timeout(struct io_uring *ring, struct io_uring_cqe **cqe,
				     unsigned wait_nr, struct __kernel_timespec *ts,
				     sigset_t *sigmask);
int io_uring_submit_and_wait_timeout(struct io_uring *ring, struct io_uring_cqe **cqe,
				     unsigned wait_nr, struct __kernel_timespec *ts,
				     sigset_t *sigmask)
{
	URING_REAL(r_submit_and_wait_timeout, "io_uring_submit_and_wait_timeout");
	if (wait_nr == 0)
		return f(ring, cqe, wait_nr, ts, sigmask);
	SS_WAIT_CALL(SS_SHIM_WAIT_URING, int, f(ring, cqe, wait_nr, ts, sigmask));
}

/* ---- condition variables and semaphores ------------------------------------------- */

/* Two versions of the condition-variable calls exist on x86-64: GLIBC_2.3.2 (what
 * every program built since 2003 imports) and the GLIBC_2.2.5 compat ones. The shim
 * defines both, bound by preload.map and the .symver lines, and forwards each to
 * its own. */
typedef int (*cond_wait_fn)(pthread_cond_t *, pthread_mutex_t *);
typedef int (*cond_timedwait_fn)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
static cond_wait_fn r_cw, r_cw_compat;
static cond_timedwait_fn r_ctw, r_ctw_compat;
static int (*r_cond_clockwait)(pthread_cond_t *, pthread_mutex_t *, clockid_t,
			       const struct timespec *);
static int (*r_sem_wait)(sem_t *);
static int (*r_sem_timedwait)(sem_t *, const struct timespec *);
static int (*r_sem_clockwait)(sem_t *, clockid_t, const struct timespec *);

int ss_cond_wait(pthread_cond_t *c, pthread_mutex_t *m);
int ss_cond_wait_compat(pthread_cond_t *c, pthread_mutex_t *m);
int ss_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *t);
int ss_cond_timedwait_compat(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *t);
__asm__(".symver ss_cond_wait, pthread_cond_wait@@GLIBC_2.3.2");
__asm__(".symver ss_cond_wait_compat, pthread_cond_wait@GLIBC_2.2.5");
__asm__(".symver ss_cond_timedwait, pthread_cond_timedwait@@GLIBC_2.3.2");
__asm__(".symver ss_cond_timedwait_compat, pthread_cond_timedwait@GLIBC_2.2.5");

int ss_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	cond_wait_fn f = SS_REAL(r_cw, "pthread_cond_wait", "GLIBC_2.3.2");
	SS_WAIT_CALL(SS_SHIM_WAIT_WORK, int, f(c, m));
}

int ss_cond_wait_compat(pthread_cond_t *c, pthread_mutex_t *m)
{
	cond_wait_fn f = SS_REAL(r_cw_compat, "pthread_cond_wait", "GLIBC_2.2.5");
	SS_WAIT_CALL(SS_SHIM_WAIT_WORK, int, f(c, m));
}

int ss_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *t)
{
	cond_timedwait_fn f = SS_REAL(r_ctw, "pthread_cond_timedwait", "GLIBC_2.3.2");
	SS_WAIT_CALL(SS_SHIM_WAIT_WORK, int, f(c, m, t));
}

int ss_cond_timedwait_compat(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *t)
{
	cond_timedwait_fn f = SS_REAL(r_ctw_compat, "pthread_cond_timedwait", "GLIBC_2.2.5");
	SS_WAIT_CALL(SS_SHIM_WAIT_WORK, int, f(c, m, t));
}

int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clk,
			   const struct timespec *t)
{
	__typeof__(r_cond_clockwait) f = SS_REAL(r_cond_clockwait, "pthread_cond_clockwait", NULL);
	SS_WAIT_CALL(SS_SHIM_WAIT_WORK, int, f(c, m, clk, t));
}

int sem_wait(sem_t *s)
{
	__typeof__(r_sem_wait) f = SS_REAL(r_sem_wait, "sem_wait", NULL);
	SS_WAIT_CALL(SS_SHIM_WAIT_WORK, int, f(s));
}

int sem_timedwait(sem_t *s, const struct timespec *t)
{
	__typeof__(r_sem_timedwait) f = SS_REAL(r_sem_timedwait, "sem_timedwait", NULL);
	SS_WAIT_CALL(SS_SHIM_WAIT_WORK, int, f(s, t));
}

int sem_clockwait(sem_t *s, clockid_t clk, const struct timespec *t)
{
	__typeof__(r_sem_clockwait) f = SS_REAL(r_sem_clockwait, "sem_clockwait", NULL);
	SS_WAIT_CALL(SS_SHIM_WAIT_WORK, int, f(s, clk, t));
}

SS_PRELOAD_HIDDEN void ss_preload_resolve_waits(void)
{
	(void)SS_REAL(r_epoll_wait, "epoll_wait", NULL);
	(void)SS_REAL(r_epoll_pwait, "epoll_pwait", NULL);
	(void)SS_REAL(r_epoll_pwait2, "epoll_pwait2", NULL);
	(void)SS_REAL(r_poll, "poll", NULL);
	(void)SS_REAL(r_poll_chk, "__poll_chk", NULL);
	(void)SS_REAL(r_ppoll, "ppoll", NULL);
	(void)SS_REAL(r_ppoll_chk, "__ppoll_chk", NULL);
	(void)SS_REAL(r_select, "select", NULL);
	(void)SS_REAL(r_pselect, "pselect", NULL);
	(void)SS_REAL(r_cw, "pthread_cond_wait", "GLIBC_2.3.2");
	(void)SS_REAL(r_cw_compat, "pthread_cond_wait", "GLIBC_2.2.5");
	(void)SS_REAL(r_ctw, "pthread_cond_timedwait", "GLIBC_2.3.2");
	(void)SS_REAL(r_ctw_compat, "pthread_cond_timedwait", "GLIBC_2.2.5");
	(void)SS_REAL(r_cond_clockwait, "pthread_cond_clockwait", NULL);
	(void)SS_REAL(r_sem_wait, "sem_wait", NULL);
	(void)SS_REAL(r_sem_timedwait, "sem_timedwait", NULL);
	(void)SS_REAL(r_sem_clockwait, "sem_clockwait", NULL);
	/* liburing's when the program has it already; one loaded later is looked up
	 * at its first call (once). */
	(void)SS_REAL(r_get_cqe, "__io_uring_get_cqe", NULL);
	(void)SS_REAL(r_wait_cqes, "io_uring_wait_cqes", NULL);
	(void)SS_REAL(r_wait_cqe_timeout, "io_uring_wait_cqe_timeout", NULL);
	(void)SS_REAL(r_submit_and_wait, "io_uring_submit_and_wait", NULL);
	(void)SS_REAL(r_submit_and_wait_timeout, "io_uring_submit_and_wait_timeout", NULL);
}

/*
 * io_spy.h - the recorder's block writes and syncs as a resilience test sees
 * them. io_spy.c defines pwritev, pwritev64 and fdatasync: a test executable's
 * own definitions come before libc's for every object in the process (the
 * shared library's calls and the ASan build's static ones alike), and each
 * calls on to the next definition. Calls made on the recorder's writer thread
 * (named ss-writer) can be delayed, as a slow disk would (writeback
 * throttling, NFS, a failing disk), and are counted and timed; other threads'
 * pass untouched. A block write can also be made to wait for a CPU instead
 * (io_spy_preempt_start: a busy real-time thread takes the writer's CPU), as on
 * a loaded machine. The next segment file (*.active) opened on any other
 * thread (start's, on the caller's thread) can be delayed once. The stall
 * watchdog's thread (pthread_create, defined here too) can be refused, as a
 * process at its thread limit would be.
 */
#ifndef STALLSCOPE_IO_SPY_H
#define STALLSCOPE_IO_SPY_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct io_spy {
	_Atomic uint64_t write_delay_ns, sync_delay_ns; /* added to each call */
	_Atomic uint64_t writes, syncs;                 /* calls so far */
	_Atomic uint64_t first_write_end, last_write_end; /* CLOCK_MONOTONIC ns, 0: none */
	_Atomic uint64_t second_write_end;
	/* The writer's run-queue wait so far (its schedstat) at the first's end. */
	_Atomic uint64_t first_write_rq;
	/* Taken (then 0) by the next open of a *.active file off the writer. */
	_Atomic uint64_t start_open_delay_ns;
	/* Each block write waits this long for a CPU (io_spy_preempt_start), and
	 * the least run-queue wait a write saw so far (ns; UINT64_MAX: none). */
	_Atomic uint64_t preempt_ns, preempt_least_ns;
	/* Called (writer thread) at each fdatasync before it is delayed. */
	void (*on_sync)(void);
	/* While set, pthread_create of an ss-watchdog thread fails with EAGAIN;
	 * each refusal counted. Told by the name its maker (hooks only, the
	 * writer's thread) lends it for the call (thread_named.c). */
	_Atomic int refuse_threads;
	_Atomic uint64_t threads_refused;
};
extern struct io_spy io_spy;

/* Starts the real-time thread io_spy.preempt_ns uses: 0, else -1 with errno
 * (SCHED_FIFO refused). */
int io_spy_preempt_start(void);
void io_spy_preempt_stop(void);

/* Whether the process has a thread of that name now (/proc/self/task). */
int io_spy_has_thread(const char *name);
/* The same, and its /proc/self/task/TID in dir (of len bytes) when it has. */
int io_spy_thread_dir(const char *name, char *dir, size_t len);

/* The run-queue wait so far (ns) in a schedstat file (its second field:
 * /proc/thread-self/schedstat, /proc/self/task/TID/schedstat); 0 when it
 * cannot be read. */
uint64_t io_spy_run_delay_ns(const char *schedstat);
/* The same, and its time on a CPU (the first field) in *run and the number
 * of times it was given a CPU (the third) in *slices, where not NULL. The
 * wait is added when the thread gets its CPU: a thread still waiting has its
 * current wait not counted yet. */
uint64_t io_spy_schedstat(const char *schedstat, uint64_t *run, uint64_t *slices);

#endif

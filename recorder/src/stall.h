/*
 * stall.h - stalled polls and idle-task dumps: what watchdog.c, stall_capture.c,
 * task_dump.c and the writer share.
 *
 *   watchdog.c       looks (on the writer's thread, or one of its own) at each
 *                    worker's ring for the poll it is in, and captures polls that outlive the stall threshold at
 *                    T, 2T, 4T ... (at most SS_STALL_MAX_CAPTURES)
 *   stall_capture.c  one capture: classify the thread from /proc (running,
 *                    blocked in which system call, runnable but not running) and
 *                    take its stack (a signal for a thread outside system calls,
 *                    a bounded scan of its stack for a blocked one)
 *   task_dump.c      stallscope_task_pending() and the writer-side bookkeeping that
 *                    turns the pending stacks of tasks that then stay idle into
 *                    TASK_DUMP records
 *
 * Stall and dump messages reach the segment only through the writer (sinks
 * below), like every other record, so they are flushed within the flush interval
 * and survive the worker, or the process, ending soon after.
 */
#ifndef STALLSCOPE_STALL_H
#define STALLSCOPE_STALL_H

#include <stdint.h>

#include "recorder-private.h"
#include "unwind.h"

#define SS_STALL_FRAMES 64
#define SS_STALL_MAX_CAPTURES 8
#define SS_TASK_DUMP_FRAMES 24

/* One STALL capture, or (is_end) the STALL_END of a poll that had captures.
 * With CFI unwinding (ss_unwind_copy_bytes() > 0) a capture carries registers and
 * a stack copy instead of frames, and the writer unwinds them: uc.len bytes of
 * stack follow the struct (a message takes ss_stall_msg_size() bytes). */
struct ss_stall_msg {
	uint32_t is_end;
	uint32_t thread;        /* slot thread id */
	uint32_t tid;
	uint32_t location;
	uint64_t task;
	uint64_t poll_ts;       /* stamps (clock.h), converted by the writer */
	uint64_t ts;            /* capture time, or the poll's end for is_end */
	uint32_t index;         /* capture number from 0; for is_end the capture count */
	uint32_t kind;          /* enum ss_stall_kind_rec */
	uint32_t syscall1;      /* system call number + 1, 0 = none or unknown */
	uint32_t nframes;
	uint64_t frames[SS_STALL_FRAMES];
	char reason[160];
	uint32_t blocked;       /* uc is of a thread blocked in a system call: sp, pc only */
	uint32_t pad;
	struct ss_ucopy uc;     /* uc.valid 0: frames[] hold the stack */
};

static inline size_t ss_stall_msg_size(uint32_t copy) { return sizeof(struct ss_stall_msg) + copy; }
static inline uint8_t *ss_stall_msg_stack(const struct ss_stall_msg *m)
{
	return (uint8_t *)(uintptr_t)(m + 1);
}

struct ss_task_dump_msg {
	uint64_t task;
	uint32_t thread, tid, location, nframes;
	uint64_t pending_ts;
	uint64_t idle_ns;
	const uint64_t *frames;
};

struct ss_stall_sink {
	void (*stall)(const struct ss_stall_msg *m);
	void (*dump)(const struct ss_task_dump_msg *m);
};

/* ---- watchdog.c (the writer starts and stops it with the session) ---- */
/* Starts the watchdog when cfg->stall_threshold_ms > 0, on a thread of its own
 * when own_thread, else hosted by the writer's thread (below). Never fails the
 * session: status says what runs ("off", or the threshold and how stacks are
 * taken). */
SS_INTERNAL void ss_watchdog_start(const struct stallscope_config *cfg, uint32_t session,
				   int own_thread, char *status, size_t len);
/* Called by the writer's thread after its last wake-up (or by a start that
 * failed): joins the watchdog's thread, if any; captures in flight finish
 * first. Then the last STALL_ENDs are queued. */
SS_INTERNAL void ss_watchdog_stop(void);
/* Hosted (the writer's thread only): whether the watchdog started without a
 * thread; when it next needs the thread (CLOCK_MONOTONIC ns; UINT64_MAX:
 * never); what is due then (capture steps, a look: never a wait); the timer
 * slack its times allow; its threshold (0: off). */
SS_INTERNAL int ss_watchdog_hosted(void);
SS_INTERNAL uint64_t ss_watchdog_next_ns(void);
SS_INTERNAL void ss_watchdog_run(void);
SS_INTERNAL uint64_t ss_watchdog_slack_ns(void);
SS_INTERNAL uint64_t ss_watchdog_threshold_ns(void);
/* The writer's thread only. own_thread: a hosted watchdog moves to a thread
 * of its own (the writer is about to do I/O that may take long), 0; -1 when
 * it cannot (not hosted, stopping, or no thread could be made: it stays
 * hosted). host: that thread ends after its current step and the writer's
 * thread takes the looks again, with the captures in flight. ending: stop
 * has begun; no look begins from now on, and its own thread is told to end;
 * 1 while captures are still in flight (for at most SS_CAPTURE_END_NS) (hosted: the writer keeps taking
 * their steps, and its cycles) or its own thread has not ended (it kicks
 * the writer when it has), then 0, and ss_watchdog_stop follows. */
SS_INTERNAL int ss_watchdog_own_thread(void);
SS_INTERNAL void ss_watchdog_host(void);
SS_INTERNAL int ss_watchdog_ending(void);
/* Writer thread, just before it releases a drained slot of an exited thread: the
 * watchdog reads the slot's last poll boundaries while they are still there.
 * 0 while a capture of the slot is in flight: the slot must stay its thread's
 * (the writer asks again at a later cycle). */
SS_INTERNAL int ss_watchdog_slot_released(struct ss_slot *s);
/* After the writer's final drain: frees the message queue. */
SS_INTERNAL void ss_watchdog_free(void);
/* Hands the stall messages queued so far to sink (writer thread), up to the first
 * one holding a stamp past lim (it waits for the next drain, clock.h). */
SS_INTERNAL void ss_stall_drain(const struct ss_stall_sink *sink, uint64_t lim);

/* ---- stall_capture.c (the thread that takes the watchdog's looks only) ---- */
/* copy: bytes of stack a capture copies for the writer's unwinder (0: frames). */
SS_INTERNAL int ss_capture_init(struct ss_slot *slots, uint32_t nslots, uint32_t session,
				uint32_t copy, char *why, size_t len);
SS_INTERNAL void ss_capture_fini(void);
/* A capture in flight: it never sleeps, so it is taken in steps, each at its
 * time (at_ns, CLOCK_MONOTONIC): the end of the CPU-clock window, then looks
 * for the signal's answer until it comes or ANSWER_NS pass. */
struct ss_capture_run {
	uint32_t step;          /* what the next step does (stall_capture.c) */
	uint32_t gen;           /* the signal's request number */
	int32_t cpu_ok, on_cpu;
	uint64_t at_ns;         /* the next step is due */
	uint64_t w0, c0;        /* the window's start: wall time, the thread's CPU */
	uint64_t window, window_cpu;
	uint64_t deadline, nap; /* the answer's wait */
};
/* The longest a stop waits for the captures in flight (a window and the
 * signal's answer, 51 ms, and a margin for late steps); what is left then is
 * dropped with a reason (watchdog.c). */
#define SS_CAPTURE_END_NS 100000000ull
/* Classifies and takes the stack of the thread of slot index i into m (kind,
 * syscall1, frames, reason): begins a capture (begin), or takes its next step
 * once run->at_ns has come (step). Each returns 1 when the capture is done (m
 * is then filled), 0 when it waits for the step at run->at_ns; m is filled
 * only by the call that returns 1 (each clears it first). */
SS_INTERNAL int ss_capture_begin(const struct ss_slot *s, uint32_t i, struct ss_stall_msg *m,
				 struct ss_capture_run *run);
SS_INTERNAL int ss_capture_step(const struct ss_slot *s, uint32_t i, struct ss_stall_msg *m,
				struct ss_capture_run *run);

/* ---- task_dump.c ---- */
/* Arms stallscope_task_pending() when cfg->task_dump_enabled (writer start). */
SS_INTERNAL void ss_task_dump_start(const struct stallscope_config *cfg, uint32_t session,
				    struct ss_slot *slots, uint32_t nslots);
/* Disarms the hook (writer stop, before the final drain). */
SS_INTERNAL void ss_task_dump_disarm(void);
SS_INTERNAL int ss_task_dump_active(void);
/* Writer thread: takes the pending stacks the hooks left since the last call,
 * stamped up to lim (clock.h; later ones wait for the next call).
 * Call before draining the rings' events, so a task's next POLL_BEGIN never
 * reaches ss_task_dump_polled() before the pending call it ends. */
SS_INTERNAL void ss_task_dump_collect(uint64_t lim);
/* Writer thread, for each POLL_BEGIN and TERMINATE drained: the idle time of a
 * task that was pending ends there. */
SS_INTERNAL void ss_task_dump_polled(uint64_t task, uint64_t ts);
/* Writer thread: dumps of tasks whose idle time passed their sampled threshold,
 * counting tasks still idle as idle until now. */
SS_INTERNAL void ss_task_dump_emit(const struct ss_stall_sink *sink, uint64_t now);
SS_INTERNAL void ss_task_dump_free(void);

#endif /* STALLSCOPE_STALL_H */

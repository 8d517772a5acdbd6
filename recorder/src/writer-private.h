/*
 * writer-private.h - the state of the writer thread and what its files share.
 *
 *   writer.c         the thread: cycles, draining rings in windows, start/stop
 *   writer_encode.c  records: events, definitions, metadata, stacks
 *   writer_blocks.c  blocks and segments: flush, compress, seal, rotate, losses
 *   writer_sinks.c   samples, switches, mappings, stalls and task dumps
 *   writer_pace.c    when the thread wakes and when it writes its block
 *
 * Everything here is touched by the writer thread only (start/stop excepted).
 */
#ifndef STALLSCOPE_WRITER_PRIVATE_H
#define STALLSCOPE_WRITER_PRIVATE_H

#include "recorder-private.h"
#include "sampler.h"
#include "segment_write.h"
#include "stall.h"

#include <pthread.h>
#include <string.h>

#define TICK_NS 10000000ull
#define RETRY_NS 1000000000ull
#define METRICS_PERIOD_NS 10000000000ull
#define MAX_EVENT_BYTES 64

/* How long the writer sleeps and when it writes its block (writer_pace.c). */
struct ss_pace {
	uint64_t flush_ns;     /* F: events reach the disk within F of their time */
	uint64_t margin_ns;    /* M: how late a wake may come without breaking that */
	uint64_t period_ns;    /* the longest sleep, F - 2M */
	uint64_t min_ns;       /* the shortest, TICK_NS (or the period if shorter) */
	uint64_t ring_events;  /* a ring's capacity */
	uint64_t rate;         /* the fullest ring's events per 2^20 ns, decaying */
};
SS_INTERNAL void ss_pace_init(struct ss_pace *p, uint64_t flush_ns, uint64_t ring_events);
/* The next sleep, after a cycle that found backlog events in the fullest ring
 * slept_ns after the one before. */
SS_INTERNAL uint64_t ss_pace_sleep(struct ss_pace *p, uint64_t backlog, uint64_t slept_ns);
/* sleep_ns shortened to bound_ns (another buffer's room), never below min_ns
 * and never raised. */
SS_INTERNAL uint64_t ss_pace_bound(const struct ss_pace *p, uint64_t sleep_ns, uint64_t bound_ns);
/* Whether a block whose oldest event is at oldest_ns must be written at now_ns,
 * before a sleep of sleep_ns. */
SS_INTERNAL int ss_pace_flush_now(const struct ss_pace *p, uint64_t oldest_ns, uint64_t now_ns,
				  uint64_t sleep_ns);

struct writer {
	pthread_t thread;
	/* The writer sleeps in one futex wait on this word with an absolute time;
	 * a kick or stop bumps it and wakes it. (A condition variable's wait
	 * re-takes its mutex as contended, so its unlock was a second system call
	 * every cycle.) */
	_Atomic uint32_t wake_seq;
	_Atomic int running;
	/* The thread's start (writer.c, ss_writer_start): BOOT_TOURING while it
	 * takes the clock's CPU tour, BOOT_TOURED when start may use it, then
	 * BOOT_GO or BOOT_ABORT from start. A futex word. */
	_Atomic uint32_t boot;
	int thread_made;
	struct ss_pace pace;
	uint64_t last_cycle_ns;      /* when the last cycle began */
	_Atomic int long_sleep;      /* sleeping past TICK_NS: the watchdog may nudge */
	/* The watchdog's looks run on this thread (writer.c, writer_loop): set by
	 * start before BOOT_GO, changed only by this thread and only while the
	 * watchdog has no thread (cleared before one is made, set again after it
	 * was joined: writer.c, move_looks), so its thread may read it.
	 * nudged: a look saw a ring past a quarter full. io_moved: the looks were
	 * moved to their own thread for the I/O under way. slow_start: how long
	 * start's segment creation took on the host's thread when it was slow
	 * (the looks move at the thread's first loop pass), else 0. */
	int one_thread, nudged, io_moved;
	uint64_t slow_start;
	/* This thread's run-queue wait (writer.c, io_slow): its schedstat file
	 * (fd + 1, 0: none), the last value read, whether it was read right
	 * before the I/O under way, and whether the last I/O was slow by the
	 * clock but perhaps only kept waiting for a CPU. */
	int rq_fd1, rq_exact, io_suspect;
	uint64_t rq_last;
	uint64_t due, early;         /* the next cycle (CLOCK_MONOTONIC), how early it may run */
	/* This thread's CPU split between its cycles and the looks (cpu_to): read
	 * at each change from one to the other (cpu_part: 0 writer, 1 watchdog);
	 * the looks' part summed, the writer's is the rest of the thread's CPU. */
	uint64_t cpu_mark, cpu_looks;
	int cpu_part;
	struct ss_writer_config cfg;
	char *metrics_file;
	struct ss_segments *sg;

	/* block under construction */
	uint8_t *raw;
	size_t raw_len, block_target, raw_cap;
	uint32_t block_events;
	uint64_t block_first_ts, block_last_ts, block_opened_ns;
	uint32_t cur_thread;   /* THREAD context in the block, 0 = none yet */
	uint64_t cur_ts;
	size_t zstd_max_raw;    /* raw bytes a compressed block may have (writer_blocks.c) */

	/* active segment */
	uint64_t seg_seq1;     /* active segment's seq + 1; 0 = none */
	uint64_t seg_start_ts, seg_opened_ns, seg_limit;
	int seg_vanished;      /* its file was found gone after a write (flush_block) */
	int seg_checked;       /* ... asked after a block write since the last cycle began */
	uint64_t retry_at_ns;
	struct ss_footer foot;
	uint32_t defs_emitted;
	uint64_t drained_to;     /* every event up to this time has left the rings */
	uint64_t window_events;  /* most events a drain window takes from one ring */

	/* events lost to failed writes, reported in the next block written */
	uint64_t lost_count, lost_first, lost_last;
	int failing;
	/* What the LOSS records of the block being built (blk_) and of the active
	 * segment's written blocks (seg_) report. When those bytes never reach the disk
	 * (a failed write, a vanished file) the footer forgets them and a write-failure
	 * loss they carried is reported again, so the trace still accounts for it. */
	uint64_t blk_dropped, blk_loss_records;
	uint64_t blk_lost_count, blk_lost_first, blk_lost_last;
	uint64_t seg_lost_count, seg_lost_first, seg_lost_last;

	uint64_t last_metrics_ns;
	char sampler_status[1024];
	char unwind_status[512];
	char stall_status[256];
	char clock_status[400];
	uint64_t sampler_lost;       /* samples that arrived with no segment to go to */
	_Atomic int sampling_on;     /* what stallscope_set_enabled() asked for */
	int sampling_applied;        /* what the sampler was last told */
	/* Threads whose slot was just released: the sampler can still hand over their
	 * last samples, which must keep their thread rather than become thread 0. */
	struct { uint32_t tid, thread; } gone[64];
	uint32_t ngone;
};

extern SS_INTERNAL struct writer wr;

/* The block buffer's primitives; callers reserve() room first. */
static inline void put_u8(uint8_t v) { wr.raw[wr.raw_len++] = v; }
static inline void put_v(uint64_t v) { wr.raw_len += ss_put_varint(wr.raw + wr.raw_len, v); }

static inline void put_bytes(const void *p, size_t n)
{
	put_v(n);
	memcpy(wr.raw + wr.raw_len, p, n);
	wr.raw_len += n;
}

SS_INTERNAL void set_thread(uint32_t thread, uint64_t ts);
SS_INTERNAL void put_dt(uint64_t ts);
SS_INTERNAL void note_event(uint64_t ts);
SS_INTERNAL void put_session_meta(void);
SS_INTERNAL void put_new_defs(void);
SS_INTERNAL void put_thread_def(struct ss_slot *s);
SS_INTERNAL void put_event(struct ss_slot *s, const struct ss_ev *e);
SS_INTERNAL void put_lp(uint8_t type, const uint8_t *body, size_t n);
SS_INTERNAL uint32_t put_stack(const uint64_t *frames, uint32_t n, uint32_t nkernel, uint32_t flags);
SS_INTERNAL void reset_block(void);
SS_INTERNAL void note_lost(uint64_t count, uint64_t first, uint64_t last);
SS_INTERNAL void merge_range(uint64_t *count, uint64_t *first, uint64_t *last,
			uint64_t n, uint64_t n_first, uint64_t n_last);
SS_INTERNAL void unreport_block_losses(void);
SS_INTERNAL void flush_block(void);
SS_INTERNAL void begin_block_if_needed(void);
SS_INTERNAL void begin_segment(uint64_t start_ts);
SS_INTERNAL void account_vanished_segment(uint64_t now);
SS_INTERNAL void seal_segment(uint64_t end_ts);
extern SS_INTERNAL const struct ss_sample_sink sink;
/* Stall and task-dump messages whose stamps are up to lim (clock.h). */
SS_INTERNAL void drain_stalls(uint64_t now, uint64_t lim);
/* Around a write, a seal (seal=1), a segment's creation, the metrics file
 * (writer.c): who takes the stall watchdog's looks meanwhile. */
SS_INTERNAL uint64_t ss_writer_io_begin(int seal);
SS_INTERNAL void ss_writer_io_end(uint64_t t0);
SS_INTERNAL void follow_thread(struct ss_slot *s, int exiting);

#endif /* STALLSCOPE_WRITER_PRIVATE_H */

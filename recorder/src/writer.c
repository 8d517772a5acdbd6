/*
 * writer.c - the background thread that turns thread rings into segment blocks.
 *
 * Every cycle it drains each ring, encoding events as compact records into the
 * block being built, and writes the block when it is big enough or when waiting
 * for the next cycle would leave an event on disk later than the flush interval,
 * so a SIGKILL loses at most that interval. Cycles come as often as the flush
 * interval and the rings' fill rate need (writer_pace.c: an idle program sees a
 * few a second, not a hundred; every 10 ms while CPU sampling or task dumps are
 * on), sooner when a thread exits or the watchdog sees a ring filling. All the
 * expensive work of recording happens here, never on the hook path. While CPU
 * sampling and task dumps are off this thread also takes the stall watchdog's
 * looks (watchdog.c), and its cycles run at their wake-ups (writer_loop): one
 * recorder thread, not two, as long as the disk is fast: I/O that may take
 * long (a seal's fdatasync), or that took longer than half the stall
 * threshold (this thread's wait for a CPU left out), has the looks moved to a
 * thread of their own (ss_writer_io_begin; the first slow write and a hung
 * one still hold them: a known limit).
 *
 * Segments do not overlap in time: a rotation picks a boundary B, drains every ring
 * up to B into the old segment, seals it with end_ts = B, and starts the next one at
 * B. Each ring holds a thread's events in time order, so draining "up to B" is a
 * prefix of each ring. Rings are drained in time windows of a bounded number of
 * events per ring, and the size check runs between windows (B = the last window's
 * end), so however far the writer fell behind a segment never outgrows its limit.
 *
 * Every segment is self-contained: strings, locations and thread definitions (with
 * the poll or park a thread is in at the boundary) are written again in each new
 * segment before the first event that needs them. A block lost to a failed write
 * takes its definitions with it, so they are then written again too.
 *
 * Failures never stop recording for good: a failed write drops the block, counts
 * its events, and reports them as a LOSS record in the next block that is written;
 * a vanished directory is recreated; a segment that cannot be created is retried
 * once a second.
 */
#include "writer-private.h"
#include "clock.h"
#include "stack_table.h"
#include "unwind.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

SS_INTERNAL struct writer wr;

enum { BOOT_TOURING, BOOT_TOURED, BOOT_GO, BOOT_ABORT };

/* ---- draining ------------------------------------------------------------------ */

/* Drops counted after a thread's last successful push have no later entry of that
 * thread to carry their LOSS record: write it here. Only where the owner cannot
 * race: the slot is retired (the thread is gone) or recording has stopped. */
static void put_pending_drops(struct ss_slot *s)
{
	uint64_t n = atomic_exchange_explicit(&s->drop_pending, 0, memory_order_acquire);
	if (!n)
		return;
	struct ss_ev e = {
		.ts = ss_clock_ns(atomic_load_explicit(&s->drop_first_ts, memory_order_relaxed)),
		.a = n, .b = SS_LOSS_BUFFER_FULL,
		.c = ss_clock_ns(atomic_load_explicit(&s->drop_last_ts, memory_order_relaxed)),
		.kind = SS_EV_LOSS,
	};
	if (!wr.seg_seq1) {
		note_lost(n, e.ts, e.c);
		return;
	}
	begin_block_if_needed();
	if (s->w_defined_seg != wr.seg_seq1)
		put_thread_def(s);
	put_event(s, &e);
}

/* A ring's pages are new until its producer first writes them, and a page fault
 * costs that thread about 14 us on a VM (10 times its hooks for the 128 events a
 * page holds). So the writer faults the entries ahead of each producer in, one
 * madvise for many pages: PREFAULT_AHEAD times what the thread made since the
 * last cycle, at least PREFAULT_MIN and at most PREFAULT_MAX entries, so a
 * thread that keeps its pace takes no fault in its ring's first pass; the slot
 * the next thread will take gets PREFAULT_NEW. The call costs per page far
 * less in large steps than in small ones (on this VM 2.2-2.6 us a page in
 * calls of 16 pages, 5.4-6.5 us in calls of 3), so the steps are eight cycles'
 * worth: a light thread (a few hundred events a cycle) gets 8-16 pages at a
 * time, an idle one 2, and none holds more than eight cycles of its events
 * (at most 128 KiB) beyond what it wrote. Pages stay as they would after the
 * producer's own first pass (thread_slots.c gives back a released ring's
 * pages). Kernels before 5.14 refuse it: then it is not tried. */
#define PREFAULT_AHEAD 8u
#define PREFAULT_MIN 256u
#define PREFAULT_NEW 1024u
#define PREFAULT_MAX 4096u

static void prefault_ring(struct ss_slot *s, uint64_t head, uint64_t ahead)
{
	static int refused;
	uint64_t entries = s->mask + 1;
	if (refused || s->w_populated >= entries || head >= entries ||
	    s->w_populated >= head + ahead / 2)
		return;
	uint64_t page = 4096 / sizeof(struct ss_ev);
	uint64_t from = (head > s->w_populated ? head : s->w_populated) / page * page;
	uint64_t to = (head + ahead + page - 1) / page * page;
	if (to > entries)
		to = entries;
	if (to <= from)
		return;
	if (madvise(s->ring + from, (size_t)(to - from) * sizeof(struct ss_ev), MADV_POPULATE_WRITE) != 0 &&
	    (errno == EINVAL || errno == ENOSYS)) {
		refused = 1;
		return;
	}
	s->w_populated = to;
}

/* Drains slot s up to stamp limit (clock.h: ring entries carry stamps, the
 * segment ns). Returns 1 when the slot was released. */
static int drain_slot(struct ss_slot *s, uint64_t limit)
{
	uint32_t state = atomic_load_explicit(&s->state, memory_order_acquire);
	if ((state != SS_SLOT_OWNED && state != SS_SLOT_RETIRED) || s->session != wr.cfg.session)
		return 0;
	if (s->w_thread_id != s->thread_id)
		s->w_thread_id = s->thread_id;
	uint64_t head = atomic_load_explicit(&s->head, memory_order_acquire);
	uint64_t tail = atomic_load_explicit(&s->tail, memory_order_relaxed);
	if (state == SS_SLOT_OWNED) {
		uint64_t made = head > s->w_last_head ? head - s->w_last_head : 0;
		s->w_last_head = head;
		uint64_t ahead = made * PREFAULT_AHEAD;
		prefault_ring(s, head, ahead < PREFAULT_MIN ? PREFAULT_MIN
				       : ahead > PREFAULT_MAX ? PREFAULT_MAX : ahead);
	}

	if (wr.seg_seq1 && tail != head) {
		begin_block_if_needed();
		/* After reading head: every id the drained events carry is published. */
		put_new_defs();
		if (s->w_defined_seg != wr.seg_seq1)
			put_thread_def(s);
	}
	uint64_t taken = 0;
	for (; tail != head; tail++) {
		struct ss_ev ev = s->ring[tail & s->mask];
		if (ev.ts > limit)
			break;
		ev.ts = ss_clock_ns(ev.ts);
		if (ev.kind == SS_EV_LOSS)
			ev.c = ss_clock_ns(ev.c);
		const struct ss_ev *e = &ev;
		taken += e->kind != SS_EV_LOSS;
		if (!wr.seg_seq1) {
			/* No segment to write to: the event is lost, and said so later. */
			if (e->kind == SS_EV_LOSS)
				note_lost(e->a, e->ts, e->c);
			else
				note_lost(1, e->ts, e->ts);
			continue;
		}
		put_event(s, e);
		if (wr.raw_len >= wr.block_target) {
			flush_block();
			begin_block_if_needed();
			put_new_defs();
			if (s->w_defined_seg != wr.seg_seq1)
				put_thread_def(s);
		}
	}
	ss_stats_move_begin();
	atomic_store_explicit(&s->tail, tail, memory_order_release);
	atomic_fetch_add_explicit(&ss_counters.events_taken, taken, memory_order_relaxed);
	ss_stats_move_end();
	follow_thread(s, state == SS_SLOT_RETIRED);

	if (state == SS_SLOT_RETIRED && tail == head) {
		uint64_t ts = atomic_load_explicit(&s->retired_ts, memory_order_relaxed);
		/* A stall capture of the thread still in flight: the slot stays its
		 * thread's until a later cycle (watchdog.c). */
		if (ts > limit || !ss_watchdog_slot_released(s))
			return 0;
		put_pending_drops(s);
		if (wr.seg_seq1) {
			begin_block_if_needed();
			if (s->w_defined_seg != wr.seg_seq1)
				put_thread_def(s);
			if (wr.cur_thread != s->thread_id)
				set_thread(s->thread_id, ss_clock_ns(ts));
			put_u8(SS_REC_THREAD_EXIT);
			put_dt(ss_clock_ns(ts));
			note_event(ss_clock_ns(ts));
		}
		wr.gone[wr.ngone++ % 64].tid = (uint32_t)s->tid;
		wr.gone[(wr.ngone - 1) % 64].thread = s->thread_id;
		ss_slot_release(s);
		return 1;
	}
	return 0;
}

/* Samples, switches and mappings gathered since the last cycle, into the segment
 * being written (they carry their own times). */
static void drain_sampler(void)
{
	if (ss_sampler_mode() != SS_SAMPLER_OFF)
		ss_sampler_drain(&sink);
}

static void drain_all(uint64_t limit)
{
	struct ss_pool *p = ss_pool_get();
	uint32_t span = ss_pool_span(p), next = span;
	for (uint32_t i = 0; i < span; i++) {
		drain_slot(&p->slots[i], limit);
		if (next == span &&
		    atomic_load_explicit(&p->slots[i].state, memory_order_relaxed) == SS_SLOT_FREE)
			next = i;
	}
	/* The slot the next thread to attach will take (the lowest free one): its
	 * first pages are there before it needs them, not a cycle later. */
	if (next < p->nslots &&
	    atomic_load_explicit(&p->slots[next].state, memory_order_relaxed) == SS_SLOT_FREE)
		prefault_ring(&p->slots[next], 0, PREFAULT_NEW);
}

/* The end of the next drain window: the latest stamp <= end at which no ring holds
 * more than k events not yet drained. *busy counts the rings with events <= end
 * (0: nothing to drain), *most is the most events any ring holds undrained. */
static uint64_t window_end(uint64_t end, uint64_t k, uint32_t *busy, uint64_t *most)
{
	struct ss_pool *p = ss_pool_get();
	uint64_t lim = end, oldest = UINT64_MAX;
	uint32_t n = 0;
	for (uint32_t i = 0, span = ss_pool_span(p); i < span; i++) {
		struct ss_slot *s = &p->slots[i];
		uint32_t state = atomic_load_explicit(&s->state, memory_order_acquire);
		if ((state != SS_SLOT_OWNED && state != SS_SLOT_RETIRED) || s->session != wr.cfg.session)
			continue;
		uint64_t head = atomic_load_explicit(&s->head, memory_order_acquire);
		uint64_t tail = atomic_load_explicit(&s->tail, memory_order_relaxed);
		if (head - tail > *most)
			*most = head - tail;
		if (head == tail || s->ring[tail & s->mask].ts > end)
			continue;
		n++;
		if (s->ring[tail & s->mask].ts < oldest)
			oldest = s->ring[tail & s->mask].ts;
		if (head - tail > k) {
			uint64_t tk = s->ring[(tail + k) & s->mask].ts;
			if (tk - 1 < lim)
				lim = tk - 1;
		}
	}
	*busy = n;
	/* Progress even when more than k events share one timestamp. */
	return n && lim < oldest ? oldest : lim;
}

/* With one recorder thread (the watchdog hosted, watchdog.c): the CPU since
 * the last change goes to the part that ran, writer (0) or watchdog (1), one
 * clock read a change, not one a wake-up. The cycles are the writer's; the
 * sleeps and wake-ups around them the watchdog's, whose looks set the thread's
 * pace. The writer alone: all of it the writer's. */
static void cpu_to(int part)
{
	if (part == wr.cpu_part)
		return;
	uint64_t c = ss_thread_cpu_ns();
	if (wr.cpu_part)
		wr.cpu_looks += c - wr.cpu_mark;
	wr.cpu_mark = c;
	wr.cpu_part = part;
}

/* With one recorder thread: what the watchdog needs now, if anything. Also
 * between a cycle's drain windows, so a cycle that drains a large backlog
 * holds no look or capture step back for long. */
static void host_watchdog(void)
{
	if (!wr.one_thread || ss_now() < ss_watchdog_next_ns())
		return;
	int was = wr.cpu_part;
	cpu_to(1);
	ss_watchdog_run();
	cpu_to(was);
}

/* Drains every ring up to stamp end, in windows that take at most window_events
 * events from each ring, and rotates by size between windows. At a window's end
 * every event up to that time has been drained and none after it, so it is a valid
 * segment boundary; and the size check before a window reserves room for all that
 * window can add, so a segment stays within its limit however far the writer fell
 * behind. Returns the most events a ring held at the start: what the rings
 * gathered since the last cycle, for the pace of the next ones. */
static uint64_t drain_windows(uint64_t end)
{
	uint64_t k = wr.window_events, backlog = 0;
	for (int first = 1;; first = 0) {
		uint32_t busy;
		uint64_t most = 0;
		uint64_t lim = window_end(end, k, &busy, &most);
		if (first)
			backlog = most;
		uint64_t room = (uint64_t)busy * (k * MAX_EVENT_BYTES + 256) + 1024;
		if (busy && wr.seg_seq1 && wr.foot.blocks > 0 &&
		    ss_segments_active_bytes(wr.sg) + wr.raw_len + room > wr.seg_limit) {
			uint64_t b = wr.drained_to;
			seal_segment(b);
			begin_segment(b);
		}
		/* With no event left, this pass still retires exited threads. */
		drain_all(busy ? lim : end);
		if (!busy || lim >= end)
			break;
		wr.drained_to = ss_clock_ns(lim);
		host_watchdog();
	}
	if (wr.drained_to < ss_clock_ns(end))
		wr.drained_to = ss_clock_ns(end);
	return backlog;
}

/* One cycle; returns when the next one is due (CLOCK_MONOTONIC ns). */
static uint64_t cycle(int final)
{
	/* A calibration point first: the rings are drained up to it (clock.h). */
	uint64_t now, lim = ss_clock_point(&now);
	atomic_store_explicit(&ss_counters.last_cycle_ns, now, memory_order_relaxed);
	uint64_t slept = wr.last_cycle_ns && now > wr.last_cycle_ns ? now - wr.last_cycle_ns : 0;
	wr.last_cycle_ns = now;
	int want = atomic_load(&wr.sampling_on);
	if (want != wr.sampling_applied) {
		ss_sampler_set_enabled(want);
		wr.sampling_applied = want;
	}

	/* The last block written found its file gone (flush_block); or, when no
	 * block was written since the last look (an idle spell), it is gone now:
	 * the block this cycle writes goes into a new segment, not after it, and
	 * disk usage and writer_healthy learn of it while nothing is written. */
	if (wr.seg_seq1 && !wr.seg_checked && ss_segments_lost(wr.sg))
		wr.seg_vanished = 1;
	wr.seg_checked = 0;
	if (wr.seg_seq1 && wr.seg_vanished) {
		ss_log("segment file %llu vanished (output directory removed?); starting a new one",
		       (unsigned long long)(wr.seg_seq1 - 1));
		account_vanished_segment(now);
		ss_segments_abandon(wr.sg);
		atomic_fetch_add(&ss_counters.errors, 1);
		wr.seg_seq1 = 0;
		wr.retry_at_ns = 0;
		reset_block();
		begin_segment(wr.seg_start_ts);
	}
	if (!wr.seg_seq1)
		begin_segment(wr.seg_start_ts ? wr.seg_start_ts : now);

	/* Everything up to now, rotating by size on the way; events stamped after now
	 * wait for the next cycle, so a cycle's work is bounded by its start. Pending
	 * task stacks first: a task's next POLL_BEGIN must find its pending call. */
	ss_task_dump_collect(lim);
	uint64_t backlog = drain_windows(lim);
	if (ss_shim_take_names_changed())
		ss_sampler_reread_names();
	drain_sampler();
	if (wr.seg_seq1)
		ss_sampler_watch_mappings(&sink);
	drain_stalls(now, lim);
	if (wr.seg_seq1 && wr.cfg.rotation_period_ns &&
	    now - wr.seg_opened_ns >= wr.cfg.rotation_period_ns) {
		seal_segment(now);
		begin_segment(now);
	}
	uint64_t sleep = ss_pace_sleep(&wr.pace, backlog, slept);
	/* The task-dump rings (256 entries a thread) fill in ways the event rings
	 * do not show: while they are on, the writer keeps the old tick; the
	 * sampler's buffers wait as long as their fill rate lets them. */
	if (sleep > TICK_NS && ss_task_dump_active())
		sleep = TICK_NS;
	if (wr.sampling_applied)
		sleep = ss_pace_bound(&wr.pace, sleep, ss_sampler_max_sleep_ns());
	if (wr.raw_len) {
		/* Events are what the promise is about; a block of definitions or
		 * samples only is as old as the block. */
		uint64_t oldest = wr.block_opened_ns;
		if (wr.block_first_ts && wr.block_first_ts < oldest)
			oldest = wr.block_first_ts;
		if (final || ss_pace_flush_now(&wr.pace, oldest, now, sleep))
			flush_block();
	}

	if (wr.metrics_file && now - wr.last_metrics_ns >= METRICS_PERIOD_NS) {
		wr.last_metrics_ns = now;
		uint64_t t0 = ss_writer_io_begin(0);
		ss_metrics_write_file(wr.metrics_file);
		ss_writer_io_end(t0);
	}
	/* Retrying a segment that could not be created keeps its own pace. */
	if (!wr.seg_seq1 && wr.retry_at_ns > now && wr.retry_at_ns - now < sleep)
		sleep = wr.retry_at_ns - now;
	return now + sleep;
}

/* One side of the writer thread's start (wr.boot) tells the other. */
static void boot_say(uint32_t what)
{
	atomic_store(&wr.boot, what);
	syscall(SYS_futex, &wr.boot, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* A fork takes only the forking thread along: whatever another thread holds
 * at that instant stays held in the child. glibc's malloc resets its own locks
 * at fork, but libdw's state, and an allocator without fork handlers (GCC 12's
 * ASan, whose child then hung at its first allocation of a size the writer was
 * allocating, preload-san), do not. So the writer holds this while it is awake
 * (never while it sleeps) and a fork waits for it: the child then sees the
 * writer's libraries between two calls, never inside one. The wait is bounded
 * (FORK_WAIT_NS): a writer stuck in a write() to a hung disk must not hang the
 * program's fork, which then goes ahead as it did without the guard. The
 * writer itself never forks (archive.c uses posix_spawn, which runs no fork
 * handlers). */
#define FORK_WAIT_NS 200000000ull
static pthread_mutex_t fork_mu = PTHREAD_MUTEX_INITIALIZER;
static int fork_handlers;
static _Thread_local int fork_held; /* per thread: two threads may fork at once */

static void fork_prepare(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t at = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + FORK_WAIT_NS;
	ts.tv_sec = (time_t)(at / 1000000000u);
	ts.tv_nsec = (long)(at % 1000000000u);
	fork_held = pthread_mutex_clocklock(&fork_mu, CLOCK_MONOTONIC, &ts) == 0;
}

static void fork_parent(void)
{
	if (fork_held)
		pthread_mutex_unlock(&fork_mu);
	fork_held = 0;
}

static void fork_child(void)
{
	fork_held = 0;
	pthread_mutex_init(&fork_mu, NULL);
}

/* The thread's timer slack: the looks' while it takes them (they keep their
 * times, watchdog.c), else the cycles' (writer_main). */
static void set_slack(void)
{
	prctl(PR_SET_TIMERSLACK,
	      (unsigned long)(wr.one_thread ? ss_watchdog_slack_ns() : wr.pace.margin_ns / 4), 0, 0,
	      0);
}

/* Moves the looks to a thread of their own; 0 when moved. one_thread is
 * cleared before the thread is made, whose creation publishes it (the thread
 * reads it in ss_writer_nudge), and set again if it could not be made. Only on
 * this thread (never the host's: start's segment creation, ss_writer_io_end). */
static int move_looks(void)
{
	if (!wr.one_thread)
		return -1;
	wr.one_thread = 0;
	if (ss_watchdog_own_thread() != 0) {
		wr.one_thread = 1;
		return -1;
	}
	set_slack();
	return 0;
}

/* An I/O took took ns, more than half the threshold: the looks stay on a
 * thread of their own for the rest of the session (moved: they are there). */
static void keep_moved(uint64_t took, int moved)
{
	if (!moved && move_looks() != 0)
		return;
	ss_log("writing to %s took %.1f ms, more than half the stall threshold: the stall "
	       "watchdog takes its looks on a thread of their own for the rest of the session",
	       wr.cfg.seg.dir, (double)took / 1e6);
}

/* This thread's run-queue wait so far, in ns (/proc/thread-self/schedstat's
 * second field; its file opened by this thread at the loop's start): 0 and
 * *out, else -1. */
static int run_delay(uint64_t *out)
{
	char buf[96];
	ssize_t n = wr.rq_fd1 ? pread(wr.rq_fd1 - 1, buf, sizeof buf - 1, 0) : -1;
	if (n <= 0)
		return -1;
	buf[n] = 0;
	char *end;
	strtoull(buf, &end, 10);
	if (*end != ' ')
		return -1;
	*out = strtoull(end + 1, &end, 10);
	return *end == ' ' ? 0 : -1;
}

/* An I/O took took ns of wall time, more than half the threshold: was the disk
 * slow, or was this thread kept waiting for a CPU (a loaded machine, where the
 * bar of T/2 is shorter than a scheduler's slice)? The run-queue wait is read
 * only now, so without a read before the I/O: against the last value read,
 * which counts the waits since then too. What is left of took is then less
 * than the I/O's own time: past T/2 the disk was slow for sure. Else it is
 * not known, and the next I/O reads the wait before it too (io_suspect,
 * ss_writer_io_begin) and is measured exactly: the looks move when that one
 * is slow as well. A seal is always measured exactly (it is rare). */
static int io_slow(uint64_t took)
{
	uint64_t rq;
	if (run_delay(&rq) != 0)
		return 1; /* no schedstat: wall time it is */
	uint64_t waited = rq > wr.rq_last ? rq - wr.rq_last : 0;
	int exact = wr.rq_exact;
	wr.rq_last = rq;
	if (took - (waited < took ? waited : took) > ss_watchdog_threshold_ns() / 2)
		return 1;
	wr.io_suspect = !exact;
	return 0;
}

/* I/O that may take long, on this thread. With the looks on it (one thread) a
 * slow disk would hold them, and the captures of workers stalled on the same
 * disk, the stalls most worth explaining, would not come. So a seal (its
 * fdatasync and rename, seal=1) has the looks moved to a thread of their own
 * first, and back when it took less than half the threshold; any write that
 * took longer (writeback throttling, NFS, a failing disk), this thread's wait
 * for a CPU left out (io_slow), keeps them there for the rest of the session.
 * A slow disk then costs a thread, not the captures; a fast one keeps one
 * thread. A known limit: the looks move only after a write other than a
 * seal's has taken that long (after two, when the first one's wait for a CPU
 * could not be told apart), so the captures due during the first slow write
 * come late or not at all, and a write that hangs (a hard NFS mount, a
 * failing disk) holds them for as long as it hangs. Writes off the looks'
 * thread (io_uring submissions reaped at the next wake-up) would end that;
 * not done. io_begin returns the time to give io_end.
 * Start creates the first segment on the host's thread: a slow creation there
 * is only noted (slow_start), and this thread moves the looks at its first
 * loop pass (writer_loop), so the host's thread keeps its timer slack and
 * never makes the watchdog's thread. */
SS_INTERNAL uint64_t ss_writer_io_begin(int seal)
{
	/* Nothing to move where the looks are not this thread's: the watchdog
	 * off, on a thread of its own already, or stopped (the final seal). */
	if (!pthread_equal(pthread_self(), wr.thread) || !ss_watchdog_hosted())
		return ss_now();
	if (seal && move_looks() == 0)
		wr.io_moved = 1;
	wr.rq_exact = (wr.io_moved || wr.io_suspect) && run_delay(&wr.rq_last) == 0;
	return ss_now();
}

/* Keeps errno: the caller still reads the I/O's. */
SS_INTERNAL void ss_writer_io_end(uint64_t t0)
{
	uint64_t took = ss_now() - t0;
	int moved = wr.io_moved, e = errno, slow = took > ss_watchdog_threshold_ns() / 2;
	wr.io_moved = 0;
	if (!moved && !ss_watchdog_hosted())
		return; /* nothing to move (as in ss_writer_io_begin); errno untouched */
	if (!pthread_equal(pthread_self(), wr.thread)) {
		if (slow)
			wr.slow_start = took; /* read by the thread after BOOT_GO */
	} else if (slow && io_slow(took)) {
		wr.io_suspect = 0;
		keep_moved(took, moved);
	} else {
		wr.io_suspect &= slow;
		if (moved) {
			ss_watchdog_host();
			wr.one_thread = 1;
			set_slack();
		}
	}
	errno = e;
}

/* The thread's loop: sleeps in one futex wait on an absolute CLOCK_MONOTONIC
 * time (FUTEX_WAIT_BITSET's clock) until the next cycle, or (one thread)
 * whichever comes first of that and what the watchdog needs next. The
 * watchdog's work first, at its time (its promise is about time; the flush
 * promise has a margin). A cycle runs when it is due, or at a wake-up before
 * that when the watchdog's next one comes after it and the cycle is at most
 * early away (a quarter of its sleep: an early cycle only makes the next ones
 * come sooner). Looks come every threshold while polls run, so most cycles
 * take no wake-up of their own. Nothing here waits but the sleep: a capture's
 * waits are steps (stall_capture.c), so a cycle is never held past its time
 * by a thread that does not answer a signal. A kick during a cycle (the word
 * moved since the last wait) means no sleep after it; one after the word was
 * read makes the wait return at once. At stop, cycles go on at their times
 * while captures in flight end (ss_watchdog_ending), so the flush promise
 * holds to the last one. */
static void writer_loop(void)
{
	if (wr.slow_start)
		keep_moved(wr.slow_start, 0);
	/* For io_slow: opened by this thread, so it stays this thread's. */
	if (wr.one_thread) {
		int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
		wr.rq_fd1 = fd + 1;
		run_delay(&wr.rq_last);
	}
	set_slack();
	wr.cpu_mark = ss_thread_cpu_ns();
	wr.cpu_part = wr.one_thread;
	int kicked = 1, ending = 0; /* the first cycle at once */
	uint32_t seen = atomic_load(&wr.wake_seq);
	for (;;) {
		ending |= !atomic_load(&wr.running);
		if (ending && !ss_watchdog_ending())
			break;
		host_watchdog();
		uint64_t now = ss_now(), next = wr.one_thread ? ss_watchdog_next_ns() : UINT64_MAX;
		if (kicked || now >= wr.due || (wr.nudged && wr.due > now + TICK_NS) ||
		    (next > wr.due && wr.due - now <= wr.early)) {
			cpu_to(0);
			wr.nudged = 0;
			atomic_fetch_add_explicit(&ss_counters.writer_cycles, 1, memory_order_relaxed);
			wr.due = cycle(0);
			wr.early = wr.due > now ? (wr.due - now) / 4 : 0;
			if (wr.one_thread)
				cpu_to(1);
			now = ss_now();
			next = wr.one_thread ? ss_watchdog_next_ns() : UINT64_MAX;
		}
		uint32_t seq = atomic_load(&wr.wake_seq);
		if (!ending && !atomic_load(&wr.running))
			continue;
		kicked = seq != seen;
		uint64_t at = next < wr.due ? next : wr.due;
		if (!kicked && at > now) {
			struct timespec ts = { (time_t)(at / 1000000000u), (long)(at % 1000000000u) };
			atomic_store(&wr.long_sleep, !wr.one_thread && at > now + TICK_NS);
			pthread_mutex_unlock(&fork_mu);
			syscall(SYS_futex, &wr.wake_seq, FUTEX_WAIT_BITSET_PRIVATE, seq, &ts, NULL,
				FUTEX_BITSET_MATCH_ANY);
			pthread_mutex_lock(&fork_mu);
			atomic_store(&wr.long_sleep, 0);
			/* Counted for the part it woke for. */
			int look = wr.one_thread && ss_watchdog_next_ns() <= ss_now();
			atomic_fetch_add_explicit(look ? &ss_counters.watchdog_wakeups
						       : &ss_counters.writer_wakeups,
						  1, memory_order_relaxed);
		}
		seen = atomic_load(&wr.wake_seq);
		kicked |= seen != seq;
	}
}

static void *writer_main(void *arg)
{
	(void)arg;
	/* The writer takes no signals: SIGXFSZ from a file-size limit then becomes a
	 * plain EFBIG instead of killing the host program, and no handler of the host
	 * ever runs on this thread. */
	ss_shim_internal_thread();
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	/* The kernel may join our wake-up to another one this much later: a part of
	 * the lateness the flush margin absorbs (writer_pace.c). */
	prctl(PR_SET_TIMERSLACK, (unsigned long)(wr.pace.margin_ns / 4), 0, 0, 0);
	/* The clock's CPU tour first, while start opens the segment directory: no
	 * thread of its own to create and join (ss_clock_tour). */
	ss_clock_tour(wr.cfg.user->hook_clock);
	boot_say(BOOT_TOURED);
	uint32_t b;
	while ((b = atomic_load(&wr.boot)) == BOOT_TOURED)
		syscall(SYS_futex, &wr.boot, FUTEX_WAIT_PRIVATE, BOOT_TOURED, NULL, NULL, 0);
	if (b != BOOT_GO)
		return NULL;

	pthread_mutex_lock(&fork_mu);
	writer_loop();

	/* The watchdog's last scans before the final cycle, which writes them. */
	if (ss_watchdog_threshold_ns()) {
		cpu_to(1);
		ss_watchdog_stop();
		cpu_to(0);
	}
	/* Final: everything buffered goes to disk, the last segment is sealed. A
	 * cycle like the others in the count: a session stopped before the loop
	 * ran one has drained its rings here only. */
	atomic_fetch_add_explicit(&ss_counters.writer_cycles, 1, memory_order_relaxed);
	cycle(1);
	uint64_t end;
	ss_clock_point(&end);
	ss_task_dump_collect(UINT64_MAX);
	drain_all(UINT64_MAX);
	drain_sampler();
	drain_stalls(end, UINT64_MAX);
	/* Hooks are off now: the trailing drops of live threads, and process-wide
	 * losses that no later block would carry, go into this last block. */
	struct ss_pool *p = ss_pool_get();
	for (uint32_t i = 0, span = ss_pool_span(p); i < span; i++) {
		struct ss_slot *s = &p->slots[i];
		uint32_t state = atomic_load_explicit(&s->state, memory_order_acquire);
		if ((state == SS_SLOT_OWNED || state == SS_SLOT_RETIRED) && s->session == wr.cfg.session)
			put_pending_drops(s);
	}
	if (wr.seg_seq1)
		begin_block_if_needed();
	flush_block();
	seal_segment(end);
	/* The metrics file is written once more by stop (ss_writer_stop). */
	/* The tour is start's cost (ss_clock_start_cpu_ns). */
	/* (cpu_part is 0 here: the watchdog's stop above went back to it.) */
	uint64_t cpu = ss_thread_cpu_ns() - wr.cpu_looks;
	atomic_fetch_add(&ss_counters.cpu_watchdog_ns, wr.cpu_looks);
	atomic_store(&ss_counters.cpu_writer_ns, cpu - ss_clock_start_cpu_ns());
	if (wr.rq_fd1)
		close(wr.rq_fd1 - 1);
	wr.rq_fd1 = 0;
	pthread_mutex_unlock(&fork_mu);
	return NULL;
}

/* Start's side of the thread's start (wr.boot): until the tour is taken. */
static void wait_toured(void)
{
	while (atomic_load(&wr.boot) == BOOT_TOURING)
		syscall(SYS_futex, &wr.boot, FUTEX_WAIT_PRIVATE, BOOT_TOURING, NULL, NULL, 0);
}

/* The watchdog saw a ring past a quarter full: a writer in a long sleep (set
 * for a quiet spell) would let it overflow. Costs a wake-up only then. */
SS_INTERNAL void ss_writer_nudge(void)
{
	if (wr.one_thread) {
		wr.nudged = 1; /* the look ran on this thread: a cycle follows */
		return;
	}
	if (atomic_load_explicit(&wr.long_sleep, memory_order_relaxed) &&
	    atomic_exchange(&wr.long_sleep, 0))
		ss_writer_kick();
}

/* Safe at any time, also racing with stop (the word outlives the session). */
SS_INTERNAL void ss_writer_kick(void)
{
	atomic_fetch_add(&wr.wake_seq, 1u);
	syscall(SYS_futex, &wr.wake_seq, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

SS_INTERNAL int ss_writer_start(const struct ss_writer_config *cfg, char *err, size_t errlen)
{
	memset(&wr, 0, sizeof wr);
	/* Once for the process (starts are serialized by the session's lock). */
	if (!fork_handlers)
		fork_handlers = pthread_atfork(fork_prepare, fork_parent, fork_child) == 0;
	/* This session's own cost from now on (start's is stored by the session). */
	atomic_store(&ss_counters.cpu_stop_ns, 0);
	atomic_store(&ss_counters.cpu_writer_ns, 0);
	atomic_store(&ss_counters.cpu_watchdog_ns, 0);
	wr.cfg = *cfg;
	ss_pace_init(&wr.pace, cfg->flush_interval_ns, cfg->user->buffer_events);

	/* Blocks stay small enough that four of them fit a segment many times over. */
	uint64_t t = cfg->seg.max_file_size / 16;
	wr.block_target = t > (256u << 10) ? (256u << 10) : t < 4096 ? 4096 : (size_t)t;
	wr.window_events = wr.block_target / MAX_EVENT_BYTES;
	wr.raw_cap = wr.block_target + 4096;
	wr.raw = malloc(wr.raw_cap);
	wr.metrics_file = cfg->metrics_file ? strdup(cfg->metrics_file) : NULL;
	wr.cfg.metrics_file = wr.metrics_file;
	/* Room for the raw buffer grown fourfold; a block that outgrows even that is
	 * stored uncompressed. The compressor is made at the first block that needs
	 * it (writer_blocks.c). */
	wr.zstd_max_raw = wr.raw_cap * 4;
	if (!wr.raw) {
		snprintf(err, errlen, "out of memory for the writer's buffers");
		goto fail;
	}
	/* The thread first: it takes the clock's CPU tour meanwhile (writer_main),
	 * and waits for BOOT_GO. Named from the start (`top -H` and a profile of
	 * the host tell the recorder's cost apart), by borrowing: the sampler,
	 * which would record the borrowing, starts later. */
	if (ss_thread_create_named(&wr.thread, writer_main, NULL, "ss-writer", 1) != 0) {
		snprintf(err, errlen, "cannot start the writer thread");
		goto fail;
	}
	wr.thread_made = 1;
	wr.sg = ss_segments_open(&cfg->seg, err, errlen);
	if (!wr.sg)
		goto fail;
	/* Segments of an earlier run waiting to be shipped are shipped now too. */
	if (cfg->seg.archiving) {
		struct utsname u;
		ss_archive_start(cfg->seg.dir, cfg->seg.prefix, cfg->user->archive_command,
				 cfg->user->archive_timeout_s, uname(&u) == 0 ? u.nodename : "localhost");
	}
	/* The unwinder first: it decides whether samples and captures carry stack
	 * copies, and the log and every segment's META say what it chose. */
	ss_unwind_start(cfg->user->unwind, cfg->user->stack_copy_bytes, wr.unwind_status,
			sizeof wr.unwind_status);
	ss_log("stacks: %s", ss_unwind_brief());
	/* Before the first hook of the session: its stamps depend on it. */
	wait_toured();
	ss_clock_start(cfg->user->hook_clock, wr.clock_status, sizeof wr.clock_status);
	ss_log("clock: %s", wr.clock_status);
	struct ss_sampler_config sc = {
		.mode = !cfg->user->cpu_sampling ? SS_SAMPLER_OFF : (enum ss_sampler_mode)cfg->user->sampler,
		.offcpu = (enum ss_offcpu_mode)cfg->user->offcpu_stacks,
		.hz = cfg->user->sample_hz,
		.all_threads = cfg->user->sample_all_threads,
		.stack_copy = ss_unwind_copy_bytes(),
		.user_chain = ss_unwind_mode() == SS_UNWIND_AUTO,
	};
	ss_sampler_start(&sc, wr.sampler_status, sizeof wr.sampler_status);
	/* Hooks only: one recorder thread (watchdog.c, writer_loop). */
	int one = ss_sampler_mode() == SS_SAMPLER_OFF && !cfg->user->task_dump_enabled;
	ss_watchdog_start(cfg->user, cfg->session, !one, wr.stall_status, sizeof wr.stall_status);
	if (ss_watchdog_hosted()) /* it may be off, or have failed to start */
		wr.one_thread = 1;
	ss_task_dump_start(cfg->user, cfg->session, ss_pool_get()->slots, ss_pool_get()->nslots);
	atomic_store(&wr.sampling_on, 1);
	wr.sampling_applied = 1;
	wr.seg_start_ts = ss_now();
	begin_segment(wr.seg_start_ts);
	if (!wr.seg_seq1) {
		snprintf(err, errlen, "cannot create a segment file in %s: %s", cfg->seg.dir,
			 strerror(errno));
		goto fail;
	}
	atomic_store(&ss_counters.writer_healthy, 1u);
	atomic_store(&wr.running, 1);
	boot_say(BOOT_GO);
	return 0;
fail:
	if (wr.thread_made) {
		wait_toured();
		boot_say(BOOT_ABORT);
		pthread_join(wr.thread, NULL);
	}
	ss_archive_stop();
	ss_watchdog_stop();
	ss_watchdog_free();
	ss_task_dump_disarm();
	ss_task_dump_free();
	ss_sampler_stop();
	ss_unwind_stop();
	ss_clock_stop();
	ss_stacks_free();
	if (wr.sg) {
		ss_segments_abandon(wr.sg);
		ss_segments_close(wr.sg);
	}
	free(wr.raw);
	free(wr.metrics_file);
	memset(&wr, 0, sizeof wr);
	return -1;
}

SS_INTERNAL int ss_writer_stop(uint64_t stop_cpu0)
{
	/* Before the writer's last cycle, which writes what they left behind (the
	 * watchdog is stopped by the writer's thread: writer_main). */
	ss_task_dump_disarm();
	atomic_store(&wr.running, 0);
	ss_writer_kick();
	pthread_join(wr.thread, NULL);
	ss_watchdog_free();
	ss_task_dump_free();
	int healthy = !wr.failing;
	atomic_store(&ss_counters.writer_healthy, 0u);
	/* After the last seal: the last segment gets its chance to be shipped. */
	if (ss_archive_enabled())
		ss_archive_stop();
	ss_segments_close(wr.sg);
	free(wr.raw);
	/* The metrics file's last version: after the last seal and shipping, with
	 * stop's cost so far, and before the sampler and the unwinder are released,
	 * so that it still says which modes the session used and what they did
	 * (their release is then in the counters, not in the file). */
	if (wr.metrics_file) {
		atomic_store(&ss_counters.cpu_stop_ns, ss_thread_cpu_ns() - stop_cpu0);
		ss_metrics_write_file(wr.metrics_file);
	}
	ss_sampler_stop();
	ss_unwind_stop();
	ss_clock_stop();
	ss_stacks_free();
	free(wr.metrics_file);
	memset(&wr, 0, sizeof wr);
	return healthy ? 0 : -1;
}

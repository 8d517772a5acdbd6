/*
 * watchdog.c - finds polls that run longer than the stall threshold and has them
 * captured (stall_capture.c), without adding anything to the hook path.
 *
 * A worker's current poll is already in its ring: poll_begin stored a POLL_BEGIN
 * entry, and that entry stays in memory after the writer consumed it, until the
 * producer wraps around. So every tick the watchdog reads each ring's head
 * (acquire) and walks back over at most SCAN_BACK entries, or down to where the
 * previous tick stopped, for the latest poll boundary (POLL_BEGIN, POLL_END, PARK,
 * WORKER_END). It then reads head again: if the producer advanced far enough to
 * have rewritten an entry it read, the tick's result for that ring is discarded
 * (a seqlock without a writer-side sequence; the ring's head is the sequence).
 * Entry fields are read with relaxed atomic loads, since the owner may be
 * rewriting them after a wrap.
 *
 * Looks: a poll that begins just after a look is T old no sooner than T
 * later, so while long polls are around (the last max(1 s, 8T) held a look that
 * saw a poll open for T/2 or more, or a capture) the watchdog sleeps until the
 * earliest of the captures due and one threshold after its last look (less the
 * timer slack it lets the kernel use to join its wake-up to others), not every
 * few milliseconds. A poll that lasts T is then always seen open before T and
 * captured at T (later by as much as the machine delays the wake-up). While
 * every poll it sees is short, it looks every 2T instead: a poll first seen
 * past T is captured at that look, at most 2T after it began, and seeing it
 * (or any poll T/2 old) brings the looks back to one a threshold. A poll seen
 * open younger than T/2 is then given a look at its 2T mark, not at its T
 * one: a light program has a poll open at most looks, nearly always one about
 * to end, and looks at their T marks kept the looks near one a threshold
 * (160-200 a light run, no poll long, instead of 100-115; 200-220 at T). So
 * every poll that lasts 2T is captured by 2T, and one of between T and 2T
 * when a look sees it past T/2.
 *
 * A look is cheap (a few loads per attached thread); the wake-up around it is
 * what costs, about 35-50 us of CPU on a VM, 50 to 100 times a second at the
 * default threshold. So the sleep is one futex wait on an absolute CLOCK_MONOTONIC time
 * (no drift, one system call: a condition variable's wait re-takes its mutex as
 * contended, and its unlock is then a second system call), and the slack is the
 * kernel's default 50 us: a slack of T/16 shortened every tick by as much, 7%
 * more looks, to let the kernel join a wake-up that on a busy machine it rarely
 * can.
 *
 * One thread or two. While CPU sampling and task dumps are off (hooks only) the
 * watchdog has no thread of its own: the writer's thread asks when it is next
 * needed (ss_watchdog_next_ns), runs what is due (ss_watchdog_run) and its own
 * cycles at the same wake-ups (writer.c): a thread less to start, and most of
 * the writer's wake-ups, cold after 75 ms asleep, folded into looks. With
 * sampling or task dumps on, the writer's cycles can be long (unwinding), so
 * the watchdog keeps a thread and its looks their times. A hosted watchdog is
 * moved to a thread of its own by the writer's thread while it seals a
 * segment (an fdatasync), and back after a fast one; for the rest of the
 * session once a write took longer than half the threshold (a slow disk).
 * Only the writer's thread starts and joins that thread, never a hook, so
 * the thread's start and join hand the state below from one to the other.
 * At stop no look begins, and the captures in flight end at their times
 * while the writer's cycles go on (ss_watchdog_ending); what is still in
 * flight SS_CAPTURE_END_NS after stop began is dropped with a reason, so a
 * stop is bounded whatever a capture does.
 *
 * Captures never make this thread wait (stall_capture.c): their 1 ms CPU-clock
 * window and the wait for a signal's answer (up to 50 ms for a thread that
 * blocks the signal) are steps taken at their own wake-ups, so a writer cycle
 * on the same thread runs at its time meanwhile, and captures of several
 * threads run side by side. A slot whose capture is in flight is not scanned
 * (its STALL then precedes its STALL_END) and the writer does not release it
 * (ss_watchdog_slot_released): the capture's signal must not reach the thread
 * that takes the slot next.
 *
 * A poll open for T (the threshold) is captured at T, 2T, 4T ... up to
 * SS_STALL_MAX_CAPTURES times; when the watchdog sees it end (the first boundary
 * after its POLL_BEGIN, or the thread's exit), a STALL_END carries its end.
 * Messages go through a small mutex-protected queue to the writer: neither
 * thread is on the hook path, and the writer owns the segment. Times here are
 * stamps, like the ring entries they come from (clock.h); the writer converts
 * them.
 */
#include "clock.h"
#include "sampler.h"
#include "stall.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SCAN_BACK 64
#define QUEUE_LEN 256
#define QUIET_SHIFT 3 /* a quiet spell's looks thin out to one per 8 ticks */

struct wd_slot {
	uint32_t thread;      /* thread id the state below belongs to */
	uint64_t seen_head;
	int open;
	uint64_t open_idx, task, poll_ts;
	uint32_t loc, captures;
	uint64_t next_due;    /* poll_ts + T << due_shift */
	uint32_t due_shift;
	uint32_t boundaries;  /* looks that found a new poll boundary in the ring */
	int32_t tid;
	int capturing;        /* a capture in flight: run, begun at cap_ts (a stamp) */
	uint64_t cap_ts;
	struct ss_capture_run run;
};

static struct {
	pthread_t thread;
	_Atomic uint32_t running;
	_Atomic uint32_t wake_seq;  /* the futex word: stop bumps it and wakes us */
	_Atomic int started;
	/* Who takes the looks. hosted: the writer's thread (no thread of our
	 * own); the writer may move them to a thread of their own and back
	 * (ss_watchdog_own_thread, ss_watchdog_host), only from its thread, so
	 * a thread's start and join hand D over. handback: that thread is to
	 * return. ending: stop has begun, no look begins any more; finished: our
	 * thread has taken its last step (the writer joins it then). */
	int hosted, thread_made, own_failed;
	_Atomic uint32_t handback, ending, finished;
	uint64_t look_at;           /* the next look (a stamp) */
	uint64_t end_by;            /* stop: captures still in flight then are dropped */
	uint32_t quiet;             /* looks in a row that found nothing moved and no poll open */
	uint32_t capturing;         /* captures in flight */
	uint64_t step_at_ns;        /* the earliest of their next steps (CLOCK_MONOTONIC) */
	uint32_t session;
	uint64_t threshold_ns, tick_ns, slack_ns;
	/* The period while no long poll is around (wide_ns: 2T, look): an open
	 * poll at least T/2 old seen at a look, or a capture, keeps it at tick_ns
	 * for long_ns after (until long_until, a stamp). */
	uint64_t wide_ns, long_ns, long_until;
	struct ss_pool *pool;
	struct wd_slot *ws;
	size_t ws_len;

	/* Guards ws: the writer scans a slot it is about to release (below). */
	pthread_mutex_t smu;
	pthread_mutex_t qmu;
	unsigned char *q;         /* QUEUE_LEN messages of msg_size bytes */
	size_t msg_size;          /* ss_stall_msg_size(the stack copy) */
	uint32_t copy;            /* bytes of stack a capture copies (0: frames only) */
	struct ss_stall_msg *cap_msg, *drain_msg; /* watchdog's, writer's */
	uint32_t qhead, qlen;
	uint64_t qdropped;
} D;

/* The per-slot state and the queue outlive their session, for the next one:
 * unmapping them at stop cost 150-350 us of CPU on a VM (a munmap in a process
 * with threads running elsewhere shoots their TLB entries down, an
 * inter-processor interrupt per CPU), and mapping them again at start cost as
 * much. Both are mapped, not allocated: the kernel gives them zeroed and only
 * the pages used take memory. ws_dirty is how much of ws the last session
 * wrote (the slots it ever used), cleared at the next start. */
static struct {
	struct wd_slot *ws;
	size_t ws_len, ws_dirty;
	unsigned char *q;
	size_t q_len;
} kept;

/* A mapping of at least len bytes in *p (of *have bytes), zeroed where asked:
 * the one kept when it is large enough, else a new one. */
static void *kept_map(void *p, size_t *have, size_t len)
{
	if (p && *have >= len)
		return p;
	if (p)
		munmap(p, *have);
	*have = 0;
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	*have = len;
	return m;
}

static struct ss_stall_msg *q_at(uint32_t i)
{
	return (struct ss_stall_msg *)(void *)(D.q + (size_t)(i % QUEUE_LEN) * D.msg_size);
}

static void enqueue(const struct ss_stall_msg *m)
{
	pthread_mutex_lock(&D.qmu);
	if (D.qlen == QUEUE_LEN) {
		/* The writer is far behind; losing stall reports beats blocking here. */
		D.qdropped++;
	} else {
		uint32_t len = m->uc.len <= D.copy ? m->uc.len : 0;
		memcpy(q_at(D.qhead + D.qlen), m, sizeof *m + len);
		D.qlen++;
	}
	pthread_mutex_unlock(&D.qmu);
}

SS_INTERNAL void ss_stall_drain(const struct ss_stall_sink *sink, uint64_t lim)
{
	if (!D.q)
		return;
	struct ss_stall_msg *m = D.drain_msg;
	for (;;) {
		pthread_mutex_lock(&D.qmu);
		const struct ss_stall_msg *e = D.qlen ? q_at(D.qhead) : NULL;
		if (!e || e->poll_ts > lim || e->ts > lim) {
			pthread_mutex_unlock(&D.qmu);
			break;
		}
		memcpy(m, e, sizeof *m + (e->uc.len <= D.copy ? e->uc.len : 0));
		if (m->uc.len > D.copy)
			m->uc.len = 0;
		D.qhead = (D.qhead + 1) % QUEUE_LEN;
		/* Emptied: the next message goes to the front again. A message is 8 KB
		 * and more with a stack copy, and a queue that went round would fault
		 * in all of its 2 MB, a few pages a capture (~14 us each on a VM),
		 * where it rarely holds more than a few. */
		if (--D.qlen == 0)
			D.qhead = 0;
		pthread_mutex_unlock(&D.qmu);
		sink->stall(m);
	}
}

static void emit_end(struct wd_slot *w, uint64_t end_ts)
{
	if (w->open && w->captures) {
		struct ss_stall_msg m;
		memset(&m, 0, sizeof m);
		m.is_end = 1;
		m.thread = w->thread;
		m.tid = (uint32_t)w->tid;
		m.task = w->task;
		m.location = w->loc;
		m.poll_ts = w->poll_ts;
		m.ts = end_ts > w->poll_ts ? end_ts : w->poll_ts;
		m.index = w->captures;
		enqueue(&m);
	}
	w->open = 0;
	w->captures = 0;
}

static int is_boundary(uint32_t kind)
{
	return kind == SS_EV_POLL_BEGIN || kind == SS_EV_POLL_END || kind == SS_EV_PARK ||
	       kind == SS_EV_WORKER_END;
}

static void drop_capture(struct wd_slot *w, const char *why);

/* Brings w up to date with the ring of s. */
static void scan_slot(struct ss_slot *s, struct wd_slot *w, uint64_t now)
{
	uint32_t state = atomic_load_explicit(&s->state, memory_order_acquire);
	if ((state != SS_SLOT_OWNED && state != SS_SLOT_RETIRED) || s->session != D.session) {
		emit_end(w, now);
		w->thread = 0;
		return;
	}
	uint32_t thread = s->thread_id;
	if (w->thread != thread) {
		/* Its STALL before its STALL_END, and the count of captures in
		 * flight kept right (a stop waits for it to reach 0). */
		if (w->capturing)
			drop_capture(w, "no stack: the thread left its slot during the capture");
		emit_end(w, now);
		memset(w, 0, sizeof *w);
		w->thread = thread;
		w->tid = s->tid;
	}
	uint64_t cap = s->mask + 1;
	uint64_t h1 = atomic_load_explicit(&s->head, memory_order_acquire);
	if (h1 != w->seen_head) {
		uint64_t fresh = h1 > w->seen_head ? h1 - w->seen_head : h1;
		uint64_t lim = fresh < SCAN_BACK ? fresh : SCAN_BACK;
		if (lim > h1)
			lim = h1;
		if (lim >= cap)
			lim = cap - 1;
		int have_latest = 0, have_end = 0;
		uint32_t l_kind = 0, l_loc = 0;
		uint64_t l_idx = 0, l_ts = 0, l_task = 0, end_ts = 0;
		for (uint64_t k = 1; k <= lim; k++) {
			uint64_t idx = h1 - k;
			struct ss_ev *e = &s->ring[idx & s->mask];
			uint32_t kind = __atomic_load_n(&e->kind, __ATOMIC_RELAXED);
			if (!is_boundary(kind))
				continue;
			uint64_t ts = __atomic_load_n(&e->ts, __ATOMIC_RELAXED);
			if (!have_latest) {
				have_latest = 1;
				l_kind = kind;
				l_idx = idx;
				l_ts = ts;
				l_task = __atomic_load_n(&e->a, __ATOMIC_RELAXED);
				l_loc = __atomic_load_n(&e->b, __ATOMIC_RELAXED);
				/* No poll open: the latest boundary is all there is to
				 * know, and each entry further back is a cache line the
				 * producer's core wrote (a look read ~40 of them a
				 * thread at 4k events a second). */
				if (!w->open)
					break;
			}
			if (w->open && idx > w->open_idx) {
				have_end = 1;
				end_ts = ts; /* walking back: ends up the first after the open poll */
			}
			if (w->open && idx <= w->open_idx)
				break;
		}
		atomic_thread_fence(memory_order_acquire);
		uint64_t h2 = atomic_load_explicit(&s->head, memory_order_relaxed);
		if (h2 < h1 || h2 - (h1 - lim) >= cap || s->thread_id != thread)
			return; /* overwritten while we read, or the slot changed hands */
		if (w->open && have_end)
			emit_end(w, end_ts);
		if (have_latest) {
			w->boundaries++;
			if (l_kind == SS_EV_POLL_BEGIN) {
				if (!w->open || l_idx != w->open_idx) {
					emit_end(w, l_ts);
					w->open = 1;
					w->open_idx = l_idx;
					w->task = l_task;
					w->loc = l_loc;
					w->poll_ts = l_ts;
					w->captures = 0;
					w->due_shift = 0;
					w->next_due = l_ts + ss_clock_delta_stamps(D.threshold_ns);
				}
			} else {
				emit_end(w, l_ts);
			}
		}
		w->seen_head = h1;
		/* We read this ring's head anyway: a ring filling while the writer
		 * sleeps long (a quiet spell just ended) gets it up in time. */
		uint64_t tail = atomic_load_explicit(&s->tail, memory_order_relaxed);
		if (h1 - tail > cap / 4)
			ss_writer_nudge();
	}
	if (state == SS_SLOT_RETIRED && w->open) {
		/* The thread ended inside the poll (or we missed its end). */
		uint64_t r = atomic_load_explicit(&s->retired_ts, memory_order_relaxed);
		emit_end(w, r ? r : now);
	}
}

/* The message of w's capture, as far as the watchdog knows it; the capture
 * fills in the rest when it is done (stall_capture.c). */
static struct ss_stall_msg *capture_msg(const struct wd_slot *w)
{
	struct ss_stall_msg *m = D.cap_msg;
	memset(m, 0, offsetof(struct ss_stall_msg, frames));
	m->blocked = 0;
	m->uc.valid = 0;
	m->uc.len = 0;
	m->thread = w->thread;
	m->tid = (uint32_t)w->tid;
	m->task = w->task;
	m->location = w->loc;
	m->poll_ts = w->poll_ts;
	m->ts = w->cap_ts;
	m->index = w->captures;
	return m;
}

/* w's capture is over (its message in D.cap_msg): no longer in flight, and
 * queued. Under smu. */
static void capture_queued(struct wd_slot *w)
{
	if (w->capturing) {
		w->capturing = 0;
		if (D.capturing)
			D.capturing--;
	}
	enqueue(D.cap_msg);
	atomic_fetch_add_explicit(&ss_counters.stall_captures, 1, memory_order_relaxed);
	w->captures++;
}

/* Ends w's capture in flight without waiting for the rest of it; its message
 * says why. Under smu. */
static void drop_capture(struct wd_slot *w, const char *why)
{
	struct ss_stall_msg *m = capture_msg(w); /* (frame and syscall counts zeroed) */
	m->kind = SS_STALL_UNKNOWN;
	snprintf(m->reason, sizeof m->reason, "%s", why);
	capture_queued(w);
}

/* w's capture is done (its message in D.cap_msg): queued, and the next one
 * planned. Under smu. */
static void capture_done(struct ss_slot *s, struct wd_slot *w)
{
	capture_queued(w);
	/* The next power of two of the threshold the poll has not reached by the
	 * capture's end: a first capture that came late (the watchdog was
	 * preempted, or looked first after a quiet spell), or one that waited
	 * 50 ms for a thread that never answers, is not followed by a burst for
	 * the ages it passed meanwhile. */
	uint64_t end = ss_stamp();
	uint32_t k = w->due_shift + 1;
	while (k < 40 && w->poll_ts + ss_clock_delta_stamps(D.threshold_ns << k) <= end)
		k++;
	w->due_shift = k;
	w->next_due = w->poll_ts + ss_clock_delta_stamps(D.threshold_ns << k);
	/* The thread left during the capture: the writer releases its slot,
	 * which waited for this, now rather than at its next cycle. */
	if (atomic_load_explicit(&s->state, memory_order_acquire) == SS_SLOT_RETIRED)
		ss_writer_kick();
	/* The capture took time: is the poll still the same? */
	scan_slot(s, w, end);
	if (w->open && w->captures < SS_STALL_MAX_CAPTURES && w->next_due < D.look_at)
		D.look_at = w->next_due;
}

/* Begins a capture of slot i's poll; under smu. */
static void capture(struct ss_slot *s, uint32_t i, struct wd_slot *w)
{
	w->cap_ts = ss_stamp();
	D.long_until = w->cap_ts + ss_clock_delta_stamps(D.long_ns);
	if (ss_capture_begin(s, i, capture_msg(w), &w->run)) {
		capture_done(s, w);
		return;
	}
	w->capturing = 1;
	D.capturing++;
	if (w->run.at_ns < D.step_at_ns)
		D.step_at_ns = w->run.at_ns;
}

/* The steps of the captures in flight that are due. They are counted again
 * on the way: a stop waits for the count to reach 0 (ss_watchdog_ending). */
static void capture_steps(void)
{
	uint64_t now = ss_now(), next = UINT64_MAX;
	uint32_t left = 0;
	for (uint32_t i = 0, span = ss_pool_span(D.pool); i < span; i++) {
		struct wd_slot *w = &D.ws[i];
		if (!w->capturing)
			continue;
		pthread_mutex_lock(&D.smu);
		int due = w->run.at_ns <= now;
		if (due)
			atomic_fetch_add_explicit(&ss_counters.capture_steps, 1, memory_order_relaxed);
		if (due && ss_capture_step(&D.pool->slots[i], i, capture_msg(w), &w->run))
			capture_done(&D.pool->slots[i], w);
		if (w->capturing && w->run.at_ns < next)
			next = w->run.at_ns;
		left += w->capturing != 0;
		pthread_mutex_unlock(&D.smu);
	}
	D.capturing = left;
	D.step_at_ns = next;
}

/* Stop: what is still in flight at the end's deadline is dropped, so that a
 * stop never waits longer than that, whatever a capture (or a miscount) does. */
static void drop_captures(void)
{
	for (uint32_t i = 0, span = ss_pool_span(D.pool); i < span; i++) {
		if (!D.ws[i].capturing)
			continue;
		pthread_mutex_lock(&D.smu);
		drop_capture(&D.ws[i], "no stack: the recording stopped before the capture ended");
		pthread_mutex_unlock(&D.smu);
	}
	D.capturing = 0;
	D.step_at_ns = UINT64_MAX;
}

/* One look at every ring, captures due begun; sets when the next is due. */
static void look(void)
{
	atomic_fetch_add_explicit(&ss_counters.watchdog_looks, 1, memory_order_relaxed);
	uint32_t quiet = D.quiet < QUIET_SHIFT ? D.quiet : QUIET_SHIFT;
	uint64_t now = ss_stamp(), half = ss_clock_delta_stamps(D.threshold_ns / 2);
	uint64_t young = UINT64_MAX; /* the earliest due of a poll seen open before T/2 */
	D.look_at = UINT64_MAX; /* the captures due lower it, then the period (below) */
	int moved = 0, long_seen = 0;
	for (uint32_t i = 0, span = ss_pool_span(D.pool); i < span; i++) {
		struct ss_slot *s = &D.pool->slots[i];
		struct wd_slot *w = &D.ws[i];
		if (!w->thread && atomic_load_explicit(&s->state, memory_order_relaxed) != SS_SLOT_OWNED)
			continue;
		if (w->capturing) {
			moved = 1; /* scanned when its capture is done */
			continue;
		}
		pthread_mutex_lock(&D.smu);
		uint32_t seen = w->boundaries, thread = w->thread;
		scan_slot(s, w, now);
		int grown = w->open && now >= w->poll_ts + half;
		long_seen |= grown;
		if (w->open && w->captures < SS_STALL_MAX_CAPTURES && ss_stamp() >= w->next_due)
			capture(s, i, w);
		if (!w->capturing && w->open && !w->captures && !grown && w->next_due < young)
			young = w->next_due;
		else if (!w->capturing && w->open && w->captures < SS_STALL_MAX_CAPTURES &&
			 w->next_due < D.look_at)
			D.look_at = w->next_due;
		moved |= (w->open && w->captures < SS_STALL_MAX_CAPTURES) ||
			 w->boundaries != seen || w->thread != thread;
		pthread_mutex_unlock(&D.smu);
	}
	/* The period (see the top): T while long polls are around, else 2T and a
	 * young poll's look at its 2T mark. After a quiet look the next comes a
	 * period later, then 2, 4 and 8 periods (at most 800 ms: a period is at
	 * most 100 ms): a poll that begins in a quiet spell is first seen, and
	 * captured if it is past the threshold, up to that much later (README,
	 * "Stalls"). A poll that begins or ends in any ring, a poll open that is
	 * still to be captured, or a thread new to its slot ends the spell; other
	 * events (marks, queue depths) do not. */
	if (long_seen)
		D.long_until = now + ss_clock_delta_stamps(D.long_ns);
	int around = now < D.long_until;
	if (!around && young != UINT64_MAX)
		young += ss_clock_delta_stamps(D.threshold_ns);
	uint64_t gap = (around ? D.tick_ns : D.wide_ns) << quiet;
	uint64_t at = now + ss_clock_delta_stamps(gap);
	if (young < at)
		at = young;
	if (at < D.look_at)
		D.look_at = at;
	D.quiet = moved ? 0 : D.quiet + 1;
}

/* A stamp as a CLOCK_MONOTONIC time (futex waits take those). */
static uint64_t stamp_to_ns(uint64_t stamp)
{
	uint64_t at = ss_stamp();
	return ss_now() + ss_clock_delta_ns(stamp > at ? stamp - at : 0);
}

SS_INTERNAL uint64_t ss_watchdog_next_ns(void)
{
	if (!atomic_load_explicit(&D.running, memory_order_relaxed))
		return UINT64_MAX;
	/* A look due already is due at 0: a time computed from a later clock
	 * read would look like the future. None once stop has begun. */
	uint64_t at = UINT64_MAX;
	if (!atomic_load_explicit(&D.ending, memory_order_relaxed))
		at = ss_stamp() >= D.look_at ? 0 : stamp_to_ns(D.look_at);
	else if (D.capturing)
		at = D.end_by; /* what is left then is dropped */
	return D.capturing && D.step_at_ns < at ? D.step_at_ns : at;
}

SS_INTERNAL void ss_watchdog_run(void)
{
	if (D.capturing && ss_now() >= D.step_at_ns)
		capture_steps();
	if (!atomic_load_explicit(&D.ending, memory_order_relaxed)) {
		if (ss_stamp() >= D.look_at)
			look();
	} else if (D.capturing && ss_now() >= D.end_by) {
		drop_captures();
	}
}

SS_INTERNAL int ss_watchdog_hosted(void)
{
	return D.started && D.hosted;
}

SS_INTERNAL uint64_t ss_watchdog_threshold_ns(void)
{
	return D.started ? D.threshold_ns : 0;
}

SS_INTERNAL uint64_t ss_watchdog_slack_ns(void)
{
	return D.slack_ns;
}

/* Stop: the captures in flight finish (at most ANSWER_NS and a window), or
 * are dropped at the end's deadline. */
static void finish_captures(void)
{
	while (D.capturing && ss_now() < D.end_by) {
		uint64_t at = D.step_at_ns < D.end_by ? D.step_at_ns : D.end_by;
		struct timespec ts = { (time_t)(at / 1000000000u), (long)(at % 1000000000u) };
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
		capture_steps();
	}
	if (D.capturing)
		drop_captures();
}

static void *watchdog_main(void *arg)
{
	(void)arg;
	/* No host signal handler ever runs here, and our own capture signal is not
	 * meant for this thread. */
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	ss_shim_internal_thread();
	prctl(PR_SET_TIMERSLACK, (unsigned long)D.slack_ns, 0, 0, 0);

	while (atomic_load(&D.running) && !atomic_load(&D.handback)) {
		ss_watchdog_run();
		/* The word before running: a stop after this load changes it, and the
		 * wait then returns at once. */
		uint32_t seq = atomic_load(&D.wake_seq);
		if (!atomic_load(&D.running) || atomic_load(&D.handback))
			break;
		uint64_t at = ss_watchdog_next_ns();
		struct timespec ts = { (time_t)(at / 1000000000u), (long)(at % 1000000000u) };
		/* Absolute CLOCK_MONOTONIC (FUTEX_WAIT_BITSET's clock); an early
		 * return (a signal, EAGAIN) only means an early look. */
		syscall(SYS_futex, &D.wake_seq, FUTEX_WAIT_BITSET_PRIVATE, seq, &ts, NULL,
			FUTEX_BITSET_MATCH_ANY);
		atomic_fetch_add_explicit(&ss_counters.watchdog_wakeups, 1, memory_order_relaxed);
	}
	/* Handed back to the writer's thread: captures in flight go on there. */
	if (!atomic_load(&D.handback))
		finish_captures();
	atomic_fetch_add(&ss_counters.cpu_watchdog_ns, ss_thread_cpu_ns());
	if (!atomic_load(&D.handback)) {
		atomic_store(&D.finished, 1u);
		ss_writer_kick(); /* a stopping writer waits for this (ss_watchdog_ending) */
	}
	return NULL;
}

static void wake_thread(void)
{
	atomic_fetch_add(&D.wake_seq, 1u);
	syscall(SYS_futex, &D.wake_seq, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* 0, else pthread_create's error. */
static int start_thread(void)
{
	atomic_store(&D.finished, 0u);
	atomic_store(&D.handback, 0u);
	/* Named by borrowing only while the sampler is off: its perf events would
	 * see the caller take the name. */
	int e = ss_thread_create_named(&D.thread, watchdog_main, NULL, "ss-watchdog",
				       ss_sampler_mode() == SS_SAMPLER_OFF);
	if (e != 0)
		return e;
	D.thread_made = 1;
	D.hosted = 0;
	atomic_store(&ss_counters.watchdog_own_thread, 1u);
	return 0;
}

SS_INTERNAL int ss_watchdog_own_thread(void)
{
	if (!D.started || !D.hosted || !atomic_load(&D.running) || atomic_load(&D.ending))
		return -1;
	int e = start_thread();
	if (e != 0) {
		/* Once a session: each slow write asks again. */
		if (!D.own_failed) {
			ss_log("cannot start a thread for the stall watchdog (%s); its looks stay "
			       "on the writer's thread", strerror(e));
			atomic_fetch_add(&ss_counters.errors, 1);
		}
		D.own_failed = 1;
		return -1;
	}
	return 0;
}

SS_INTERNAL void ss_watchdog_host(void)
{
	if (!D.started || D.hosted || !D.thread_made)
		return;
	atomic_store(&D.handback, 1u);
	wake_thread();
	pthread_join(D.thread, NULL);
	D.thread_made = 0;
	D.hosted = 1;
	atomic_store(&ss_counters.watchdog_own_thread, 0u);
}

/* The end begins (stop; on the writer's thread): no look begins any more, and
 * the captures in flight get until end_by. Before the store to running that
 * stops our thread, which reads end_by after it. */
static void begin_end(void)
{
	if (atomic_load(&D.ending))
		return;
	D.end_by = ss_now() + SS_CAPTURE_END_NS;
	atomic_store(&D.ending, 1u);
}

SS_INTERNAL int ss_watchdog_ending(void)
{
	if (!D.started)
		return 0;
	if (!atomic_load(&D.ending)) {
		begin_end();
		if (D.thread_made) {
			atomic_store(&D.running, 0u);
			wake_thread();
		}
	}
	/* Hosted: the captures' steps run on the writer's thread meanwhile. */
	if (!D.thread_made && D.capturing && ss_now() >= D.end_by)
		drop_captures();
	return D.thread_made ? !atomic_load(&D.finished) : D.capturing != 0;
}

SS_INTERNAL void ss_watchdog_start(const struct stallscope_config *cfg, uint32_t session,
				   int own_thread, char *status, size_t len)
{
	memset(&D, 0, sizeof D);
	atomic_store(&ss_counters.watchdog_own_thread, 0u);
	snprintf(status, len, "off");
	if (!cfg->stall_threshold_ms)
		return;
	D.session = session;
	D.threshold_ns = (uint64_t)cfg->stall_threshold_ms * 1000000u;
	/* New polls are found within a threshold, by the time they are due (see the
	 * top); a due capture wakes the watchdog at its own time. The kernel may move
	 * the wake-up by the slack; the tick is shortened by as much, so that never
	 * makes it late. */
	D.slack_ns = 50000u;
	if (D.slack_ns > D.threshold_ns / 16)
		D.slack_ns = D.threshold_ns / 16;
	D.tick_ns = D.threshold_ns - D.slack_ns;
	if (D.tick_ns < 1000000u)
		D.tick_ns = 1000000u;
	if (D.tick_ns > 100000000u)
		D.tick_ns = 100000000u;
	/* While every poll seen is short, looks twice as far apart (look). */
	D.wide_ns = 2 * D.threshold_ns - D.slack_ns;
	if (D.wide_ns > 100000000u)
		D.wide_ns = 100000000u;
	if (D.wide_ns < D.tick_ns)
		D.wide_ns = D.tick_ns;
	D.long_ns = 8 * D.threshold_ns > 1000000000u ? 8 * D.threshold_ns : 1000000000u;
	D.pool = ss_pool_get();
	D.copy = ss_unwind_copy_bytes();
	D.msg_size = (ss_stall_msg_size(D.copy) + 7) & ~(size_t)7;
	/* Zeroed by the kernel page by page as the slots in use reach them (a
	 * calloc cleared all 256 slots' state, 24 KB, at every start), or kept
	 * from the last session and cleared as far as it used them (kept, above);
	 * the queue and the two message buffers are written before they are read:
	 * their pages are touched at the first capture, if any. */
	D.ws_len = sizeof *D.ws * D.pool->nslots;
	int reuse = kept.ws && kept.ws_len >= D.ws_len;
	kept.ws = kept_map(kept.ws, &kept.ws_len, D.ws_len);
	if (kept.ws && reuse)
		memset(kept.ws, 0, kept.ws_dirty < kept.ws_len ? kept.ws_dirty : kept.ws_len);
	/* All of it until a stop says how much this session used: a process forked
	 * during the session starts its own with the parent's slots in these pages. */
	kept.ws_dirty = kept.ws_len;
	D.ws = kept.ws;
	kept.q = kept_map(kept.q, &kept.q_len, (size_t)QUEUE_LEN * D.msg_size);
	D.q = kept.q;
	D.cap_msg = malloc(D.msg_size);
	D.drain_msg = malloc(D.msg_size);
	char why[200] = "";
	if (!D.ws || !D.q || !D.cap_msg || !D.drain_msg) {
		snprintf(status, len, "off: out of memory");
		goto fail;
	}
	if (ss_capture_init(D.pool->slots, D.pool->nslots, session, D.copy, why, sizeof why) != 0) {
		snprintf(status, len, "off: %s", why);
		goto fail;
	}
	pthread_mutex_init(&D.smu, NULL);
	pthread_mutex_init(&D.qmu, NULL);
	atomic_store(&D.running, 1u);
	D.hosted = 1; /* the first look at the writer's first wake-up */
	if (own_thread && start_thread() != 0) {
		snprintf(status, len, "off: cannot start the watchdog thread");
		ss_capture_fini();
		pthread_mutex_destroy(&D.smu);
		pthread_mutex_destroy(&D.qmu);
		goto fail;
	}
	D.started = 1;
	snprintf(status, len, "on: threshold %u ms, captures at 1x 2x 4x ... (max %d), "
		 "running threads by signal, blocked ones from /proc and their stack memory%s",
		 cfg->stall_threshold_ms, SS_STALL_MAX_CAPTURES,
		 D.copy ? "; registers and stack copies unwound by the writer (see unwind)" : "");
	return;
fail:
	free(D.cap_msg);
	free(D.drain_msg);
	memset(&D, 0, sizeof D);
}

SS_INTERNAL int ss_watchdog_slot_released(struct ss_slot *s)
{
	if (!D.started)
		return 1;
	/* (Stop runs on the writer's thread too, the only caller: not meanwhile.) */
	int ok = 1;
	uint32_t i = (uint32_t)(s - D.pool->slots);
	pthread_mutex_lock(&D.smu);
	if (i < D.pool->nslots && D.ws[i].capturing)
		ok = 0;
	else if (i < D.pool->nslots && D.ws[i].thread)
		scan_slot(s, &D.ws[i], ss_stamp());
	pthread_mutex_unlock(&D.smu);
	return ok;
}

SS_INTERNAL void ss_watchdog_stop(void)
{
	if (!D.started)
		return;
	begin_end();
	atomic_store(&D.running, 0u);
	if (D.thread_made) {
		wake_thread();
		pthread_join(D.thread, NULL);
		D.thread_made = 0;
	} else {
		finish_captures();
	}
	ss_capture_fini();
	/* Stalled polls that ended since the last tick get their STALL_END now. */
	pthread_mutex_lock(&D.smu);
	for (uint32_t i = 0, span = ss_pool_span(D.pool); i < span; i++)
		if (D.ws[i].thread)
			scan_slot(&D.pool->slots[i], &D.ws[i], ss_stamp());
	D.started = 0;
	pthread_mutex_unlock(&D.smu);
	if (D.qdropped)
		ss_log("%llu stall captures dropped: the writer fell behind",
		       (unsigned long long)D.qdropped);
	/* Kept for the next session (kept, above): what this one wrote of it. */
	kept.ws_dirty = sizeof *D.ws * ss_pool_span(D.pool);
	D.ws = NULL;
	free(D.cap_msg);
	D.cap_msg = NULL;
	/* The queue stays until the writer's final drain; the slots' lock goes
	 * with it (ss_watchdog_free below). */
}

SS_INTERNAL void ss_watchdog_free(void)
{
	if (!D.q)
		return;
	D.q = NULL; /* kept for the next session */
	free(D.drain_msg);
	free(D.cap_msg);
	pthread_mutex_destroy(&D.smu);
	pthread_mutex_destroy(&D.qmu);
	memset(&D, 0, sizeof D);
}

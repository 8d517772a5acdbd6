/*
 * task_dump.c - where idle tasks wait: stallscope_task_pending() and the writer's
 * side of task dumps.
 *
 * The hook runs inside a task's poll just before the poll returns "not ready".
 * It finds the task being polled in the thread's own ring (the latest POLL_BEGIN,
 * a few entries back; the thread is the ring's only producer, so nothing there
 * can change under it), walks its own frame pointers (bounded depth, every read
 * checked against the thread's stack bounds) and stores {task, time, frames} in
 * a small single-producer ring of its slot. No lock, allocation or system call
 * (the clock is the vDSO's); a full ring drops and counts.
 *
 * The writer takes those entries each cycle and keeps the latest per task, with
 * a threshold drawn from an exponential distribution whose mean is the idle
 * threshold. The task's idleness ends at its next POLL_BEGIN (or TERMINATE) that
 * the writer drains; a task whose idle time passes its threshold, ended or still
 * idle now, gets one TASK_DUMP record. Sampling thresholds from an exponential
 * distribution makes the chance of a dump grow with the length of the wait
 * (1 - e^(-idle/mean)), so long waits are nearly always dumped while the flood
 * of short ones costs little. Nothing wakes or re-polls a task.
 */
#include "clock.h"
#include "stall.h"
#include "sigwalk.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define RING 256              /* entries per slot, a power of two */
#define LOOK_BACK 64          /* ring entries searched for the current POLL_BEGIN */
#define MAX_NODES 16384       /* tasks tracked at once by the writer */
#define MARGIN_NS 5000000ull  /* events stamped this close to now may not be drained yet */

struct td_entry {
	uint64_t task, ts;
	uint32_t thread, tid, location, nframes;
	uint64_t frames[SS_TASK_DUMP_FRAMES];
};

struct td_ring {
	_Alignas(SS_CACHELINE) _Atomic uint64_t head;
	uint64_t cached_tail;
	_Atomic uint64_t dropped;
	_Alignas(SS_CACHELINE) _Atomic uint64_t tail;
};

/* Nonzero (the session) while the hook is armed: the only load of a disarmed hook. */
static _Atomic uint32_t td_session;
/* The ring mapping outlives its session (a late hook may still store into it) and
 * is reused by the next session of the same shape. */
static void *kept_map;
static size_t kept_len;

static struct {
	struct td_ring *rings;
	struct td_entry *ents;
	size_t map_len;
	struct ss_slot *slots;
	uint32_t nslots;
	uint64_t mean_ns;
	uint64_t rng;
	int active;

	struct node {
		uint64_t task, pending_ts, threshold_ns, ended_ts;
		uint32_t thread, tid, location, nframes;
		uint64_t frames[SS_TASK_DUMP_FRAMES];
	} *nodes;
	uint32_t nnodes;
	int32_t *table;          /* open addressing: node index or -1 */
	uint32_t table_size;
	uint64_t dropped_nodes;
} T;

STALLSCOPE_API void stallscope_task_pending(void)
{
	/* Acquire: the rings and slot base published before the session are seen. */
	uint32_t st = atomic_load_explicit(&td_session, memory_order_acquire);
	if (SS_LIKELY(st == 0))
		return;
	if (atomic_load_explicit(&ss_state, memory_order_relaxed) != st || ss_tls_session != st)
		return; /* disabled, stopping, or a thread that never polled this session */
	struct ss_slot *s = ss_tls_slot;

	uint64_t h = atomic_load_explicit(&s->head, memory_order_relaxed);
	uint64_t lim = h < LOOK_BACK ? h : LOOK_BACK;
	uint64_t task = 0;
	uint32_t loc = 0;
	int found = 0;
	for (uint64_t k = 1; k <= lim; k++) {
		const struct ss_ev *e = &s->ring[(h - k) & s->mask];
		if (e->kind == SS_EV_POLL_BEGIN) {
			task = e->a;
			loc = e->b;
			found = 1;
			break;
		}
		if (e->kind == SS_EV_POLL_END || e->kind == SS_EV_PARK || e->kind == SS_EV_WORKER_END)
			return; /* not inside a poll */
	}
	if (!found)
		return;

	uint32_t i = (uint32_t)(s - T.slots);
	if (i >= T.nslots)
		return;
	struct td_ring *r = &T.rings[i];
	uint64_t rh = atomic_load_explicit(&r->head, memory_order_relaxed);
	if (rh - r->cached_tail >= RING) {
		r->cached_tail = atomic_load_explicit(&r->tail, memory_order_acquire);
		if (rh - r->cached_tail >= RING) {
			atomic_store_explicit(&r->dropped,
					      atomic_load_explicit(&r->dropped, memory_order_relaxed) + 1,
					      memory_order_relaxed);
			return;
		}
	}
	struct td_entry *d = &T.ents[(size_t)i * RING + (rh & (RING - 1))];
	d->task = task;
	d->ts = ss_stamp();
	d->thread = s->thread_id;
	d->tid = (uint32_t)s->tid;
	d->location = loc;
	/* Frame 0 is this function (an address inside it), then one return address
	 * per frame: the first is in the function that reported the yield. */
	uint64_t fp = (uint64_t)(uintptr_t)__builtin_frame_address(0);
	d->nframes = ss_fp_walk((uint64_t)(uintptr_t)&stallscope_task_pending, fp, fp,
				ss_tls_stack_lo, ss_tls_stack_hi, d->frames, SS_TASK_DUMP_FRAMES);
	atomic_store_explicit(&r->head, rh + 1, memory_order_release);
	/* The next entry's lines, fetched for writing now so the next yield does not
	 * wait for them (an entry spans four lines, usually cold). */
	const char *next = (const char *)&T.ents[(size_t)i * RING + ((rh + 1) & (RING - 1))];
	for (size_t off = 0; off < sizeof *d; off += SS_CACHELINE)
		__builtin_prefetch(next + off, 1);
}

SS_INTERNAL void ss_task_dump_start(const struct stallscope_config *cfg, uint32_t session,
				    struct ss_slot *slots, uint32_t nslots)
{
	memset(&T, 0, sizeof T);
	if (!cfg->task_dump_enabled)
		return;
	/* Reserved, not committed: a slot's ring costs memory once its thread yields. */
	size_t rings = (sizeof(struct td_ring) * nslots + 4095) & ~(size_t)4095;
	T.map_len = rings + sizeof(struct td_entry) * RING * nslots;
	void *m = kept_map;
	if (kept_len != T.map_len) {
		m = mmap(NULL, T.map_len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	} else {
		memset(m, 0, rings); /* heads and tails; entries are rewritten before use */
	}
	T.nodes = malloc(sizeof *T.nodes * MAX_NODES);
	T.table_size = MAX_NODES * 2;
	T.table = malloc(sizeof *T.table * T.table_size);
	if (m == MAP_FAILED || !T.nodes || !T.table) {
		ss_log("task dumps off: out of memory");
		if (m != MAP_FAILED && m != kept_map)
			munmap(m, T.map_len);
		free(T.nodes);
		free(T.table);
		memset(&T, 0, sizeof T);
		return;
	}
	memset(T.table, 0xff, sizeof *T.table * T.table_size);
	kept_map = m;
	kept_len = T.map_len;
	T.rings = m;
	T.ents = (struct td_entry *)((char *)m + rings);
	T.slots = slots;
	T.nslots = nslots;
	T.mean_ns = (uint64_t)(cfg->task_dump_idle_threshold_ms ? cfg->task_dump_idle_threshold_ms
								  : 10) * 1000000u;
	T.rng = ss_now() | 1;
	T.active = 1;
	atomic_store_explicit(&td_session, session, memory_order_release);
}

SS_INTERNAL void ss_task_dump_disarm(void)
{
	atomic_store_explicit(&td_session, 0u, memory_order_release);
}

SS_INTERNAL int ss_task_dump_active(void)
{
	return T.active;
}

static uint64_t draw_threshold(void)
{
	/* xorshift64*, then the exponential's inverse CDF on a uniform in (0, 1]. */
	T.rng ^= T.rng >> 12;
	T.rng ^= T.rng << 25;
	T.rng ^= T.rng >> 27;
	uint64_t x = T.rng * 0x2545f4914f6cdd1dull;
	double u = ((double)(x >> 11) + 1.0) / 9007199254740992.0;
	return (uint64_t)(-log(u) * (double)T.mean_ns);
}

static uint32_t hash_of(uint64_t task)
{
	uint64_t h = task * 0x9e3779b97f4a7c15ull;
	return (uint32_t)(h >> 32) & (T.table_size - 1);
}

/* Table position holding task, or the empty position where it would go. */
static uint32_t probe(uint64_t task)
{
	uint32_t j = hash_of(task);
	while (T.table[j] >= 0 && T.nodes[T.table[j]].task != task)
		j = (j + 1) & (T.table_size - 1);
	return j;
}

static void remove_node(uint32_t j)
{
	int32_t idx = T.table[j];
	/* Backward-shift deletion keeps every probe chain unbroken. */
	T.table[j] = -1;
	uint32_t k = (j + 1) & (T.table_size - 1);
	while (T.table[k] >= 0) {
		uint32_t home = hash_of(T.nodes[T.table[k]].task);
		if (((k - home) & (T.table_size - 1)) >= ((k - j) & (T.table_size - 1))) {
			T.table[j] = T.table[k];
			T.table[k] = -1;
			j = k;
		}
		k = (k + 1) & (T.table_size - 1);
	}
	/* The last node moves into the hole, and its table entry follows it. */
	uint32_t last = --T.nnodes;
	if ((uint32_t)idx != last) {
		T.nodes[idx] = T.nodes[last];
		T.table[probe(T.nodes[idx].task)] = idx;
	}
}

SS_INTERNAL void ss_task_dump_collect(uint64_t lim)
{
	if (!T.active)
		return;
	for (uint32_t i = 0; i < T.nslots; i++) {
		struct td_ring *r = &T.rings[i];
		uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
		uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
		for (; tail != head; tail++) {
			const struct td_entry *e = &T.ents[(size_t)i * RING + (tail & (RING - 1))];
			if (e->ts > lim)
				break; /* converted exactly at the next call (clock.h) */
			uint32_t j = probe(e->task);
			struct node *n;
			if (T.table[j] >= 0) {
				n = &T.nodes[T.table[j]];
			} else if (T.nnodes < MAX_NODES) {
				T.table[j] = (int32_t)T.nnodes;
				n = &T.nodes[T.nnodes++];
			} else {
				T.dropped_nodes++;
				continue;
			}
			n->task = e->task;
			n->pending_ts = ss_clock_ns(e->ts);
			n->threshold_ns = draw_threshold();
			n->ended_ts = 0;
			n->thread = e->thread;
			n->tid = e->tid;
			n->location = e->location;
			n->nframes = e->nframes < SS_TASK_DUMP_FRAMES ? e->nframes : SS_TASK_DUMP_FRAMES;
			memcpy(n->frames, e->frames, n->nframes * sizeof n->frames[0]);
		}
		atomic_store_explicit(&r->tail, tail, memory_order_release);
	}
}

SS_INTERNAL void ss_task_dump_polled(uint64_t task, uint64_t ts)
{
	if (!T.nnodes)
		return;
	uint32_t j = probe(task);
	if (T.table[j] < 0)
		return;
	struct node *n = &T.nodes[T.table[j]];
	/* The POLL_BEGIN of the very poll that yielded comes before its pending call. */
	if (ts <= n->pending_ts || n->ended_ts)
		return;
	if (ts - n->pending_ts <= n->threshold_ns)
		remove_node(j);
	else
		n->ended_ts = ts;
}

SS_INTERNAL void ss_task_dump_emit(const struct ss_stall_sink *sink, uint64_t now)
{
	uint64_t horizon = now > MARGIN_NS ? now - MARGIN_NS : 0;
	for (uint32_t i = 0; i < T.nnodes;) {
		struct node *n = &T.nodes[i];
		uint64_t end = n->ended_ts ? n->ended_ts : horizon;
		if (end > n->pending_ts && end - n->pending_ts > n->threshold_ns) {
			struct ss_task_dump_msg m = {
				.task = n->task, .thread = n->thread, .tid = n->tid,
				.location = n->location, .nframes = n->nframes,
				.pending_ts = n->pending_ts, .idle_ns = end - n->pending_ts,
				.frames = n->frames,
			};
			sink->dump(&m);
			remove_node(probe(n->task)); /* moves the last node to i */
			continue;
		}
		if (n->ended_ts) {
			remove_node(probe(n->task));
			continue;
		}
		i++;
	}
}

SS_INTERNAL void ss_task_dump_free(void)
{
	if (!T.active)
		return;
	uint64_t dropped = 0;
	for (uint32_t i = 0; i < T.nslots; i++)
		dropped += atomic_load(&T.rings[i].dropped);
	if (dropped || T.dropped_nodes)
		ss_log("task dumps: %llu pending stacks dropped (ring full), %llu tasks not tracked "
		       "(more than %u idle at once)", (unsigned long long)dropped,
		       (unsigned long long)T.dropped_nodes, MAX_NODES);
	free(T.nodes);
	free(T.table);
	memset(&T, 0, sizeof T);
}

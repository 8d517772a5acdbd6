/*
 * thread_slots.c - the pool of per-thread rings.
 *
 * Rings are mapped once at start (MAP_NORESERVE: pages cost memory only when a
 * thread writes them), so attaching a thread never allocates. A thread takes a free
 * slot on its first hook or at stallscope_worker_begin(); when it exits, a
 * pthread-key destructor marks the slot retired and wakes the writer, which drains
 * it and returns it to the pool. The pool is never unmapped: a hook that raced with
 * stop may still be storing into it, and a stale store is harmless where an unmap
 * would be a crash.
 */
#include "recorder-private.h"

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static struct ss_pool pool;
static pthread_key_t slot_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static _Atomic uint32_t next_thread_id;
static _Atomic uint32_t owned;        /* slots not FREE: a full pool fails fast */

/* Threads refused a slot: counted here, reported by the writer as process loss. */
static _Atomic uint64_t no_slot_pending, no_slot_first, no_slot_last, no_slot_total;

#define SS_SLOT_CLAIMING 3u

static void slot_destructor(void *p)
{
	struct ss_slot *s = p;
	uint32_t st = atomic_load_explicit(&ss_state, memory_order_relaxed);
	/* Only the owner of a slot of the live session may retire it; a slot of an
	 * older session was already reset by stop. */
	if (!s || ss_tls_slot != s || s->session != ss_tls_session)
		return;
	ss_tls_session = 0;
	ss_tls_slot = NULL;
	if (atomic_load_explicit(&s->state, memory_order_relaxed) != SS_SLOT_OWNED)
		return;
	atomic_store_explicit(&s->retired_ts, ss_stamp(), memory_order_relaxed);
	/* Release: every entry this thread pushed is visible before RETIRED is. */
	atomic_store_explicit(&s->state, SS_SLOT_RETIRED, memory_order_release);
	if (st)
		ss_writer_kick();
}

static void make_key(void)
{
	if (pthread_key_create(&slot_key, slot_destructor) != 0)
		ss_log("cannot create a thread key; exiting threads are reclaimed at stop only");
}

SS_INTERNAL int ss_pool_init(uint32_t nslots, uint32_t ring_entries)
{
	pthread_once(&key_once, make_key);
	if (pool.slots && pool.nslots == nslots && pool.ring_entries == ring_entries) {
		ss_pool_reset();
		return 0;
	}
	/* A previous pool of another shape stays mapped on purpose (see file comment). */
	size_t ring_bytes = (size_t)ring_entries * sizeof(struct ss_ev);
	size_t total = ring_bytes * nslots;
	void *mem = mmap(NULL, total, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (mem == MAP_FAILED) {
		ss_set_error("cannot map %zu MiB of thread buffers (%u threads x %u events): %m",
			     total >> 20, nslots, ring_entries);
		return -1;
	}
	/* The slot array is mapped like the rings, and never unmapped either (a late
	 * hook may still store into an old pool's slots). Populated at once: the
	 * loop below writes every slot, and on this VM 24 pages faulted in one by one
	 * cost 245 us of CPU, populated by the kernel in one call 120-180 us. */
	size_t slots_bytes = sizeof(struct ss_slot) * nslots;
	void *sm = mmap(NULL, slots_bytes, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (sm == MAP_FAILED) {
		munmap(mem, total);
		ss_set_error("out of memory for %u thread slots", nslots);
		return -1;
	}
	struct ss_slot *slots = sm;
	for (uint32_t i = 0; i < nslots; i++) {
		slots[i].ring = (struct ss_ev *)((char *)mem + ring_bytes * i);
		slots[i].mask = ring_entries - 1;
	}
	pool.slots = slots;
	pool.nslots = nslots;
	pool.ring_entries = ring_entries;
	pool.ring_mem = mem;
	pool.ring_mem_size = total;
	atomic_store(&pool.span, 0u);
	atomic_store(&owned, 0);
	return 0;
}

/* Slot i is being claimed: span covers it before anyone can see it OWNED. At
 * most nslots tries, since every failure means span grew. */
static void cover(uint32_t i)
{
	uint32_t cur = atomic_load_explicit(&pool.span, memory_order_relaxed);
	while (cur < i + 1 &&
	       !atomic_compare_exchange_weak_explicit(&pool.span, &cur, i + 1, memory_order_release,
						      memory_order_relaxed))
		;
}

SS_INTERNAL struct ss_pool *ss_pool_get(void)
{
	return &pool;
}

SS_INTERNAL void ss_pool_no_slot_drop(uint64_t ts)
{
	uint64_t zero = 0;
	atomic_compare_exchange_strong_explicit(&no_slot_first, &zero, ts, memory_order_relaxed,
						memory_order_relaxed);
	atomic_store_explicit(&no_slot_last, ts, memory_order_relaxed);
	atomic_fetch_add_explicit(&no_slot_pending, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&no_slot_total, 1, memory_order_relaxed);
}

SS_INTERNAL uint64_t ss_pool_no_slot_drops(void)
{
	return atomic_load_explicit(&no_slot_total, memory_order_relaxed);
}

SS_INTERNAL int ss_pool_take_no_slot_loss(uint64_t *count, uint64_t *first, uint64_t *last)
{
	uint64_t n = atomic_exchange_explicit(&no_slot_pending, 0, memory_order_relaxed);
	if (!n)
		return 0;
	*count = n;
	*last = atomic_load_explicit(&no_slot_last, memory_order_relaxed);
	*first = atomic_exchange_explicit(&no_slot_first, 0, memory_order_relaxed);
	if (!*first || *first > *last)
		*first = *last;
	return 1;
}

/* Runs once per thread per session, from the first hook: a bounded scan for a free
 * slot and one gettid(). */
SS_INTERNAL struct ss_slot *ss_attach(uint32_t session)
{
	if (!pool.slots)
		return NULL;
	if (atomic_load_explicit(&owned, memory_order_relaxed) >= pool.nslots) {
		ss_pool_no_slot_drop(ss_now());
		return NULL;
	}
	/* The lowest free slot: loops over the pool stop at span (ss_pool.span),
	 * and a reused slot's ring pages are already there (no page faults). */
	for (uint32_t k = 0; k < pool.nslots; k++) {
		struct ss_slot *s = &pool.slots[k];
		uint32_t expect = SS_SLOT_FREE;
		if (!atomic_compare_exchange_strong_explicit(&s->state, &expect, SS_SLOT_CLAIMING,
							     memory_order_acquire,
							     memory_order_relaxed))
			continue;
		cover(k);
		atomic_fetch_add_explicit(&owned, 1, memory_order_relaxed);
		s->session = session;
		s->thread_id = atomic_fetch_add_explicit(&next_thread_id, 1, memory_order_relaxed) + 1;
		s->tid = (int32_t)gettid();
		s->stack_lo = ss_tls_stack_lo;
		s->stack_hi = ss_tls_stack_hi;
		s->cached_tail = atomic_load_explicit(&s->tail, memory_order_relaxed);
		/* Release: the writer reads session/thread_id/tid after it sees OWNED. */
		atomic_store_explicit(&s->state, SS_SLOT_OWNED, memory_order_release);
		ss_tls_slot = s;
		ss_tls_session = session;
		pthread_setspecific(slot_key, s);
		if (ss_tls_worker_runtime)
			ss_push(s, SS_EV_WORKER_BEGIN, ss_stamp(), ss_tls_worker_runtime,
				ss_tls_worker_index, 0);
		return s;
	}
	ss_pool_no_slot_drop(ss_now());
	return NULL;
}

/* ---- threads of another process (stallscope record -p) --------------------------- */

/* A slot for a thread of the process the session follows from outside. The one
 * thread that drives the attachment (recorder/attach/) is the producer of every
 * such slot; nothing is bound to its thread-local state. The thread is a worker
 * lane (runtime, index) from ts (a stamp, ss_stamp()) on. NULL when the pool is
 * full (counted). */
SS_INTERNAL struct ss_slot *ss_attach_foreign(uint32_t session, int32_t tid, uint32_t runtime,
					      uint32_t index, uint64_t ts)
{
	if (!pool.slots)
		return NULL;
	for (uint32_t k = 0; k < pool.nslots; k++) {
		struct ss_slot *s = &pool.slots[k];
		uint32_t expect = SS_SLOT_FREE;
		if (!atomic_compare_exchange_strong_explicit(&s->state, &expect, SS_SLOT_CLAIMING,
							     memory_order_acquire,
							     memory_order_relaxed))
			continue;
		cover(k);
		atomic_fetch_add_explicit(&owned, 1, memory_order_relaxed);
		s->session = session;
		s->thread_id = atomic_fetch_add_explicit(&next_thread_id, 1, memory_order_relaxed) + 1;
		s->tid = tid;
		s->stack_lo = s->stack_hi = 0;
		s->cached_tail = atomic_load_explicit(&s->tail, memory_order_relaxed);
		atomic_store_explicit(&s->state, SS_SLOT_OWNED, memory_order_release);
		ss_push(s, SS_EV_WORKER_BEGIN, ts, runtime, index, 0);
		return s;
	}
	ss_pool_no_slot_drop(ss_now()); /* process-wide losses are in ns */
	return NULL;
}

/* The foreign thread of s ended (or the attachment ends) at ts (a stamp). */
SS_INTERNAL void ss_retire_foreign(struct ss_slot *s, uint64_t ts)
{
	if (atomic_load_explicit(&s->state, memory_order_relaxed) != SS_SLOT_OWNED)
		return;
	atomic_store_explicit(&s->retired_ts, ts, memory_order_relaxed);
	atomic_store_explicit(&s->state, SS_SLOT_RETIRED, memory_order_release);
	ss_writer_kick();
}

/* Writer only: the slot is drained and its thread is gone. */
SS_INTERNAL void ss_slot_release(struct ss_slot *s)
{
	uint64_t used = atomic_load_explicit(&s->head, memory_order_relaxed);
	ss_stats_move_begin();
	atomic_fetch_add_explicit(&ss_counters.dropped_retired,
				  atomic_load_explicit(&s->dropped, memory_order_relaxed),
				  memory_order_relaxed);
	/* Give back the pages of a ring that a busy thread filled: 10,000 short-lived
	 * threads must not leave the process holding every ring at full size. */
	size_t touched = (size_t)(used < pool.ring_entries ? used : pool.ring_entries) *
			 sizeof(struct ss_ev);
	if (touched > 65536)
		madvise(s->ring, (size_t)pool.ring_entries * sizeof(struct ss_ev), MADV_DONTNEED);
	atomic_store_explicit(&s->head, 0, memory_order_relaxed);
	atomic_store_explicit(&s->tail, 0, memory_order_relaxed);
	atomic_store_explicit(&s->dropped, 0, memory_order_relaxed);
	ss_stats_move_end();
	s->cached_tail = 0;
	atomic_store_explicit(&s->drop_pending, 0, memory_order_relaxed);
	memset((char *)s + offsetof(struct ss_slot, w_thread_id), 0,
	       sizeof *s - offsetof(struct ss_slot, w_thread_id));
	s->session = 0;
	atomic_fetch_sub_explicit(&owned, 1, memory_order_relaxed);
	atomic_store_explicit(&s->state, SS_SLOT_FREE, memory_order_release);
}

/* After stop has drained everything: every slot back to the pool. */
SS_INTERNAL void ss_pool_reset(void)
{
	for (uint32_t i = 0, span = ss_pool_span(&pool); i < span; i++) {
		struct ss_slot *s = &pool.slots[i];
		if (atomic_load_explicit(&s->state, memory_order_acquire) != SS_SLOT_FREE) {
			if (atomic_load_explicit(&s->state, memory_order_relaxed) == SS_SLOT_CLAIMING)
				continue; /* a racing attach; it belongs to nobody now */
			ss_slot_release(s);
		}
	}
	atomic_store(&no_slot_pending, 0);
	atomic_store(&no_slot_first, 0);
}

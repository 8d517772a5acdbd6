/*
 * merge.h - puts the events of one segment back into time order before they
 * reach the trackers.
 *
 * A segment holds each thread's events in order, but in per-thread runs: the
 * writer drains one ring after another, and the sampler and the watchdog write
 * their records when they are drained. Read in file order, a TERMINATE on one
 * thread can come before the earlier poll of that task on another thread, and
 * a WAKE after the poll it led to. The trackers need one time-ordered stream.
 *
 * Each source of records (a thread's hooks, the sampler's records of a thread,
 * the watchdog's records of a thread) is a stream whose records arrive in order;
 * the merge buffers them and releases the earliest across streams once the
 * stream data has moved `window_ns` past it, or when more than `max_buffered`
 * records wait (memory is bounded; the window shrinks for a dense trace). A
 * record that arrives after records later than it were released is released at
 * once and counted in `late`: its order is the file's. Within a stream the file
 * order is always kept, even when timestamps go backwards (hostile input): a
 * record is ordered by the largest time its stream has reached.
 *
 * A source that knows how early the records it has still to push can be (a
 * segment's blocks have floors, read ahead: ss_reader_floors) says so with
 * ss_merge_release_to instead, and the floor replaces the window: everything
 * up to it goes at once and nothing after it, so the buffer holds the records
 * between the file's drains, not 2 s of them, and a record that comes more
 * than the window late is still in order when the floors announced it (up to
 * max_buffered records). One exception: an event of a thread that the unit
 * defines (ss_merge_unit_defines: its THREAD_DEF is in the blocks to read) and
 * has not declared yet (ss_merge_declare: its THREAD_DEF read) waits, with
 * all that follows it, until the window would have released it too, so that
 * the definition (a name, a worker lane) is read before the event is
 * delivered whenever the window would have let it be: the sampler can see a
 * thread before the writer's THREAD_DEF of it, also in a later segment. Until
 * the unit says what it defines, every thread not declared is taken to be
 * one it defines.
 *
 * Events are copied in: what an event points to (a thread name, a stall's
 * reason) is kept by the merge until it is empty again. What events refer to
 * by id (strings, locations, stacks) stays the source's: release everything
 * (ss_merge_drain) before the source moves to another unit of ids.
 *
 * Not thread-safe; one merge per import.
 */
#ifndef STALLSCOPE_MERGE_H
#define STALLSCOPE_MERGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "event.h"
#include "hmap.h"

struct ss_merge_entry;
struct ss_merge_stream;

struct ss_merge {
	uint64_t window_ns;     /* how far stream time must move past a record */
	size_t max_buffered;    /* records held at most */
	/* what the merge delivers to; a non-zero return stops a release and is
	 * returned by it */
	int (*deliver)(void *ctx, const struct ss_event *e);
	void *ctx;

	struct ss_hmap ids;     /* stream key -> index + 1 */
	struct ss_merge_stream *streams;
	size_t n_streams, cap_streams;
	uint32_t *heap;         /* non-empty streams, earliest head first */
	size_t n_heap;
	size_t buffered;
	uint32_t seq;           /* arrival order, for equal times */
	uint64_t max_key;       /* latest time seen */
	uint64_t released_key;  /* time of the last record released */
	bool released_any;
	char *arena;            /* copies of what records point to */
	size_t arena_len, arena_cap;
	uint64_t late;          /* records that arrived after later ones were released */
	struct ss_hmap declared; /* threads the unit has defined (ss_merge_declare) */
	struct ss_hmap defines;  /* threads the unit will define (ss_merge_unit_defines) */
	bool defines_known;      /* ss_merge_unit_defines was told, this unit */
	struct ss_hmap pinned;   /* thread -> its first pinned stream + 1 (merge.c) */
	uint32_t unit;          /* units begun (ss_merge_drain), for the streams' checks */
	uint64_t cached_key;    /* the last stream looked up */
	uint32_t cached_idx;
	struct ss_merge_entry **pool; /* chunks no stream uses (merge.c) */
	size_t npool, cappool;
	char **slabs;           /* where chunks are cut from (merge.c) */
	size_t nslabs, capslabs;
	size_t slab_used;       /* chunks cut from the newest slab */
};

/* Defaults: 2 s of trace time, 1M records (about 48 MB). */
#define SS_MERGE_WINDOW_NS 2000000000ull
#define SS_MERGE_MAX_BUFFERED 1048576u

void ss_merge_init(struct ss_merge *m, int (*deliver)(void *ctx, const struct ss_event *e), void *ctx);
void ss_merge_free(struct ss_merge *m);

/* Takes a copy of e. Returns 0, a deliver() result when the buffer was full and
 * releasing failed, or -1 when memory ran out. */
int ss_merge_push(struct ss_merge *m, const struct ss_event *e);

/* Releases what the window allows. */
int ss_merge_release(struct ss_merge *m);

/* Releases every record up to floor: the source pushes none earlier from now
 * on. A record of a thread not declared yet goes only once the window has
 * moved past it as well; what follows it waits for it. */
int ss_merge_release_to(struct ss_merge *m, uint64_t floor);

/* The unit defined thread (its THREAD_DEF was read): its events no longer
 * hold the floor. Thread 0 needs no definition. Costs O(1) plus the streams
 * of that thread, however many threads wait. */
void ss_merge_declare(struct ss_merge *m, uint64_t thread);

/* The threads the unit defines, all of them (a THREAD_DEF of any other will
 * not come): the events of the others need not wait for one. */
void ss_merge_unit_defines(struct ss_merge *m, const uint64_t *threads, size_t n);

/* Releases everything, in order, and forgets the times seen: what is pushed
 * next (the next segment) may be earlier; no thread is declared in it yet. */
int ss_merge_drain(struct ss_merge *m);

/* Gives back the memory of the streams that are empty and of the chunks no
 * stream uses (a dense trace fills them to max_buffered records, about 64 MB):
 * where a recording ends, before the store builds its indexes. */
void ss_merge_trim(struct ss_merge *m);

#endif /* STALLSCOPE_MERGE_H */

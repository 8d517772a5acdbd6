/*
 * floors_ahead.h - a segment's block floors (ss_reader_floors), read ahead on a
 * thread of their own from a second reader while the source reads the first
 * block, and turned into what the merge needs after each block: the least
 * floor of the blocks after it (no event still to come is earlier).
 *
 * The floors hold for the blocks they were read from only: a segment still
 * being written (.active) can have more blocks by the time the source gets
 * there, and a record of those can be earlier than a floor already used. So
 * the source's reader is kept to the blocks walked (ss_reader_end_at) unless
 * the walk read the footer; the rest is the next import's. A walk that memory
 * or a read error cut short gives no floors (the merge's window decides).
 *
 * Not thread-safe; start, then end once, on the source's thread(s).
 */
#ifndef STALLSCOPE_FLOORS_AHEAD_H
#define STALLSCOPE_FLOORS_AHEAD_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "segment_reader.h"

struct ss_floors_ahead {
	struct ss_reader *rd; /* the second reader while its thread runs, else NULL */
	pthread_t thread;
	uint64_t first;       /* the index of the block the floors begin at */
	int rc;               /* ss_reader_floors' */
	struct ss_floors f;
};

/* What the source gets: after[i] (malloc'd) is the least floor of the blocks
 * after block first + i, for i < n; threads are the ones those blocks define
 * (THREAD_DEF), each once. n is 0 (and both NULL) where no floor is to be
 * trusted. */
struct ss_floors_after {
	uint64_t *after;
	size_t n;
	uint64_t first;
	uint64_t *threads;
	size_t n_threads;
};

/* Begins reading rd's floors from its position (before its next block is
 * read); where no thread or second reader can be had, reads them here. */
void ss_floors_ahead_start(struct ss_floors_ahead *a, struct ss_reader *rd);

/* Waits for the floors and fills *out; blocks below skip_blocks count for
 * none (their events are not given). Where the floors are trusted and the walk
 * did not read the footer, rd (the reader the floors were started from) is
 * kept to the blocks walked. No floor is trusted where none was read, memory
 * ran out, the walk was cut short, or an id is defined twice (the names its
 * events get would depend on when they are delivered; the window's delivery
 * is kept for such a segment). */
void ss_floors_ahead_end(struct ss_floors_ahead *a, struct ss_reader *rd, uint64_t skip_blocks,
			 struct ss_floors_after *out);

void ss_floors_after_free(struct ss_floors_after *f);

#endif /* STALLSCOPE_FLOORS_AHEAD_H */

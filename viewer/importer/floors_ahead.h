/*
 * floors_ahead.h - a segment's block floors (ss_reader_floors), read ahead on a
 * thread of their own from a second reader while the source reads the first
 * block, and turned into what the merge needs after each block: the least
 * floor of the blocks after it (no event still to come is earlier).
 *
 * Not thread-safe; start, then end once, on the source's thread(s).
 */
#ifndef STALLSCOPE_FLOORS_AHEAD_H
#define STALLSCOPE_FLOORS_AHEAD_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "segment_reader.h"

struct ss_floors_ahead {
	struct ss_reader *rd; /* the second reader while its thread runs, else NULL */
	pthread_t thread;
	uint64_t first;       /* the index of the block the floors begin at */
	ssize_t n;
	uint64_t *floors;
	bool redefined;
};

/* Begins reading rd's floors from its position (before its next block is
 * read); where no thread or second reader can be had, reads them here. */
void ss_floors_ahead_start(struct ss_floors_ahead *a, struct ss_reader *rd);

/* Waits for the floors and sets after[i] (malloc'd) to the least floor of the
 * blocks after block *first + i, for i < the count returned; blocks below
 * skip_blocks count for none (their events are not given). Returns 0 with
 * *after NULL where no floor is to be trusted: none read, memory ran out, or
 * an id defined twice (the names its events get would depend on when they
 * are delivered; the window's delivery is kept for such a segment). */
size_t ss_floors_ahead_end(struct ss_floors_ahead *a, uint64_t skip_blocks, uint64_t **after, uint64_t *first);

#endif /* STALLSCOPE_FLOORS_AHEAD_H */

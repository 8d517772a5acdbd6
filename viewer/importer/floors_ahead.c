/*
 * floors_ahead.c - see floors_ahead.h. The first block's stacks are symbolized
 * while it is read (libdw, kallsyms): the longest wait of an import's start,
 * during which the inserting thread has no rows yet; the floors (0.085 s of
 * CPU on the steady recording) are read beside it instead of before it.
 */
#include "floors_ahead.h"

#include <stdlib.h>
#include <string.h>

static void *ahead_main(void *arg)
{
	struct ss_floors_ahead *a = arg;
	a->n = ss_reader_floors(a->rd, &a->floors, &a->redefined);
	return NULL;
}

void ss_floors_ahead_start(struct ss_floors_ahead *a, struct ss_reader *rd)
{
	memset(a, 0, sizeof *a);
	a->first = ss_reader_stats(rd)->blocks;
	a->rd = ss_reader_dup(rd);
	if (a->rd && pthread_create(&a->thread, NULL, ahead_main, a) == 0)
		return;
	ss_reader_close(a->rd);
	a->rd = NULL;
	a->n = ss_reader_floors(rd, &a->floors, &a->redefined);
}

size_t ss_floors_ahead_end(struct ss_floors_ahead *a, uint64_t skip_blocks, uint64_t **after, uint64_t *first)
{
	if (a->rd) {
		pthread_join(a->thread, NULL);
		ss_reader_close(a->rd);
		a->rd = NULL;
	}
	uint64_t *f = a->floors;
	a->floors = NULL;
	*after = NULL;
	*first = a->first;
	if (a->n <= 0 || a->redefined) {
		free(f);
		return 0;
	}
	uint64_t least = UINT64_MAX;
	for (ssize_t i = a->n - 1; i >= 0; i--) {
		uint64_t own = f[i];
		f[i] = least;
		if (a->first + (uint64_t)i >= skip_blocks && own < least)
			least = own;
	}
	*after = f;
	return (size_t)a->n;
}

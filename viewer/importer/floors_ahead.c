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
	a->rc = ss_reader_floors(a->rd, &a->f);
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
	a->rc = ss_reader_floors(rd, &a->f);
}

void ss_floors_ahead_end(struct ss_floors_ahead *a, struct ss_reader *rd, uint64_t skip_blocks,
			 struct ss_floors_after *out)
{
	if (a->rd) {
		pthread_join(a->thread, NULL);
		ss_reader_close(a->rd);
		a->rd = NULL;
	}
	memset(out, 0, sizeof *out);
	out->first = a->first;
	struct ss_floors *f = &a->f;
	if (a->rc != 0 || f->n == 0 || f->redefined || f->cut_short) {
		ss_floors_free(f);
		return;
	}
	/* The blocks walked are all this import reads: a block written since
	 * may hold records earlier than the floors the merge goes by. */
	if (!f->sealed)
		ss_reader_end_at(rd, a->first + f->n, &f->damage);
	uint64_t least = UINT64_MAX;
	for (size_t i = f->n; i-- > 0;) {
		uint64_t own = f->floor[i];
		f->floor[i] = least;
		if (a->first + i >= skip_blocks && own < least)
			least = own;
	}
	out->after = f->floor;
	out->n = f->n;
	out->threads = f->threads;
	out->n_threads = f->n_threads;
	memset(f, 0, sizeof *f);
}

void ss_floors_after_free(struct ss_floors_after *f)
{
	free(f->after);
	free(f->threads);
	memset(f, 0, sizeof *f);
}

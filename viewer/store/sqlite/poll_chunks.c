/*
 * poll_chunks.c - see poll_chunks.h.
 */
#include "poll_chunks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"

static int write_chunk(struct ss_db *d, int64_t worker_id, const struct ss_poll_chunk_acc *a)
{
	struct ss_row *r = ss_row(d, ST_INS_POLL_CHUNK);
	ss_bind_i(r, 1, worker_id);
	ss_bind_i(r, 2, a->ts);
	ss_bind_i(r, 3, a->id_lo);
	ss_bind_i(r, 4, a->id_hi);
	return ss_db_step(d, ST_INS_POLL_CHUNK);
}

int ss_poll_chunks_add(struct ss_poll_chunks *c, struct ss_db *d, int64_t worker_id, int64_t id, int64_t ts)
{
	if (worker_id < 1)
		return 0; /* no lane to look it up by */
	if ((uint64_t)worker_id >= c->cap) {
		size_t cap = c->cap ? c->cap : 16;
		while (cap <= (uint64_t)worker_id)
			cap *= 2;
		struct ss_poll_chunk_acc *w = realloc(c->w, cap * sizeof *w);
		if (!w) {
			snprintf(d->err, sizeof d->err, "out of memory");
			return -1;
		}
		memset(w + c->cap, 0, (cap - c->cap) * sizeof *w);
		c->w = w;
		c->cap = cap;
	}
	struct ss_poll_chunk_acc *a = &c->w[worker_id];
	if (a->n && (a->n >= SS_POLL_CHUNK || id - a->id_lo >= SS_POLL_CHUNK_SPAN) && ts != a->last_ts) {
		if (write_chunk(d, worker_id, a) != 0)
			return -1;
		a->n = 0;
	}
	if (a->n == 0) {
		a->ts = ts;
		a->id_lo = a->id_hi = id;
	}
	/* Out of order (damaged timestamps): the chunk still covers it. */
	if (ts < a->ts)
		a->ts = ts;
	if (id < a->id_lo)
		a->id_lo = id;
	if (id > a->id_hi)
		a->id_hi = id;
	a->last_ts = ts;
	a->n++;
	return 0;
}

int ss_poll_chunks_flush(struct ss_poll_chunks *c, struct ss_db *d)
{
	for (size_t i = 0; i < c->cap; i++)
		if (c->w[i].n) {
			if (write_chunk(d, (int64_t)i, &c->w[i]) != 0)
				return -1;
			c->w[i].n = 0;
		}
	return 0;
}

void ss_poll_chunks_free(struct ss_poll_chunks *c)
{
	free(c->w);
	c->w = NULL;
	c->cap = 0;
}

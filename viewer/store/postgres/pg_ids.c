/*
 * pg_ids.c - see pg_store.h: an import's new ids moved into ranges reserved a
 * chunk at a time. Chunks are sized per kind so that a reservation is rare
 * (one round trip on the side connection per chunk) yet small enough that
 * concurrent imports, which cannot give back what they reserved, waste little.
 */
#include <stdlib.h>
#include <string.h>

#include "pg_store.h"

/* log2 of the chunk of each kind */
static const int chunk_shift[ID_COUNT] = {
	[ID_RECORDING] = 4, [ID_THREAD] = 8, [ID_WORKER] = 6, [ID_LOCATION] = 10, [ID_TASK] = 16,
	[ID_POLL] = 16, [ID_MAPPING] = 8, [ID_FRAME] = 12, [ID_CALLSITE] = 12, [ID_STALL] = 10,
	[ID_SEGMENT] = 8,
};

void ss_pg_ids_init(struct ss_pg_ids *ids, struct ss_pg *p, const int64_t floor[ID_COUNT])
{
	memset(ids, 0, sizeof *ids);
	ids->p = p;
	for (int k = 0; k < ID_COUNT; k++) {
		ids->floor[k] = floor[k];
		ids->k[k].max = -1;
	}
}

int64_t ss_pg_ids_map_slow(struct ss_pg_ids *ids, int kind, int64_t v)
{
	struct ss_pg_id_chunks *c = &ids->k[kind];
	int64_t idx = v - ids->floor[kind];
	int shift = chunk_shift[kind];
	size_t chunk = (size_t)(idx >> shift);
	while (chunk >= c->n) {
		if (ids->failed)
			return v;
		if (c->n == c->cap) {
			size_t nc = c->cap ? c->cap * 2 : 16;
			int64_t *nb = realloc(c->base, nc * sizeof *nb);
			if (!nb) {
				snprintf(ids->p->err, sizeof ids->p->err, "out of memory");
				ids->failed = true;
				return v;
			}
			c->base = nb;
			c->cap = nc;
		}
		int64_t first;
		if (ss_pg_reserve_ids(ids->p, kind, (int64_t)1 << shift, &first) != 0) {
			ids->failed = true;
			return v;
		}
		c->base[c->n++] = first;
	}
	if (idx > c->max)
		c->max = idx;
	return c->base[chunk] + (idx & (((int64_t)1 << shift) - 1));
}

int ss_pg_ids_release(struct ss_pg_ids *ids)
{
	for (int k = 0; k < ID_COUNT; k++) {
		struct ss_pg_id_chunks *c = &ids->k[k];
		if (!c->n)
			continue;
		int shift = chunk_shift[k];
		int64_t last = c->base[c->n - 1], end = last + ((int64_t)1 << shift);
		int64_t used = c->max < 0 ? last : last + (c->max & (((int64_t)1 << shift) - 1)) + 1;
		if ((c->max >> shift) != (int64_t)c->n - 1)
			used = last; /* the last chunk holds nothing */
		char *sql = ss_pg_fmt("UPDATE import_ids SET next = %lld WHERE kind = %d AND next = %lld",
				      (long long)used, k, (long long)end);
		int rc = ss_pg_exec(ids->p, ids->p->side, sql);
		free(sql);
		if (rc)
			return -1;
	}
	return 0;
}

void ss_pg_ids_free(struct ss_pg_ids *ids)
{
	for (int k = 0; k < ID_COUNT; k++)
		free(ids->k[k].base);
	memset(ids->k, 0, sizeof ids->k);
}

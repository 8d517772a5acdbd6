/*
 * pg_ids.c - see pg_store.h: an import's new ids moved into ranges reserved a
 * chunk at a time. Chunks are sized per kind so that a reservation is rare
 * (one round trip on the side connection per chunk) yet small enough that
 * concurrent imports, which cannot give back what they reserved, waste little.
 *
 * Each chunk is leased (import_id_leases) to the import's side session, which
 * holds an advisory lock for as long as it lives. The import's transaction
 * deletes its leases as it commits; an import that fails gives its chunks
 * back, and one that was killed (an archive command at its time limit) leaves
 * leases whose holder is gone: the next import gives those back. So ids are
 * lost only when imports overlap.
 */
#include <libpq-fe.h>
#include <stdlib.h>
#include <string.h>

#include "pg_store.h"

/* log2 of the chunk of each kind */
static const int chunk_shift[ID_COUNT] = {
	[ID_RECORDING] = 4, [ID_THREAD] = 8, [ID_WORKER] = 6, [ID_LOCATION] = 10, [ID_TASK] = 16,
	[ID_POLL] = 16, [ID_MAPPING] = 8, [ID_FRAME] = 12, [ID_CALLSITE] = 12, [ID_STALL] = 10,
	[ID_SEGMENT] = 8,
};

/* Advisory lock class of the lease holders (apart from pg_store.c's). */
#define LEASE_CLASS 0x5354

/* A lease's holder is alive while its side session holds this lock. */
#define DEAD(h) "NOT EXISTS (SELECT 1 FROM pg_locks k WHERE k.locktype = 'advisory' AND k.classid = %d" \
		" AND k.objid = " h " AND k.objsubid = 2 AND k.database = (SELECT oid FROM pg_database" \
		" WHERE datname = current_database()))"

/* Gives back the leases on top of import_ids whose holder is dead (all: -1)
 * or is this import (mine), newest first, then forgets those. */
static int reclaim(struct ss_pg_ids *ids, bool mine)
{
	struct ss_pg *p = ids->p;
	char who[512];
	if (mine)
		snprintf(who, sizeof who, "l.holder = %d", ids->holder);
	else
		snprintf(who, sizeof who, DEAD("l.holder"), LEASE_CLASS);
	for (int round = 0; round < 1000000; round++) {
		char *q = ss_pg_fmt("SELECT l.kind, l.first, l.last FROM import_id_leases l JOIN import_ids i"
				    " ON i.kind = l.kind WHERE l.last = i.next AND %s LIMIT 1", who);
		PGresult *r = ss_pg_select(p, p->side, q);
		free(q);
		if (!r)
			return -1;
		if (PQntuples(r) == 0) {
			PQclear(r);
			break;
		}
		long long kind = strtoll(PQgetvalue(r, 0, 0), NULL, 10), first = strtoll(PQgetvalue(r, 0, 1), NULL, 10),
			  last = strtoll(PQgetvalue(r, 0, 2), NULL, 10);
		PQclear(r);
		q = ss_pg_fmt("UPDATE import_ids SET next = %lld WHERE kind = %lld AND next = %lld;"
			      "DELETE FROM import_id_leases WHERE kind = %lld AND first = %lld AND last = %lld",
			      first, kind, last, kind, first, last);
		int rc = ss_pg_exec(p, p->side, q);
		free(q);
		if (rc)
			return -1;
	}
	char *q = ss_pg_fmt("DELETE FROM import_id_leases l WHERE %s", who);
	int rc = ss_pg_exec(p, p->side, q);
	free(q);
	return rc;
}

int ss_pg_ids_begin(struct ss_pg *p, int *holder)
{
	int64_t pid = 0;
	if (ss_pg_exec(p, p->side, "CREATE TABLE IF NOT EXISTS import_id_leases (kind integer NOT NULL,"
		       " first bigint NOT NULL, last bigint NOT NULL, holder integer NOT NULL)") != 0 ||
	    ss_pg_query_int(p, p->side, "SELECT pg_backend_pid()", 0, &pid) != 0)
		return -1;
	char *q = ss_pg_fmt("SELECT pg_advisory_lock(%d, %lld)", LEASE_CLASS, (long long)pid);
	int rc = ss_pg_exec(p, p->side, q);
	free(q);
	*holder = (int)pid;
	if (rc)
		return -1;
	struct ss_pg_ids tmp = { .p = p, .holder = (int)pid };
	return reclaim(&tmp, false);
}

void ss_pg_ids_init(struct ss_pg_ids *ids, struct ss_pg *p, const int64_t floor[ID_COUNT], int holder)
{
	memset(ids, 0, sizeof *ids);
	ids->p = p;
	ids->holder = holder;
	for (int k = 0; k < ID_COUNT; k++) {
		ids->floor[k] = floor[k];
		ids->k[k].max = -1;
	}
}

/* Reserves a chunk of kind on the side connection, leased to this import. */
static int reserve(struct ss_pg_ids *ids, int kind, int64_t n, int64_t *first)
{
	char *q = ss_pg_fmt("WITH r AS (UPDATE import_ids SET next = next + %lld WHERE kind = %d RETURNING next)"
			    " INSERT INTO import_id_leases SELECT %d, next - %lld, next, %d FROM r RETURNING first",
			    (long long)n, kind, kind, (long long)n, ids->holder);
	int rc = ss_pg_query_int(ids->p, ids->p->side, q, 1, first);
	free(q);
	return rc;
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
		if (reserve(ids, kind, (int64_t)1 << shift, &first) != 0) {
			ids->failed = true;
			return v;
		}
		c->base[c->n++] = first;
	}
	if (idx > c->max)
		c->max = idx;
	return c->base[chunk] + (idx & (((int64_t)1 << shift) - 1));
}

int ss_pg_ids_keep(struct ss_pg_ids *ids)
{
	for (int k = 0; k < ID_COUNT; k++) {
		struct ss_pg_id_chunks *c = &ids->k[k];
		if (!c->n)
			continue;
		int shift = chunk_shift[k];
		int64_t last = c->base[c->n - 1], end = last + ((int64_t)1 << shift);
		int64_t used = last + (c->max & (((int64_t)1 << shift) - 1)) + 1;
		char *sql = ss_pg_fmt("UPDATE import_ids SET next = %lld WHERE kind = %d AND next = %lld;"
				      "UPDATE import_id_leases SET last = %lld WHERE kind = %d AND first = %lld AND"
				      " holder = %d AND (SELECT next FROM import_ids WHERE kind = %d) = %lld",
				      (long long)used, k, (long long)end, (long long)used, k, (long long)last, ids->holder,
				      k, (long long)used);
		int rc = ss_pg_exec(ids->p, ids->p->side, sql);
		free(sql);
		if (rc)
			return -1;
	}
	/* The leases end with the import's transaction: killed before its commit,
	 * they stay, and the next import takes the ids back. */
	char *sql = ss_pg_fmt("DELETE FROM import_id_leases WHERE holder = %d", ids->holder);
	int rc = ss_pg_exec(ids->p, ids->p->main, sql);
	free(sql);
	return rc;
}

int ss_pg_ids_drop(struct ss_pg_ids *ids)
{
	return ids->holder ? reclaim(ids, true) : 0;
}

void ss_pg_ids_free(struct ss_pg_ids *ids)
{
	for (int k = 0; k < ID_COUNT; k++)
		free(ids->k[k].base);
	memset(ids->k, 0, sizeof ids->k);
}

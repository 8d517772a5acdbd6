/*
 * name_cache.c - see name_cache.h. Keys of the hash map are a 64-bit FNV-1a of
 * the text and its length; texts that collide on both take the next probe
 * number in the key's upper half, so a lookup compares bytes until a miss.
 */
#include "name_cache.h"

#include <stdlib.h>
#include <string.h>

static uint64_t fnv1a(const char *p, size_t n)
{
	return ss_hash_bytes(p, n, SS_HASH_SEED);
}

/* The entry of (p, n), or the first probe number that is free. */
static bool find(const struct ss_name_cache *c, const char *p, size_t n, uint64_t h, uint64_t *probe,
		 int64_t *id)
{
	for (uint64_t k = 0;; k++) {
		uint64_t v;
		if (!ss_hmap_get(&c->map, h, (uint64_t)(uint32_t)n | k << 32, &v)) {
			*probe = k;
			return false;
		}
		const struct ss_name_ent *e = &c->ents[v];
		if (e->n == n && memcmp(e->p, p, n) == 0) {
			*id = e->id;
			return true;
		}
	}
}

bool ss_name_cache_get(const struct ss_name_cache *c, const char *p, size_t n, int64_t *id)
{
	uint64_t probe;
	return find(c, p, n, fnv1a(p, n), &probe, id);
}

int ss_name_cache_put(struct ss_name_cache *c, const char *p, size_t n, int64_t id)
{
	uint64_t h = fnv1a(p, n), probe;
	int64_t old;
	if (find(c, p, n, h, &probe, &old))
		return 0;
	if (c->n_ents == c->cap_ents) {
		size_t cap = c->cap_ents ? c->cap_ents * 2 : 64;
		struct ss_name_ent *e = realloc(c->ents, cap * sizeof *e);
		if (!e)
			return -1;
		c->ents = e;
		c->cap_ents = cap;
	}
	char *copy = malloc(n ? n : 1);
	if (!copy)
		return -1;
	memcpy(copy, p, n);
	if (ss_hmap_put(&c->map, h, (uint64_t)(uint32_t)n | probe << 32, c->n_ents) != 0) {
		free(copy);
		return -1;
	}
	c->ents[c->n_ents++] = (struct ss_name_ent){ copy, n, id };
	return 0;
}

void ss_name_cache_free(struct ss_name_cache *c)
{
	for (size_t i = 0; i < c->n_ents; i++)
		free(c->ents[i].p);
	free(c->ents);
	ss_hmap_free(&c->map);
	memset(c, 0, sizeof *c);
}

/*
 * name_cache.h - the SQLite sink's memory of the names table (schema version 6:
 * marks and spans refer to their name by id): name text -> names.id for every
 * name this import has met, so a row's name costs one hash lookup and only a
 * new name goes to SQLite. Used by one thread (the sink's caller); not shared.
 */
#ifndef STALLSCOPE_NAME_CACHE_H
#define STALLSCOPE_NAME_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hmap.h"

struct ss_name_ent {
	char *p;
	size_t n;
	int64_t id;
};

struct ss_name_cache {
	struct ss_hmap map; /* (hash, length | probe << 32) -> index into ents */
	struct ss_name_ent *ents;
	size_t n_ents, cap_ents;
};

/* Looks the n bytes at p up; *id is set only when found. */
bool ss_name_cache_get(const struct ss_name_cache *c, const char *p, size_t n, int64_t *id);
/* Remembers a name not in the cache (the bytes are copied). Returns 0, or -1
 * when memory ran out (the cache is unchanged). */
int ss_name_cache_put(struct ss_name_cache *c, const char *p, size_t n, int64_t id);
void ss_name_cache_free(struct ss_name_cache *c);

#endif /* STALLSCOPE_NAME_CACHE_H */

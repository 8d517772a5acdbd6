/*
 * hmap.h - an open-addressing hash map from a pair of u64 keys to a u64 value, the
 * one lookup structure of the importer (thread numbers, task numbers, frame and
 * callsite deduplication, per-segment id translation). Linear probing with
 * backward-shift deletion, so deleting keeps lookups exact without tombstones.
 * The table doubles above half full and halves below an eighth full.
 */
#ifndef STALLSCOPE_HMAP_H
#define STALLSCOPE_HMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* FNV-1a over n bytes, continuing from h (start with SS_HASH_SEED): the key the
 * importer's text and identity lookups put in a map. */
#define SS_HASH_SEED 0xcbf29ce484222325ull
static inline uint64_t ss_hash_bytes(const void *p, size_t n, uint64_t h)
{
	const unsigned char *c = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ c[i]) * 0x100000001b3ull;
	return h;
}

struct ss_hmap_slot {
	uint64_t a, b, val;
	bool used;
};

struct ss_hmap {
	struct ss_hmap_slot *slots;
	size_t cap, len; /* cap is a power of two or 0 */
};

/* Insert or replace. Returns 0, or -1 when memory ran out (the map is unchanged). */
int ss_hmap_put(struct ss_hmap *m, uint64_t a, uint64_t b, uint64_t val);
/* Looks a key up; *val is set only when found. */
bool ss_hmap_get(const struct ss_hmap *m, uint64_t a, uint64_t b, uint64_t *val);
bool ss_hmap_del(struct ss_hmap *m, uint64_t a, uint64_t b);
/* Calls fn for every entry (in no order); fn must not modify the map. */
void ss_hmap_foreach(const struct ss_hmap *m, void (*fn)(void *ctx, uint64_t a, uint64_t b, uint64_t val),
		     void *ctx);
void ss_hmap_clear(struct ss_hmap *m);
void ss_hmap_free(struct ss_hmap *m);

#endif /* STALLSCOPE_HMAP_H */

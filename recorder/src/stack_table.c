/*
 * stack_table.c - call stacks interned per segment, so a sample costs a few bytes
 * and each distinct chain is written once. Writer thread only.
 *
 * Ids increase for the whole session and are never reused, so forgetting the
 * table (a new segment, a lost block, or the memory cap) only means a stack is
 * written again under a new id; a reader never sees one id with two meanings.
 */
#include "recorder-private.h"
#include "stack_table.h"

#include <stdlib.h>
#include <string.h>

#define MAX_ARENA_WORDS (8u << 20) /* 64 MiB of frames before the table is forgotten */

struct entry {
	uint64_t hash;
	uint32_t id;
	uint32_t off;     /* into arena: nkernel | flags << 32, nframes, frames... */
};

static struct entry *table;
static uint32_t table_size, used;
static uint64_t *arena;
static uint32_t arena_len, arena_cap;
static uint32_t next_id;

static uint64_t hash_frames(const uint64_t *f, uint32_t n, uint64_t head)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ ((uint64_t)n << 48) ^ head;
	for (uint32_t i = 0; i < n; i++) {
		h ^= f[i];
		h *= 0xff51afd7ed558ccdull;
		h ^= h >> 33;
	}
	return h ? h : 1;
}

SS_INTERNAL void ss_stacks_forget(void)
{
	if (table)
		memset(table, 0, sizeof *table * table_size);
	used = 0;
	arena_len = 0;
}

static int grow_table(void)
{
	uint32_t size = table_size ? table_size * 2 : 4096;
	struct entry *t = calloc(size, sizeof *t);
	if (!t)
		return -1;
	for (uint32_t i = 0; i < table_size; i++) {
		if (!table[i].hash)
			continue;
		uint32_t j = (uint32_t)table[i].hash & (size - 1);
		while (t[j].hash)
			j = (j + 1) & (size - 1);
		t[j] = table[i];
	}
	free(table);
	table = t;
	table_size = size;
	return 0;
}

static int arena_room(uint32_t words)
{
	if (arena_len + words <= arena_cap)
		return 0;
	uint32_t cap = arena_cap ? arena_cap : 65536;
	while (cap < arena_len + words)
		cap *= 2;
	uint64_t *a = realloc(arena, (size_t)cap * sizeof *a);
	if (!a)
		return -1;
	arena = a;
	arena_cap = cap;
	return 0;
}

SS_INTERNAL uint32_t ss_stacks_intern(const uint64_t *frames, uint32_t n, uint32_t nkernel,
				      uint32_t flags, int *is_new)
{
	*is_new = 0;
	uint64_t head = (uint64_t)flags << 32 | nkernel;
	if (arena_len + n + 2 > MAX_ARENA_WORDS)
		ss_stacks_forget();
	if ((used + 1) * 4 >= table_size * 3 && grow_table() != 0)
		return 0;
	uint64_t h = hash_frames(frames, n, head);
	uint32_t j = (uint32_t)h & (table_size - 1);
	for (; table[j].hash; j = (j + 1) & (table_size - 1)) {
		if (table[j].hash != h)
			continue;
		const uint64_t *e = arena + table[j].off;
		if (e[0] == head && e[1] == n && memcmp(e + 2, frames, n * sizeof *frames) == 0)
			return table[j].id;
	}
	if (arena_room(n + 2) != 0)
		return 0;
	arena[arena_len] = head;
	arena[arena_len + 1] = n;
	memcpy(arena + arena_len + 2, frames, n * sizeof *frames);
	table[j] = (struct entry){.hash = h, .id = ++next_id, .off = arena_len};
	arena_len += n + 2;
	used++;
	*is_new = 1;
	return next_id;
}

SS_INTERNAL void ss_stacks_free(void)
{
	free(table);
	free(arena);
	table = NULL;
	arena = NULL;
	table_size = used = arena_len = arena_cap = 0;
	next_id = 0;
}

/*
 * grave.c - the graveyard's storage (model_private.h, struct mdl_grave): tasks
 * that ended a moment ago, as small ghosts in a ring, found by task number
 * through an index of ring positions and hashes (8 bytes a slot). Every ended
 * task passes through here, so what it costs per task matters: one ring slot,
 * no allocation, and the index only once something looks an ended task up (a
 * general hash map with a task pointer per entry cost a third of the
 * importer's time and 150 MB at 400k tasks/s; indexing every ghost as it came,
 * 8% of it, and 16 MB, for lookups a dense recording never makes).
 */
#include "model_private.h"

/* An index slot: the ghost's ring position + 1 in the low half (0: empty),
 * 32 bits of its number's hash in the high half. A probe compares hashes and
 * finds a slot's home without reading the ring: one cache miss per lookup. */
static uint32_t hash32(uint64_t task)
{
	uint64_t h = task * 0x9E3779B97F4A7C15ull;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 32;
	return (uint32_t)h;
}

static inline uint32_t slot_pos(uint64_t s) { return (uint32_t)s; }
static inline uint32_t slot_hash(uint64_t s) { return (uint32_t)(s >> 32); }

/* The ghost at ring position pos becomes the one found for its number. */
static void index_put(struct mdl_grave *g, size_t pos)
{
	size_t mask = g->index_cap - 1;
	uint64_t task = g->ring[pos].task;
	uint32_t h = hash32(task);
	size_t j = h & mask;
	while (g->index[j] && !(slot_hash(g->index[j]) == h && g->ring[slot_pos(g->index[j]) - 1].task == task))
		j = (j + 1) & mask;
	g->index[j] = (uint64_t)h << 32 | (uint32_t)(pos + 1);
}

/* Brings the index up to date: the ghosts not in it yet, oldest first, so the
 * latest of a number wins. Each ghost is indexed at most once, so a lookup
 * after every push costs what indexing at every push did; a recording with no
 * lookup pays nothing (not even the index's memory). Returns -1 when memory
 * ran out (the index is then left out). */
static int index_catch_up(struct mdl_grave *g)
{
	if (!g->index) {
		if (!(g->index = calloc(g->cap * 2, sizeof *g->index)))
			return -1;
		g->index_cap = g->cap * 2;
		g->indexed = 0;
	}
	for (; g->indexed < g->n; g->indexed++)
		index_put(g, (g->head + g->indexed) & (g->cap - 1));
	return 0;
}

struct mdl_ghost *mdl_grave_find(struct mdl_grave *g, uint64_t task)
{
	if (!g->n || index_catch_up(g) != 0)
		return NULL;
	size_t mask = g->index_cap - 1;
	uint32_t h = hash32(task);
	for (size_t j = h & mask; g->index[j]; j = (j + 1) & mask) {
		if (slot_hash(g->index[j]) != h)
			continue;
		struct mdl_ghost *x = &g->ring[slot_pos(g->index[j]) - 1];
		if (x->task == task)
			return x;
	}
	return NULL;
}

static int grow(struct mdl_grave *g)
{
	size_t nc = g->cap ? g->cap * 2 : 1024;
	if (nc > UINT32_MAX / 2)
		return -1;
	/* realloc: a large ring is moved by remapping its pages, not copied into
	 * fresh ones (a fresh page costs a fault, dear in a VM). The part before
	 * the head then moves up behind the old end, so the ring is contiguous. */
	struct mdl_ghost *ring = realloc(g->ring, nc * sizeof *ring);
	if (!ring)
		return -1;
	if (g->head)
		memcpy(ring + g->cap, ring, g->head * sizeof *ring);
	g->ring = ring;
	g->cap = nc;
	/* Positions moved and the index is sized by cap: the next lookup builds
	 * it again (growing is rare: the ring doubles). */
	free(g->index);
	g->index = NULL;
	g->index_cap = g->indexed = 0;
	return 0;
}

int mdl_grave_push(struct mdl_grave *g, const struct mdl_ghost *x)
{
	if (g->n == g->cap && grow(g) != 0)
		return -1;
	size_t pos = (g->head + g->n++) & (g->cap - 1);
	g->ring[pos] = *x;
	return 0;
}

void mdl_grave_pop(struct mdl_grave *g)
{
	if (!g->n)
		return;
	size_t pos = g->head;
	if (g->indexed) {
		size_t mask = g->index_cap - 1;
		size_t i = hash32(g->ring[pos].task) & mask;
		while (g->index[i] && slot_pos(g->index[i]) != pos + 1)
			i = (i + 1) & mask;
		/* Not found: a later ghost of the same number is the one indexed. */
		if (g->index[i]) {
			/* Backward shift: later members of the probe run move into the
			 * hole when their home is at or before it, so no lookup chain
			 * breaks. */
			for (size_t j = (i + 1) & mask; g->index[j]; j = (j + 1) & mask) {
				size_t h = slot_hash(g->index[j]) & mask;
				if (((j - h) & mask) >= ((j - i) & mask)) {
					g->index[i] = g->index[j];
					i = j;
				}
			}
			g->index[i] = 0;
		}
		g->indexed--;
	}
	g->head = (g->head + 1) & (g->cap - 1);
	g->n--;
}

void mdl_grave_free(struct mdl_grave *g)
{
	for (size_t i = 0; i < g->n; i++)
		free(mdl_grave_at(g, i)->full);
	free(g->ring);
	free(g->index);
	memset(g, 0, sizeof *g);
}

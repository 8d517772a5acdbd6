/*
 * hmap.c - see hmap.h. The hash mixes both keys with a 64-bit finalizer so that
 * sequential ids (the common key) spread over the table.
 */
#include "hmap.h"

#include <stdlib.h>
#include <string.h>

static uint64_t mix(uint64_t a, uint64_t b)
{
	uint64_t h = a * 0x9E3779B97F4A7C15ull ^ (b + 0x632BE59BD9B4E019ull + (a << 6) + (a >> 2));
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h;
}

#define MIN_CAP 64

static int resize(struct ss_hmap *m, size_t ncap)
{
	struct ss_hmap_slot *ns = calloc(ncap, sizeof *ns);
	if (!ns)
		return -1;
	for (size_t i = 0; i < m->cap; i++) {
		struct ss_hmap_slot *s = &m->slots[i];
		if (!s->used)
			continue;
		size_t j = (size_t)mix(s->a, s->b) & (ncap - 1);
		while (ns[j].used)
			j = (j + 1) & (ncap - 1);
		ns[j] = *s;
	}
	free(m->slots);
	m->slots = ns;
	m->cap = ncap;
	return 0;
}

int ss_hmap_put(struct ss_hmap *m, uint64_t a, uint64_t b, uint64_t val)
{
	/* Keep the load under 1/2: probes stay short even for clustered keys. */
	if ((m->len + 1) * 2 > m->cap && resize(m, m->cap ? m->cap * 2 : MIN_CAP) != 0)
		return -1;
	size_t j = (size_t)mix(a, b) & (m->cap - 1);
	while (m->slots[j].used) {
		if (m->slots[j].a == a && m->slots[j].b == b) {
			m->slots[j].val = val;
			return 0;
		}
		j = (j + 1) & (m->cap - 1);
	}
	m->slots[j] = (struct ss_hmap_slot){ a, b, val, true };
	m->len++;
	return 0;
}

static struct ss_hmap_slot *find(const struct ss_hmap *m, uint64_t a, uint64_t b)
{
	if (!m->cap)
		return NULL;
	size_t j = (size_t)mix(a, b) & (m->cap - 1);
	while (m->slots[j].used) {
		if (m->slots[j].a == a && m->slots[j].b == b)
			return &m->slots[j];
		j = (j + 1) & (m->cap - 1);
	}
	return NULL;
}

bool ss_hmap_get(const struct ss_hmap *m, uint64_t a, uint64_t b, uint64_t *val)
{
	struct ss_hmap_slot *s = find(m, a, b);
	if (!s)
		return false;
	*val = s->val;
	return true;
}

bool ss_hmap_del(struct ss_hmap *m, uint64_t a, uint64_t b)
{
	struct ss_hmap_slot *s = find(m, a, b);
	if (!s)
		return false;
	size_t i = (size_t)(s - m->slots), mask = m->cap - 1;
	/* Backward shift: move later members of the probe run into the hole when
	 * their home slot is at or before it, so no lookup chain is broken. */
	for (size_t j = (i + 1) & mask; m->slots[j].used; j = (j + 1) & mask) {
		size_t home = (size_t)mix(m->slots[j].a, m->slots[j].b) & mask;
		if (((j - home) & mask) >= ((j - i) & mask)) {
			m->slots[i] = m->slots[j];
			i = j;
		}
	}
	m->slots[i].used = false;
	m->len--;
	/* A map that held many keys once (the live tasks of a burst) and holds
	 * few now is made smaller: its few keys would otherwise sit in cold cache
	 * lines all over a large table, and every lookup, found or not, miss. At
	 * an eighth full it halves (then a quarter full), so growing and
	 * shrinking stay apart and each costs O(1) per operation amortized. A
	 * failed allocation keeps the map as it is. */
	if (m->cap > MIN_CAP && m->len * 8 < m->cap)
		resize(m, m->cap / 2);
	return true;
}

void ss_hmap_foreach(const struct ss_hmap *m, void (*fn)(void *ctx, uint64_t a, uint64_t b, uint64_t val),
		     void *ctx)
{
	for (size_t i = 0; i < m->cap; i++)
		if (m->slots[i].used)
			fn(ctx, m->slots[i].a, m->slots[i].b, m->slots[i].val);
}

void ss_hmap_clear(struct ss_hmap *m)
{
	if (m->cap)
		memset(m->slots, 0, m->cap * sizeof *m->slots);
	m->len = 0;
}

void ss_hmap_free(struct ss_hmap *m)
{
	free(m->slots);
	m->slots = NULL;
	m->cap = m->len = 0;
}

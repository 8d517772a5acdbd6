/*
 * d9_tables.c - see d9_tables.h.
 */
#include "d9_tables.h"

#include <stdlib.h>
#include <string.h>

#include "d9_format.h"

/* ---- the map ---------------------------------------------------------------- */

static size_t slot_of(uint64_t key, size_t cap)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdull;
	key ^= key >> 33;
	return (size_t)key & (cap - 1);
}

static int grow(struct d9_map *m)
{
	size_t nc = m->cap ? m->cap * 2 : 64;
	struct d9_slot *ns = calloc(nc, sizeof *ns);
	if (!ns)
		return -1;
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->slots[i].val)
			continue;
		size_t j = slot_of(m->slots[i].key, nc);
		while (ns[j].val)
			j = (j + 1) & (nc - 1);
		ns[j] = m->slots[i];
	}
	free(m->slots);
	m->slots = ns;
	m->cap = nc;
	return 0;
}

int d9_map_put(struct d9_map *m, uint64_t key, uint64_t val)
{
	if ((m->len + 1) * 4 > m->cap * 3 && grow(m) != 0)
		return -1;
	size_t j = slot_of(key, m->cap);
	while (m->slots[j].val && m->slots[j].key != key)
		j = (j + 1) & (m->cap - 1);
	if (!m->slots[j].val)
		m->len++;
	m->slots[j].key = key;
	m->slots[j].val = val;
	return 0;
}

uint64_t d9_map_get(const struct d9_map *m, uint64_t key)
{
	if (!m->cap)
		return 0;
	size_t j = slot_of(key, m->cap);
	while (m->slots[j].val) {
		if (m->slots[j].key == key)
			return m->slots[j].val;
		j = (j + 1) & (m->cap - 1);
	}
	return 0;
}

void d9_map_clear(struct d9_map *m)
{
	if (m->len)
		memset(m->slots, 0, m->cap * sizeof *m->slots);
	m->len = 0;
}

void d9_map_free(struct d9_map *m)
{
	free(m->slots);
	memset(m, 0, sizeof *m);
}

uint64_t d9_hash(const void *p, size_t n, uint64_t h)
{
	const uint8_t *c = p;
	h ^= n * 0x9e3779b97f4a7c15ull;
	while (n >= 8) {
		uint64_t w;
		memcpy(&w, c, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdull;
		h ^= h >> 29;
		c += 8;
		n -= 8;
	}
	uint64_t w = 0;
	memcpy(&w, c, n);
	h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 32;
	return h;
}

/* Makes room for need elements of elem bytes in *arena (first: the capacity
 * it starts with); false when memory ran out. */
static bool room(void **arena, size_t *cap, size_t need, size_t elem, size_t first)
{
	if (need <= *cap && *arena)
		return true;
	size_t nc = *cap ? *cap * 2 : first;
	while (nc < need)
		nc *= 2;
	void *na = realloc(*arena, nc * elem);
	if (!na)
		return false;
	*arena = na;
	*cap = nc;
	return true;
}

/* Makes room for id n + 1 in the per-id arrays of a table. */
static int ids_room(size_t n, size_t *capn, uint64_t **off, uint32_t **a, uint32_t **b)
{
	if (n + 1 < *capn)
		return 0;
	size_t nc = *capn ? *capn * 2 : 256;
	uint64_t *no = realloc(*off, nc * sizeof *no);
	if (!no)
		return -1;
	*off = no;
	uint32_t *na = realloc(*a, nc * sizeof *na);
	if (!na)
		return -1;
	*a = na;
	uint32_t *nb = realloc(*b, nc * sizeof *nb);
	if (!nb)
		return -1;
	*b = nb;
	*capn = nc;
	return 0;
}

/* ---- strings ----------------------------------------------------------------- */

uint32_t d9_strings_intern(struct d9_strings *t, const uint8_t *p, size_t len)
{
	if (len > D9_MAX_STRING_BYTES)
		return t->full = true, 0;
	uint64_t h = d9_hash(p, len, 0x5bd1e995);
	for (uint32_t id = (uint32_t)d9_map_get(&t->index, h); id; id = t->next[id])
		if (t->slen[id] == len && memcmp(t->arena + t->off[id], p, len) == 0)
			return id;
	if (t->len + len + 1 > D9_MAX_STRING_BYTES || t->n + 1 >= UINT32_MAX)
		return t->full = true, 0;
	void *arena = t->arena;
	bool ok = room(&arena, &t->cap, t->len + len + 1, 1, 1u << 16);
	t->arena = arena;
	if (!ok || ids_room(t->n, &t->capn, &t->off, &t->slen, &t->next) != 0)
		return t->full = true, 0;
	uint32_t id = (uint32_t)++t->n;
	if (len)
		memcpy(t->arena + t->len, p, len);
	t->arena[t->len + len] = 0;
	t->off[id] = t->len;
	t->slen[id] = (uint32_t)len;
	t->next[id] = (uint32_t)d9_map_get(&t->index, h);
	t->len += len + 1;
	if (d9_map_put(&t->index, h, id) != 0) {
		t->n--;
		return t->full = true, 0;
	}
	return id;
}

const char *d9_strings_get(const struct d9_strings *t, uint32_t id, size_t *len)
{
	if (!id || id > t->n)
		return NULL;
	*len = t->slen[id];
	return t->arena + t->off[id];
}

void d9_strings_free(struct d9_strings *t)
{
	d9_map_free(&t->index);
	free(t->arena);
	free(t->off);
	free(t->slen);
	free(t->next);
	memset(t, 0, sizeof *t);
}

/* ---- stacks ------------------------------------------------------------------- */

uint32_t d9_stacks_intern(struct d9_stacks *t, const uint8_t *le, uint32_t count)
{
	size_t bytes = (size_t)count * 8;
	uint64_t h = d9_hash(le, bytes, 0x2545f491);
	for (uint32_t id = (uint32_t)d9_map_get(&t->index, h); id; id = t->next[id]) {
		if (t->count[id] != count)
			continue;
		const uint64_t *a = t->arena + t->off[id];
		uint32_t i = 0;
		while (i < count && a[i] == d9_le64(le + (size_t)i * 8))
			i++;
		if (i == count)
			return id;
	}
	if ((t->len + count) * 8 > D9_MAX_STACK_BYTES || t->n + 1 >= UINT32_MAX)
		return t->full = true, 0;
	/* allocated even for an empty first stack: a + 0 on NULL is undefined */
	void *arena = t->arena;
	bool ok = room(&arena, &t->cap, t->len + count, sizeof *t->arena, 1u << 14);
	t->arena = arena;
	if (!ok || ids_room(t->n, &t->capn, &t->off, &t->count, &t->next) != 0)
		return t->full = true, 0;
	uint32_t id = (uint32_t)++t->n;
	for (uint32_t i = 0; i < count; i++)
		t->arena[t->len + i] = d9_le64(le + (size_t)i * 8);
	t->off[id] = t->len;
	t->count[id] = count;
	t->next[id] = (uint32_t)d9_map_get(&t->index, h);
	t->len += count;
	if (d9_map_put(&t->index, h, id) != 0) {
		t->n--;
		return t->full = true, 0;
	}
	return id;
}

const uint64_t *d9_stacks_get(const struct d9_stacks *t, uint32_t id, size_t *count)
{
	if (!id || id > t->n)
		return NULL;
	*count = t->count[id];
	return t->arena + t->off[id];
}

void d9_stacks_free(struct d9_stacks *t)
{
	d9_map_free(&t->index);
	free(t->arena);
	free(t->off);
	free(t->count);
	free(t->next);
	memset(t, 0, sizeof *t);
}

/* ---- schemas ------------------------------------------------------------------ */

static bool same_schema(const struct d9_schema *s, const uint8_t *raw, size_t raw_len)
{
	/* raw: name_len u16, name, has_ts u8, field_count u16, fields (name_len u16, name, type u8) */
	size_t p = 2;
	if (d9_le16(raw) != s->name_len || memcmp(raw + p, s->name, s->name_len) != 0)
		return false;
	p += s->name_len;
	if ((raw[p] != 0) != s->has_ts || d9_le16(raw + p + 1) != s->n_fields)
		return false;
	p += 3;
	for (uint16_t i = 0; i < s->n_fields; i++) {
		uint16_t nl = d9_le16(raw + p);
		if (nl != s->fields[i].name_len || memcmp(raw + p + 2, s->fields[i].name, nl) != 0 ||
		    raw[p + 2 + nl] != s->fields[i].type)
			return false;
		p += 3u + nl;
	}
	return p == raw_len;
}

struct d9_schema *d9_schemas_intern(struct d9_schemas *t, const uint8_t *raw, size_t raw_len)
{
	uint64_t h = d9_hash(raw, raw_len, 0x7f4a7c15);
	for (struct d9_schema *s = (struct d9_schema *)(uintptr_t)d9_map_get(&t->index, h); s; s = s->next)
		if (same_schema(s, raw, raw_len))
			return s;
	if (t->n >= D9_MAX_SCHEMAS)
		return t->full = true, NULL;
	uint16_t n_fields = d9_le16(raw + 2 + d9_le16(raw) + 1);
	/* One allocation: the struct, the fields, then the names (NUL-terminated). */
	size_t size = sizeof(struct d9_schema) + (size_t)n_fields * sizeof(struct d9_field) + raw_len + 1u + n_fields;
	struct d9_schema *s = calloc(1, size);
	if (!s)
		return NULL;
	if (t->n == t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 32;
		struct d9_schema **nv = realloc(t->v, nc * sizeof *nv);
		if (!nv) {
			free(s);
			return NULL;
		}
		t->v = nv;
		t->cap = nc;
	}
	s->fields = (struct d9_field *)(s + 1);
	char *names = (char *)(s->fields + n_fields);
	size_t p = 2;
	s->name_len = d9_le16(raw);
	memcpy(names, raw + p, s->name_len);
	s->name = names;
	names += s->name_len + 1;
	p += s->name_len;
	s->has_ts = raw[p] != 0;
	s->n_fields = n_fields;
	p += 3;
	for (uint16_t i = 0; i < n_fields; i++) {
		uint16_t nl = d9_le16(raw + p);
		memcpy(names, raw + p + 2, nl);
		s->fields[i] = (struct d9_field){ names, nl, raw[p + 2 + nl] };
		names += nl + 1;
		p += 3u + nl;
	}
	s->hash = h;
	s->index = (uint32_t)t->n;
	s->next = (struct d9_schema *)(uintptr_t)d9_map_get(&t->index, h);
	if (d9_map_put(&t->index, h, (uint64_t)(uintptr_t)s) != 0) {
		free(s);
		return NULL;
	}
	t->v[t->n++] = s;
	return s;
}

int d9_schema_field(const struct d9_schema *s, const char *name)
{
	size_t n = strlen(name);
	for (uint16_t i = 0; i < s->n_fields; i++)
		if (s->fields[i].name_len == n && memcmp(s->fields[i].name, name, n) == 0)
			return i;
	return -1;
}

void d9_schemas_free(struct d9_schemas *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->v[i]);
	free(t->v);
	d9_map_free(&t->index);
	memset(t, 0, sizeof *t);
}

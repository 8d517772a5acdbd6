/*
 * definitions.c - id -> definition tables for the reader.
 *
 * Open addressing over 64-bit ids (ids are arbitrary varints, so no direct
 * indexing); each entry is its own allocation so that pointers handed to callers
 * stay put when a table grows. Memory, entries and table slots included, never
 * exceeds the cap given at creation.
 */
#include "definitions.h"

#include <stdlib.h>
#include <string.h>

struct table {
	uint64_t *keys;
	void **vals; /* NULL = empty slot */
	size_t cap;  /* power of two, or 0 */
	size_t used;
};

struct ss_defs {
	struct table strings, locations, threads;
	size_t bytes, max_bytes;
};

static uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static size_t slot_of(const struct table *t, uint64_t key)
{
	size_t mask = t->cap - 1;
	size_t i = (size_t)mix(key) & mask;
	while (t->vals[i] && t->keys[i] != key)
		i = (i + 1) & mask;
	return i;
}

static void *table_get(const struct table *t, uint64_t key)
{
	if (t->cap == 0)
		return NULL;
	return t->vals[slot_of(t, key)];
}

static int charge(struct ss_defs *d, size_t n)
{
	if (n > d->max_bytes - d->bytes)
		return -1;
	d->bytes += n;
	return 0;
}

static int table_grow(struct ss_defs *d, struct table *t)
{
	size_t ncap = t->cap ? t->cap * 2 : 64;
	size_t slot = sizeof(uint64_t) + sizeof(void *);
	if (charge(d, ncap * slot) != 0)
		return -1;
	uint64_t *keys = calloc(ncap, sizeof *keys);
	void **vals = calloc(ncap, sizeof *vals);
	if (!keys || !vals) {
		free(keys);
		free(vals);
		d->bytes -= ncap * slot;
		return -1;
	}
	struct table n = { keys, vals, ncap, t->used };
	for (size_t i = 0; i < t->cap; i++) {
		if (t->vals[i]) {
			size_t j = slot_of(&n, t->keys[i]);
			n.keys[j] = t->keys[i];
			n.vals[j] = t->vals[i];
		}
	}
	free(t->keys);
	free(t->vals);
	d->bytes -= t->cap * slot;
	*t = n;
	return 0;
}

/* Stores val under key; returns the value it replaced (the caller frees it). */
static int table_put(struct ss_defs *d, struct table *t, uint64_t key, void *val, void **old)
{
	*old = NULL;
	if ((t->used + 1) * 2 > t->cap && table_grow(d, t) != 0)
		return -1;
	size_t i = slot_of(t, key);
	if (t->vals[i])
		*old = t->vals[i];
	else
		t->used++;
	t->keys[i] = key;
	t->vals[i] = val;
	return 0;
}

static void table_free(struct table *t)
{
	for (size_t i = 0; i < t->cap; i++)
		free(t->vals[i]);
	free(t->keys);
	free(t->vals);
}

struct ss_defs *ss_defs_new(size_t max_bytes)
{
	struct ss_defs *d = calloc(1, sizeof *d);
	if (d)
		d->max_bytes = max_bytes;
	return d;
}

void ss_defs_free(struct ss_defs *d)
{
	if (!d)
		return;
	table_free(&d->strings);
	table_free(&d->locations);
	table_free(&d->threads);
	free(d);
}

/* One allocation holding the struct and a NUL-terminated copy of its bytes. */
static void *alloc_with_text(struct ss_defs *d, size_t head, const char *text, size_t len,
			     char **copy, size_t *charged)
{
	if (len > SIZE_MAX - head - 1 || charge(d, head + len + 1) != 0)
		return NULL;
	char *m = malloc(head + len + 1);
	if (!m) {
		d->bytes -= head + len + 1;
		return NULL;
	}
	*copy = m + head;
	if (len)
		memcpy(*copy, text, len);
	(*copy)[len] = '\0';
	*charged = head + len + 1;
	return m;
}

static size_t entry_size_string(const struct ss_string_def *s)
{
	return sizeof *s + s->len + 1;
}

static size_t entry_size_thread(const struct ss_thread_def *t)
{
	return sizeof *t + t->name_len + 1;
}

int ss_defs_put_string(struct ss_defs *d, uint64_t id, const char *data, size_t len)
{
	char *copy;
	size_t charged;
	struct ss_string_def *s = alloc_with_text(d, sizeof *s, data, len, &copy, &charged);
	if (!s)
		return -1;
	s->id = id;
	s->len = len;
	s->data = copy;
	void *old;
	if (table_put(d, &d->strings, id, s, &old) != 0) {
		d->bytes -= charged;
		free(s);
		return -1;
	}
	if (old) {
		d->bytes -= entry_size_string(old);
		free(old);
	}
	return 0;
}

int ss_defs_put_location(struct ss_defs *d, const struct ss_location_def *loc)
{
	if (charge(d, sizeof *loc) != 0)
		return -1;
	struct ss_location_def *l = malloc(sizeof *l);
	void *old;
	if (!l || table_put(d, &d->locations, loc->id, l, &old) != 0) {
		d->bytes -= sizeof *loc;
		free(l);
		return -1;
	}
	*l = *loc;
	if (old) {
		d->bytes -= sizeof *loc;
		free(old);
	}
	return 0;
}

int ss_defs_put_thread(struct ss_defs *d, const struct ss_thread_def *t)
{
	char *copy;
	size_t charged;
	struct ss_thread_def *n = alloc_with_text(d, sizeof *n, t->name, t->name_len, &copy, &charged);
	if (!n)
		return -1;
	*n = *t;
	n->name = copy;
	n->events = 0;
	n->became_worker = false;
	void *old;
	if (table_put(d, &d->threads, t->thread, n, &old) != 0) {
		d->bytes -= charged;
		free(n);
		return -1;
	}
	if (old) {
		/* A redefinition (e.g. at each segment or after a rename) keeps the
		 * thread's event count. */
		const struct ss_thread_def *o = old;
		n->events = o->events;
		if (!(n->flags & SS_THREAD_F_WORKER) && o->became_worker) {
			n->became_worker = true;
			n->runtime = o->runtime;
			n->worker_index = o->worker_index;
		}
		d->bytes -= entry_size_thread(old);
		free(old);
	}
	return 0;
}

const struct ss_string_def *ss_defs_string(const struct ss_defs *d, uint64_t id)
{
	return table_get(&d->strings, id);
}

const struct ss_location_def *ss_defs_location(const struct ss_defs *d, uint64_t id)
{
	return table_get(&d->locations, id);
}

struct ss_thread_def *ss_defs_thread(const struct ss_defs *d, uint64_t thread)
{
	return table_get(&d->threads, thread);
}

int ss_defs_foreach_thread(const struct ss_defs *d,
			   int (*fn)(void *ctx, const struct ss_thread_def *t), void *ctx)
{
	for (size_t i = 0; i < d->threads.cap; i++) {
		if (d->threads.vals[i]) {
			int rc = fn(ctx, d->threads.vals[i]);
			if (rc)
				return rc;
		}
	}
	return 0;
}

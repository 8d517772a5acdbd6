/*
 * intern.c - strings and source locations turned into small ids.
 *
 * Interning is a control call (a mutex and an allocation), paid once per call site
 * thanks to the caching macros. Ids live for the whole process, across sessions, so
 * a cached id never goes stale. Entries are appended to a chunked array that never
 * moves and are published with a release store of the count, so the writer reads
 * definitions without taking the mutex; since an id is published before any hook
 * can carry it, a writer that reads the count after a ring's head has every
 * definition that ring's events use.
 */
#include "recorder-private.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_BITS 10
#define CHUNK_SIZE (1u << CHUNK_BITS)
#define MAX_CHUNKS 4096u /* 4M definitions: far beyond any real program's call sites */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct ss_intern_entry *chunks[MAX_CHUNKS];
static _Atomic uint32_t published;
static uint32_t next_string_id, next_location_id;

/* Open-addressing hash from content to entry index + 1; rebuilt when 3/4 full. */
static uint32_t *table;
static uint32_t table_size;

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static uint64_t entry_hash(const struct ss_intern_entry *e)
{
	uint64_t h = 0xcbf29ce484222325ull ^ e->kind;
	if (e->kind == 1)
		return hash_bytes(h, e->str, e->len);
	uint32_t k[3] = {e->file_id, e->line, e->func_id};
	return hash_bytes(h, k, sizeof k);
}

static int entry_equal(const struct ss_intern_entry *a, const struct ss_intern_entry *b)
{
	if (a->kind != b->kind)
		return 0;
	if (a->kind == 1)
		return a->len == b->len && memcmp(a->str, b->str, a->len) == 0;
	return a->file_id == b->file_id && a->line == b->line && a->func_id == b->func_id;
}

static struct ss_intern_entry *entry_at(uint32_t index)
{
	return &chunks[index >> CHUNK_BITS][index & (CHUNK_SIZE - 1)];
}

static int table_grow(void)
{
	uint32_t n = atomic_load_explicit(&published, memory_order_relaxed);
	uint32_t size = table_size ? table_size * 2 : 1024;
	uint32_t *t = calloc(size, sizeof *t);
	if (!t)
		return -1;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t h = entry_hash(entry_at(i));
		for (uint32_t j = (uint32_t)h & (size - 1);; j = (j + 1) & (size - 1)) {
			if (!t[j]) {
				t[j] = i + 1;
				break;
			}
		}
	}
	free(table);
	table = t;
	table_size = size;
	return 0;
}

/* Finds or adds e (lock held). Returns the id, or 0 when out of memory. */
static uint32_t intern_locked(struct ss_intern_entry *e)
{
	uint32_t n = atomic_load_explicit(&published, memory_order_relaxed);
	if ((n + 1) * 4 >= table_size * 3 && table_grow() != 0)
		return 0;
	uint64_t h = entry_hash(e);
	uint32_t j = (uint32_t)h & (table_size - 1);
	for (; table[j]; j = (j + 1) & (table_size - 1)) {
		const struct ss_intern_entry *x = entry_at(table[j] - 1);
		if (entry_equal(x, e))
			return x->id;
	}
	if (n >= MAX_CHUNKS * CHUNK_SIZE)
		return 0;
	if (!chunks[n >> CHUNK_BITS]) {
		chunks[n >> CHUNK_BITS] = calloc(CHUNK_SIZE, sizeof(struct ss_intern_entry));
		if (!chunks[n >> CHUNK_BITS])
			return 0;
	}
	if (e->kind == 1) {
		char *copy = malloc(e->len + 1u);
		if (!copy)
			return 0;
		memcpy(copy, e->str, e->len);
		copy[e->len] = 0;
		e->str = copy;
		e->id = ++next_string_id;
	} else {
		e->id = ++next_location_id;
	}
	*entry_at(n) = *e;
	table[j] = n + 1;
	atomic_store_explicit(&published, n + 1, memory_order_release);
	return e->id;
}

static uint32_t string_locked(const char *s)
{
	struct ss_intern_entry e = {.kind = 1, .str = s ? s : "", .len = 0};
	size_t len = strlen(e.str);
	e.len = len > 65535 ? 65535 : (uint32_t)len; /* names longer than that are bugs */
	return intern_locked(&e);
}

SS_INTERNAL uint32_t ss_intern_string(const char *s)
{
	pthread_mutex_lock(&lock);
	uint32_t id = string_locked(s);
	pthread_mutex_unlock(&lock);
	return id;
}

STALLSCOPE_API uint32_t stallscope_name(const char *name)
{
	return ss_intern_string(name);
}

STALLSCOPE_API uint32_t stallscope_location(const char *file, uint32_t line, const char *function)
{
	pthread_mutex_lock(&lock);
	struct ss_intern_entry e = {.kind = 2, .line = line};
	e.file_id = string_locked(file);
	e.func_id = string_locked(function);
	uint32_t id = (e.file_id && e.func_id) ? intern_locked(&e) : 0;
	pthread_mutex_unlock(&lock);
	return id;
}

SS_INTERNAL uint32_t ss_intern_count(void)
{
	return atomic_load_explicit(&published, memory_order_acquire);
}

SS_INTERNAL const struct ss_intern_entry *ss_intern_entry(uint32_t index)
{
	return entry_at(index);
}

/*
 * d9_tables.h - what one dial9 file defines, interned by content so that ids
 * are the file's, not a batch's: dial9 interns strings and stacks per batch
 * (the same string is defined again in every batch, under ids that mean
 * something else in the next one) and numbers schemas per batch, so the reader
 * turns every pool entry and schema into a file-wide id or pointer.
 *
 * Memory is bounded: the file's distinct strings up to D9_MAX_STRING_BYTES,
 * distinct stacks up to D9_MAX_STACK_BYTES, D9_MAX_SCHEMAS schemas; past that
 * interning returns 0 (unresolved) and sets `full`.
 */
#ifndef STALLSCOPE_D9_TABLES_H
#define STALLSCOPE_D9_TABLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A map from a u64 key to a non-zero u64 value (0 = absent). */
struct d9_map {
	struct d9_slot { uint64_t key, val; } *slots;
	size_t cap, len;
};
int d9_map_put(struct d9_map *m, uint64_t key, uint64_t val);
uint64_t d9_map_get(const struct d9_map *m, uint64_t key);
void d9_map_clear(struct d9_map *m);
void d9_map_free(struct d9_map *m);

uint64_t d9_hash(const void *p, size_t n, uint64_t seed);

/* Strings: ids from 1; each is NUL-terminated. */
struct d9_strings {
	struct d9_map index;  /* hash -> the latest id with that hash */
	char *arena;
	size_t len, cap;
	uint64_t *off;        /* by id */
	uint32_t *slen, *next; /* length; the previous id with the same hash */
	size_t n, capn;
	bool full;
};
uint32_t d9_strings_intern(struct d9_strings *t, const uint8_t *p, size_t len);
const char *d9_strings_get(const struct d9_strings *t, uint32_t id, size_t *len);
void d9_strings_free(struct d9_strings *t);

/* Stacks: leaf-first address lists, ids from 1. */
struct d9_stacks {
	struct d9_map index;
	uint64_t *arena;
	size_t len, cap;      /* in addresses */
	uint64_t *off;
	uint32_t *count, *next;
	size_t n, capn;
	bool full;
};
/* le: count addresses of 8 bytes each, little-endian. */
uint32_t d9_stacks_intern(struct d9_stacks *t, const uint8_t *le, uint32_t count);
const uint64_t *d9_stacks_get(const struct d9_stacks *t, uint32_t id, size_t *count);
void d9_stacks_free(struct d9_stacks *t);

/* A schema: an event type's name, whether its events carry a timestamp, and
 * its fields (types keep the D9_OPTIONAL bit). Identical content is one
 * schema however many batches define it. */
struct d9_field {
	const char *name;
	uint16_t name_len;
	uint8_t type;
};
struct d9_schema {
	const char *name;
	uint16_t name_len;
	bool has_ts;
	uint16_t n_fields;
	struct d9_field *fields;
	uint32_t index;       /* 0, 1, ... in the order the file defines them */
	void *user;           /* the consumer's, for its per-schema decisions */
	uint64_t hash;
	struct d9_schema *next; /* same hash */
};
struct d9_schemas {
	struct d9_map index;  /* hash -> struct d9_schema * */
	struct d9_schema **v;
	size_t n, cap;
	bool full;
};
/* raw: the schema frame after its tag and type id (name length .. fields),
 * already checked to be well-formed, raw_len bytes. */
struct d9_schema *d9_schemas_intern(struct d9_schemas *t, const uint8_t *raw, size_t raw_len);
/* Field index of name, or -1. */
int d9_schema_field(const struct d9_schema *s, const char *name);
void d9_schemas_free(struct d9_schemas *t);

#endif /* STALLSCOPE_D9_TABLES_H */

/*
 * definitions.h - the reader's tables of strings, locations and threads by id
 * (internal). Definitions from earlier blocks resolve ids in later ones, so they
 * outlive a block; their total size is capped because a hostile file could define
 * millions of ids.
 */
#ifndef STALLSCOPE_DEFINITIONS_H
#define STALLSCOPE_DEFINITIONS_H

#include <stddef.h>
#include <stdint.h>

#include "segment_reader.h"

struct ss_defs;

struct ss_defs *ss_defs_new(size_t max_bytes);
void ss_defs_free(struct ss_defs *d);

/* Keep a definition, replacing an earlier one with the same id. Return 0, or -1
 * when it was not kept (memory cap reached or allocation failure). */
int ss_defs_put_string(struct ss_defs *d, uint64_t id, const char *data, size_t len);
int ss_defs_put_location(struct ss_defs *d, const struct ss_location_def *loc);
int ss_defs_put_thread(struct ss_defs *d, const struct ss_thread_def *t);

const struct ss_string_def *ss_defs_string(const struct ss_defs *d, uint64_t id);
const struct ss_location_def *ss_defs_location(const struct ss_defs *d, uint64_t id);
struct ss_thread_def *ss_defs_thread(const struct ss_defs *d, uint64_t thread);

int ss_defs_foreach_thread(const struct ss_defs *d,
			   int (*fn)(void *ctx, const struct ss_thread_def *t), void *ctx);

#endif /* STALLSCOPE_DEFINITIONS_H */

/*
 * segment_source.h - stallscope's own segment files as a source of the trace
 * model (viewer/model/): the first of the model's sources; a trace format that
 * comes later is one more file like this one.
 */
#ifndef STALLSCOPE_SEGMENT_SOURCE_H
#define STALLSCOPE_SEGMENT_SOURCE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "segment_reader.h"

struct ss_model;
struct ss_symtab;

struct ss_segment_run {
	uint64_t events;      /* event records given to the model */
	uint64_t new_blocks;  /* blocks read past skip_blocks */
};

/* Reads every intact block of the opened segment rd into the model (the
 * recording of its header must be the model's current one). The events of the
 * first skip_blocks blocks were imported before: only their definitions count.
 * block_done (may be NULL) follows the progress. Returns 0, or -1 when a store
 * write failed. */
int ss_segment_source_run(struct ss_model *m, struct ss_reader *rd, const struct ss_symtab *symtab,
			  uint64_t skip_blocks, struct ss_segment_run *out,
			  void (*block_done)(void *ctx, const struct ss_block_info *b, bool skipped), void *ctx);

#endif /* STALLSCOPE_SEGMENT_SOURCE_H */

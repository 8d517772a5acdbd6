/*
 * segment_builder.h - builds segments in memory, byte for byte as the format
 * header describes them, for the seed-corpus generator and the reader's unit
 * tests. Independent of the recorder's writer on purpose: a second implementation
 * of the format catches misreadings on either side.
 */
#ifndef STALLSCOPE_SEGMENT_BUILDER_H
#define STALLSCOPE_SEGMENT_BUILDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "segment_format.h"

struct sb_header {
	uint64_t session_id, segment_seq, pid, start_ts, anchor_mono_ns, anchor_real_ns;
	const char *exe, *hostname, *boot_id;
};

struct sb {
	uint8_t *buf;           /* the whole file so far */
	size_t len, cap;
	uint8_t *blk;           /* the open block's raw payload */
	size_t blk_len, blk_cap;
	bool in_block;
	uint32_t blk_events;    /* record_count: events, LOSS excluded */
	uint64_t first_ts, last_ts, clock; /* first/last: 0 until the block has an event */
	uint64_t block_seq;
	uint64_t start_ts;
	/* footer accounting */
	uint64_t events, event_blocks, loss_records, first_event_ts, last_event_ts;
};

/* Writes the file header. Aborts on allocation failure (test code). */
void sb_init(struct sb *b, const struct sb_header *h);
void sb_free(struct sb *b);

void sb_begin_block(struct sb *b);
/* Closes the block; compressed with zstd when asked and available. Returns whether
 * it was compressed. */
bool sb_end_block(struct sb *b, bool zstd);
void sb_footer(struct sb *b, uint32_t sealed_by, uint64_t dropped_events);

void sb_string(struct sb *b, uint64_t id, const char *s);
void sb_location(struct sb *b, uint64_t id, uint64_t file, uint64_t line, uint64_t function);
void sb_thread_def(struct sb *b, uint64_t thread, uint64_t tid, const char *name,
		   uint64_t runtime, uint64_t worker_index, uint64_t flags);
/* Switches to thread with its clock at absolute time ts. */
void sb_thread(struct sb *b, uint64_t thread, uint64_t ts);
/* An event (or LOSS) of the current thread at absolute ts (>= the clock) followed
 * by n varint fields, each passed as uint64_t. */
void sb_event(struct sb *b, uint8_t type, uint64_t ts, int n, ...);
void sb_meta(struct sb *b, const char *key, const char *value);
/* An executable MAPPING (ts 0: the segment-start snapshot), prot r-x. */
void sb_mapping(struct sb *b, uint64_t start, uint64_t end, uint64_t pgoff, const uint8_t *build_id,
		size_t build_id_len, const char *path);
/* A STACK of n user addresses, leaf first. */
void sb_stack(struct sb *b, uint64_t id, const uint64_t *pcs, size_t n);
/* The same with the first nkernel of pcs kernel addresses. */
void sb_stack_kernel(struct sb *b, uint64_t id, const uint64_t *pcs, size_t n, size_t nkernel);
/* A CPU SAMPLE of thread (0 = none defined) / tid at absolute ts, weight 1000 ns. */
void sb_cpu_sample(struct sb *b, uint64_t thread, uint64_t tid, uint64_t ts, uint64_t stack);
/* A length-prefixed record with an arbitrary body. */
void sb_ext(struct sb *b, uint8_t type, const void *body, size_t len);
/* Raw record bytes, not counted (for malformed records in tests). */
void sb_raw_record(struct sb *b, const void *bytes, size_t len);

#endif /* STALLSCOPE_SEGMENT_BUILDER_H */

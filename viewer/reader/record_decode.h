/*
 * record_decode.h - decoding of single records from a block's decoded payload
 * (internal to the reader). Pure: no allocation, no side effects beyond the small
 * per-block clock state, so the reader can run it once to validate a whole block
 * and again to deliver it.
 */
#ifndef STALLSCOPE_RECORD_DECODE_H
#define STALLSCOPE_RECORD_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "segment_reader.h"

/* The clock of one block: a THREAD record sets the current thread and its absolute
 * time; every event advances that time by its dt. */
struct ss_decode_state {
	uint64_t clock;
	uint64_t thread;
	int have_thread;
};

void ss_decode_begin(struct ss_decode_state *st);

/* Decodes the record at p (avail bytes left in the payload) into *rec and returns
 * the bytes it occupies (> 0). LOSS records are decoded like events (they carry
 * a dt on the current thread's clock) and marked is_event; see
 * ss_record_counts_as_event() for the format's narrower notion. Returns 0 on a malformed record with *why set to a
 * static message. rec->thread_def, index and raw_offset are left to the caller. */
size_t ss_decode_record(struct ss_decode_state *st, const uint8_t *p, size_t avail,
			struct ss_record *rec, const char **why);

#endif /* STALLSCOPE_RECORD_DECODE_H */

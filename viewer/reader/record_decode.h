/*
 * record_decode.h - decoding of single records from a block's decoded payload
 * (internal to the reader). Pure: no allocation, no side effects beyond the small
 * per-block clock state, so the reader can run it once to validate a whole block
 * and again to deliver it.
 */
#ifndef STALLSCOPE_RECORD_DECODE_H
#define STALLSCOPE_RECORD_DECODE_H

#include <stdbool.h>
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

/* The floor of a block's decoded payload: a time no record of it that carries
 * one is earlier than (an event and LOSS by its run's THREAD time, which its
 * dt can only advance; SAMPLE, SWITCH, COMM, SAMPLER_LOSS, STALL, STALL_END
 * and TASK_DUMP by their own), UINT64_MAX when none does. The records are
 * walked, not decoded: the same lengths as ss_decode_record gives them, so on
 * every payload that ss_decode_record takes whole the floor is exact enough
 * to hold for it. def (may be NULL) is told the id of every STRING, LOCATION,
 * THREAD_DEF (its thread) and STACK in order. Returns false where a record
 * does not walk (a payload ss_decode_record would refuse there or earlier). */
bool ss_walk_floor(const uint8_t *p, size_t len, uint64_t *floor,
		   void (*def)(void *ctx, uint8_t type, uint64_t id), void *ctx);

#endif /* STALLSCOPE_RECORD_DECODE_H */

/*
 * dump_format.h - the human-readable rendering behind `stallscope dump`, kept apart
 * from argument handling so the fuzzer can drive it over hostile segments.
 */
#ifndef STALLSCOPE_DUMP_FORMAT_H
#define STALLSCOPE_DUMP_FORMAT_H

#include <stdbool.h>
#include <stdio.h>

#include "segment_reader.h"

struct ss_dump_options {
	bool summary_only; /* header, footer and summary; no blocks or records */
};

/* Prints the segment that r has opened to out, reading it to the end. Returns 0
 * when it read cleanly, 2 when it was damaged or parts were unreadable; the damage
 * line goes to err (prefixed "stallscope dump: NAME: "). */
int ss_dump_segment(FILE *out, FILE *err, const char *name, struct ss_reader *r,
		    const struct ss_dump_options *opts);

/* The line for a segment whose header could not be read (exit code 2), e.g. from
 * ss_reader_open_file() failing with a damage kind other than SS_DAMAGE_IO. */
void ss_dump_header_damage(FILE *err, const char *name, enum ss_damage_kind kind, const char *why);

#endif /* STALLSCOPE_DUMP_FORMAT_H */

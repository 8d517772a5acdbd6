/*
 * progress.h - the import's progress line on a terminal: percent of input bytes,
 * events per second and the time left, redrawn at most four times a second.
 */
#ifndef STALLSCOPE_PROGRESS_H
#define STALLSCOPE_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct ss_progress {
	FILE *out;
	bool on;
	uint64_t total_bytes, done_bytes, events;
	double start, last_draw;
};

double ss_progress_now(void);
void ss_progress_start(struct ss_progress *p, FILE *out, bool on, uint64_t total_bytes);
void ss_progress_update(struct ss_progress *p, uint64_t add_bytes, uint64_t add_events);
void ss_progress_phase(struct ss_progress *p, const char *what);
void ss_progress_end(struct ss_progress *p);

#endif /* STALLSCOPE_PROGRESS_H */

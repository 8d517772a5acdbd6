/*
 * progress.c - see progress.h. The line is rewritten in place with \r and erased
 * at the end, so the final summary and warnings are not interleaved with it.
 */
#include "progress.h"

#include <time.h>

double ss_progress_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void ss_progress_start(struct ss_progress *p, FILE *out, bool on, uint64_t total_bytes)
{
	*p = (struct ss_progress){ .out = out, .on = on, .total_bytes = total_bytes };
	p->start = p->last_draw = ss_progress_now();
}

void ss_progress_update(struct ss_progress *p, uint64_t add_bytes, uint64_t add_events)
{
	p->done_bytes += add_bytes;
	p->events += add_events;
	if (!p->on)
		return;
	double now = ss_progress_now();
	if (now - p->last_draw < 0.25)
		return;
	p->last_draw = now;
	double el = now - p->start, frac = p->total_bytes ? (double)p->done_bytes / (double)p->total_bytes : 0;
	if (frac > 1)
		frac = 1;
	double eta = frac > 0.001 ? el / frac - el : 0;
	fprintf(p->out, "\rimport: %5.1f%%  %.2fM events/s  ETA %.0fs   ", frac * 100,
		el > 0 ? (double)p->events / el / 1e6 : 0, eta);
	fflush(p->out);
}

void ss_progress_phase(struct ss_progress *p, const char *what)
{
	if (!p->on)
		return;
	fprintf(p->out, "\rimport: %-40s", what);
	fflush(p->out);
}

void ss_progress_end(struct ss_progress *p)
{
	if (!p->on)
		return;
	fprintf(p->out, "\r%60s\r", "");
	fflush(p->out);
}

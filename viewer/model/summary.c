/*
 * summary.c - see summary.h.
 */
#include "summary.h"

#include <stdbool.h>
#include <string.h>

#include "sink.h"

/* A sparse bucket needs this many polls and parks begun in it to be written. */
#define SPARSE_MIN_STARTS 2

bool ss_summary_written(const struct ss_summary_acc *a, int level)
{
	return a->open && (ss_summary_level_parent[level] < 0 || a->starts >= SPARSE_MIN_STARTS);
}

/* A row of a source: at a full level held until the other source writes the
 * same bucket (then the two go out as one), or until another row is held. */
static int emit(struct ss_summary *s, struct ss_summary_worker *w, int src, int level,
		const struct ss_summary_row *r)
{
	if (ss_summary_level_parent[level] >= 0)
		return s->sink->summary(s->sink->ctx, r);
	struct ss_summary_row *h = &w->held[level];
	int8_t *hs = &w->held_src[level];
	/* 0 in a zeroed worker: no row held (sources are stored plus one) */
	if (*hs && *hs != src + 1 && h->ts == r->ts && h->worker_id == r->worker_id) {
		h->busy_ns += r->busy_ns;
		h->parked_ns += r->parked_ns;
		h->offcpu_ns += r->offcpu_ns;
		h->polls += r->polls;
		if (r->max_poll_ns > h->max_poll_ns)
			h->max_poll_ns = r->max_poll_ns;
		*hs = 0;
		return s->sink->summary(s->sink->ctx, h);
	}
	if (*hs && s->sink->summary(s->sink->ctx, h) != 0)
		return -1;
	*h = *r;
	*hs = (int8_t)(src + 1);
	return 0;
}

/* Adds what the open bucket holds beyond what is stored already; keep leaves
 * it open (the import ends in it). */
static int write_acc(struct ss_summary *s, struct ss_summary_worker *w, int src, int level, int64_t worker_id,
		     bool keep)
{
	struct ss_summary_acc *a = &w->acc[src][level];
	if (!a->open)
		return 0;
	bool sparse = ss_summary_level_parent[level] >= 0;
	if (!ss_summary_written(a, level)) {
		if (!keep)
			memset(a, 0, sizeof *a);
		return 0;
	}
	uint64_t size = ss_summary_level_ns[level];
	struct ss_summary_row r = {
		(int64_t)size, worker_id, (int64_t)(a->bucket * size), a->busy - a->w_busy, a->parked - a->w_parked,
		sparse ? 0 : a->offcpu - a->w_offcpu, a->polls - a->w_polls, a->max_poll,
	};
	if (keep) {
		a->w_busy = a->busy;
		a->w_parked = a->parked;
		a->w_offcpu = a->offcpu;
		a->w_polls = a->polls;
	} else {
		memset(a, 0, sizeof *a);
	}
	return emit(s, w, src, level, &r);
}

static inline void add_part(struct ss_summary_acc *a, enum ss_summary_kind kind, int64_t part,
			    int64_t dur, bool first)
{
	if (first && kind != SS_SUM_OFFCPU)
		a->starts++;
	switch (kind) {
	case SS_SUM_BUSY:
		a->busy += part;
		if (first)
			a->polls++;
		if (dur > a->max_poll)
			a->max_poll = dur;
		break;
	case SS_SUM_PARKED:
		a->parked += part;
		break;
	case SS_SUM_OFFCPU:
		a->offcpu += part;
		break;
	}
}

int ss_summary_add(struct ss_summary *s, struct ss_summary_worker *w, int64_t worker_id,
		   enum ss_summary_kind kind, uint64_t ts, uint64_t dur)
{
	int src = kind == SS_SUM_OFFCPU;
	uint64_t end = ts + dur < ts ? UINT64_MAX : ts + dur;
	for (int l = 0; l < SS_SUMMARY_LEVELS; l++) {
		bool sparse = ss_summary_level_parent[l] >= 0;
		if (sparse && src == 1)
			continue; /* sparse levels keep no off-CPU time */
		struct ss_summary_acc *open = &w->acc[src][l];
		if (open->open && ts >= open->lo && end <= open->hi) {
			/* Inside the open bucket, the usual case: no division. */
			add_part(open, kind, (int64_t)dur, (int64_t)dur, true);
			continue;
		}
		uint64_t size = ss_summary_level_ns[l];
		uint64_t b0 = ts / size, b1 = dur ? (end - 1) / size : b0;
		/* A hostile or absurd interval would mean millions of rows at the fine
		 * levels; the coarse levels still describe it. */
		if (b1 - b0 >= s->max_buckets)
			continue;
		/* In a sparse level only the first and last bucket can reach two
		 * starts: the ones in between are skipped, not written. */
		for (uint64_t b = b0;; b = sparse && b == b0 && b1 > b0 + 1 ? b1 : b + 1) {
			struct ss_summary_acc *a = &w->acc[src][l];
			if (a->open && a->bucket != b && write_acc(s, w, src, l, worker_id, false) != 0)
				return -1;
			if (!a->open) {
				a->open = true;
				a->bucket = b;
				a->lo = b * size;
				a->hi = b * size + size < b * size ? UINT64_MAX : b * size + size;
			}
			uint64_t lo = b * size > ts ? b * size : ts;
			uint64_t hi = b == b1 ? end : (b + 1) * size;
			add_part(a, kind, (int64_t)(hi - lo), (int64_t)dur, b == b0);
			if (b == b1)
				break;
		}
	}
	return 0;
}

int ss_summary_checkpoint(struct ss_summary *s, struct ss_summary_worker *w, int64_t worker_id)
{
	for (int src = 0; src < 2; src++)
		for (int l = 0; l < SS_SUMMARY_LEVELS; l++)
			if (write_acc(s, w, src, l, worker_id, true) != 0)
				return -1;
	for (int l = 0; l < SS_SUMMARY_LEVELS; l++)
		if (w->held_src[l]) {
			w->held_src[l] = 0;
			if (s->sink->summary(s->sink->ctx, &w->held[l]) != 0)
				return -1;
		}
	return 0;
}

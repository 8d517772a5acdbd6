/*
 * sv_collect.c - see sv_collect.h. Samples are first summed per distinct
 * stack (a callsite, and for off-CPU time the stall capture spliced in), and
 * only then turned into frames: a trace has millions of samples but
 * thousands of stacks.
 *
 * Off-CPU time of a window is a merge of two streams in time order, the
 * thread's CPU intervals and its off-CPU samples: an interval off the CPU
 * takes the last sample since the interval before it began (the sample is
 * taken on the CPU, microseconds before the switch). The streams start one
 * interval before the window, so an interval open at its start finds its
 * sample.
 */
#include "sv_collect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hmap.h"
#include "read_queries.h"
#include "stacks.h"
#include "store_open.h"

/* Times from the file are kept within +-2^61 ns, so sums cannot overflow. */
#define LIMIT (INT64_C(1) << 61)

static int64_t clamp_t(int64_t t)
{
	return t < -LIMIT ? -LIMIT : t > LIMIT ? LIMIT : t;
}

static int64_t clamp_d(int64_t d)
{
	return d < 0 ? 0 : d > LIMIT ? LIMIT : d;
}

/* Callsite markers of the aggregation: no sample at all, or a sample without a stack. */
#define CS_NO_SAMPLE (-1)
#define CS_EMPTY 0

struct entry {
	int64_t cs, capture_cs, count, weight;
};

struct capture {
	int64_t thread, ts, cs;
};

struct window {
	int64_t thread, t0, t1;
};

struct ctx {
	sqlite3 *db;
	struct ss_callstacks *stacks;
	const struct sv_collect_options *o;
	struct ss_hmap index;         /* (cs, capture cs) -> entry */
	struct entry *e;
	size_t n_e, cap_e;
	struct capture *caps;
	size_t n_caps;
	struct window *w;
	size_t n_w, cap_w;
	sqlite3_stmt *st[SS_Q_COUNT];
	struct sv_collect_info info;
	char *err;
	size_t errlen;
};

static int fail(struct ctx *c, const char *what)
{
	const char *msg = sqlite3_errcode(c->db) == SQLITE_INTERRUPT ? "interrupted" : sqlite3_errmsg(c->db);
	snprintf(c->err, c->errlen, "%s: %s", what, msg);
	return -1;
}

static int oom(struct ctx *c)
{
	snprintf(c->err, c->errlen, "out of memory");
	return -1;
}

static sqlite3_stmt *stmt(struct ctx *c, enum ss_read_query q)
{
	if (!c->st[q])
		c->st[q] = ss_read_prepare(c->db, q);
	else {
		sqlite3_reset(c->st[q]);
		sqlite3_clear_bindings(c->st[q]);
	}
	return c->st[q];
}

static int add(struct ctx *c, int64_t cs, int64_t capture_cs, int64_t count, int64_t weight)
{
	uint64_t v;
	if (ss_hmap_get(&c->index, (uint64_t)cs, (uint64_t)capture_cs, &v)) {
		c->e[v].count = sv_add_sat(c->e[v].count, count);
		c->e[v].weight = sv_add_sat(c->e[v].weight, weight);
		return 0;
	}
	if (c->n_e == c->cap_e) {
		size_t nc = c->cap_e ? c->cap_e * 2 : 256;
		struct entry *ne = realloc(c->e, nc * sizeof *ne);
		if (!ne)
			return oom(c);
		c->e = ne;
		c->cap_e = nc;
	}
	if (ss_hmap_put(&c->index, (uint64_t)cs, (uint64_t)capture_cs, c->n_e) != 0)
		return oom(c);
	c->e[c->n_e++] = (struct entry){ cs, capture_cs, count, weight };
	return 0;
}

static int add_window(struct ctx *c, int64_t thread, int64_t t0, int64_t t1)
{
	t0 = clamp_t(t0);
	t1 = clamp_t(t1);
	if (t1 <= t0)
		return 0;
	if (c->n_w == c->cap_w) {
		size_t nc = c->cap_w ? c->cap_w * 2 : 64;
		struct window *nw = realloc(c->w, nc * sizeof *nw);
		if (!nw)
			return oom(c);
		c->w = nw;
		c->cap_w = nc;
	}
	c->w[c->n_w++] = (struct window){ thread, t0, t1 };
	return 0;
}

/* ---- CPU samples ---------------------------------------------------------- */

static int cpu_rows(struct ctx *c, sqlite3_stmt *s)
{
	int rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (c->o->polls_only && sqlite3_column_type(s, 2) == SQLITE_NULL)
			continue;
		int64_t cs = sqlite3_column_type(s, 0) == SQLITE_NULL ? CS_EMPTY : sqlite3_column_int64(s, 0);
		if (cs < 0)
			cs = CS_EMPTY;
		if (add(c, cs, 0, 1, clamp_d(sqlite3_column_int64(s, 1))) != 0)
			return -1;
	}
	return rc == SQLITE_DONE ? 0 : fail(c, "samples");
}

static int cpu_window(struct ctx *c, const struct window *w)
{
	sqlite3_stmt *s = stmt(c, SS_Q_STACK_SAMPLES_IN);
	if (!s)
		return fail(c, "samples");
	sqlite3_bind_int64(s, 1, w->thread);
	sqlite3_bind_int64(s, 2, w->t0);
	sqlite3_bind_int64(s, 3, w->t1);
	sqlite3_bind_text(s, 4, "cpu", -1, SQLITE_STATIC);
	return cpu_rows(c, s);
}

/* ---- off-CPU time --------------------------------------------------------- */

static int load_captures(struct ctx *c)
{
	sqlite3_stmt *s = stmt(c, SS_Q_STACK_CAPTURES);
	if (!s)
		return fail(c, "stall captures");
	size_t cap = 0;
	int rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (c->n_caps == cap) {
			size_t nc = cap ? cap * 2 : 64;
			struct capture *n = realloc(c->caps, nc * sizeof *n);
			if (!n)
				return oom(c);
			c->caps = n;
			cap = nc;
		}
		c->caps[c->n_caps++] = (struct capture){ sqlite3_column_int64(s, 0), clamp_t(sqlite3_column_int64(s, 1)),
							 sqlite3_column_int64(s, 2) };
	}
	return rc == SQLITE_DONE ? 0 : fail(c, "stall captures");
}

/* The callsite of the first blocked capture of thread in [t0, t1), 0 when
 * none (captures are sorted by thread and ts). */
static int64_t capture_in(const struct ctx *c, int64_t thread, int64_t t0, int64_t t1)
{
	size_t lo = 0, hi = c->n_caps;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct capture *k = &c->caps[mid];
		if (k->thread < thread || (k->thread == thread && k->ts < t0))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < c->n_caps && c->caps[lo].thread == thread && c->caps[lo].ts < t1)
		return c->caps[lo].cs;
	return 0;
}

struct off_sample {
	int64_t ts, cs;
	bool in_poll, valid;
};

static bool next_sample(sqlite3_stmt *s, struct off_sample *out, int *rc)
{
	*rc = sqlite3_step(s);
	if (*rc != SQLITE_ROW) {
		out->valid = false;
		return false;
	}
	out->ts = clamp_t(sqlite3_column_int64(s, 0));
	out->cs = sqlite3_column_type(s, 1) == SQLITE_NULL ? CS_EMPTY : sqlite3_column_int64(s, 1);
	if (out->cs < 0)
		out->cs = CS_EMPTY;
	out->in_poll = sqlite3_column_type(s, 2) != SQLITE_NULL;
	out->valid = true;
	return true;
}

static int off_window(struct ctx *c, const struct window *w)
{
	/* Where the streams start: the interval open at t0 and the one before it. */
	sqlite3_stmt *b = stmt(c, SS_Q_STACK_SWITCH_BEFORE);
	if (!b)
		return fail(c, "cpu intervals");
	sqlite3_bind_int64(b, 1, w->thread);
	sqlite3_bind_int64(b, 2, w->t0);
	int64_t lo_int = w->t0, lo_sample = w->t0;
	int rc, row = 0;
	while ((rc = sqlite3_step(b)) == SQLITE_ROW) {
		int64_t ts = clamp_t(sqlite3_column_int64(b, 0));
		if (row++ == 0)
			lo_int = lo_sample = ts;
		else
			lo_sample = ts;
	}
	if (rc != SQLITE_DONE)
		return fail(c, "cpu intervals");
	sqlite3_stmt *iv = stmt(c, SS_Q_STACK_SWITCHES_IN);
	sqlite3_stmt *sm = stmt(c, SS_Q_STACK_OFFCPU_IN);
	if (!iv || !sm)
		return fail(c, "off-CPU samples");
	sqlite3_bind_int64(iv, 1, w->thread);
	sqlite3_bind_int64(iv, 2, lo_int);
	sqlite3_bind_int64(iv, 3, w->t1);
	sqlite3_bind_int64(sm, 1, w->thread);
	sqlite3_bind_int64(sm, 2, lo_sample);
	sqlite3_bind_int64(sm, 3, w->t1);
	struct off_sample cur = { 0 }, pick = { 0 };
	int src;
	next_sample(sm, &cur, &src);
	int64_t prev_start = lo_sample;
	while ((rc = sqlite3_step(iv)) == SQLITE_ROW) {
		int64_t ts = clamp_t(sqlite3_column_int64(iv, 0)), dur = clamp_d(sqlite3_column_int64(iv, 1));
		const char *state = (const char *)sqlite3_column_text(iv, 2);
		if (!state || !strcmp(state, "on-cpu")) {
			prev_start = ts;
			continue;
		}
		/* The last sample in [prev_start, ts]. */
		pick.valid = false;
		while (cur.valid && cur.ts <= ts) {
			if (cur.ts >= prev_start)
				pick = cur;
			next_sample(sm, &cur, &src);
		}
		if (src != SQLITE_ROW && src != SQLITE_DONE)
			return fail(c, "off-CPU samples");
		prev_start = ts;
		int64_t a = ts > w->t0 ? ts : w->t0, e = ts + dur < w->t1 ? ts + dur : w->t1;
		if (e <= a)
			continue;
		if (c->o->polls_only && !(pick.valid && pick.in_poll))
			continue;
		int64_t cs = pick.valid ? pick.cs : CS_NO_SAMPLE;
		int64_t cap = !strcmp(state, "blocked") && cs != CS_NO_SAMPLE ? capture_in(c, w->thread, ts, ts + dur) : 0;
		if (add(c, cs, cap, 1, e - a) != 0)
			return -1;
	}
	return rc == SQLITE_DONE ? 0 : fail(c, "cpu intervals");
}

/* ---- scopes --------------------------------------------------------------- */

/* Every thread's window, or every thread of recording (when not 0). */
static int thread_windows(struct ctx *c, int64_t recording, int64_t t0, int64_t t1)
{
	sqlite3_stmt *s = stmt(c, recording ? SS_Q_STACK_RECORDING_THREADS : SS_Q_STACK_THREADS);
	if (!s)
		return fail(c, "threads");
	if (recording)
		sqlite3_bind_int64(s, 1, recording);
	int rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		if (add_window(c, sqlite3_column_int64(s, 0), t0, t1) != 0)
			return -1;
	return rc == SQLITE_DONE ? 0 : fail(c, "threads");
}

/* Windows from rows of (thread, ts, dur), clipped to [c0, c1). */
static int poll_windows(struct ctx *c, sqlite3_stmt *s, int64_t c0, int64_t c1, bool *any)
{
	int rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		*any = true;
		if (sqlite3_column_type(s, 0) == SQLITE_NULL)
			continue;
		int64_t ts = clamp_t(sqlite3_column_int64(s, 1));
		/* A stall that never ended runs to the end of the data. */
		int64_t dur = sqlite3_column_type(s, 2) == SQLITE_NULL ? LIMIT : clamp_d(sqlite3_column_int64(s, 2));
		int64_t t0 = ts, t1 = ts + (dur > 0 ? dur : 1);
		if (t0 < c0)
			t0 = c0;
		if (t1 > c1)
			t1 = c1;
		if (add_window(c, sqlite3_column_int64(s, 0), t0, t1) != 0)
			return -1;
	}
	return rc == SQLITE_DONE ? 0 : fail(c, "polls");
}

static int resolve(struct ctx *c, const struct sv_scope *sc)
{
	bool clip = sc->t1 > sc->t0;
	int64_t c0 = clip ? sc->t0 : -LIMIT, c1 = clip ? sc->t1 : LIMIT;
	enum ss_read_query q;
	const char *what;
	switch (sc->kind) {
	case SV_SCOPE_TRACE:
	case SV_SCOPE_RANGE:
		return thread_windows(c, 0, c0, c1);
	case SV_SCOPE_RECORDING: {
		sqlite3_stmt *s = stmt(c, SS_Q_STACK_RECORDING);
		if (!s)
			return fail(c, "recordings");
		sqlite3_bind_int64(s, 1, sc->id);
		int rc = sqlite3_step(s);
		if (rc == SQLITE_DONE) {
			snprintf(c->err, c->errlen, "no recording %lld in this trace", (long long)sc->id);
			return -1;
		}
		if (rc != SQLITE_ROW)
			return fail(c, "recordings");
		return thread_windows(c, sc->id, c0, c1);
	}
	case SV_SCOPE_WORKER: {
		sqlite3_stmt *s = stmt(c, SS_Q_STACK_WORKER);
		if (!s)
			return fail(c, "workers");
		sqlite3_bind_int64(s, 1, sc->id);
		int rc = sqlite3_step(s);
		if (rc == SQLITE_ROW)
			return add_window(c, sqlite3_column_int64(s, 0), c0, c1);
		if (rc != SQLITE_DONE)
			return fail(c, "workers");
		snprintf(c->err, c->errlen, "no worker %lld in this trace", (long long)sc->id);
		return -1;
	}
	case SV_SCOPE_POLL:
		q = SS_Q_STACK_POLL, what = "poll";
		break;
	case SV_SCOPE_STALL:
		q = SS_Q_STACK_STALL, what = "stall";
		break;
	case SV_SCOPE_TASK:
		q = SS_Q_STACK_TASK_POLLS, what = "task with polls";
		break;
	case SV_SCOPE_LOCATION:
		q = SS_Q_STACK_LOCATION_POLLS, what = "location with polls";
		break;
	default:
		snprintf(c->err, c->errlen, "unknown scope");
		return -1;
	}
	sqlite3_stmt *s = stmt(c, q);
	if (!s)
		return fail(c, what);
	sqlite3_bind_int64(s, 1, sc->id);
	bool any = false;
	if (poll_windows(c, s, c0, c1, &any) != 0)
		return -1;
	if (!any) {
		snprintf(c->err, c->errlen, "no %s %lld in this trace", what, (long long)sc->id);
		return -1;
	}
	return 0;
}

/* ---- frames --------------------------------------------------------------- */

static enum sv_frame_kind kind_of(const struct ss_stack_frame *f)
{
	if (f->kernel)
		return SV_FRAME_KERNEL;
	if (!f->function || f->function[0] == '[')
		return SV_FRAME_OTHER;
	return f->system ? SV_FRAME_SYSTEM : SV_FRAME_OWN;
}

/* The frames of an entry, leaf first, into f (max of them); returns how many. */
static size_t entry_frames(struct ctx *c, const struct entry *e, struct ss_stack_frame *f, size_t max,
			   struct ss_stack_frame *scratch)
{
	if (e->cs <= 0)
		return 0;
	size_t n = ss_callstacks_get(c->stacks, e->cs, f, max);
	if (!e->capture_cs || !n)
		return n;
	size_t nk = 0;
	while (nk < n && f[nk].kernel)
		nk++;
	size_t m = ss_callstacks_get(c->stacks, e->capture_cs, scratch, max);
	size_t ck = 0;
	while (ck < m && scratch[ck].kernel)
		ck++;
	if (ck == m)
		return n;
	/* The same frozen user stack: the leaf functions must agree. */
	if (nk < n && !(f[nk].function && scratch[ck].function && !strcmp(f[nk].function, scratch[ck].function)))
		return n;
	size_t k = nk;
	for (size_t i = ck; i < m && k < max; i++)
		f[k++] = scratch[i];
	c->info.spliced = sv_add_sat(c->info.spliced, e->count);
	return k;
}

/* Drops the outer of two frames that are one address expanded into two
 * inline levels of the same function (__libc_read at read.c:26 inside
 * __libc_read at read.c:24): they are one call, and by function they would
 * draw the name twice. The same line at the same address is recursion
 * through one call site, and stays. f is leaf first; returns the new n. */
static size_t merge_inline_twins(struct ss_stack_frame *f, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		const struct ss_stack_frame *in = k ? &f[k - 1] : NULL;
		if (in && in->function && f[i].function && in->rel_pc == f[i].rel_pc && in->line != f[i].line &&
		    in->kernel == f[i].kernel && !strcmp(in->function, f[i].function) &&
		    (in->mapping == f[i].mapping || (in->mapping && f[i].mapping && !strcmp(in->mapping, f[i].mapping))))
			continue;
		f[k++] = f[i];
	}
	return k;
}

static int build_profile(struct ctx *c, struct sv_profile *out)
{
	struct ss_stack_frame *f = malloc(2 * SS_STACK_MAX * sizeof *f);
	uint32_t *ids = malloc(SS_STACK_MAX * sizeof *ids);
	if (!f || !ids) {
		free(f);
		free(ids);
		return oom(c);
	}
	int rc = 0;
	for (size_t i = 0; i < c->n_e && rc == 0; i++) {
		const struct entry *e = &c->e[i];
		size_t n = merge_inline_twins(f, entry_frames(c, e, f, SS_STACK_MAX, f + SS_STACK_MAX));
		if (n == 0) {
			const char *name = e->cs == CS_NO_SAMPLE ? "[no off-CPU sample]" : "[no stack]";
			int64_t id = sv_profile_frame(out, name, NULL, 0, SV_FRAME_OTHER);
			if (id < 0)
				rc = oom(c);
			ids[0] = (uint32_t)id;
			n = 1;
		} else {
			for (size_t k = 0; k < n && rc == 0; k++) {
				char name[512];
				ss_callstacks_frame_name(&f[k], name, sizeof name);
				int64_t line = f[k].line > 0 && f[k].line < INT32_MAX ? f[k].line : 0;
				int64_t id = sv_profile_frame(out, name, f[k].file, (int32_t)line, kind_of(&f[k]));
				if (id < 0)
					rc = oom(c);
				ids[n - 1 - k] = (uint32_t)id; /* root first */
			}
		}
		if (rc == 0 && sv_profile_add(out, ids, n, e->count, e->weight) != 0)
			rc = oom(c);
	}
	free(f);
	free(ids);
	return rc;
}

int sv_collect(sqlite3 *db, struct ss_callstacks *stacks, const struct sv_scope *scope,
	       const struct sv_collect_options *o, struct sv_profile *out, struct sv_collect_info *info, char *err,
	       size_t errlen)
{
	struct ctx c = { .db = db, .stacks = stacks, .o = o, .err = err, .errlen = errlen };
	sv_profile_init(out, o->kind);
	if (errlen)
		err[0] = 0;
	bool own_stacks = !stacks;
	if (own_stacks && !(c.stacks = ss_callstacks_new(db))) {
		snprintf(err, errlen, "stacks: %s", sqlite3_errmsg(db));
		return -1;
	}
	int rc;
	bool whole = scope->kind == SV_SCOPE_TRACE && scope->t1 <= scope->t0;
	if (scope->kind == SV_SCOPE_RANGE && scope->t1 <= scope->t0) {
		snprintf(err, errlen, "an empty range");
		rc = -1;
	} else if (whole && o->kind == SV_KIND_CPU) {
		/* One pass over the table beats a seek per thread. */
		sqlite3_stmt *s = stmt(&c, SS_Q_STACK_ALL_SAMPLES);
		rc = s ? 0 : fail(&c, "samples");
		if (s) {
			sqlite3_bind_text(s, 1, "cpu", -1, SQLITE_STATIC);
			rc = cpu_rows(&c, s);
		}
		c.info.windows = 1;
	} else {
		rc = resolve(&c, scope);
		if (rc == 0 && o->kind == SV_KIND_OFFCPU)
			rc = load_captures(&c);
		for (size_t i = 0; rc == 0 && i < c.n_w; i++) {
			rc = o->kind == SV_KIND_CPU ? cpu_window(&c, &c.w[i]) : off_window(&c, &c.w[i]);
			if (!whole)
				c.info.span = sv_add_sat(c.info.span, c.w[i].t1 - c.w[i].t0);
		}
		c.info.windows = c.n_w;
	}
	if (rc == 0)
		rc = build_profile(&c, out);
	for (size_t i = 0; i < SS_Q_COUNT; i++)
		sqlite3_finalize(c.st[i]);
	if (own_stacks)
		ss_callstacks_free(c.stacks);
	ss_hmap_free(&c.index);
	free(c.e);
	free(c.caps);
	free(c.w);
	if (info)
		*info = c.info;
	return rc;
}

int sv_collect_path(const char *path, const struct sv_scope *scope, const struct sv_collect_options *o,
		    double seconds, struct sv_profile *out, struct sv_collect_info *info, char *err, size_t errlen)
{
	sqlite3 *db;
	if (ss_store_open_readonly(path, true, &db, err, errlen) != 0) {
		sv_profile_init(out, o->kind);
		return -1;
	}
	struct ss_store_budget budget = { 0 };
	ss_store_budget(db, &budget, seconds);
	int rc = sv_collect(db, NULL, scope, o, out, info, err, errlen);
	if (rc != 0 && budget.expired)
		snprintf(err, errlen, "%s: took longer than %.0f s", path, seconds);
	ss_store_budget(db, NULL, 0);
	sqlite3_close(db);
	return rc;
}

int sv_scope_parse(const char *text, struct sv_scope *out)
{
	static const struct { const char *name; enum sv_scope_kind kind; } kinds[] = {
		{ "worker", SV_SCOPE_WORKER }, { "poll", SV_SCOPE_POLL }, { "stall", SV_SCOPE_STALL },
		{ "task", SV_SCOPE_TASK }, { "location", SV_SCOPE_LOCATION }, { "recording", SV_SCOPE_RECORDING },
	};
	if (!strcmp(text, "trace") || !strcmp(text, "range")) {
		out->kind = text[0] == 't' ? SV_SCOPE_TRACE : SV_SCOPE_RANGE;
		out->id = 0;
		return 0;
	}
	const char *colon = strchr(text, ':');
	if (!colon)
		return -1;
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
		size_t l = strlen(kinds[i].name);
		if ((size_t)(colon - text) != l || strncmp(text, kinds[i].name, l) != 0)
			continue;
		char *end;
		long long id = strtoll(colon + 1, &end, 10);
		if (end == colon + 1 || *end || id <= 0)
			return -1;
		out->kind = kinds[i].kind;
		out->id = id;
		return 0;
	}
	return -1;
}

void sv_scope_name(const struct sv_scope *s, char *buf, size_t len)
{
	static const char *const names[] = { "the whole trace", "the range", "worker", "poll", "stall", "task",
					     "spawn location", "recording" };
	if (s->kind <= SV_SCOPE_RANGE)
		snprintf(buf, len, "%s", names[s->kind]);
	else if ((unsigned)s->kind < sizeof names / sizeof names[0])
		snprintf(buf, len, "%s %lld", names[s->kind], (long long)s->id);
	else
		snprintf(buf, len, "?");
}

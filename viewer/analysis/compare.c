/*
 * compare.c - see compare.h. Each trace is read in three passes, each in the
 * order of an index and without SQL sorting where it can: its CPU samples by
 * thread and time (so a poll's samples come together and its culprit is
 * voted on the spot), its polls, and its wakes that led to a poll. Then the
 * rows of both are matched by name, and the findings of both analyses by key.
 */
#include "compare.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "hmap.h"
#include "read_queries.h"
#include "stacks.h"

const char *const ss_cmp_metric_names[SS_CMP_METRICS] = {
	"polls", "p50", "p99", "max", "cpu_share", "wake_p99",
};

/* A row (location or function) of one trace while it is read. */
struct acc {
	int64_t location_id;      /* locations: polls.location_id, 0 when NULL */
	char *function, *file;
	int64_t line;
	struct ss_hist polls, wakes;
	uint64_t cpu;
};

struct accs {
	struct acc *v;
	size_t n, cap;
	struct ss_hmap index;
};

struct side {
	sqlite3 *db;
	const struct ss_scope *scope;
	struct ss_callstacks *stacks;
	struct ss_stack_frame *frames;
	struct accs locs, funcs;
	struct ss_hmap culprit_of; /* poll id -> index in funcs + 1 */
	struct ss_hmap workers;    /* worker ids of the scope */
	uint64_t cpu_total, polls, wakes;
	struct ss_analysis *analysis;
	char err[512];
	bool failed;
};

static uint64_t fnv(const char *s, uint64_t h)
{
	for (; s && *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static char *dup_or_null(const char *s)
{
	return s && *s ? strdup(s) : NULL;
}

static int hist_add(struct ss_hist *h, uint64_t v)
{
	if (h->n == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 16;
		uint64_t *nv = realloc(h->v, cap * sizeof *nv);
		if (!nv)
			return -1;
		h->v = nv;
		h->cap = cap;
	}
	h->v[h->n++] = v;
	if (v > h->max)
		h->max = v;
	h->sorted = false;
	return 0;
}

static void side_fail(struct side *s, const char *what)
{
	if (s->failed)
		return;
	s->failed = true;
	snprintf(s->err, sizeof s->err, "%s: %s", what, what[0] == 'o' ? "out of memory" : sqlite3_errmsg(s->db));
}

/* The row of key (a, b), added when new; NULL when out of memory. */
static struct acc *acc_of(struct accs *l, uint64_t a, uint64_t b, bool *added)
{
	uint64_t v;
	*added = false;
	if (ss_hmap_get(&l->index, a, b, &v))
		return &l->v[v];
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 32;
		struct acc *nv = realloc(l->v, cap * sizeof *nv);
		if (!nv)
			return NULL;
		l->v = nv;
		l->cap = cap;
	}
	if (ss_hmap_put(&l->index, a, b, l->n) != 0)
		return NULL;
	memset(&l->v[l->n], 0, sizeof l->v[l->n]);
	*added = true;
	return &l->v[l->n++];
}

static struct acc *loc_acc(struct side *s, int64_t location_id)
{
	bool added;
	struct acc *a = acc_of(&s->locs, (uint64_t)location_id, 0, &added);
	if (!a)
		side_fail(s, "out of memory");
	else if (added)
		a->location_id = location_id;
	return a;
}

static struct acc *func_acc(struct side *s, const struct ss_stack_frame *f)
{
	bool added;
	struct acc *a = acc_of(&s->funcs, fnv(f->function, 1469598103934665603ull), fnv(f->function, 7), &added);
	if (!a) {
		side_fail(s, "out of memory");
		return NULL;
	}
	if (added) {
		a->function = dup_or_null(f->function);
		a->file = dup_or_null(f->file);
		a->line = f->line;
	}
	return a;
}

static void accs_free(struct accs *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].function);
		free(l->v[i].file);
		free(l->v[i].polls.v);
		free(l->v[i].wakes.v);
	}
	free(l->v);
	ss_hmap_free(&l->index);
}

static sqlite3_stmt *side_query(struct side *s, enum ss_read_query q, const char *what)
{
	sqlite3_stmt *st = ss_read_prepare(s->db, q);
	if (!st)
		side_fail(s, what);
	else
		ss_scope_bind(st, s->scope);
	return st;
}

static void side_done(struct side *s, sqlite3_stmt *st, int rc, const char *what)
{
	if (rc != SQLITE_DONE)
		side_fail(s, what);
	sqlite3_finalize(st);
}

/* ---- the passes ------------------------------------------------------------------- */

#define VOTES 16

struct votes {
	int64_t poll;
	size_t n;
	struct { size_t func; uint64_t count; } v[VOTES];
};

static void vote_close(struct side *s, struct votes *v)
{
	if (!v->poll || !v->n)
		return;
	size_t best = 0;
	for (size_t i = 1; i < v->n; i++)
		if (v->v[i].count > v->v[best].count)
			best = i;
	if (ss_hmap_put(&s->culprit_of, (uint64_t)v->poll, 0, v->v[best].func + 1) != 0)
		side_fail(s, "out of memory");
}

static void samples_pass(struct side *s)
{
	sqlite3_stmt *st = side_query(s, SS_Q_CMP_SAMPLES, "samples");
	if (!st)
		return;
	struct votes v = { 0 };
	int rc;
	while (!s->failed && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		s->cpu_total++;
		if (sqlite3_column_type(st, 0) == SQLITE_NULL)
			continue;
		int64_t poll = sqlite3_column_int64(st, 0);
		struct acc *l = loc_acc(s, sqlite3_column_int64(st, 2));
		if (!l)
			break;
		l->cpu++;
		if (poll != v.poll) {
			vote_close(s, &v);
			v.poll = poll;
			v.n = 0;
		}
		const struct ss_stack_frame *own =
			ss_callstacks_own_frame(s->stacks, sqlite3_column_int64(st, 1), s->frames, SS_STACK_MAX);
		if (!own || !own->function)
			continue;
		struct acc *f = func_acc(s, own);
		if (!f)
			break;
		f->cpu++;
		size_t fi = (size_t)(f - s->funcs.v), i = 0;
		while (i < v.n && v.v[i].func != fi)
			i++;
		if (i == v.n && v.n < VOTES) {
			v.v[i].func = fi;
			v.v[i].count = 0;
			v.n++;
		}
		if (i < v.n)
			v.v[i].count++;
	}
	vote_close(s, &v);
	if (s->failed)
		sqlite3_finalize(st);
	else
		side_done(s, st, rc, "samples");
}

static void polls_pass(struct side *s)
{
	sqlite3_stmt *st = side_query(s, SS_Q_SCAN_WORKERS, "workers");
	int rc = SQLITE_DONE;
	while (st && (rc = sqlite3_step(st)) == SQLITE_ROW)
		if (ss_hmap_put(&s->workers, (uint64_t)sqlite3_column_int64(st, 0), 0, 1) != 0) {
			side_fail(s, "out of memory");
			break;
		}
	if (st)
		side_done(s, st, s->failed ? SQLITE_DONE : rc, "workers");
	if (s->failed)
		return;
	st = side_query(s, SS_Q_SCAN_POLLS, "polls");
	while (st && !s->failed && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		uint64_t v;
		int64_t dur = sqlite3_column_int64(st, 3);
		if (sqlite3_column_int64(st, 6) || !ss_hmap_get(&s->workers, (uint64_t)sqlite3_column_int64(st, 2), 0, &v))
			continue;
		uint64_t d = dur > 0 ? (uint64_t)dur : 0;
		struct acc *l = loc_acc(s, sqlite3_column_int64(st, 1));
		if (!l || hist_add(&l->polls, d) != 0) {
			side_fail(s, "out of memory");
			break;
		}
		s->polls++;
		if (ss_hmap_get(&s->culprit_of, (uint64_t)sqlite3_column_int64(st, 0), 0, &v) &&
		    hist_add(&s->funcs.v[v - 1].polls, d) != 0)
			side_fail(s, "out of memory");
	}
	if (st)
		side_done(s, st, s->failed ? SQLITE_DONE : rc, "polls");
}

static void wakes_pass(struct side *s)
{
	sqlite3_stmt *st = side_query(s, SS_Q_SCAN_DELAYS_JOIN, "wakes");
	int rc = SQLITE_DONE;
	while (st && !s->failed && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t delay = sqlite3_column_int64(st, 1);
		uint64_t d = delay > 0 ? (uint64_t)delay : 0, v;
		struct acc *l = loc_acc(s, sqlite3_column_int64(st, 0));
		if (!l || hist_add(&l->wakes, d) != 0) {
			side_fail(s, "out of memory");
			break;
		}
		s->wakes++;
		if (ss_hmap_get(&s->culprit_of, (uint64_t)sqlite3_column_int64(st, 3), 0, &v) &&
		    hist_add(&s->funcs.v[v - 1].wakes, d) != 0)
			side_fail(s, "out of memory");
	}
	if (st)
		side_done(s, st, s->failed ? SQLITE_DONE : rc, "wakes");
}

static void location_names(struct side *s)
{
	sqlite3_stmt *st = ss_read_prepare(s->db, SS_Q_SUM_LOCATION);
	if (!st) {
		side_fail(s, "locations");
		return;
	}
	for (size_t i = 0; i < s->locs.n && !s->failed; i++) {
		struct acc *l = &s->locs.v[i];
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, l->location_id);
		int rc = sqlite3_step(st);
		if (rc == SQLITE_ROW) {
			l->function = dup_or_null((const char *)sqlite3_column_text(st, 0));
			l->file = dup_or_null((const char *)sqlite3_column_text(st, 1));
			l->line = sqlite3_column_int64(st, 2);
		} else if (rc != SQLITE_DONE) {
			side_fail(s, "locations");
		}
	}
	sqlite3_finalize(st);
}

static int side_read(struct side *s, sqlite3 *db, const struct ss_scope *scope, size_t top)
{
	s->db = db;
	s->scope = scope;
	s->stacks = ss_callstacks_new(db);
	s->frames = malloc(SS_STACK_MAX * sizeof *s->frames);
	if (!s->stacks || !s->frames) {
		side_fail(s, s->stacks ? "out of memory" : "stacks");
		return -1;
	}
	samples_pass(s);
	if (!s->failed)
		polls_pass(s);
	if (!s->failed)
		wakes_pass(s);
	if (!s->failed)
		location_names(s);
	if (!s->failed) {
		s->analysis = ss_analysis_run(db, scope, top, s->err, sizeof s->err);
		s->failed = !s->analysis;
	}
	return s->failed ? -1 : 0;
}

static void side_free(struct side *s)
{
	accs_free(&s->locs);
	accs_free(&s->funcs);
	ss_hmap_free(&s->culprit_of);
	ss_hmap_free(&s->workers);
	ss_analysis_free(s->analysis);
	ss_callstacks_free(s->stacks);
	free(s->frames);
}

/* ---- matching ------------------------------------------------------------------------ */

/* Locations of one function and file at two lines, in either trace: those
 * are matched with their line. */
struct ambiguity {
	struct ss_hmap lines; /* (function, file) -> line + 1, or 0 when two lines were seen */
};

static uint64_t loc_hash(const char *function, const char *file)
{
	return fnv(file, fnv(function, 1469598103934665603ull) ^ 0xff);
}

static void ambiguity_add(struct ambiguity *am, const char *function, const char *file, int64_t line)
{
	uint64_t h = loc_hash(function, file), v;
	if (!ss_hmap_get(&am->lines, h, 0, &v))
		ss_hmap_put(&am->lines, h, 0, (uint64_t)line + 1);
	else if (v && v != (uint64_t)line + 1)
		ss_hmap_put(&am->lines, h, 0, 0);
}

/* The key a location is matched by. */
static void loc_key(const struct ambiguity *am, const char *function, const char *file, int64_t line, uint64_t *a,
		    uint64_t *b)
{
	uint64_t v = 1;
	*a = loc_hash(function, file);
	ss_hmap_get(&am->lines, *a, 0, &v);
	*b = v == 0 ? (uint64_t)line + 1 : 0;
	if (!function && !file)
		*a = 0; /* polls without a location */
}

static void figures(const struct side *s, struct acc *a, struct ss_cmp_figures *f)
{
	f->polls = a ? a->polls.n : 0;
	f->p50 = a ? ss_hist_quantile(&a->polls, 50) : -1;
	f->p99 = a ? ss_hist_quantile(&a->polls, 99) : -1;
	f->max = a && a->polls.n ? (double)a->polls.max : -1;
	f->cpu_samples = a ? a->cpu : 0;
	f->cpu_share = s->cpu_total ? (double)f->cpu_samples / (double)s->cpu_total : -1;
	f->wakes = a ? a->wakes.n : 0;
	f->wake_p99 = a ? ss_hist_quantile(&a->wakes, 99) : -1;
}

static struct ss_cmp_ratio ratio_of(bool has_a, double a, bool has_b, double b)
{
	if (!has_a && !has_b)
		return (struct ss_cmp_ratio){ SS_CMP_NONE, 0 };
	if (!has_a)
		return (struct ss_cmp_ratio){ SS_CMP_NEW, 0 };
	if (!has_b)
		return (struct ss_cmp_ratio){ SS_CMP_GONE, 0 };
	if (a <= 0)
		return b <= 0 ? (struct ss_cmp_ratio){ SS_CMP_RATIO, 1 } : (struct ss_cmp_ratio){ SS_CMP_NEW, 0 };
	return (struct ss_cmp_ratio){ SS_CMP_RATIO, b / a };
}

static void ratios(struct ss_cmp_row *r)
{
	const struct ss_cmp_figures *a = &r->a, *b = &r->b;
	bool pa = a->polls > 0, pb = b->polls > 0;
	r->ratio[SS_CMP_POLLS] = ratio_of(pa, (double)a->polls, pb, (double)b->polls);
	r->ratio[SS_CMP_P50] = ratio_of(pa, a->p50, pb, b->p50);
	r->ratio[SS_CMP_P99] = ratio_of(pa, a->p99, pb, b->p99);
	r->ratio[SS_CMP_MAX] = ratio_of(pa, a->max, pb, b->max);
	r->ratio[SS_CMP_CPU_SHARE] = ratio_of(a->cpu_samples > 0, a->cpu_share, b->cpu_samples > 0, b->cpu_share);
	r->ratio[SS_CMP_WAKE_P99] = ratio_of(a->wakes > 0, a->wake_p99, b->wakes > 0, b->wake_p99);
	r->change = 0;
	for (int i = 0; i < SS_CMP_METRICS; i++) {
		double c = 0;
		if (r->ratio[i].change == SS_CMP_NEW || r->ratio[i].change == SS_CMP_GONE)
			c = 1e9;
		else if (r->ratio[i].change == SS_CMP_RATIO)
			c = r->ratio[i].ratio > 0 ? fabs(log(r->ratio[i].ratio)) : 1e9;
		if (c > r->change)
			r->change = c;
	}
}

static int by_change(const void *pa, const void *pb)
{
	const struct ss_cmp_row *a = pa, *b = pb;
	if (a->change != b->change)
		return a->change > b->change ? -1 : 1;
	uint64_t na = a->a.polls + a->b.polls + a->a.cpu_samples + a->b.cpu_samples;
	uint64_t nb = b->a.polls + b->b.polls + b->a.cpu_samples + b->b.cpu_samples;
	if (na != nb)
		return na > nb ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* The rows of both traces' accs, matched; locations when is_loc. */
static int match_rows(struct side *sa, struct side *sb, bool is_loc, const struct ambiguity *am,
		      struct ss_cmp_row **out, size_t *n_out)
{
	struct side *sides[2] = { sa, sb };
	size_t cap = (is_loc ? sa->locs.n + sb->locs.n : sa->funcs.n + sb->funcs.n) + 1;
	struct ss_cmp_row *rows = calloc(cap, sizeof *rows);
	struct acc **pair = calloc(2 * cap, sizeof *pair);
	struct ss_hmap index = { 0 };
	size_t n = 0;
	int rc = -1;
	if (!rows || !pair)
		goto out;
	for (int k = 0; k < 2; k++) {
		struct accs *l = is_loc ? &sides[k]->locs : &sides[k]->funcs;
		for (size_t i = 0; i < l->n; i++) {
			struct acc *a = &l->v[i];
			uint64_t ka, kb, v;
			if (is_loc)
				loc_key(am, a->function, a->file, a->line, &ka, &kb);
			else
				ka = fnv(a->function, 1469598103934665603ull), kb = fnv(a->function, 7);
			if (!ss_hmap_get(&index, ka, kb, &v)) {
				v = n++;
				if (ss_hmap_put(&index, ka, kb, v) != 0)
					goto out;
			}
			if (!pair[2 * v + k])
				pair[2 * v + k] = a;
		}
	}
	for (size_t i = 0; i < n; i++) {
		struct ss_cmp_row *r = &rows[i];
		struct acc *a = pair[2 * i], *b = pair[2 * i + 1], *show = b ? b : a;
		figures(sa, a, &r->a);
		figures(sb, b, &r->b);
		r->function = dup_or_null(show->function);
		r->file = dup_or_null(show->file);
		r->line = show->line;
		char name[768];
		if (!is_loc)
			snprintf(name, sizeof name, "%.700s", show->function ? show->function : "?");
		else if (!show->function && !show->file)
			snprintf(name, sizeof name, "(polls without a location)");
		else
			snprintf(name, sizeof name, "%.400s (%.300s:%lld)", show->function ? show->function : "?",
				 show->file ? show->file : "?", (long long)show->line);
		r->name = strdup(name);
		if (!r->name)
			goto out;
		ratios(r);
	}
	qsort(rows, n, sizeof *rows, by_change);
	rc = 0;
out:
	if (rc != 0 && rows) {
		for (size_t i = 0; i < n; i++) {
			free(rows[i].name);
			free(rows[i].function);
			free(rows[i].file);
		}
		free(rows);
		rows = NULL;
		n = 0;
	}
	free(pair);
	ss_hmap_free(&index);
	*out = rows;
	*n_out = n;
	return rc;
}

static double share0(double s)
{
	return s > 0 ? s : 0;
}

struct move {
	size_t index;
	double delta;
	const char *name;
};

static int by_move(const void *pa, const void *pb)
{
	const struct move *a = pa, *b = pb;
	if (fabs(a->delta) != fabs(b->delta))
		return fabs(a->delta) > fabs(b->delta) ? -1 : 1;
	return strcmp(a->name, b->name);
}

static int moves(struct ss_comparison *c)
{
	struct move *m = calloc(c->n_functions + 1, sizeof *m);
	c->moves = calloc(c->n_functions + 1, sizeof *c->moves);
	if (!m || !c->moves) {
		free(m);
		return -1;
	}
	size_t n = 0;
	for (size_t i = 0; i < c->n_functions; i++) {
		const struct ss_cmp_row *r = &c->functions[i];
		double d = share0(r->b.cpu_share) - share0(r->a.cpu_share);
		if (d != 0)
			m[n++] = (struct move){ i, d, r->name };
	}
	qsort(m, n, sizeof *m, by_move);
	for (size_t i = 0; i < n; i++)
		c->moves[i] = m[i].index;
	c->n_moves = n;
	free(m);
	return 0;
}

/* ---- findings -------------------------------------------------------------------- */

struct fkey {
	const struct ss_finding *worst;
	uint64_t a, b;          /* the key's hashes */
	const char *culprit;
	int count;
};

/* "function (file:line)" into its parts (function and file point into buf). */
static void parse_location(const char *text, char *buf, size_t len, const char **function, const char **file,
			   int64_t *line)
{
	*function = *file = NULL;
	*line = 0;
	if (!text)
		return;
	snprintf(buf, len, "%s", text);
	char *open = strstr(buf, " (");
	size_t l = strlen(buf);
	if (!open || l < 2 || buf[l - 1] != ')') {
		*function = buf;
		return;
	}
	*open = 0;
	buf[l - 1] = 0;
	char *colon = strrchr(open + 2, ':');
	if (colon) {
		*colon = 0;
		*line = strtoll(colon + 1, NULL, 10);
	}
	*function = strcmp(buf, "?") ? buf : NULL;
	*file = strcmp(open + 2, "?") ? open + 2 : NULL;
}

static const char *culprit_of(const struct ss_finding *f)
{
	bool own = f->n_frames && f->own_frame >= 0 && (size_t)f->own_frame < f->n_frames;
	return own ? f->frames[f->own_frame].function : NULL;
}

/* The findings of one analysis grouped by key. */
static struct fkey *group_findings(const struct ss_findings *fl, const struct ambiguity *am, size_t *n_out)
{
	struct fkey *keys = calloc(fl->n + 1, sizeof *keys);
	size_t n = 0;
	if (!keys)
		return NULL;
	for (size_t i = 0; i < fl->n; i++) {
		const struct ss_finding *f = &fl->v[i];
		char buf[1024];
		const char *function, *file;
		int64_t line;
		parse_location(f->location, buf, sizeof buf, &function, &file, &line);
		uint64_t la = 0, lb = 0;
		if (f->location)
			loc_key(am, function, file, line, &la, &lb);
		const char *culprit = culprit_of(f);
		uint64_t a = fnv(culprit, fnv(f->check, 1469598103934665603ull) ^ 0x1f) ^ la * 31;
		uint64_t b = lb * 1000003 + (f->location ? 1 : 0);
		size_t k = 0;
		while (k < n && (keys[k].a != a || keys[k].b != b))
			k++;
		if (k == n)
			keys[n++] = (struct fkey){ .worst = f, .a = a, .b = b, .culprit = culprit };
		keys[k].count++;
		if (f->severity > keys[k].worst->severity)
			keys[k].worst = f;
	}
	*n_out = n;
	return keys;
}

static int add_finding(struct ss_cmp_finding **list, size_t *n, const struct fkey *ka, const struct fkey *kb)
{
	struct ss_cmp_finding *nl = realloc(*list, (*n + 1) * sizeof *nl);
	if (!nl)
		return -1;
	*list = nl;
	const struct fkey *show = kb ? kb : ka;
	struct ss_cmp_finding *f = &nl[(*n)++];
	*f = (struct ss_cmp_finding){
		.check = show->worst->check,
		.severity_a = ka ? ka->worst->severity : SS_SEV_INFO,
		.severity_b = kb ? kb->worst->severity : SS_SEV_INFO,
		.count_a = ka ? ka->count : 0,
		.count_b = kb ? kb->count : 0,
		.culprit = dup_or_null(show->culprit),
		.location = dup_or_null(show->worst->location),
		.message = dup_or_null(show->worst->message),
	};
	return 0;
}

static int by_severity(const void *pa, const void *pb)
{
	const struct ss_cmp_finding *a = pa, *b = pb;
	enum ss_severity sa = a->count_b ? a->severity_b : a->severity_a;
	enum ss_severity sb = b->count_b ? b->severity_b : b->severity_a;
	if (sa != sb)
		return sa > sb ? -1 : 1;
	return strcmp(a->check, b->check);
}

static int match_findings(struct ss_comparison *c, const struct ss_findings *fa, const struct ss_findings *fb,
			  const struct ambiguity *am)
{
	size_t na, nb;
	struct fkey *ka = group_findings(fa, am, &na), *kb = group_findings(fb, am, &nb);
	int rc = -1;
	if (!ka || !kb)
		goto out;
	for (size_t i = 0; i < na; i++) {
		size_t j = 0;
		while (j < nb && (kb[j].a != ka[i].a || kb[j].b != ka[i].b))
			j++;
		if (j == nb) {
			if (add_finding(&c->only_a, &c->n_only_a, &ka[i], NULL) != 0)
				goto out;
		} else if (kb[j].worst->severity != ka[i].worst->severity) {
			if (add_finding(&c->changed, &c->n_changed, &ka[i], &kb[j]) != 0)
				goto out;
		}
	}
	for (size_t j = 0; j < nb; j++) {
		size_t i = 0;
		while (i < na && (kb[j].a != ka[i].a || kb[j].b != ka[i].b))
			i++;
		if (i == na && add_finding(&c->only_b, &c->n_only_b, NULL, &kb[j]) != 0)
			goto out;
	}
	if (c->n_only_a)
		qsort(c->only_a, c->n_only_a, sizeof *c->only_a, by_severity);
	if (c->n_only_b)
		qsort(c->only_b, c->n_only_b, sizeof *c->only_b, by_severity);
	if (c->n_changed)
		qsort(c->changed, c->n_changed, sizeof *c->changed, by_severity);
	rc = 0;
out:
	free(ka);
	free(kb);
	return rc;
}

/* ---- the comparison ---------------------------------------------------------------- */

static void side_info(struct ss_cmp_side *out, const struct side *s, const char *path)
{
	out->path = dup_or_null(path);
	out->recording_id = s->scope->recording_id;
	out->duration_ns = s->scope->end > s->scope->origin &&
				   !__builtin_sub_overflow(s->scope->end, s->scope->origin, &out->duration_ns)
			   ? out->duration_ns
			   : 0;
	out->polls = s->polls;
	out->cpu_samples = s->cpu_total;
	out->wakes = s->wakes;
	const struct ss_summary *sum = ss_analysis_summary(s->analysis);
	out->executable = sum->n_recordings ? dup_or_null(sum->recordings[0].executable) : NULL;
	out->recordings = sum->n_recordings;
	out->findings = ss_analysis_findings(s->analysis)->n;
}

static const char *base_name(const char *p)
{
	const char *s = p ? strrchr(p, '/') : NULL;
	return s ? s + 1 : p;
}

int ss_compare_run(sqlite3 *db_a, const struct ss_scope *sa, const char *path_a, sqlite3 *db_b,
		   const struct ss_scope *sb, const char *path_b, size_t top, struct ss_comparison *c, char *err,
		   size_t errlen)
{
	memset(c, 0, sizeof *c);
	struct side a = { 0 }, b = { 0 };
	struct ambiguity am = { 0 };
	int rc = -1;
	if (side_read(&a, db_a, sa, top) != 0) {
		snprintf(err, errlen, "A: %s", a.err);
		goto out;
	}
	if (side_read(&b, db_b, sb, top) != 0) {
		snprintf(err, errlen, "B: %s", b.err);
		goto out;
	}
	for (size_t i = 0; i < a.locs.n; i++)
		ambiguity_add(&am, a.locs.v[i].function, a.locs.v[i].file, a.locs.v[i].line);
	for (size_t i = 0; i < b.locs.n; i++)
		ambiguity_add(&am, b.locs.v[i].function, b.locs.v[i].file, b.locs.v[i].line);
	side_info(&c->a, &a, path_a);
	side_info(&c->b, &b, path_b);
	const char *ea = base_name(c->a.executable), *eb = base_name(c->b.executable);
	c->same_program = !ea || !eb || !strcmp(ea, eb);
	if (match_rows(&a, &b, true, &am, &c->locations, &c->n_locations) != 0 ||
	    match_rows(&a, &b, false, &am, &c->functions, &c->n_functions) != 0 || moves(c) != 0 ||
	    match_findings(c, ss_analysis_findings(a.analysis), ss_analysis_findings(b.analysis), &am) != 0) {
		snprintf(err, errlen, "compare: out of memory");
		goto out;
	}
	rc = 0;
out:
	if (rc != 0)
		ss_compare_free(c);
	ss_hmap_free(&am.lines);
	side_free(&a);
	side_free(&b);
	return rc;
}

static void rows_free(struct ss_cmp_row *r, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(r[i].name);
		free(r[i].function);
		free(r[i].file);
	}
	free(r);
}

static void findings_free(struct ss_cmp_finding *f, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(f[i].culprit);
		free(f[i].location);
		free(f[i].message);
	}
	free(f);
}

void ss_compare_free(struct ss_comparison *c)
{
	free(c->a.path);
	free(c->a.executable);
	free(c->b.path);
	free(c->b.executable);
	rows_free(c->locations, c->n_locations);
	rows_free(c->functions, c->n_functions);
	free(c->moves);
	findings_free(c->only_a, c->n_only_a);
	findings_free(c->only_b, c->n_only_b);
	findings_free(c->changed, c->n_changed);
	memset(c, 0, sizeof *c);
}

static bool rows_identical(const struct ss_cmp_row *r, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (int k = 0; k < SS_CMP_METRICS; k++)
			if (r[i].ratio[k].change == SS_CMP_NEW || r[i].ratio[k].change == SS_CMP_GONE ||
			    (r[i].ratio[k].change == SS_CMP_RATIO && r[i].ratio[k].ratio != 1))
				return false;
	return true;
}

bool ss_compare_identical(const struct ss_comparison *c)
{
	return rows_identical(c->locations, c->n_locations) && rows_identical(c->functions, c->n_functions) &&
	       !c->n_only_a && !c->n_only_b && !c->n_changed;
}

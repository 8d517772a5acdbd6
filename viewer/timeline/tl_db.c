/*
 * tl_db.c - opening an imported database for viewing: validation, the small
 * tables loaded at open, and the prepared range queries.
 *
 * The database is opened read-only (the viewer never changes a user's trace)
 * and immutable-safe: all statements are prepared once and reused per frame.
 * Their SQL is in viewer/store/sqlite/view_queries.c.
 */
#include "tl_db.h"

#include "examine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "view_queries.h"

static char *xstrdup(const char *s)
{
	return strdup(s ? s : "");
}

static bool file_has_magic(const char *path, const void *magic, size_t len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return false;
	char head[64];
	if (len > sizeof head)
		len = sizeof head;
	size_t n = fread(head, 1, len, f);
	fclose(f);
	return n == len && memcmp(head, magic, len) == 0;
}

bool tl_is_sqlite_file(const char *path)
{
	return file_has_magic(path, "SQLite format 3", 16);
}

/* The per-frame statements, prepared once per connection. */
static const enum ss_view_query stmt_query[TL_STMT_COUNT] = {
	[TL_POLL_PREV] = SS_V_POLL_PREV,     [TL_POLL_RANGE] = SS_V_POLL_RANGE,
	[TL_PARK_PREV] = SS_V_PARK_PREV,     [TL_PARK_RANGE] = SS_V_PARK_RANGE,
	[TL_CPU_PREV] = SS_V_CPU_PREV,       [TL_CPU_RANGE] = SS_V_CPU_RANGE,
	[TL_SAMPLE_RANGE] = SS_V_SAMPLE_RANGE, [TL_SUMMARY] = SS_V_SUMMARY,
};

static int64_t scalar(sqlite3 *db, enum ss_view_query q, int64_t bind1, int64_t dflt);

/* The levels of schema/summary_levels.h that this database has. Each is probed
 * through the primary key, so opening costs a dozen lookups, not a scan. */
static void load_levels(struct tl_db *d)
{
	d->n_levels = 0;
	for (int i = 0; i < SS_SUMMARY_LEVELS; i++) {
		if (!scalar(d->db, SS_V_HAS_LEVEL, (int64_t)ss_summary_level_ns[i], 0))
			continue;
		int parent = ss_summary_level_parent[i];
		d->levels[d->n_levels] = (int64_t)ss_summary_level_ns[i];
		d->level_parent[d->n_levels++] = parent >= 0 ? (int64_t)ss_summary_level_ns[parent] : 0;
	}
}

/* The first column of a one-row query, binding ?1 when the query has it. */
static int64_t scalar(sqlite3 *db, enum ss_view_query q, int64_t bind1, int64_t dflt)
{
	int64_t v = dflt;
	sqlite3_stmt *s = ss_view_prepare(db, q, 0);
	if (!s)
		return dflt;
	if (sqlite3_bind_parameter_count(s) >= 1)
		sqlite3_bind_int64(s, 1, bind1);
	if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL)
		v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return v;
}

static int add_group(struct tl_db *d, const char *title)
{
	for (size_t i = 0; i < d->n_groups; i++)
		if (strcmp(d->groups[i].title, title) == 0)
			return (int)i;
	struct tl_group *g = realloc(d->groups, (d->n_groups + 1) * sizeof *g);
	if (!g)
		return -1;
	d->groups = g;
	g[d->n_groups].title = xstrdup(title);
	return (int)d->n_groups++;
}

static struct tl_lane *add_lane(struct tl_db *d)
{
	struct tl_lane *l = realloc(d->lanes, (d->n_lanes + 1) * sizeof *l);
	if (!l)
		return NULL;
	d->lanes = l;
	l = &d->lanes[d->n_lanes++];
	memset(l, 0, sizeof *l);
	return l;
}

static int load_lanes(struct tl_db *d)
{
	/* The worker count of a group goes into its title. */
	sqlite3_stmt *s = ss_view_prepare(d->db, SS_V_WORKER_LANES, 0);
	if (!s)
		return -1;
	while (sqlite3_step(s) == SQLITE_ROW) {
		char title[256], label[160];
		const char *rt = (const char *)sqlite3_column_text(s, 3);
		int64_t nw = sqlite3_column_int64(s, 7);
		int64_t nrec = sqlite3_column_int64(s, 10);
		if (nrec > 1)
			snprintf(title, sizeof title, "%s (recording %lld) — %lld worker%s", rt,
				 (long long)sqlite3_column_int64(s, 2), (long long)nw, nw == 1 ? "" : "s");
		else
			snprintf(title, sizeof title, "%s — %lld worker%s", rt, (long long)nw,
				 nw == 1 ? "" : "s");
		const char *name = (const char *)sqlite3_column_text(s, 5);
		snprintf(label, sizeof label, "w%lld  %s", (long long)sqlite3_column_int64(s, 4),
			 name ? name : "");
		struct tl_lane *l = add_lane(d);
		if (!l)
			break;
		l->worker_id = sqlite3_column_int64(s, 0);
		l->thread_id = sqlite3_column_int64(s, 1);
		l->recording_id = sqlite3_column_int64(s, 2);
		l->group = add_group(d, title);
		l->label = xstrdup(label);
		snprintf(label, sizeof label, "tid %lld", (long long)sqlite3_column_int64(s, 6));
		l->detail = xstrdup(label);
		l->has_cpu = sqlite3_column_int(s, 8);
		l->has_samples = sqlite3_column_int(s, 9);
		l->parks_unswitched = sqlite3_column_int(s, 11);
	}
	sqlite3_finalize(s);

	/* Non-worker threads get a lane only when there is something to draw for
	 * them. */
	s = ss_view_prepare(d->db, SS_V_THREAD_LANES, 0);
	if (!s)
		return -1;
	while (sqlite3_step(s) == SQLITE_ROW) {
		bool cpu = sqlite3_column_int(s, 4), smp = sqlite3_column_int(s, 5);
		if (!smp)
			continue;
		char label[160];
		const char *name = (const char *)sqlite3_column_text(s, 2);
		struct tl_lane *l = add_lane(d);
		if (!l)
			break;
		l->thread_id = sqlite3_column_int64(s, 0);
		l->recording_id = sqlite3_column_int64(s, 1);
		l->group = add_group(d, "other threads (CPU samples)");
		l->label = xstrdup(name && *name ? name : "thread");
		snprintf(label, sizeof label, "tid %lld", (long long)sqlite3_column_int64(s, 3));
		l->detail = xstrdup(label);
		l->has_cpu = cpu;
		l->has_samples = smp;
	}
	sqlite3_finalize(s);
	return 0;
}

int tl_db_lane_of_worker(const struct tl_db *d, int64_t worker_id)
{
	for (size_t i = 0; i < d->n_lanes; i++)
		if (d->lanes[i].worker_id == worker_id && worker_id)
			return (int)i;
	return -1;
}

int tl_db_lane_of_thread(const struct tl_db *d, int64_t thread_id)
{
	for (size_t i = 0; i < d->n_lanes; i++)
		if (d->lanes[i].thread_id == thread_id)
			return (int)i;
	return -1;
}

static void load_stalls(struct tl_db *d)
{
	/* Stalls are polls past a threshold (10 ms by default): few, so they are
	 * kept in memory for the markers and the stalls panel. */
	sqlite3_stmt *s = ss_view_prepare(d->db, SS_V_STALLS, 0);
	if (!s)
		return;
	size_t cap = 0;
	while (sqlite3_step(s) == SQLITE_ROW) {
		if (d->n_stalls == cap) {
			cap = cap ? cap * 2 : 64;
			struct tl_stall *n = realloc(d->stalls, cap * sizeof *n);
			if (!n)
				break;
			d->stalls = n;
		}
		struct tl_stall *x = &d->stalls[d->n_stalls++];
		x->id = sqlite3_column_int64(s, 0);
		x->ts = tl_col_time(s, 1);
		x->dur = sqlite3_column_type(s, 2) == SQLITE_NULL || sqlite3_column_int64(s, 2) < 0 ? -1 : tl_col_dur(s, 2);
		x->poll_id = sqlite3_column_int64(s, 3);
		x->task_id = sqlite3_column_int64(s, 4);
		x->worker_id = sqlite3_column_int64(s, 5);
		x->thread_id = sqlite3_column_int64(s, 6);
		x->location_id = sqlite3_column_int64(s, 7);
		x->detected_ts = tl_col_time(s, 8);
		snprintf(x->kind, sizeof x->kind, "%s", (const char *)sqlite3_column_text(s, 9));
		if (x->dur < 0) /* never ended in the data: runs to the end */
			x->dur = d->last_ts > x->ts ? d->last_ts - x->ts : 0;
		if (x->dur > d->max_stall_dur)
			d->max_stall_dur = x->dur;
		x->lane = x->worker_id ? tl_db_lane_of_worker(d, x->worker_id) : -1;
		if (x->lane < 0 && x->thread_id)
			x->lane = tl_db_lane_of_thread(d, x->thread_id);
	}
	sqlite3_finalize(s);
}

static void load_locations(struct tl_db *d)
{
	sqlite3_stmt *s = ss_view_prepare(d->db, SS_V_LOCATIONS, 0);
	if (!s)
		return;
	size_t cap = 0;
	while (sqlite3_step(s) == SQLITE_ROW) {
		if (d->n_locations == cap) {
			cap = cap ? cap * 2 : 64;
			struct tl_location *n = realloc(d->locations, cap * sizeof *n);
			if (!n)
				break;
			d->locations = n;
		}
		const char *fn = (const char *)sqlite3_column_text(s, 1);
		const char *file = (const char *)sqlite3_column_text(s, 2);
		const char *base = strrchr(file, '/');
		int line = sqlite3_column_int(s, 3);
		char buf[512];
		struct tl_location *x = &d->locations[d->n_locations++];
		x->id = sqlite3_column_int64(s, 0);
		snprintf(buf, sizeof buf, "%s (%s:%d)", fn, base ? base + 1 : file, line);
		x->name = xstrdup(buf);
		snprintf(buf, sizeof buf, "%s:%d", fn, line);
		x->short_name = xstrdup(buf);
	}
	sqlite3_finalize(s);
}

const struct tl_location *tl_db_location(const struct tl_db *d, int64_t id)
{
	size_t lo = 0, hi = d->n_locations;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (d->locations[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < d->n_locations && d->locations[lo].id == id ? &d->locations[lo] : NULL;
}

static void load_losses(struct tl_db *d)
{
	sqlite3_stmt *s = ss_view_prepare(d->db, SS_V_LOSSES, 0);
	if (!s)
		return;
	size_t cap = 0;
	while (sqlite3_step(s) == SQLITE_ROW) {
		if (d->n_losses == cap) {
			cap = cap ? cap * 2 : 16;
			struct tl_loss *n = realloc(d->losses, cap * sizeof *n);
			if (!n)
				break;
			d->losses = n;
		}
		struct tl_loss *x = &d->losses[d->n_losses++];
		x->ts = tl_col_time(s, 0);
		x->dur = tl_col_dur(s, 1);
		x->count = sqlite3_column_int64(s, 2);
		x->recording_id = sqlite3_column_int64(s, 3);
		int64_t th = sqlite3_column_int64(s, 4);
		x->lane = th ? tl_db_lane_of_thread(d, th) : -1;
		snprintf(x->source, sizeof x->source, "%s", (const char *)sqlite3_column_text(s, 5));
		snprintf(x->reason, sizeof x->reason, "%s", (const char *)sqlite3_column_text(s, 6));
	}
	sqlite3_finalize(s);
}

struct tl_db *tl_db_open(const char *path, char *err, size_t errlen)
{
	struct tl_db *d = calloc(1, sizeof *d);
	if (!d) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	/* Read-only, and without the connection mutex (the viewer reads a
	 * connection from one thread at a time, and a frame reads tens of
	 * thousands of rows). */
	if (ss_store_open_readonly(path, true, &d->db, err, errlen) != 0)
		goto fail;
	tl_db_arm(d, TL_OPEN_BUDGET_S);
	sqlite3_exec(d->db, "PRAGMA cache_size=-32768", NULL, NULL, NULL);
	d->path = strdup(path);
	/* CLOCK_MONOTONIC times are non-negative; a damaged or hostile file's are
	 * kept where view arithmetic (margins, zoom, ticks) cannot overflow. */
	d->first_ts = scalar(d->db, SS_V_FIRST_TS, 0, 0);
	d->last_ts = scalar(d->db, SS_V_LAST_TS, 0, 0);
	d->first_ts = d->first_ts < 0 ? 0 : tl_clamp_time(d->first_ts);
	d->last_ts = tl_clamp_time(d->last_ts);
	if (d->last_ts <= d->first_ts)
		d->last_ts = d->first_ts + 1000000; /* empty trace: a 1 ms window */
	d->anchor_mono = tl_clamp_time(scalar(d->db, SS_V_ANCHOR_MONO, 0, 0));
	d->anchor_real = tl_clamp_time(scalar(d->db, SS_V_ANCHOR_REAL, 0, 0));
	d->have_summaries = scalar(d->db, SS_V_HAS_SUMMARIES, 0, 0) != 0;
	load_levels(d);
	for (int i = 0; i < TL_STMT_COUNT; i++) {
		if (!(d->st[i] = ss_view_prepare(d->db, stmt_query[i], 1))) {
			snprintf(err, errlen, "%s: %s", path, sqlite3_errmsg(d->db));
			goto fail;
		}
	}
	if (load_lanes(d) != 0) {
		snprintf(err, errlen, "%s: %s", path, sqlite3_errmsg(d->db));
		goto fail;
	}
	load_stalls(d);
	load_losses(d);
	load_locations(d);
	if (tl_db_expired(d)) {
		ss_store_error(d->db, &d->budget, err, errlen);
		goto fail;
	}
	return d;
fail:
	tl_db_close(d);
	return NULL;
}

bool tl_db_locations_alike(const struct tl_db *d)
{
	const char *first = NULL;
	size_t first_len = 0;
	for (size_t i = 0; i < d->n_stalls; i++) {
		const struct tl_location *l = tl_db_location(d, d->stalls[i].location_id);
		if (!l || !l->name)
			continue;
		const char *paren = strstr(l->name, " (");
		size_t len = paren ? (size_t)(paren - l->name) : strlen(l->name);
		if (!first) {
			first = l->name;
			first_len = len;
		} else if (len != first_len || strncmp(l->name, first, len) != 0) {
			return false;
		}
	}
	return first != NULL;
}

struct tl_db *tl_db_wrap(sqlite3 *db, const char *path)
{
	struct tl_db *d = calloc(1, sizeof *d);
	if (!d || !(d->path = strdup(path))) {
		free(d);
		sqlite3_close(db);
		return NULL;
	}
	d->db = db;
	return d;
}

void tl_db_close(struct tl_db *d)
{
	if (!d)
		return;
	ss_examiner_free(d->examiner);
	for (int i = 0; i < TL_STMT_COUNT; i++)
		sqlite3_finalize(d->st[i]);
	for (size_t i = 0; i < d->n_lanes; i++) {
		free(d->lanes[i].label);
		free(d->lanes[i].detail);
	}
	for (size_t i = 0; i < d->n_groups; i++)
		free(d->groups[i].title);
	for (size_t i = 0; i < d->n_locations; i++) {
		free(d->locations[i].name);
		free(d->locations[i].short_name);
	}
	free(d->locations);
	free(d->lanes);
	free(d->groups);
	free(d->stalls);
	free(d->losses);
	free(d->path);
	sqlite3_close(d->db);
	free(d);
}

struct ss_examiner *tl_db_examiner(struct tl_db *d)
{
	if (!d->examiner)
		d->examiner = ss_examiner_new(d->db);
	return d->examiner;
}

void tl_db_arm(struct tl_db *d, double seconds)
{
	ss_store_budget(d->db, &d->budget, seconds);
}

bool tl_db_expired(const struct tl_db *d)
{
	return d->budget.expired;
}

sqlite3_stmt *tl_db_stmt(struct tl_db *d, enum tl_stmt which)
{
	sqlite3_stmt *s = d->st[which];
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	return s;
}

void tl_db_reset_all(struct tl_db *d)
{
	for (int i = 0; i < TL_STMT_COUNT; i++)
		sqlite3_reset(d->st[i]);
}

int64_t tl_db_wall(const struct tl_db *d, int64_t ts)
{
	if (!d->anchor_real)
		return 0;
	return d->anchor_real + (ts - d->anchor_mono);
}

size_t tl_db_stall_lower_bound(const struct tl_db *d, int64_t t)
{
	size_t lo = 0, hi = d->n_stalls;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (d->stalls[mid].ts < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * tl_query.c - panel and tooltip text; see tl_query.h.
 *
 * These run on a click or a hover, not per frame, but still only through
 * indexed lookups: rowid (polls, tasks, threads), (thread_id, ts) for samples
 * and CPU intervals, (worker_id, ts) for polls and parks, stall_id for stall
 * captures. A poll's wake is found by a binary search on the wakes' rowid: the
 * importer stores them in the order of the polls they led to (schema).
 */
#include "tl_query.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "examine.h"
#include "tl_ticks.h"
#include "view_queries.h"

static sqlite3_stmt *prep(struct tl_db *db, enum ss_view_query q)
{
	tl_db_arm(db, TL_FRAME_BUDGET_S);
	return ss_view_prepare(db->db, q, 0);
}

/* The rowid of the wake that led to poll_id (0 when none): the first row with
 * a poll_id at or past a rowid, probed by binary search, since rows with a
 * poll_id are in poll_id order. About 25 indexed probes on 10 million wakes. */
int64_t tl_query_wake_of_poll(struct tl_db *db, int64_t poll_id)
{
	sqlite3_stmt *s = prep(db, SS_V_WAKE_NEXT_LINKED);
	sqlite3_stmt *m = prep(db, SS_V_WAKE_MAX_ROWID);
	int64_t lo = 1, hi = 0, found = 0;
	if (m && sqlite3_step(m) == SQLITE_ROW)
		hi = sqlite3_column_int64(m, 0);
	sqlite3_finalize(m);
	/* The smallest rowid whose next linked row has poll_id >= the target. */
	while (s && lo <= hi) {
		int64_t mid = lo + (hi - lo) / 2, rowid = 0, pid = INT64_MAX;
		sqlite3_reset(s);
		sqlite3_bind_int64(s, 1, mid);
		if (sqlite3_step(s) == SQLITE_ROW) {
			rowid = sqlite3_column_int64(s, 0);
			pid = sqlite3_column_int64(s, 1);
		}
		if (pid == poll_id) {
			found = rowid;
			break;
		}
		if (pid < poll_id)
			lo = (rowid > mid ? rowid : mid) + 1;
		else
			hi = mid - 1;
	}
	sqlite3_finalize(s);
	return found;
}

static void dur(char *b, size_t n, int64_t d)
{
	tl_format_duration(b, n, d, 0);
}

static void at(struct tl_db *db, char *b, size_t n, int64_t ts)
{
	char rel[48], wall[48];
	tl_format_duration(rel, sizeof rel, ts - db->first_ts, 1000);
	if (db->anchor_real) {
		tl_format_wall(wall, sizeof wall, tl_db_wall(db, ts), 1000);
		snprintf(b, n, "%.40s (%.40s)", rel, wall);
	} else {
		snprintf(b, n, "%s", rel);
	}
}

static const char *loc_name(struct tl_db *db, int64_t id)
{
	const struct tl_location *l = tl_db_location(db, id);
	return l ? l->name : "unknown location";
}

/* The analysis's judgement of a poll (examine.h); false when it cannot be read. */
static bool examine(struct tl_db *db, int64_t poll_id, struct ss_poll_detail *d)
{
	tl_db_arm(db, TL_FRAME_BUDGET_S);
	struct ss_examiner *x = tl_db_examiner(db);
	return x && ss_examiner_poll(x, poll_id, d) == 0;
}

/* The verdict, CPU split, culprit and system call lines of a poll for the panels. */
static void verdict_lines(const struct ss_poll_detail *d, GString *out)
{
	char say[800], split[128];
	ss_poll_say(d, say, sizeof say);
	ss_poll_split_text(d, split, sizeof split);
	g_string_append_printf(out, "verdict    %s\nCPU        %s\n", say, split);
	if (d->culprit[0]) {
		g_string_append_printf(out, "culprit    %s", d->culprit);
		if (d->culprit_file[0])
			g_string_append_printf(out, " (%s:%lld)", d->culprit_file, (long long)d->culprit_line);
		g_string_append_c(out, '\n');
	}
	if (d->syscall[0])
		g_string_append_printf(out, "syscall    %s\n", d->syscall);
}

struct poll_row {
	int64_t id, ts, dur, task_id, task, location_id, worker_id, thread_id, idx;
	int incomplete;
	char runtime[64], thread[64];
};

static bool poll_row(struct tl_db *db, int64_t poll_id, struct poll_row *p)
{
	sqlite3_stmt *s = prep(db, SS_V_POLL_ROW);
	if (!s)
		return false;
	sqlite3_bind_int64(s, 1, poll_id);
	bool ok = sqlite3_step(s) == SQLITE_ROW;
	if (ok) {
		p->id = sqlite3_column_int64(s, 0);
		p->ts = sqlite3_column_int64(s, 1);
		p->dur = sqlite3_column_int64(s, 2);
		p->task_id = sqlite3_column_int64(s, 3);
		p->task = sqlite3_column_int64(s, 4);
		p->location_id = sqlite3_column_int64(s, 5);
		p->worker_id = sqlite3_column_int64(s, 6);
		p->thread_id = sqlite3_column_int64(s, 7);
		p->idx = sqlite3_column_int64(s, 8);
		p->incomplete = sqlite3_column_int(s, 9);
		snprintf(p->runtime, sizeof p->runtime, "%s", (const char *)sqlite3_column_text(s, 10));
		snprintf(p->thread, sizeof p->thread, "%s", (const char *)sqlite3_column_text(s, 11));
	}
	sqlite3_finalize(s);
	return ok;
}

/* The state the thread was in at ts (from cpu_intervals), or NULL. */
static const char *state_at(struct tl_db *db, int64_t thread_id, int64_t ts, char *buf, size_t n)
{
	sqlite3_stmt *s = prep(db, SS_V_STATE_AT);
	if (!s)
		return NULL;
	sqlite3_bind_int64(s, 1, thread_id);
	sqlite3_bind_int64(s, 2, ts);
	const char *r = NULL;
	if (sqlite3_step(s) == SQLITE_ROW) {
		snprintf(buf, n, "%s", (const char *)sqlite3_column_text(s, 0));
		r = buf;
	}
	sqlite3_finalize(s);
	return r;
}

static int64_t samples_in(struct tl_db *db, int64_t thread_id, int64_t t0, int64_t t1)
{
	sqlite3_stmt *s = prep(db, SS_V_SAMPLE_COUNT);
	if (!s)
		return 0;
	sqlite3_bind_int64(s, 1, thread_id);
	sqlite3_bind_int64(s, 2, t0);
	sqlite3_bind_int64(s, 3, t1);
	int64_t n = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
	sqlite3_finalize(s);
	return n;
}

void tl_query_poll_tooltip(struct tl_db *db, int64_t poll_id, uint32_t n, GString *out)
{
	struct poll_row p;
	if (!poll_row(db, poll_id, &p))
		return;
	char a[96], d[48], st[32];
	at(db, a, sizeof a, p.ts);
	dur(d, sizeof d, p.dur);
	if (n > 1)
		g_string_append_printf(out, "%u polls in this pixel; the longest:\n", n);
	g_string_append_printf(out, "task %lld — %s\nstart %s\nduration %s%s\n", (long long)p.task,
			       loc_name(db, p.location_id), a, d, p.incomplete ? " (incomplete: no end in the data)" : "");
	struct ss_poll_detail det;
	if (examine(db, poll_id, &det)) {
		char say[800];
		ss_poll_say(&det, say, sizeof say);
		g_string_append_printf(out, "%s\n", say);
	} else {
		/* Without the analysis's verdict, the state mid-poll at least. */
		const char *state = state_at(db, p.thread_id, p.ts + p.dur / 2, st, sizeof st);
		if (state)
			g_string_append_printf(out, "state mid-poll: %s\n", state);
	}
	g_string_append_printf(out, "samples inside: %lld", (long long)samples_in(db, p.thread_id, p.ts, p.ts + p.dur));
}

void tl_query_stack(struct tl_db *db, int64_t callsite_id, GString *out)
{
	sqlite3_stmt *s = prep(db, SS_V_STACK);
	if (!s)
		return;
	sqlite3_bind_int64(s, 1, callsite_id);
	while (sqlite3_step(s) == SQLITE_ROW) {
		const char *fn = (const char *)sqlite3_column_text(s, 1);
		const char *file = (const char *)sqlite3_column_text(s, 2);
		const char *map = (const char *)sqlite3_column_text(s, 4);
		const char *note = (const char *)sqlite3_column_text(s, 6);
		g_string_append_printf(out, "  #%-2d %s", sqlite3_column_int(s, 0), fn ? fn : "??");
		if (file)
			g_string_append_printf(out, " (%s:%d)", file, sqlite3_column_int(s, 3));
		else
			g_string_append_printf(out, " (%s+0x%llx%s%s)", map ? map : "?",
					       (unsigned long long)sqlite3_column_int64(s, 5), note ? ": " : "",
					       note ? note : "");
		g_string_append_c(out, '\n');
	}
	sqlite3_finalize(s);
}

void tl_query_poll_details(struct tl_db *db, int64_t poll_id, GString *out)
{
	struct poll_row p;
	if (!poll_row(db, poll_id, &p)) {
		g_string_append(out, "poll not found\n");
		return;
	}
	char a[96], d[48], e[96];
	at(db, a, sizeof a, p.ts);
	dur(d, sizeof d, p.dur);
	at(db, e, sizeof e, p.ts + p.dur);
	g_string_append_printf(out, "POLL %lld\n\ntask       %lld\nlocation   %s\nworker     %s w%lld (%s)\n"
			       "start      %s\nend        %s\nduration   %s%s\n",
			       (long long)p.id, (long long)p.task, loc_name(db, p.location_id), p.runtime,
			       (long long)p.idx, p.thread, a, e, d, p.incomplete ? " (incomplete)" : "");
	for (size_t i = 0; i < db->n_stalls; i++)
		if (db->stalls[i].poll_id == p.id)
			g_string_append_printf(out, "stall      yes (%s) — see the Stalls tab\n", db->stalls[i].kind);
	struct ss_poll_detail det;
	if (examine(db, p.id, &det))
		verdict_lines(&det, out);

	sqlite3_stmt *s = prep(db, SS_V_WAKE_ROW);
	if (s) {
		sqlite3_bind_int64(s, 1, tl_query_wake_of_poll(db, p.id));
		sqlite3_bind_int64(s, 2, p.id);
		if (sqlite3_step(s) == SQLITE_ROW) {
			char wa[96], wd[48] = "unknown";
			at(db, wa, sizeof wa, sqlite3_column_int64(s, 0));
			if (sqlite3_column_type(s, 1) != SQLITE_NULL)
				dur(wd, sizeof wd, sqlite3_column_int64(s, 1));
			g_string_append_printf(out, "\nWOKEN at %s by thread '%s'", wa, (const char *)sqlite3_column_text(s, 2));
			if (sqlite3_column_int64(s, 3) >= 0)
				g_string_append_printf(out, " (task %lld)", (long long)sqlite3_column_int64(s, 3));
			g_string_append_printf(out, "\nwake-to-poll delay %s\n", wd);
		} else {
			g_string_append(out, "\nno recorded wake led to this poll\n");
		}
		sqlite3_finalize(s);
	}

	int64_t ns = samples_in(db, p.thread_id, p.ts, p.ts + p.dur);
	g_string_append_printf(out, "\nSAMPLES inside: %lld\n", (long long)ns);
	s = prep(db, SS_V_POLL_TOP_STACKS);
	if (s) {
		sqlite3_bind_int64(s, 1, p.thread_id);
		sqlite3_bind_int64(s, 2, p.ts);
		sqlite3_bind_int64(s, 3, p.ts + p.dur);
		while (sqlite3_step(s) == SQLITE_ROW) {
			g_string_append_printf(out, "\n%lld sample%s with this stack:\n", (long long)sqlite3_column_int64(s, 1),
					       sqlite3_column_int64(s, 1) == 1 ? "" : "s");
			tl_query_stack(db, sqlite3_column_int64(s, 0), out);
		}
		sqlite3_finalize(s);
	}
}

void tl_query_stall_details(struct tl_db *db, const struct tl_stall *st, GString *out)
{
	char a[96], d[48];
	at(db, a, sizeof a, st->ts);
	dur(d, sizeof d, st->dur);
	int lane = st->lane;
	struct ss_poll_detail det;
	bool judged = st->poll_id && examine(db, st->poll_id, &det);
	g_string_append_printf(out, "STALL %lld\n\nlane       %s\n", (long long)st->id,
			       lane >= 0 ? db->lanes[lane].label : "?");
	if (judged)
		g_string_append_printf(out, "task       %lld\n", (long long)det.task);
	g_string_append_printf(out, "location   %s\nstart      %s\nduration   %s\nkind       %s\n",
			       loc_name(db, st->location_id), a, d, st->kind);
	if (judged)
		verdict_lines(&det, out);
	sqlite3_stmt *s = prep(db, SS_V_STALL_CAPTURES);
	if (!s)
		return;
	sqlite3_bind_int64(s, 1, st->id);
	int n = 0;
	while (sqlite3_step(s) == SQLITE_ROW) {
		char ca[96];
		at(db, ca, sizeof ca, sqlite3_column_int64(s, 0));
		g_string_append_printf(out, "\nCAPTURE %d at %s: %s", sqlite3_column_int(s, 4), ca,
				       (const char *)sqlite3_column_text(s, 1));
		const char *scname = (const char *)sqlite3_column_text(s, 6);
		if (sqlite3_column_type(s, 2) != SQLITE_NULL) {
			g_string_append_printf(out, " in syscall %d", sqlite3_column_int(s, 2));
			if (scname && *scname)
				g_string_append_printf(out, " (%s)", scname);
		}
		const char *reason = (const char *)sqlite3_column_text(s, 5);
		if (reason && *reason)
			g_string_append_printf(out, "\n  (%s)", reason);
		g_string_append_c(out, '\n');
		if (sqlite3_column_type(s, 3) != SQLITE_NULL)
			tl_query_stack(db, sqlite3_column_int64(s, 3), out);
		else
			g_string_append(out, "  no stack\n");
		n++;
	}
	if (!n)
		g_string_append(out, "\nno captures recorded\n");
	sqlite3_finalize(s);
}

void tl_query_task_details(struct tl_db *db, int64_t task_id, GString *out)
{
	sqlite3_stmt *s = prep(db, SS_V_TASK_ROW);
	if (!s)
		return;
	sqlite3_bind_int64(s, 1, task_id);
	if (sqlite3_step(s) != SQLITE_ROW) {
		g_string_append(out, "task not found\n");
		sqlite3_finalize(s);
		return;
	}
	char a[96];
	g_string_append_printf(out, "TASK %lld\n\nlocation   %s\n", (long long)sqlite3_column_int64(s, 0),
			       loc_name(db, sqlite3_column_int64(s, 1)));
	if (sqlite3_column_type(s, 2) != SQLITE_NULL)
		g_string_append_printf(out, "parent     task %lld\n", (long long)sqlite3_column_int64(s, 2));
	if (sqlite3_column_type(s, 3) != SQLITE_NULL) {
		at(db, a, sizeof a, tl_col_time(s, 3));
		g_string_append_printf(out, "spawned    %s", a);
		const char *th = (const char *)sqlite3_column_text(s, 5);
		if (th)
			g_string_append_printf(out, " on '%s'", th);
		g_string_append_c(out, '\n');
	} else {
		g_string_append(out, "spawned    before the data\n");
	}
	if (sqlite3_column_type(s, 4) != SQLITE_NULL) {
		at(db, a, sizeof a, tl_col_time(s, 4));
		g_string_append_printf(out, "ended      %s\n", a);
		if (sqlite3_column_type(s, 3) != SQLITE_NULL) {
			char d[48];
			dur(d, sizeof d, tl_clamp_dur(tl_col_time(s, 4) - tl_col_time(s, 3)));
			g_string_append_printf(out, "lifetime   %s\n", d);
		}
	} else {
		g_string_append(out, "ended      not in the data (alive at the end)\n");
	}
	g_string_append(out, "\nIts polls are outlined on the timeline.\n");
	sqlite3_finalize(s);
}

/* The coarsest full summary level, 0 when none (an older database). */
static int64_t coarsest_full_level(const struct tl_db *db)
{
	for (size_t i = db->n_levels; i-- > 0;)
		if (!db->level_parent[i])
			return db->levels[i];
	return 0;
}

void tl_query_worker_details(struct tl_db *db, int64_t worker_id, GString *out)
{
	sqlite3_stmt *s = prep(db, SS_V_WORKER_ROW);
	if (!s)
		return;
	sqlite3_bind_int64(s, 1, worker_id);
	if (sqlite3_step(s) != SQLITE_ROW) {
		g_string_append(out, "worker not found\n");
		sqlite3_finalize(s);
		return;
	}
	g_string_append_printf(out, "WORKER %s w%lld\n\nthread     '%s' (tid %lld)\n",
			       (const char *)sqlite3_column_text(s, 0), (long long)sqlite3_column_int64(s, 1),
			       (const char *)sqlite3_column_text(s, 2), (long long)sqlite3_column_int64(s, 3));
	char a[96];
	if (sqlite3_column_type(s, 4) != SQLITE_NULL) {
		at(db, a, sizeof a, tl_col_time(s, 4));
		g_string_append_printf(out, "began      %s\n", a);
	}
	if (sqlite3_column_type(s, 5) != SQLITE_NULL) {
		at(db, a, sizeof a, tl_col_time(s, 5));
		g_string_append_printf(out, "ended      %s\n", a);
	}
	sqlite3_finalize(s);

	size_t stalls = 0;
	for (size_t i = 0; i < db->n_stalls; i++)
		stalls += db->stalls[i].worker_id == worker_id;
	int64_t level = coarsest_full_level(db);
	s = level ? prep(db, SS_V_WORKER_TOTALS) : NULL;
	if (s) {
		sqlite3_bind_int64(s, 1, level);
		sqlite3_bind_int64(s, 2, worker_id);
		if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_type(s, 3) != SQLITE_NULL) {
			double span = (double)(db->last_ts - db->first_ts);
			char longest[48];
			dur(longest, sizeof longest, tl_col_dur(s, 4));
			g_string_append_printf(out, "\nOVER THE WHOLE TRACE\npolls      %lld, the longest %s\n"
					       "busy       %.1f%%\nparked     %.1f%%\noff-CPU    %.1f%%\n",
					       (long long)sqlite3_column_int64(s, 3), longest,
					       100.0 * (double)tl_col_dur(s, 0) / span, 100.0 * (double)tl_col_dur(s, 1) / span,
					       100.0 * (double)tl_col_dur(s, 2) / span);
		}
		sqlite3_finalize(s);
	}
	g_string_append_printf(out, "stalls     %zu%s\n", stalls, stalls ? " (the Stalls tab lists them)" : "");
}

/* Time of [t0, t1) covered by the rows of one SS_V_COVERED_* query. */
static int64_t covered(struct tl_db *db, enum ss_view_query q, int64_t key, int64_t t0, int64_t t1)
{
	sqlite3_stmt *s = prep(db, q);
	if (!s)
		return 0;
	sqlite3_bind_int64(s, 1, key);
	sqlite3_bind_int64(s, 2, t0);
	sqlite3_bind_int64(s, 3, t1);
	int64_t v = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
	sqlite3_finalize(s);
	return v;
}

void tl_query_range_summary(struct tl_db *db, int64_t t0, int64_t t1, GString *out)
{
	char a[96], b[96], d[48];
	at(db, a, sizeof a, t0);
	at(db, b, sizeof b, t1);
	dur(d, sizeof d, t1 - t0);
	g_string_append_printf(out, "RANGE %s\nfrom %s\nto   %s\n\n", d, a, b);
	/* Exact sums read every row in the range; past a few seconds the 10 ms
	 * summaries answer instead (bucket-aligned, so approximate at the edges). */
	bool approx = t1 - t0 > 2000000000 && db->have_summaries;
	g_string_append_printf(out, "%-16s %8s %8s %8s\n", "worker", "busy", "parked", "off-CPU");
	for (size_t i = 0; i < db->n_lanes; i++) {
		const struct tl_lane *l = &db->lanes[i];
		if (!l->worker_id)
			continue;
		int64_t busy = 0, parked = 0, off = 0;
		if (approx) {
			sqlite3_stmt *s = prep(db, SS_V_WORKER_RANGE_TOTALS);
			if (s) {
				sqlite3_bind_int64(s, 1, l->worker_id);
				sqlite3_bind_int64(s, 2, t0);
				sqlite3_bind_int64(s, 3, t1);
				if (sqlite3_step(s) == SQLITE_ROW) {
					busy = sqlite3_column_int64(s, 0);
					parked = sqlite3_column_int64(s, 1);
					off = sqlite3_column_int64(s, 2);
				}
				sqlite3_finalize(s);
			}
		} else {
			busy = covered(db, SS_V_COVERED_POLLS, l->worker_id, t0, t1);
			parked = covered(db, SS_V_COVERED_PARKS, l->worker_id, t0, t1);
			if (l->has_cpu)
				off = covered(db, SS_V_COVERED_OFFCPU, l->thread_id, t0, t1);
		}
		double span = (double)(t1 - t0);
		g_string_append_printf(out, "%-16.16s %7.1f%% %7.1f%% %7.1f%%\n", l->label, 100.0 * (double)busy / span,
				       100.0 * (double)parked / span, 100.0 * (double)off / span);
	}
	if (approx) {
		g_string_append(out, "\n(approximate: from 10 ms summaries)\nSelect at most 2 s for top locations.\n");
		return;
	}
	g_string_append(out, "\nTOP LOCATIONS (time in polls starting in the range)\n");
	sqlite3_stmt *s = prep(db, SS_V_LOCATION_TOTALS);
	if (!s)
		return;
	/* Summed per worker (each query uses the (worker_id, ts) index), then
	 * merged here. */
	GHashTable *acc = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
	for (size_t i = 0; i < db->n_lanes; i++) {
		if (!db->lanes[i].worker_id)
			continue;
		sqlite3_reset(s);
		sqlite3_bind_int64(s, 1, db->lanes[i].worker_id);
		sqlite3_bind_int64(s, 2, t0);
		sqlite3_bind_int64(s, 3, t1);
		while (sqlite3_step(s) == SQLITE_ROW) {
			int64_t loc = sqlite3_column_int64(s, 0);
			int64_t *v = g_hash_table_lookup(acc, &loc);
			if (!v) {
				int64_t *k = g_new(int64_t, 1);
				*k = loc;
				v = g_new0(int64_t, 2);
				g_hash_table_insert(acc, k, v);
			}
			v[0] += sqlite3_column_int64(s, 1);
			v[1] += sqlite3_column_int64(s, 2);
		}
	}
	sqlite3_finalize(s);
	for (int rank = 0; rank < 8; rank++) {
		GHashTableIter it;
		gpointer k, v;
		int64_t *best = NULL, best_loc = 0;
		g_hash_table_iter_init(&it, acc);
		while (g_hash_table_iter_next(&it, &k, &v))
			if (!best || ((int64_t *)v)[1] > best[1]) {
				best = v;
				best_loc = *(int64_t *)k;
			}
		if (!best)
			break;
		dur(d, sizeof d, best[1]);
		g_string_append_printf(out, "%9s %6lld polls  %s\n", d, (long long)best[0], loc_name(db, best_loc));
		g_hash_table_remove(acc, &best_loc);
	}
	g_hash_table_destroy(acc);
}

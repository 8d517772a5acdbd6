/*
 * cmd_report.c - `stallscope report trace.db [--json]`: the answers a p99 hunt
 * starts with, computed by SQL over an imported database (schema/stallscope.sql):
 * which polls held a worker longest and whether they were computing or blocked,
 * the stalls and their stacks, wake-to-poll delays, worker utilisation and
 * balance, queue depths, task leaks and data loss, then findings graded with the
 * thresholds operators use (dial9's: long poll 1/10/50 ms, scheduling delay 5/50
 * ms, global queue 100/1000, imbalance 3x, leak 2x).
 *
 * Everything is read-only; the report never changes the database. Figures
 * that need every poll, park or wake come from one pass over each table
 * (report_scan.c), not from a query per figure.
 */
#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "report_scan.h"
#include "store_open.h"

#define MS 1000000LL

struct report {
	sqlite3 *db;
	const char *path;
	struct ss_store_budget budget;
	bool failed;      /* a statement failed: the report is incomplete */
	char err[512];
	FILE *out;
	int json;
	int first;        /* JSON: no comma needed before the next member */
	int findings;     /* findings printed */
	char findbuf[8192];
	size_t findlen;
	struct report_scan scan;
};

void cmd_report_help(FILE *out)
{
	fputs("usage: stallscope report TRACE.db [--json] [--top N] [--timeout S]\n"
	      "\n"
	      "Summarises an imported trace (see 'stallscope import'): recordings, worker\n"
	      "utilisation, the longest polls with where they ran and whether they were on\n"
	      "CPU or blocked, stalls with their stacks, wake-to-poll delays, queue depths,\n"
	      "tasks and losses, then findings graded as WARNING or CRITICAL.\n"
	      "\n"
	      "  --json       the same content as one JSON object\n"
	      "  --top N      rows in each top list (default 10)\n"
	      "  --timeout S  stop reading after S seconds (default 300; 0 = no limit): a\n"
	      "               damaged or hostile database cannot keep the report running\n"
	      "\n"
	      "Exit status: 0 the report was printed, 1 bad arguments, a file that is not a\n"
	      "stallscope database, a database with no data, or a read that failed.\n", out);
}

/* ---- output helpers ------------------------------------------------------------ */

static void fmt_dur(char *buf, size_t len, double ns)
{
	if (ns < 0)
		snprintf(buf, len, "-");
	else if (ns < 1e3)
		snprintf(buf, len, "%.0f ns", ns);
	else if (ns < 1e6)
		snprintf(buf, len, "%.1f us", ns / 1e3);
	else if (ns < 1e9)
		snprintf(buf, len, "%.1f ms", ns / 1e6);
	else
		snprintf(buf, len, "%.2f s", ns / 1e9);
}

static void json_str(FILE *o, const char *s)
{
	fputc('"', o);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(o, "\\%c", c);
		else if (c < 0x20)
			fprintf(o, "\\u%04x", c);
		else
			fputc(c, o);
	}
	fputc('"', o);
}

static void j_sep(struct report *r)
{
	if (!r->first)
		fputc(',', r->out);
	r->first = 0;
}

static void j_key(struct report *r, const char *k)
{
	j_sep(r);
	json_str(r->out, k);
	fputc(':', r->out);
}

static void j_open(struct report *r, const char *k, char brace)
{
	if (k)
		j_key(r, k);
	else
		j_sep(r);
	fputc(brace, r->out);
	r->first = 1;
}

static void j_close(struct report *r, char brace)
{
	fputc(brace, r->out);
	r->first = 0;
}

static void j_num(struct report *r, const char *k, double v)
{
	j_key(r, k);
	if (isfinite(v) && v == floor(v) && fabs(v) < 9e15)
		fprintf(r->out, "%.0f", v);
	else if (isfinite(v))
		fprintf(r->out, "%.6g", v);
	else
		fputs("null", r->out);
}

static void j_text(struct report *r, const char *k, const char *v)
{
	j_key(r, k);
	if (v)
		json_str(r->out, v);
	else
		fputs("null", r->out);
}

__attribute__((format(printf, 3, 4)))
static void finding(struct report *r, const char *level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	int n = snprintf(r->findbuf + r->findlen, sizeof r->findbuf - r->findlen, "%s\t%s\n",
			 level, msg);
	if (n > 0 && (size_t)n < sizeof r->findbuf - r->findlen)
		r->findlen += (size_t)n;
	r->findings++;
}

/* ---- SQL helpers --------------------------------------------------------------- */

/* The first error is kept (and the rest of the report skips the statements
 * that would fail the same way); the command then exits non-zero. */
static void failed(struct report *r)
{
	if (!r->failed)
		ss_store_error(r->db, &r->budget, r->err, sizeof r->err);
	r->failed = true;
}

static sqlite3_stmt *prep(struct report *r, const char *sql)
{
	sqlite3_stmt *st = NULL;
	if (r->failed)
		return NULL;
	if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) != SQLITE_OK) {
		failed(r);
		return NULL;
	}
	return st;
}

/* sqlite3_finalize, noting a statement whose last step failed (a damaged
 * file, an interrupted hostile query). */
static void fin(struct report *r, sqlite3_stmt *st)
{
	int rc = sqlite3_finalize(st);
	if (st && rc != SQLITE_OK)
		failed(r);
}

/* One number from a query (0 when no row or NULL). */
static double scalar(struct report *r, const char *sql)
{
	sqlite3_stmt *st = prep(r, sql);
	double v = 0;
	if (st && sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_double(st, 0);
	fin(r, st);
	return v;
}

static const char *col_text(sqlite3_stmt *st, int i, const char *dflt)
{
	const unsigned char *t = sqlite3_column_text(st, i);
	return t ? (const char *)t : dflt;
}

/* "f <- g <- h" for the first frames of a callsite, naming unknown functions by
 * their file and offset so an unsymbolized trace still points somewhere. */
static void stack_text(struct report *r, int64_t callsite, char *buf, size_t len)
{
	buf[0] = 0;
	if (callsite <= 0)
		return;
	sqlite3_stmt *st = prep(r, "SELECT function, mapping, rel_pc FROM callsite_frames "
				   "WHERE callsite_id = ? ORDER BY depth LIMIT 6");
	if (!st)
		return;
	sqlite3_bind_int64(st, 1, callsite);
	size_t used = 0;
	while (sqlite3_step(st) == SQLITE_ROW && used + 8 < len) {
		char frame[256];
		const char *fn = col_text(st, 0, NULL);
		if (fn) {
			snprintf(frame, sizeof frame, "%s", fn);
		} else {
			const char *m = col_text(st, 1, "?");
			const char *base = strrchr(m, '/');
			snprintf(frame, sizeof frame, "%s+0x%llx", base ? base + 1 : m,
				 (unsigned long long)sqlite3_column_int64(st, 2));
		}
		int n = snprintf(buf + used, len - used, "%s%s", used ? " <- " : "", frame);
		if (n < 0 || (size_t)n >= len - used)
			break;
		used += (size_t)n;
	}
	fin(r, st);
}

/* ---- sections ------------------------------------------------------------------- */

static void section_recordings(struct report *r)
{
	sqlite3_stmt *st = prep(r,
		"SELECT r.id, r.executable, r.host, r.pid, r.anchor_real_ns - r.anchor_mono_ns, "
		"  r.first_ts, r.last_ts, "
		"  (SELECT count(*) FROM segments s WHERE s.recording_id = r.id), "
		"  (SELECT count(*) FROM segments s WHERE s.recording_id = r.id AND s.sealed), "
		"  (SELECT count(*) FROM segments s WHERE s.recording_id = r.id AND s.damage IS NOT NULL "
		"     AND s.damage <> 'truncated'), "
		"  (SELECT coalesce(sum(events), 0) FROM segments s WHERE s.recording_id = r.id), "
		"  (SELECT group_concat(value, '; ') FROM metadata m WHERE m.recording_id = r.id "
		"     AND m.key = 'sampler') "
		"FROM recordings r ORDER BY r.id");
	if (!st)
		return;
	if (r->json)
		j_open(r, "recordings", '[');
	else
		fputs("recordings\n", r->out);
	while (sqlite3_step(st) == SQLITE_ROW) {
		/* In doubles: a damaged or hostile file may hold any 64-bit values. */
		double off = sqlite3_column_double(st, 4), first = sqlite3_column_double(st, 5);
		double last = sqlite3_column_double(st, 6), span = last - first;
		double secs = (first + off) / 1e9;
		time_t wall = secs > -1e15 && secs < 1e15 ? (time_t)secs : 0;
		char when[64] = "?", dur[32];
		struct tm tm;
		if (first != 0 && wall && gmtime_r(&wall, &tm))
			strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
		fmt_dur(dur, sizeof dur, span);
		if (r->json) {
			j_open(r, NULL, '{');
			j_num(r, "id", (double)sqlite3_column_int64(st, 0));
			j_text(r, "executable", col_text(st, 1, NULL));
			j_text(r, "host", col_text(st, 2, NULL));
			j_num(r, "pid", (double)sqlite3_column_int64(st, 3));
			j_text(r, "start_utc", when);
			j_num(r, "duration_ns", span);
			j_num(r, "segments", sqlite3_column_double(st, 7));
			j_num(r, "sealed", sqlite3_column_double(st, 8));
			j_num(r, "damaged", sqlite3_column_double(st, 9));
			j_num(r, "events", sqlite3_column_double(st, 10));
			j_text(r, "sampler", col_text(st, 11, NULL));
			j_close(r, '}');
		} else {
			fprintf(r->out, "  #%lld %s (pid %lld) on %s, %s, %s\n",
				(long long)sqlite3_column_int64(st, 0), col_text(st, 1, "?"),
				(long long)sqlite3_column_int64(st, 3), col_text(st, 2, "?"), when, dur);
			fprintf(r->out, "      %lld segments (%lld sealed, %lld damaged), %lld events; "
				"sampler: %.60s%s\n",
				(long long)sqlite3_column_int64(st, 7), (long long)sqlite3_column_int64(st, 8),
				(long long)sqlite3_column_int64(st, 9), (long long)sqlite3_column_int64(st, 10),
				col_text(st, 11, "none"), strlen(col_text(st, 11, "")) > 60 ? "..." : "");
		}
		if (sqlite3_column_int64(st, 9) > 0)
			finding(r, "WARNING", "recording #%lld has %lld damaged segments: only their "
				"intact prefix was imported (see the segments table)",
				(long long)sqlite3_column_int64(st, 0), (long long)sqlite3_column_int64(st, 9));
	}
	fin(r, st);
	if (r->json)
		j_close(r, ']');
}

static void section_workers(struct report *r)
{
	sqlite3_stmt *st = prep(r,
		"SELECT w.id, coalesce(w.runtime, '?'), w.idx, coalesce(t.name, ''), w.recording_id "
		"FROM workers w LEFT JOIN threads t ON t.id = w.thread_id "
		"ORDER BY w.recording_id, w.runtime, w.idx, w.id");
	int several = scalar(r, "SELECT count(*) FROM recordings") > 1;
	if (!st)
		return;
	if (r->json)
		j_open(r, "workers", '[');
	else
		fprintf(r->out, "\nworkers\n  %-18s %8s %10s %10s %6s %12s\n", "worker", "polls", "busy",
			"parked", "util", "longest poll");
	double most = 0, least = -1;
	while (sqlite3_step(st) == SQLITE_ROW) {
		const struct rs_worker *wk = rs_worker(&r->scan, sqlite3_column_int64(st, 0));
		double polls = wk ? (double)wk->polls : 0, busy = wk ? (double)wk->busy : 0;
		double parked = wk ? (double)wk->parked : 0, longest = wk ? (double)wk->longest : 0;
		double util = busy + parked > 0 ? busy / (busy + parked) : 0;
		if (polls > most)
			most = polls;
		if (least < 0 || polls < least)
			least = polls;
		if (r->json) {
			j_open(r, NULL, '{');
			j_num(r, "recording", sqlite3_column_double(st, 4));
			j_text(r, "runtime", col_text(st, 1, NULL));
			j_num(r, "index", sqlite3_column_double(st, 2));
			j_text(r, "thread", col_text(st, 3, NULL));
			j_num(r, "polls", polls);
			j_num(r, "busy_ns", busy);
			j_num(r, "parked_ns", parked);
			j_num(r, "utilisation", util);
			j_num(r, "longest_poll_ns", longest);
			j_close(r, '}');
		} else {
			char name[64], b[32], k[32], l[32];
			if (several)
				snprintf(name, sizeof name, "r%lld %.36s#%lld",
					 (long long)sqlite3_column_int64(st, 4), col_text(st, 1, "?"),
					 (long long)sqlite3_column_int64(st, 2));
			else
				snprintf(name, sizeof name, "%.40s#%lld", col_text(st, 1, "?"),
					 (long long)sqlite3_column_int64(st, 2));
			fmt_dur(b, sizeof b, busy);
			fmt_dur(k, sizeof k, parked);
			fmt_dur(l, sizeof l, longest);
			fprintf(r->out, "  %-18s %8.0f %10s %10s %5.1f%% %12s\n", name, polls, b, k,
				100 * util, l);
		}
	}
	fin(r, st);
	if (r->json)
		j_close(r, ']');
	if (least >= 0 && most >= 100 && most >= 3 * least)
		finding(r, "WARNING", "worker imbalance: one worker polled %.0f times, another %.0f "
			"(3x or more): work is not spread (stealing, affinity, a hot task)", most, least);
}

static void section_long_polls(struct report *r, int top)
{
	double n1 = (double)r->scan.over1ms, n10 = (double)r->scan.over10ms;
	double n50 = (double)r->scan.over50ms, total = (double)r->scan.polls;
	/* How much of the poll the thread spent on a CPU, from the switch records:
	 * the heart of "computing or blocked?". */
	char sql[2048];
	snprintf(sql, sizeof sql,
		"SELECT p.id, p.dur, coalesce(w.runtime, '?'), w.idx, t.task, "
		"  l.function, l.file, l.line, "
		"  (SELECT sum(min(c.ts + c.dur, p.ts + p.dur) - max(c.ts, p.ts)) FROM cpu_intervals c "
		"     WHERE c.thread_id = w.thread_id AND c.state = 'on-cpu' AND c.ts < p.ts + p.dur "
		"     AND c.ts + c.dur > p.ts), "
		"  (SELECT count(*) FROM cpu_intervals c WHERE c.thread_id = w.thread_id), "
		"  s.kind, (SELECT sc.callsite_id FROM stall_captures sc WHERE sc.stall_id = s.id "
		"     ORDER BY sc.idx LIMIT 1), "
		"  (SELECT sc.reason FROM stall_captures sc WHERE sc.stall_id = s.id "
		"     ORDER BY sc.idx LIMIT 1), p.incomplete, "
		"  (SELECT sum(min(c.ts + c.dur, p.ts + p.dur) - max(c.ts, p.ts)) FROM cpu_intervals c "
		"     WHERE c.thread_id = w.thread_id AND c.state = 'blocked' AND c.ts < p.ts + p.dur "
		"     AND c.ts + c.dur > p.ts), w.recording_id "
		"FROM polls p JOIN workers w ON w.id = p.worker_id "
		"LEFT JOIN tasks t ON t.id = p.task_id LEFT JOIN locations l ON l.id = p.location_id "
		"LEFT JOIN stalls s ON s.poll_id = p.id "
		"ORDER BY p.dur DESC LIMIT %d", top);
	sqlite3_stmt *st = prep(r, sql);
	if (r->json) {
		j_open(r, "long_polls", '{');
		j_num(r, "polls", total);
		j_num(r, "over_1ms", n1);
		j_num(r, "over_10ms", n10);
		j_num(r, "over_50ms", n50);
		j_open(r, "longest", '[');
	} else {
		fprintf(r->out, "\nlong polls: %.0f of %.0f polls over 1 ms, %.0f over 10 ms, %.0f over 50 ms\n",
			n1, total, n10, n50);
	}
	int row = 0;
	while (st && sqlite3_step(st) == SQLITE_ROW) {
		double dur = sqlite3_column_double(st, 1);
		int have_cpu = sqlite3_column_int64(st, 9) > 0;
		double on = sqlite3_column_double(st, 8), blocked = sqlite3_column_double(st, 14);
		double frac = dur > 0 ? on / dur : 0, bfrac = dur > 0 ? blocked / dur : 0;
		/* Preempted time is time the task wanted a CPU: it counts as computing. */
		const char *verdict = !have_cpu ? "on/off-CPU unknown (no switch records)"
				      : bfrac <= 0.2 ? (frac >= 0.8 ? "computing"
							: frac <= 0.2 ? "waiting for a CPU (runnable, not running)"
							: "computing, but preempted part of the time")
				      : bfrac >= 0.8 ? "blocked" : "partly blocked";
		char stack[1024], where[512], d[32];
		stack_text(r, sqlite3_column_int64(st, 11), stack, sizeof stack);
		snprintf(where, sizeof where, "%s (%s:%lld)", col_text(st, 5, "?"), col_text(st, 6, "?"),
			 (long long)sqlite3_column_int64(st, 7));
		fmt_dur(d, sizeof d, dur);
		if (r->json) {
			j_open(r, NULL, '{');
			j_num(r, "poll_id", sqlite3_column_double(st, 0));
			j_num(r, "recording", sqlite3_column_double(st, 15));
			j_num(r, "dur_ns", dur);
			j_text(r, "runtime", col_text(st, 2, NULL));
			j_num(r, "worker", sqlite3_column_double(st, 3));
			j_num(r, "task", sqlite3_column_double(st, 4));
			j_text(r, "location", where);
			if (have_cpu) {
				j_num(r, "on_cpu_fraction", frac);
				j_num(r, "blocked_fraction", bfrac);
			}
			j_text(r, "verdict", verdict);
			j_text(r, "stall_kind", col_text(st, 10, NULL));
			j_text(r, "stall_capture", col_text(st, 12, NULL));
			j_text(r, "stack", stack[0] ? stack : NULL);
			j_num(r, "incomplete", sqlite3_column_double(st, 13));
			j_close(r, '}');
		} else {
			if (!row)
				fputs("  longest polls:\n", r->out);
			fprintf(r->out, "  %9s r%lld %s#%lld task %lld at %s%s\n", d,
				(long long)sqlite3_column_int64(st, 15), col_text(st, 2, "?"),
				(long long)sqlite3_column_int64(st, 3), (long long)sqlite3_column_int64(st, 4),
				where, sqlite3_column_int64(st, 13) ? " (still running at the end)" : "");
			if (have_cpu)
				fprintf(r->out, "            on CPU %.0f%%, blocked %.0f%% of it: %s", 100 * frac,
					100 * bfrac, verdict);
			else
				fprintf(r->out, "            %s", verdict);
			/* The capture's own words: "blocked in read (state S); ...". */
			if (sqlite3_column_type(st, 12) != SQLITE_NULL) {
				const char *why = col_text(st, 12, "");
				fprintf(r->out, "; stall capture: %.*s", (int)strcspn(why, ";"), why);
			} else if (sqlite3_column_type(st, 10) != SQLITE_NULL) {
				fprintf(r->out, "; stall capture: %s", col_text(st, 10, "?"));
			}
			fputc('\n', r->out);
			if (stack[0])
				fprintf(r->out, "            %s\n", stack);
		}
		if (row == 0 && dur > 10 * MS)
			finding(r, dur > 50 * MS ? "CRITICAL" : "WARNING",
				"the longest poll held %s#%lld for %s at %s: %s%s%s", col_text(st, 2, "?"),
				(long long)sqlite3_column_int64(st, 3), d, where, verdict,
				stack[0] ? "; stack " : "", stack);
		row++;
	}
	fin(r, st);
	if (r->json) {
		j_close(r, ']');
		j_close(r, '}');
	}
	if (n50 > 0)
		finding(r, "CRITICAL", "%.0f polls over 50 ms: tasks hold workers without yielding", n50);
	else if (n10 > 0)
		finding(r, "WARNING", "%.0f polls over 10 ms", n10);
}

static void section_stalls(struct report *r, int top)
{
	sqlite3_stmt *st = prep(r, "SELECT coalesce(kind, 'unknown'), count(*), max(dur) FROM stalls "
				   "GROUP BY 1 ORDER BY 2 DESC");
	double total = scalar(r, "SELECT count(*) FROM stalls");
	if (r->json) {
		j_open(r, "stalls", '{');
		j_num(r, "count", total);
		j_open(r, "by_kind", '{');
	} else {
		fprintf(r->out, "\nstalls: %.0f polls passed the stall threshold", total);
	}
	while (st && sqlite3_step(st) == SQLITE_ROW) {
		if (r->json)
			j_num(r, col_text(st, 0, "unknown"), sqlite3_column_double(st, 1));
		else
			fprintf(r->out, "%s %lld %s", sqlite3_column_int64(st, 1) ? "," : "",
				(long long)sqlite3_column_int64(st, 1), col_text(st, 0, "?"));
	}
	fin(r, st);
	if (r->json) {
		j_close(r, '}');
		j_open(r, "by_location", '[');
	} else {
		fputc('\n', r->out);
	}
	char sql[1024];
	snprintf(sql, sizeof sql,
		"SELECT l.function, l.file, l.line, count(*), max(s.dur), "
		"  group_concat(DISTINCT coalesce(s.kind, 'unknown')), "
		"  (SELECT sc.callsite_id FROM stall_captures sc JOIN stalls s2 ON s2.id = sc.stall_id "
		"     WHERE s2.location_id IS s.location_id AND sc.callsite_id IS NOT NULL "
		"     ORDER BY s2.dur DESC, sc.idx LIMIT 1) "
		"FROM stalls s LEFT JOIN locations l ON l.id = s.location_id "
		"GROUP BY s.location_id ORDER BY count(*) DESC LIMIT %d", top);
	st = prep(r, sql);
	while (st && sqlite3_step(st) == SQLITE_ROW) {
		char where[512], stack[1024], d[32];
		snprintf(where, sizeof where, "%s (%s:%lld)", col_text(st, 0, "?"), col_text(st, 1, "?"),
			 (long long)sqlite3_column_int64(st, 2));
		stack_text(r, sqlite3_column_int64(st, 6), stack, sizeof stack);
		fmt_dur(d, sizeof d, sqlite3_column_double(st, 4));
		if (r->json) {
			j_open(r, NULL, '{');
			j_text(r, "location", where);
			j_num(r, "count", sqlite3_column_double(st, 3));
			j_num(r, "max_dur_ns", sqlite3_column_double(st, 4));
			j_text(r, "kinds", col_text(st, 5, NULL));
			j_text(r, "stack", stack[0] ? stack : NULL);
			j_close(r, '}');
		} else {
			fprintf(r->out, "  %5lld x  up to %9s  %-9s %s\n", (long long)sqlite3_column_int64(st, 3),
				d, col_text(st, 5, "?"), where);
			if (stack[0])
				fprintf(r->out, "            %s\n", stack);
		}
	}
	fin(r, st);
	if (r->json) {
		j_close(r, ']');
		j_close(r, '}');
	}
}

/* Worst p99 first. */
static int by_p99_desc(const void *a, const void *b)
{
	double x = ((const double *)a)[1], y = ((const double *)b)[1];
	return x < y ? 1 : x > y ? -1 : 0;
}

static void section_wakes(struct report *r, int top)
{
	struct report_scan *sc = &r->scan;
	double n = (double)sc->delays.n;
	double p50 = rs_quantile(&sc->delays, 50), p99 = rs_quantile(&sc->delays, 99);
	double mx = (double)sc->max_delay;
	char a[32], b[32], c[32];
	fmt_dur(a, sizeof a, p50);
	fmt_dur(b, sizeof b, p99);
	fmt_dur(c, sizeof c, n > 0 ? mx : -1);
	if (r->json) {
		j_open(r, "wake_to_poll", '{');
		j_num(r, "wakes", n);
		j_num(r, "p50_ns", p50);
		j_num(r, "p99_ns", p99);
		j_num(r, "max_ns", n > 0 ? mx : -1);
		j_open(r, "worst_locations", '[');
	} else {
		fprintf(r->out, "\nwake-to-poll delay: %.0f wakes led to a poll: p50 %s, p99 %s, max %s\n",
			n, a, b, c);
	}
	/* p99 per location of the polls the wakes led to, worst first (locations
	 * with at least 5 such wakes). */
	double (*worst)[2] = calloc(sc->n_locs ? sc->n_locs : 1, sizeof *worst);
	size_t nw = 0;
	for (size_t i = 0; worst && i < sc->n_locs; i++)
		if (sc->locs[i].h.n >= 5) {
			worst[nw][0] = (double)i;
			worst[nw++][1] = rs_quantile(&sc->locs[i].h, 99);
		}
	if (worst)
		qsort(worst, nw, sizeof *worst, by_p99_desc);
	sqlite3_stmt *st = prep(r, "SELECT function, file, line FROM locations WHERE id = ?1");
	for (size_t i = 0; st && i < nw && (int)i < (top < 5 ? top : 5); i++) {
		const struct rs_location *l = &sc->locs[(size_t)worst[i][0]];
		char where[512], d[32];
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, l->id);
		if (sqlite3_step(st) == SQLITE_ROW)
			snprintf(where, sizeof where, "%s (%s:%lld)", col_text(st, 0, "?"), col_text(st, 1, "?"),
				 (long long)sqlite3_column_int64(st, 2));
		else
			snprintf(where, sizeof where, "? (?:0)");
		fmt_dur(d, sizeof d, worst[i][1]);
		if (r->json) {
			j_open(r, NULL, '{');
			j_text(r, "location", where);
			j_num(r, "wakes", (double)l->h.n);
			j_num(r, "p99_ns", worst[i][1]);
			j_close(r, '}');
		} else {
			fprintf(r->out, "  p99 %9s over %5llu wakes  %s\n", d, (unsigned long long)l->h.n, where);
		}
	}
	fin(r, st);
	free(worst);
	if (r->json) {
		j_close(r, ']');
		j_close(r, '}');
	}
	if (p99 > 50 * MS)
		finding(r, "CRITICAL", "wake-to-poll p99 %s: woken tasks wait over 50 ms for a worker", b);
	else if (p99 > 5 * MS)
		finding(r, "WARNING", "wake-to-poll p99 %s: woken tasks wait over 5 ms for a worker", b);
}

static void section_queues_tasks_loss(struct report *r)
{
	double gmax = scalar(r, "SELECT max(global) FROM queue_depths");
	double lmax = scalar(r, "SELECT max(local) FROM queue_depths");
	double spawned = scalar(r, "SELECT count(*) FROM tasks WHERE spawn_ts IS NOT NULL");
	double ended = scalar(r, "SELECT count(*) FROM tasks WHERE end_ts IS NOT NULL");
	double alive = scalar(r, "SELECT count(*) FROM tasks WHERE end_ts IS NULL");
	/* Live tasks at the start of the data: spawned before it or early on. */
	double t0 = scalar(r, "SELECT min(first_ts) FROM recordings");
	double t1 = scalar(r, "SELECT max(last_ts) FROM recordings");
	char sql[512];
	snprintf(sql, sizeof sql, "SELECT count(*) FROM tasks WHERE (spawn_ts IS NULL OR spawn_ts <= %.0f) "
		 "AND (end_ts IS NULL OR end_ts > %.0f)", t0 + (t1 - t0) * 0.1, t0 + (t1 - t0) * 0.1);
	double alive_early = scalar(r, sql);
	double lost_ev = scalar(r, "SELECT coalesce(sum(count), 0) FROM loss WHERE source = 'events'");
	double lost_smp = scalar(r, "SELECT coalesce(sum(count), 0) FROM loss WHERE source = 'samples'");
	double dumps = scalar(r, "SELECT count(*) FROM task_dumps");
	if (r->json) {
		j_open(r, "queues", '{');
		j_num(r, "global_max", gmax);
		j_num(r, "local_max", lmax);
		j_close(r, '}');
		j_open(r, "tasks", '{');
		j_num(r, "spawned", spawned);
		j_num(r, "finished", ended);
		j_num(r, "alive_at_end", alive);
		j_num(r, "idle_at_end", (double)r->scan.idle_at_end);
		j_num(r, "alive_early", alive_early);
		j_num(r, "task_dumps", dumps);
		j_close(r, '}');
		j_open(r, "loss", '{');
		j_num(r, "events", lost_ev);
		j_num(r, "samples", lost_smp);
		j_close(r, '}');
	} else {
		fprintf(r->out, "\nqueues: global queue max %.0f, local queue max %.0f\n", gmax, lmax);
		fprintf(r->out, "tasks: %.0f spawned, %.0f finished, %.0f alive at the end (%llu of them idle; "
			"%.0f alive 10%% into the data), %.0f task dumps\n", spawned, ended, alive,
			(unsigned long long)r->scan.idle_at_end, alive_early, dumps);
		fprintf(r->out, "loss: %.0f events, %.0f samples\n", lost_ev, lost_smp);
	}
	if (gmax > 1000)
		finding(r, "CRITICAL", "global queue reached %.0f: work arrives faster than workers serve it", gmax);
	else if (gmax > 100)
		finding(r, "WARNING", "global queue reached %.0f", gmax);
	/* A leak is tasks left idle for good (polled, then never woken again), not
	 * tasks waiting in a run queue: those are queue build-up. */
	double idle = (double)r->scan.idle_at_end;
	if (idle > 2 * alive_early && idle >= 10)
		finding(r, "WARNING", "task leak? %.0f tasks idle at the end (polled, never woken again) "
			"against %.0f alive early on (see task_dumps for where idle tasks wait)", idle,
			alive_early);
	if (lost_ev > 0 || lost_smp > 0)
		finding(r, "WARNING", "data was lost: %.0f events, %.0f samples (see the loss table; "
			"regions are hatched in the viewer)", lost_ev, lost_smp);
}

int cmd_report(int argc, char **argv)
{
	const char *path = NULL;
	struct report r = {.out = stdout, .first = 1};
	int top = 10;
	double timeout = 300;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			r.json = 1;
		} else if (!strcmp(argv[i], "--top") && i + 1 < argc) {
			top = atoi(argv[++i]);
			if (top < 1 || top > 1000) {
				fprintf(stderr, "stallscope report: --top takes 1 to 1000\n");
				return SS_EXIT_USAGE;
			}
		} else if (!strcmp(argv[i], "--timeout") && i + 1 < argc) {
			char *end;
			timeout = strtod(argv[++i], &end);
			if (*end || !(timeout >= 0) || timeout > 1e7) {
				fprintf(stderr, "stallscope report: --timeout takes seconds (0 = no limit), not '%s'\n",
					argv[i]);
				return SS_EXIT_USAGE;
			}
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			cmd_report_help(stdout);
			return SS_EXIT_OK;
		} else if (argv[i][0] == '-' || path) {
			fprintf(stderr, "stallscope report: unexpected '%s'; see 'stallscope report --help'\n",
				argv[i]);
			return SS_EXIT_USAGE;
		} else {
			path = argv[i];
		}
	}
	if (!path) {
		fprintf(stderr, "stallscope report: no database given; see 'stallscope report --help'\n");
		return SS_EXIT_USAGE;
	}
	char err[1024];
	if (ss_store_open_readonly(path, true, &r.db, err, sizeof err) != 0) {
		fprintf(stderr, "stallscope report: %s\n", err);
		return SS_EXIT_USAGE;
	}
	r.path = path;
	/* A database someone sent may hold anything: every statement shares one
	 * time budget instead of running forever. */
	ss_store_budget(r.db, &r.budget, timeout);
	if (scalar(&r, "SELECT count(*) FROM recordings") < 1 || r.failed) {
		if (r.failed)
			fprintf(stderr, "stallscope report: %s: %s\n", path, r.err);
		else
			fprintf(stderr, "stallscope report: %s holds no data: no recording was imported into it "
				"(import segments with 'stallscope import DIR -o %s')\n", path, path);
		sqlite3_close(r.db);
		return SS_EXIT_USAGE;
	}
	if (r.json) {
		fputc('{', r.out);
		r.first = 1;
		j_text(&r, "database", path);
	} else {
		fprintf(r.out, "stallscope report: %s\n\n", path);
	}
	if (rs_scan(r.db, &r.scan, err, sizeof err) != 0) {
		if (r.budget.expired)
			ss_store_error(r.db, &r.budget, err, sizeof err);
		fprintf(stderr, "stallscope report: %s: %s\n", path, err);
		rs_free(&r.scan);
		sqlite3_close(r.db);
		return SS_EXIT_USAGE;
	}
	section_recordings(&r);
	section_workers(&r);
	section_long_polls(&r, top);
	section_stalls(&r, top);
	section_wakes(&r, top);
	section_queues_tasks_loss(&r);

	if (r.json) {
		j_open(&r, "findings", '[');
		for (char *line = strtok(r.findbuf, "\n"); line; line = strtok(NULL, "\n")) {
			char *tab = strchr(line, '\t');
			if (!tab)
				continue;
			*tab = 0;
			j_open(&r, NULL, '{');
			j_text(&r, "level", line);
			j_text(&r, "message", tab + 1);
			j_close(&r, '}');
		}
		j_close(&r, ']');
		fputs("}\n", r.out);
	} else {
		fputs("\nfindings\n", r.out);
		if (!r.findings)
			fputs("  nothing over the usual thresholds\n", r.out);
		for (char *line = strtok(r.findbuf, "\n"); line; line = strtok(NULL, "\n")) {
			char *tab = strchr(line, '\t');
			if (tab)
				*tab = 0;
			fprintf(r.out, "  %-8s %s\n", line, tab ? tab + 1 : "");
		}
	}
	rs_free(&r.scan);
	sqlite3_close(r.db);
	if (r.failed) {
		fprintf(stderr, "stallscope report: %s: %s; the report above is incomplete\n", path, r.err);
		return SS_EXIT_USAGE;
	}
	return SS_EXIT_OK;
}

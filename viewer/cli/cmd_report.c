/*
 * cmd_report.c - `stallscope report trace.db`: the answers a p99 hunt starts
 * with, as text or JSON. What it prints comes from viewer/analysis/ (the
 * summary and the findings, as data); this file parses the options and
 * presents them. Read-only: the report never changes the database.
 */
#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis.h"
#include "commands.h"
#include "json_out.h"
#include "store_open.h"
#include "sv_collect.h"
#include "sv_tree.h"
#include "thresholds.h"

void cmd_report_help(FILE *out)
{
	fputs("usage: stallscope report TRACE.db [--json] [--from T] [--to T] [--recording ID]\n"
	      "                         [--fail-on warning|critical] [--threshold NAME=LEVELS]...\n"
	      "                         [--top N] [--timeout S]\n"
	      "       stallscope report --list-thresholds\n"
	      "\n"
	      "Judges an imported trace (see 'stallscope import'): a summary (recordings, worker\n"
	      "utilisation, the longest polls and whether they were computing or blocked, stalls,\n"
	      "wake-to-poll delays, queues, tasks, losses), then findings, each with a severity\n"
	      "(critical, warning, info), the worker, task, spawn location, time and duration,\n"
	      "the code responsible (the first frame of the program's own code), the system call\n"
	      "of a block, and the SQL that returns its rows.\n"
	      "\n"
	      "Checks: long-poll, blocking-in-poll, sched-delay, cpu-starvation, worker-imbalance,\n"
	      "queue-buildup, task-leak, data-loss (see the README's 'Findings' section).\n"
	      "\n"
	      "  --json              the same content as one JSON object (top level 'summary' and\n"
	      "                      'findings'; the README documents the shape)\n"
	      "  --from T, --to T    only the window [T, T') of the trace, T as time since its first\n"
	      "                      event (the viewer's ruler): ns, or with a unit: 250us, 1.5ms, 2s\n"
	      "  --recording ID      only recording ID of a database holding several\n"
	      "  --fail-on LEVEL     exit 3 when a finding of LEVEL (warning or critical) or worse\n"
	      "                      exists: for CI\n"
	      "  --threshold NAME=W,C  or NAME=I,W,C: override a check's levels (info, warning,\n"
	      "                      critical; 'off' leaves one out); see --list-thresholds\n"
	      "  --list-thresholds   print the thresholds table and exit\n"
	      "  --top N             rows in each list of the summary, and info findings per check\n"
	      "                      (default 10)\n"
	      "  --timeout S         stop reading after S seconds (default 300; 0 = no limit): a\n"
	      "                      damaged or hostile database cannot keep the report running\n"
	      "\n"
	      "Exit status: 0 the report was printed; 1 bad arguments, a file that is not a\n"
	      "stallscope database, a database with no data, or a read that failed; 3 a finding\n"
	      "at the --fail-on level or worse.\n", out);
}

/* report --db (cmd_report_db.c) names the database by its URL, not by the
 * scratch file it pulled the recordings into. */
static const char *name_as;

void cmd_report_name_as(const char *name)
{
	name_as = name;
}

static const char *shown_name(const char *path)
{
	return name_as ? name_as : path;
}

static void list_thresholds(FILE *o)
{
	fprintf(o, "%-18s %-6s %8s %8s %8s  %s\n", "threshold", "unit", "info", "warning", "critical", "over it");
	for (int i = 0; i < SS_TH_COUNT; i++) {
		const struct ss_threshold *t = &ss_thresholds[i];
		char lv[3][16];
		const double v[3] = { t->info, t->warning, t->critical };
		for (int k = 0; k < 3; k++)
			if (v[k] == SS_TH_OFF)
				snprintf(lv[k], sizeof lv[k], "-");
			else
				snprintf(lv[k], sizeof lv[k], "%g", v[k]);
		fprintf(o, "%-18s %-6s %8s %8s %8s  %s\n", t->name, t->unit, lv[0], lv[1], lv[2], t->what);
	}
}

/* ---- text ----------------------------------------------------------------------- */

static const struct ss_sum_worker *sum_worker(const struct ss_summary *s, int64_t id)
{
	for (size_t i = 0; i < s->n_workers; i++)
		if (s->workers[i].id == id)
			return &s->workers[i];
	return NULL;
}

static void text_recordings(FILE *o, const struct ss_summary *s)
{
	fputs("recordings\n", o);
	for (size_t i = 0; i < s->n_recordings; i++) {
		const struct ss_sum_recording *r = &s->recordings[i];
		double secs = ((double)r->first_ts + (double)r->wall_offset) / 1e9;
		time_t wall = secs > -1e15 && secs < 1e15 ? (time_t)secs : 0;
		char when[64] = "?", dur[32];
		struct tm tm;
		if (r->first_ts != 0 && wall && gmtime_r(&wall, &tm))
			strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
		ss_fmt_dur(dur, sizeof dur, (double)r->last_ts - (double)r->first_ts);
		fprintf(o, "  #%lld %s (pid %lld) on %s, %s, %s\n", (long long)r->id,
			r->executable ? r->executable : "?", (long long)r->pid, r->host ? r->host : "?", when, dur);
		const char *sampler = r->sampler ? r->sampler : "none";
		fprintf(o, "      %lld segments (%lld sealed, %lld damaged), %lld events; sampler: %.60s%s\n",
			(long long)r->segments, (long long)r->sealed, (long long)r->damaged, (long long)r->events,
			sampler, strlen(sampler) > 60 ? "..." : "");
	}
}

static void worker_label(const struct ss_summary *s, const struct ss_sum_worker *w, char *buf, size_t len)
{
	if (s->several_recordings)
		snprintf(buf, len, "r%lld %.36s#%lld", (long long)w->recording_id, w->runtime ? w->runtime : "?",
			 (long long)w->index);
	else
		snprintf(buf, len, "%.40s#%lld", w->runtime ? w->runtime : "?", (long long)w->index);
}

static void text_workers(FILE *o, const struct ss_summary *s)
{
	fprintf(o, "\nworkers\n  %-18s %8s %10s %10s %6s %12s %10s %9s\n", "worker", "polls", "busy", "parked",
		"util", "longest poll", "on CPU", "no CPU");
	for (size_t i = 0; i < s->n_workers; i++) {
		const struct ss_sum_worker *w = &s->workers[i];
		const struct ss_scan_worker *k = w->scan;
		double busy = k ? (double)k->busy : 0, parked = k ? (double)k->parked : 0;
		char name[64], b[32], p[32], l[32] = "-", util[16] = "-", run[32] = "-", starve[16] = "-";
		worker_label(s, w, name, sizeof name);
		ss_fmt_dur(b, sizeof b, busy);
		ss_fmt_dur(p, sizeof p, parked);
		if (k && k->polls)
			ss_fmt_dur(l, sizeof l, (double)k->longest);
		/* A thread the program never marked polls on (a recorded unmodified
		 * program's threads) has no utilisation to speak of: a 0% there would
		 * read as idle while its on-CPU time says it computed. */
		if (k && k->polls && busy + parked > 0)
			snprintf(util, sizeof util, "%.1f%%", 100 * busy / (busy + parked));
		if (k && k->has_cpu)
			ss_fmt_dur(run, sizeof run, (double)k->on_cpu);
		if (k && k->has_cpu && k->on_cpu + k->preempted > 0)
			snprintf(starve, sizeof starve, "%.1f%%",
				 100.0 * (double)k->preempted / (double)(k->on_cpu + k->preempted));
		fprintf(o, "  %-18s %8llu %10s %10s %6s %12s %10s %9s\n", name,
			(unsigned long long)(k ? k->polls : 0), b, p, util, l, run, starve);
	}
	fputs("  (on CPU: time the thread ran, from CPU sampling's switches; no CPU: share of the time a worker wanted\n"
	      "   a CPU that it was runnable but not running; util: busy / (busy + parked), for workers with polls)\n", o);
}

/* Where the scope's CPU time went: its CPU samples' profile, functions by
 * their own time (perf report's first table). */
struct cpu_hot {
	struct sv_profile prof;
	struct sv_tree tree;
	struct sv_sym_cost *costs;
	size_t n;
};

static int cpu_hot_read(sqlite3 *db, const struct ss_scope *scope, struct cpu_hot *h, char *err, size_t len)
{
	memset(h, 0, sizeof *h);
	struct sv_scope sc = { scope->recording_id ? SV_SCOPE_RECORDING : SV_SCOPE_TRACE, scope->recording_id, 0, 0 };
	if (scope->windowed) {
		/* Open ends at the data's ends (INT64_MIN / MAX are no times). */
		sc.t0 = scope->from == INT64_MIN ? scope->origin : scope->from;
		sc.t1 = scope->to == INT64_MAX ? scope->end + 1 : scope->to;
	}
	const struct sv_collect_options co = { .kind = SV_KIND_CPU };
	if (sv_collect(db, NULL, &sc, &co, &h->prof, NULL, err, len) != 0)
		return -1;
	if (h->prof.failed || sv_tree_build(&h->tree, &h->prof, SV_GROUP_FUNCTION, SV_TOP_DOWN, SV_NONE) != 0) {
		snprintf(err, len, "CPU profile: out of memory");
		return -1;
	}
	h->n = sv_tree_costs(&h->tree, &h->costs);
	if (h->tree.failed) {
		snprintf(err, len, "CPU profile: out of memory");
		return -1;
	}
	return 0;
}

static void cpu_hot_free(struct cpu_hot *h)
{
	free(h->costs);
	sv_tree_free(&h->tree);
	sv_profile_free(&h->prof);
}

static double share(int64_t part, int64_t whole)
{
	return whole > 0 ? 100.0 * (double)part / (double)whole : 0;
}

static void text_cpu(FILE *o, const struct cpu_hot *h, size_t top)
{
	if (!h->prof.total_count) {
		fputs("\nCPU: no CPU samples in scope (recorded without CPU sampling, or none in the window)\n", o);
		return;
	}
	char w[32];
	ss_fmt_dur(w, sizeof w, (double)h->prof.total_weight);
	fprintf(o, "\nCPU: %lld samples, %s of CPU time; the functions with the most of it\n",
		(long long)h->prof.total_count, w);
	fprintf(o, "  %17s  %17s  %s\n", "self", "total", "function");
	for (size_t i = 0; i < h->n && i < top; i++) {
		const struct sv_sym_cost *c = &h->costs[i];
		char self[32], total[32], name[256], where[160];
		ss_fmt_dur(self, sizeof self, (double)c->self);
		ss_fmt_dur(total, sizeof total, (double)c->total);
		sv_sym_label(&h->tree, c->sym, name, sizeof name);
		sv_sym_where(&h->tree, c->sym, where, sizeof where);
		fprintf(o, "  %10s %5.1f%%  %10s %5.1f%%  %s%s%s%s\n", self, share(c->self, h->prof.total_weight), total,
			share(c->total, h->prof.total_weight), name, where[0] ? " (" : "", where, where[0] ? ")" : "");
	}
	fputs("  (self: samples with the function at the leaf; total: samples with it anywhere in the stack)\n", o);
}

static void json_cpu(struct ss_json *j, const struct cpu_hot *h, size_t top)
{
	ss_json_open(j, "cpu_profile", '{');
	ss_json_int(j, "samples", h->prof.total_count);
	ss_json_int(j, "cpu_ns", h->prof.total_weight);
	ss_json_open(j, "functions", '[');
	for (size_t i = 0; i < h->n && i < top; i++) {
		const struct sv_sym_cost *c = &h->costs[i];
		char name[256], where[160];
		sv_sym_label(&h->tree, c->sym, name, sizeof name);
		sv_sym_where(&h->tree, c->sym, where, sizeof where);
		ss_json_open(j, NULL, '{');
		ss_json_str(j, "function", name);
		ss_json_str(j, "where", where[0] ? where : NULL);
		ss_json_int(j, "self_ns", c->self);
		ss_json_int(j, "total_ns", c->total);
		ss_json_int(j, "self_samples", c->self_count);
		ss_json_close(j, '{');
	}
	ss_json_close(j, '[');
	ss_json_close(j, '{');
}

static const char *verdict_text(const struct ss_poll_detail *d)
{
	if (!d->has_cpu)
		return "on/off-CPU unknown (no switch records)";
	if (d->verdict == SS_VERDICT_WAITING_CPU)
		return "waiting for a CPU (runnable, not running)";
	return ss_verdict_name(d->verdict);
}

static void text_long_polls(FILE *o, const struct ss_summary *s, const struct ss_scan *sc)
{
	const struct ss_threshold *t = &ss_thresholds[SS_TH_LONG_POLL];
	fprintf(o, "\nlong polls: %llu of %llu polls over %g ms, %llu over %g ms, %llu over %g ms\n",
		(unsigned long long)sc->over[0], (unsigned long long)sc->polls, t->info,
		(unsigned long long)sc->over[1], t->warning, (unsigned long long)sc->over[2], t->critical);
	for (size_t i = 0; i < s->n_longest; i++) {
		const struct ss_poll_detail *d = &s->longest[i];
		char dur[32];
		ss_fmt_dur(dur, sizeof dur, (double)d->dur);
		if (!i)
			fputs("  longest polls:\n", o);
		fprintf(o, "  %9s r%lld %s task %lld at %s%s\n", dur, (long long)d->recording_id, d->worker,
			(long long)d->task, d->location, d->incomplete ? " (still running at the end)" : "");
		if (d->has_cpu)
			fprintf(o, "            on CPU %.0f%%, blocked %.0f%% of it: %s",
				d->dur > 0 ? 100.0 * (double)d->on_cpu / (double)d->dur : 0,
				d->dur > 0 ? 100.0 * (double)d->blocked / (double)d->dur : 0, verdict_text(d));
		else
			fprintf(o, "            %s", verdict_text(d));
		/* The capture's own words: "blocked in read (state S)". */
		if (d->capture[0])
			fprintf(o, "; stall capture: %s", d->capture);
		else if (d->stall_kind[0])
			fprintf(o, "; stall capture: %s", d->stall_kind);
		fputc('\n', o);
		if (s->longest_stacks[i])
			fprintf(o, "            %s\n", s->longest_stacks[i]);
	}
}

static void text_stalls(FILE *o, const struct ss_summary *s)
{
	fprintf(o, "\nstalls: %lld polls passed the stall threshold", (long long)s->stalls);
	for (size_t i = 0; i < s->n_stall_kinds; i++)
		fprintf(o, "%s %lld %s", s->stall_kinds[i].count ? "," : "", (long long)s->stall_kinds[i].count,
			s->stall_kinds[i].kind ? s->stall_kinds[i].kind : "?");
	fputc('\n', o);
	for (size_t i = 0; i < s->n_stall_locations; i++) {
		const struct ss_sum_stall_location *l = &s->stall_locations[i];
		char d[32];
		ss_fmt_dur(d, sizeof d, (double)l->max_dur);
		fprintf(o, "  %5lld x  up to %9s  %-9s %s\n", (long long)l->count, d, l->kinds ? l->kinds : "?",
			l->location ? l->location : "?");
		if (l->stack)
			fprintf(o, "            %s\n", l->stack);
	}
}

static void text_wakes(FILE *o, const struct ss_summary *s, const struct ss_scan *sc, size_t top)
{
	char a[32], b[32], c[32];
	ss_fmt_dur(a, sizeof a, s->wake_p50);
	ss_fmt_dur(b, sizeof b, s->wake_p99);
	ss_fmt_dur(c, sizeof c, s->wake_max);
	fprintf(o, "\nwake-to-poll delay: %llu wakes led to a poll: p50 %s, p99 %s, max %s\n",
		(unsigned long long)sc->delays.n, a, b, c);
	for (size_t i = 0; i < s->n_wake_locations && i < (top < 5 ? top : 5); i++) {
		const struct ss_sum_wake_location *w = &s->wake_locations[i];
		ss_fmt_dur(b, sizeof b, w->p99);
		fprintf(o, "  p99 %9s over %5llu wakes  %s\n", b, (unsigned long long)w->wakes,
			w->location ? w->location : "?");
	}
}

static void text_rest(FILE *o, const struct ss_summary *s)
{
	fprintf(o, "\nqueues: global queue max %lld, local queue max %lld\n", (long long)s->global_max,
		(long long)s->local_max);
	fprintf(o, "tasks: %lld spawned, %lld finished, %lld alive at the end (%llu of them idle; %lld alive 10%% "
		"into the data), %lld task dumps\n", (long long)s->spawned, (long long)s->finished,
		(long long)s->alive_at_end, (unsigned long long)s->idle_at_end, (long long)s->alive_early,
		(long long)s->task_dumps);
	fprintf(o, "loss: %lld events, %lld samples\n", (long long)s->lost_events, (long long)s->lost_samples);
}

static void text_findings(FILE *o, const struct ss_findings *fl, const struct ss_scope *sc)
{
	fputs("\nfindings\n", o);
	if (!fl->n)
		fputs("  nothing over the thresholds (see --list-thresholds)\n", o);
	for (size_t i = 0; i < fl->n; i++) {
		const struct ss_finding *f = &fl->v[i];
		char sev[16];
		snprintf(sev, sizeof sev, "%s", ss_severity_name(f->severity));
		for (char *p = sev; *p; p++)
			*p = (char)(*p - 'a' + 'A');
		fprintf(o, "  %-8s %-16s %s\n", sev, f->check, f->message);
		char where[256] = "";
		size_t used = 0;
		if (f->worker)
			used += (size_t)snprintf(where + used, sizeof where - used, "%s", f->worker);
		if (f->task_id && used < sizeof where)
			used += (size_t)snprintf(where + used, sizeof where - used, "%stask id %lld", used ? ", " : "",
						 (long long)f->task_id);
		if (f->ts >= 0 && used < sizeof where) {
			used += (size_t)snprintf(where + used, sizeof where - used, "%s%.3f s into the trace",
						 used ? ", " : "", (double)(f->ts - sc->origin) / 1e9);
			if (f->dur >= 0 && used < sizeof where) {
				char d[32];
				ss_fmt_dur(d, sizeof d, (double)f->dur);
				snprintf(where + used, sizeof where - used, ", for %s", d);
			}
		}
		if (where[0])
			fprintf(o, "  %-8s %-16s at %s\n", "", "", where);
		if (f->n_frames) {
			/* From the code responsible outwards, then what it called. */
			size_t own = f->own_frame >= 0 && (size_t)f->own_frame < f->n_frames ? (size_t)f->own_frame : 0;
			fprintf(o, "  %-8s %-16s code: ", "", "");
			for (size_t k = own; k < f->n_frames && k < own + 5; k++) {
				const struct ss_frame_text *fr = &f->frames[k];
				fprintf(o, "%s%s", k > own ? " <- " : "", fr->function ? fr->function : "?");
				if (k == own && fr->file)
					fprintf(o, " (%s:%lld)", fr->file, (long long)fr->line);
			}
			if (f->n_frames > own + 5)
				fputs(" <- ...", o);
			if (own > 0)
				fprintf(o, "; calling %s", f->frames[own - 1].function ? f->frames[own - 1].function : "?");
			fputc('\n', o);
		}
		if (f->sql && strlen(f->sql) <= 400)
			fprintf(o, "  %-8s %-16s sql: %s\n", "", "", f->sql);
		else if (f->sql)
			fprintf(o, "  %-8s %-16s sql: %lld rows, too long to print here: see --json\n", "", "",
				(long long)f->count);
	}
}

/* ---- JSON ----------------------------------------------------------------------- */

static void json_summary(struct ss_json *j, const struct ss_summary *s, const struct ss_scan *sc)
{
	ss_json_open(j, "summary", '{');
	ss_json_open(j, "recordings", '[');
	for (size_t i = 0; i < s->n_recordings; i++) {
		const struct ss_sum_recording *r = &s->recordings[i];
		double secs = ((double)r->first_ts + (double)r->wall_offset) / 1e9;
		time_t wall = secs > -1e15 && secs < 1e15 ? (time_t)secs : 0;
		char when[64] = "?";
		struct tm tm;
		if (r->first_ts != 0 && wall && gmtime_r(&wall, &tm))
			strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
		ss_json_open(j, NULL, '{');
		ss_json_int(j, "id", r->id);
		ss_json_str(j, "executable", r->executable);
		ss_json_str(j, "host", r->host);
		ss_json_int(j, "pid", r->pid);
		ss_json_str(j, "arch", r->arch);
		ss_json_str(j, "start_utc", when);
		ss_json_num(j, "first_ts", (double)r->first_ts);
		ss_json_num(j, "duration_ns", (double)r->last_ts - (double)r->first_ts);
		ss_json_int(j, "segments", r->segments);
		ss_json_int(j, "sealed", r->sealed);
		ss_json_int(j, "damaged", r->damaged);
		ss_json_int(j, "events", r->events);
		ss_json_str(j, "sampler", r->sampler);
		ss_json_close(j, '{');
	}
	ss_json_close(j, '[');
	ss_json_open(j, "workers", '[');
	for (size_t i = 0; i < s->n_workers; i++) {
		const struct ss_sum_worker *w = &s->workers[i];
		const struct ss_scan_worker *k = w->scan;
		double busy = k ? (double)k->busy : 0, parked = k ? (double)k->parked : 0;
		ss_json_open(j, NULL, '{');
		ss_json_int(j, "id", w->id);
		ss_json_int(j, "recording", w->recording_id);
		ss_json_str(j, "runtime", w->runtime);
		ss_json_int(j, "index", w->index);
		ss_json_str(j, "thread", w->thread);
		ss_json_num(j, "polls", k ? (double)k->polls : 0);
		ss_json_num(j, "busy_ns", busy);
		ss_json_num(j, "parked_ns", parked);
		ss_json_num(j, "utilisation", busy + parked > 0 ? busy / (busy + parked) : 0);
		ss_json_num(j, "longest_poll_ns", k ? (double)k->longest : 0);
		if (k && k->has_cpu) {
			ss_json_num(j, "on_cpu_ns", (double)k->on_cpu);
			ss_json_num(j, "blocked_ns", (double)k->blocked);
			ss_json_num(j, "preempted_ns", (double)k->preempted);
		}
		ss_json_close(j, '{');
	}
	ss_json_close(j, '[');
	const struct ss_threshold *t = &ss_thresholds[SS_TH_LONG_POLL];
	ss_json_open(j, "long_polls", '{');
	ss_json_num(j, "polls", (double)sc->polls);
	const double lv[3] = { t->info, t->warning, t->critical };
	for (int i = 0; i < 3; i++)
		if (lv[i] != SS_TH_OFF) {
			char key[48];
			snprintf(key, sizeof key, "over_%gms", lv[i]);
			ss_json_num(j, key, (double)sc->over[i]);
		}
	ss_json_open(j, "longest", '[');
	for (size_t i = 0; i < s->n_longest; i++) {
		const struct ss_poll_detail *d = &s->longest[i];
		const struct ss_sum_worker *w = sum_worker(s, d->worker_id);
		ss_json_open(j, NULL, '{');
		ss_json_int(j, "poll_id", d->id);
		ss_json_int(j, "recording", d->recording_id);
		ss_json_num(j, "ts", (double)d->ts);
		ss_json_num(j, "dur_ns", (double)d->dur);
		ss_json_int(j, "worker_id", d->worker_id);
		ss_json_str(j, "runtime", w ? w->runtime : NULL);
		ss_json_num(j, "worker", w ? (double)w->index : NAN);
		ss_json_int(j, "task", d->task);
		ss_json_int(j, "task_id", d->task_id);
		ss_json_str(j, "location", d->location);
		if (d->has_cpu) {
			ss_json_num(j, "on_cpu_fraction", d->dur > 0 ? (double)d->on_cpu / (double)d->dur : 0);
			ss_json_num(j, "blocked_fraction", d->dur > 0 ? (double)d->blocked / (double)d->dur : 0);
			ss_json_num(j, "preempted_fraction", d->dur > 0 ? (double)d->preempted / (double)d->dur : 0);
		}
		ss_json_str(j, "verdict", verdict_text(d));
		ss_json_str(j, "stall_kind", d->stall_kind[0] ? d->stall_kind : NULL);
		ss_json_str(j, "stall_capture", d->capture[0] ? d->capture : NULL);
		ss_json_str(j, "culprit", d->culprit[0] ? d->culprit : NULL);
		ss_json_str(j, "syscall", d->syscall[0] ? d->syscall : NULL);
		ss_json_str(j, "stack", s->longest_stacks[i]);
		ss_json_int(j, "incomplete", d->incomplete);
		ss_json_close(j, '{');
	}
	ss_json_close(j, '[');
	ss_json_close(j, '{');
	ss_json_open(j, "stalls", '{');
	ss_json_int(j, "count", s->stalls);
	ss_json_open(j, "by_kind", '{');
	for (size_t i = 0; i < s->n_stall_kinds; i++)
		ss_json_int(j, s->stall_kinds[i].kind ? s->stall_kinds[i].kind : "unknown", s->stall_kinds[i].count);
	ss_json_close(j, '{');
	ss_json_open(j, "by_location", '[');
	for (size_t i = 0; i < s->n_stall_locations; i++) {
		const struct ss_sum_stall_location *l = &s->stall_locations[i];
		ss_json_open(j, NULL, '{');
		ss_json_str(j, "location", l->location);
		ss_json_int(j, "count", l->count);
		ss_json_int(j, "max_dur_ns", l->max_dur);
		ss_json_str(j, "kinds", l->kinds);
		ss_json_str(j, "stack", l->stack);
		ss_json_close(j, '{');
	}
	ss_json_close(j, '[');
	ss_json_close(j, '{');
	ss_json_open(j, "wake_to_poll", '{');
	ss_json_num(j, "wakes", (double)sc->delays.n);
	ss_json_num(j, "p50_ns", s->wake_p50);
	ss_json_num(j, "p99_ns", s->wake_p99);
	ss_json_num(j, "max_ns", s->wake_max);
	ss_json_open(j, "worst_locations", '[');
	for (size_t i = 0; i < s->n_wake_locations && i < 5; i++) {
		const struct ss_sum_wake_location *w = &s->wake_locations[i];
		ss_json_open(j, NULL, '{');
		ss_json_str(j, "location", w->location);
		ss_json_num(j, "wakes", (double)w->wakes);
		ss_json_num(j, "p50_ns", w->p50);
		ss_json_num(j, "p99_ns", w->p99);
		ss_json_num(j, "max_ns", w->max);
		ss_json_close(j, '{');
	}
	ss_json_close(j, '[');
	ss_json_close(j, '{');
	ss_json_open(j, "queues", '{');
	ss_json_int(j, "global_max", s->global_max);
	ss_json_int(j, "local_max", s->local_max);
	ss_json_close(j, '{');
	ss_json_open(j, "tasks", '{');
	ss_json_int(j, "spawned", s->spawned);
	ss_json_int(j, "finished", s->finished);
	ss_json_int(j, "alive_at_end", s->alive_at_end);
	ss_json_num(j, "idle_at_end", (double)s->idle_at_end);
	ss_json_int(j, "alive_early", s->alive_early);
	ss_json_int(j, "task_dumps", s->task_dumps);
	ss_json_close(j, '{');
	ss_json_open(j, "loss", '{');
	ss_json_int(j, "events", s->lost_events);
	ss_json_int(j, "samples", s->lost_samples);
	ss_json_close(j, '{');
	ss_json_close(j, '{');
}

static void json_findings(struct ss_json *j, const struct ss_findings *fl)
{
	ss_json_open(j, "findings", '[');
	for (size_t i = 0; i < fl->n; i++) {
		const struct ss_finding *f = &fl->v[i];
		ss_json_open(j, NULL, '{');
		ss_json_str(j, "check", f->check);
		ss_json_str(j, "severity", ss_severity_name(f->severity));
		ss_json_str(j, "message", f->message);
		ss_json_num(j, "ts", f->ts >= 0 ? (double)f->ts : NAN);
		ss_json_num(j, "dur", f->dur >= 0 ? (double)f->dur : NAN);
		ss_json_num(j, "recording_id", f->recording_id ? (double)f->recording_id : NAN);
		ss_json_num(j, "worker_id", f->worker_id ? (double)f->worker_id : NAN);
		ss_json_str(j, "worker", f->worker);
		ss_json_num(j, "task_id", f->task_id ? (double)f->task_id : NAN);
		ss_json_str(j, "location", f->location);
		ss_json_open(j, "frames", '[');
		for (size_t k = 0; k < f->n_frames; k++) {
			ss_json_open(j, NULL, '{');
			ss_json_str(j, "function", f->frames[k].function);
			ss_json_str(j, "file", f->frames[k].file);
			ss_json_num(j, "line", f->frames[k].line > 0 ? (double)f->frames[k].line : NAN);
			ss_json_close(j, '{');
		}
		ss_json_close(j, '[');
		bool own = f->n_frames && f->own_frame >= 0 && (size_t)f->own_frame < f->n_frames;
		ss_json_str(j, "culprit", own ? f->frames[f->own_frame].function : NULL);
		ss_json_str(j, "syscall", f->syscall);
		ss_json_str(j, "sql", f->sql);
		ss_json_int(j, "count", f->count);
		ss_json_num(j, "value", f->value);
		ss_json_str(j, "unit", f->unit);
		ss_json_close(j, '{');
	}
	ss_json_close(j, '[');
}

static void json_thresholds(struct ss_json *j)
{
	ss_json_open(j, "thresholds", '{');
	for (int i = 0; i < SS_TH_COUNT; i++) {
		const struct ss_threshold *t = &ss_thresholds[i];
		ss_json_open(j, t->name, '{');
		ss_json_str(j, "unit", t->unit);
		ss_json_num(j, "info", t->info == SS_TH_OFF ? NAN : t->info);
		ss_json_num(j, "warning", t->warning == SS_TH_OFF ? NAN : t->warning);
		ss_json_num(j, "critical", t->critical == SS_TH_OFF ? NAN : t->critical);
		ss_json_close(j, '{');
	}
	ss_json_close(j, '{');
}

/* ---- options -------------------------------------------------------------------- */

struct options {
	const char *path;
	bool json, list;
	size_t top;
	double timeout;
	int64_t recording, from, to;
	bool has_from, has_to;
	int fail_on; /* -1: none */
};

static int parse(int argc, char **argv, struct options *o)
{
	*o = (struct options){ .top = 10, .timeout = 300, .fail_on = -1 };
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		char err[256];
		if (!strcmp(a, "--json")) {
			o->json = true;
		} else if (!strcmp(a, "--list-thresholds")) {
			o->list = true;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			cmd_report_help(stdout);
			return 0;
		} else if (!strcmp(a, "--top") || !strcmp(a, "--timeout") || !strcmp(a, "--from") ||
			   !strcmp(a, "--to") || !strcmp(a, "--recording") || !strcmp(a, "--fail-on") ||
			   !strcmp(a, "--threshold")) {
			if (!v) {
				fprintf(stderr, "stallscope report: %s needs a value; see 'stallscope report --help'\n", a);
				return -1;
			}
			i++;
			char *end;
			if (!strcmp(a, "--top")) {
				long n = strtol(v, &end, 10);
				if (*end || n < 1 || n > 1000) {
					fprintf(stderr, "stallscope report: --top takes 1 to 1000, not '%s'\n", v);
					return -1;
				}
				o->top = (size_t)n;
			} else if (!strcmp(a, "--timeout")) {
				o->timeout = strtod(v, &end);
				if (*end || !(o->timeout >= 0) || o->timeout > 1e7) {
					fprintf(stderr, "stallscope report: --timeout takes seconds (0 = no limit), not "
						"'%s'\n", v);
					return -1;
				}
			} else if (!strcmp(a, "--from") || !strcmp(a, "--to")) {
				int64_t t;
				if (ss_parse_ns(v, &t) != 0) {
					fprintf(stderr, "stallscope report: %s takes a time since the trace's start: ns, "
						"or with a unit (250us, 1.5ms, 2s), not '%s'\n", a, v);
					return -1;
				}
				if (a[2] == 'f') {
					o->from = t;
					o->has_from = true;
				} else {
					o->to = t;
					o->has_to = true;
				}
			} else if (!strcmp(a, "--recording")) {
				long long n = strtoll(v, &end, 10);
				if (*end || n < 1) {
					fprintf(stderr, "stallscope report: --recording takes a recording id (the "
						"recordings table's id, 1 or more), not '%s'\n", v);
					return -1;
				}
				o->recording = n;
			} else if (!strcmp(a, "--fail-on")) {
				o->fail_on = ss_severity_parse(v);
				if (o->fail_on < 0 || o->fail_on == SS_SEV_INFO) {
					fprintf(stderr, "stallscope report: --fail-on takes warning or critical, not '%s'\n", v);
					return -1;
				}
			} else if (ss_threshold_set(v, err, sizeof err) != 0) {
				fprintf(stderr, "stallscope report: --threshold %s\n", err);
				return -1;
			}
		} else if (a[0] == '-' || o->path) {
			fprintf(stderr, "stallscope report: unexpected '%s'; see 'stallscope report --help'\n", a);
			return -1;
		} else {
			o->path = a;
		}
	}
	return 1;
}

int cmd_report(int argc, char **argv)
{
	struct options o;
	int pr = parse(argc, argv, &o);
	if (pr <= 0)
		return pr < 0 ? SS_EXIT_USAGE : SS_EXIT_OK;
	if (o.list) {
		list_thresholds(stdout);
		return SS_EXIT_OK;
	}
	if (!o.path) {
		fprintf(stderr, "stallscope report: no database given; see 'stallscope report --help'\n");
		return SS_EXIT_USAGE;
	}
	char err[1024];
	sqlite3 *db;
	if (ss_store_open_readonly(o.path, true, &db, err, sizeof err) != 0) {
		fprintf(stderr, "stallscope report: %s\n", err);
		return SS_EXIT_USAGE;
	}
	/* A database someone sent may hold anything: every statement shares one
	 * time budget instead of running forever. */
	struct ss_store_budget budget;
	ss_store_budget(db, &budget, o.timeout);
	struct ss_scope scope;
	if (ss_scope_resolve(db, &scope, o.recording, o.has_from, o.from, o.has_to, o.to, err, sizeof err) != 0) {
		if (budget.expired)
			ss_store_error(db, &budget, err, sizeof err);
		if (strstr(err, "no recording was imported"))
			fprintf(stderr, "stallscope report: %s holds no data: no recording was imported into it "
				"(import segments with 'stallscope import DIR -o %s')\n", o.path, o.path);
		else
			fprintf(stderr, "stallscope report: %s: %s\n", o.path, err);
		sqlite3_close(db);
		return SS_EXIT_USAGE;
	}
	struct ss_analysis *a = ss_analysis_run(db, &scope, o.top, err, sizeof err);
	if (!a) {
		if (budget.expired)
			ss_store_error(db, &budget, err, sizeof err);
		fprintf(stderr, "stallscope report: %s: %s\n", o.path, err);
		sqlite3_close(db);
		return SS_EXIT_USAGE;
	}
	struct cpu_hot hot;
	if (cpu_hot_read(db, &scope, &hot, err, sizeof err) != 0) {
		if (budget.expired)
			ss_store_error(db, &budget, err, sizeof err);
		fprintf(stderr, "stallscope report: %s: %s\n", o.path, err);
		cpu_hot_free(&hot);
		ss_analysis_free(a);
		sqlite3_close(db);
		return SS_EXIT_USAGE;
	}
	const struct ss_summary *s = ss_analysis_summary(a);
	const struct ss_scan *sc = ss_analysis_scan(a);
	const struct ss_findings *fl = ss_analysis_findings(a);
	FILE *out = stdout;
	if (o.json) {
		struct ss_json j = { .pretty = true };
		ss_json_begin(&j, out);
		j.pretty = true;
		ss_json_open(&j, NULL, '{');
		ss_json_str(&j, "database", shown_name(o.path));
		ss_json_open(&j, "scope", '{');
		ss_json_num(&j, "recording", o.recording ? (double)o.recording : NAN);
		ss_json_num(&j, "from_ns", o.has_from ? (double)o.from : NAN);
		ss_json_num(&j, "to_ns", o.has_to ? (double)o.to : NAN);
		ss_json_num(&j, "origin_ts", (double)scope.origin);
		ss_json_close(&j, '{');
		json_summary(&j, s, sc);
		json_cpu(&j, &hot, o.top);
		json_thresholds(&j);
		json_findings(&j, fl);
		ss_json_close(&j, '{');
	} else {
		fprintf(out, "stallscope report: %s\n", shown_name(o.path));
		if (scope.windowed || scope.recording_id) {
			char f[32] = "the start", t[32] = "the end";
			if (o.has_from)
				snprintf(f, sizeof f, "%.6f s", (double)o.from / 1e9);
			if (o.has_to)
				snprintf(t, sizeof t, "%.6f s", (double)o.to / 1e9);
			char rec[48] = "every recording";
			if (scope.recording_id)
				snprintf(rec, sizeof rec, "recording #%lld", (long long)scope.recording_id);
			fprintf(out, "scope: %s, from %s to %s of the trace\n", rec, f, t);
		}
		fputc('\n', out);
		text_recordings(out, s);
		text_workers(out, s);
		text_cpu(out, &hot, o.top);
		text_long_polls(out, s, sc);
		text_stalls(out, s);
		text_wakes(out, s, sc, o.top);
		text_rest(out, s);
		text_findings(out, fl, &scope);
	}
	int worst = -1;
	for (size_t i = 0; i < fl->n; i++)
		if ((int)fl->v[i].severity > worst)
			worst = (int)fl->v[i].severity;
	cpu_hot_free(&hot);
	ss_analysis_free(a);
	sqlite3_close(db);
	if (fflush(out) != 0 || ferror(out)) {
		fprintf(stderr, "stallscope report: writing the report failed\n");
		return SS_EXIT_USAGE;
	}
	if (o.fail_on >= 0 && worst >= o.fail_on)
		return 3;
	return SS_EXIT_OK;
}

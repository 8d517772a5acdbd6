/*
 * cmd_compare.c - `stallscope compare A.db B.db`: two traces of the same
 * program side by side, as text or JSON. The comparison is data from
 * viewer/analysis/compare.h; this file parses the options, opens both
 * databases and presents it. Read-only.
 */
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli_open.h"
#include "commands.h"
#include "compare.h"
#include "json_out.h"
#include "store_open.h"

void cmd_compare_help(FILE *out)
{
	fputs("usage: stallscope compare A.db B.db [--json] [--recording-a ID] [--recording-b ID]\n"
	      "                          [--top N] [--timeout S]\n"
	      "\n"
	      "Sets two imported traces of the same program side by side (before and after a\n"
	      "change, a good host and a bad one). Per spawn location and per culprit function\n"
	      "(the program's own code that the CPU samples of a poll were in): complete polls,\n"
	      "their p50, p99 and max duration, the share of the trace's CPU samples taken in\n"
	      "them, and the p99 wake-to-poll delay, for A and B with B's figure over A's (2.31x;\n"
	      "'new': only B has it, 'gone': only A has it); then the functions whose CPU share\n"
	      "moved most, and the findings of 'stallscope report' that one trace has and the\n"
	      "other has not (matched by check, culprit and location) or has at another severity.\n"
	      "\n"
	      "  --json              the same as one JSON object (the README documents the shape)\n"
	      "  --recording-a ID, --recording-b ID\n"
	      "                      only that recording of A (of B), for a database holding several\n"
	      "  --top N             rows in each list, the most changed first (default 10; 0 = all)\n"
	      "  --timeout S         stop reading each database after S seconds (default 300; 0 = no\n"
	      "                      limit)\n"
	      "\n"
	      "Exit status: 0 the comparison was printed; 1 bad arguments, a file that is not a\n"
	      "stallscope database, a database with no data, or a read that failed.\n", out);
}

struct options {
	const char *path[2];
	bool json;
	size_t top;
	double timeout;
	struct cli_scope_args scope[2]; /* --recording-a, --recording-b */
};

static int parse(int argc, char **argv, struct options *o)
{
	*o = (struct options){ .top = 10, .timeout = 300 };
	int n_paths = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--json")) {
			o->json = true;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			cmd_compare_help(stdout);
			return 0;
		} else if (!strcmp(a, "--top") || !strcmp(a, "--timeout") || !strcmp(a, "--recording-a") ||
			   !strcmp(a, "--recording-b")) {
			if (!v) {
				fprintf(stderr, "stallscope compare: %s needs a value; see 'stallscope compare --help'\n", a);
				return -1;
			}
			i++;
			char *end;
			if (!strcmp(a, "--top")) {
				long n = strtol(v, &end, 10);
				if (*end || n < 0 || n > 100000) {
					fprintf(stderr, "stallscope compare: --top takes 0 to 100000, not '%s'\n", v);
					return -1;
				}
				o->top = (size_t)n;
			} else if (!strcmp(a, "--timeout")) {
				o->timeout = strtod(v, &end);
				if (*end || !(o->timeout >= 0) || o->timeout > 1e7) {
					fprintf(stderr, "stallscope compare: --timeout takes seconds (0 = no limit), not "
						"'%s'\n", v);
					return -1;
				}
			} else {
				if (cli_scope_option("compare", a, v, &o->scope[a[12] == 'b']) != 0)
					return -1;
			}
		} else if (a[0] == '-' || n_paths == 2) {
			fprintf(stderr, "stallscope compare: unexpected '%s'; see 'stallscope compare --help'\n", a);
			return -1;
		} else {
			o->path[n_paths++] = a;
		}
	}
	if (n_paths < 2) {
		fprintf(stderr, "stallscope compare: give two databases, A and B; see 'stallscope compare --help'\n");
		return -1;
	}
	return 1;
}

/* ---- text -------------------------------------------------------------------------- */

static void fmt_ratio(char *buf, size_t len, const struct ss_cmp_ratio *r)
{
	switch (r->change) {
	case SS_CMP_RATIO: snprintf(buf, len, "%.2fx", r->ratio); break;
	case SS_CMP_NEW: snprintf(buf, len, "new"); break;
	case SS_CMP_GONE: snprintf(buf, len, "gone"); break;
	default: snprintf(buf, len, "-"); break;
	}
}

static void fmt_share(char *buf, size_t len, uint64_t samples, double share)
{
	if (!samples || share < 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.1f%%", 100 * share);
}

static void fmt_count(char *buf, size_t len, uint64_t n)
{
	if (n)
		snprintf(buf, len, "%llu", (unsigned long long)n);
	else
		snprintf(buf, len, "-");
}

/* "new" when only B has the row, "gone" when only A has it, "" when both. */
static const char *row_status(const struct ss_cmp_row *r)
{
	bool a = r->a.polls || r->a.cpu_samples || r->a.wakes, b = r->b.polls || r->b.cpu_samples || r->b.wakes;
	return a && b ? "" : b ? "new" : "gone";
}

static void text_row(FILE *o, const struct ss_cmp_row *r)
{
	const char *st = row_status(r);
	fprintf(o, "\n  %s%s%s%s\n", r->name, st[0] ? "  [" : "", st, st[0] ? "]" : "");
	fprintf(o, "    %-18s %12s %12s %8s\n", "", "A", "B", "B/A");
	char a[32], b[32], x[32];
	for (int m = 0; m < SS_CMP_METRICS; m++) {
		const char *label = "";
		switch (m) {
		case SS_CMP_POLLS:
			label = "polls";
			fmt_count(a, sizeof a, r->a.polls);
			fmt_count(b, sizeof b, r->b.polls);
			break;
		case SS_CMP_P50:
		case SS_CMP_P99:
		case SS_CMP_MAX: {
			const double va[] = { r->a.p50, r->a.p99, r->a.max }, vb[] = { r->b.p50, r->b.p99, r->b.max };
			label = m == SS_CMP_P50 ? "poll p50" : m == SS_CMP_P99 ? "poll p99" : "poll max";
			ss_fmt_dur(a, sizeof a, r->a.polls ? va[m - SS_CMP_P50] : -1);
			ss_fmt_dur(b, sizeof b, r->b.polls ? vb[m - SS_CMP_P50] : -1);
			break;
		}
		case SS_CMP_CPU_SHARE:
			label = "CPU share";
			fmt_share(a, sizeof a, r->a.cpu_samples, r->a.cpu_share);
			fmt_share(b, sizeof b, r->b.cpu_samples, r->b.cpu_share);
			break;
		default:
			label = "wake-to-poll p99";
			ss_fmt_dur(a, sizeof a, r->a.wakes ? r->a.wake_p99 : -1);
			ss_fmt_dur(b, sizeof b, r->b.wakes ? r->b.wake_p99 : -1);
			break;
		}
		fmt_ratio(x, sizeof x, &r->ratio[m]);
		fprintf(o, "    %-18s %12s %12s %8s\n", label, a, b, x);
	}
}

static size_t shown(size_t n, size_t top)
{
	return top && n > top ? top : n;
}

static void text_rows(FILE *o, const char *title, const struct ss_cmp_row *rows, size_t n, size_t top)
{
	size_t k = shown(n, top);
	if (k < n)
		fprintf(o, "\n%s (%zu of %zu, the most changed first; --top 0 shows all)\n", title, k, n);
	else
		fprintf(o, "\n%s (%zu, the most changed first)\n", title, n);
	if (!n)
		fputs("  none\n", o);
	for (size_t i = 0; i < k; i++)
		text_row(o, &rows[i]);
}

static void text_moves(FILE *o, const struct ss_comparison *c, size_t top)
{
	fputs("\nfunctions whose CPU share moved most\n", o);
	if (!c->n_moves) {
		fputs("  none: every function has the same share in both\n", o);
		return;
	}
	fprintf(o, "  %-44s %8s %8s %10s %8s\n", "function", "A", "B", "change", "B/A");
	for (size_t i = 0; i < shown(c->n_moves, top); i++) {
		const struct ss_cmp_row *r = &c->functions[c->moves[i]];
		double sa = r->a.cpu_share > 0 ? r->a.cpu_share : 0, sb = r->b.cpu_share > 0 ? r->b.cpu_share : 0;
		char a[16], b[16], x[32], d[16];
		snprintf(a, sizeof a, "%.1f%%", 100 * sa);
		snprintf(b, sizeof b, "%.1f%%", 100 * sb);
		snprintf(d, sizeof d, "%+.1f pp", 100 * (sb - sa));
		fmt_ratio(x, sizeof x, &r->ratio[SS_CMP_CPU_SHARE]);
		fprintf(o, "  %-44.44s %8s %8s %10s %8s\n", r->name, a, b, d, x);
	}
}

static void upper(char *buf, size_t len, enum ss_severity s)
{
	snprintf(buf, len, "%s", ss_severity_name(s));
	for (char *p = buf; *p; p++)
		*p = (char)(*p - 'a' + 'A');
}

static void text_findings(FILE *o, const char *title, const struct ss_cmp_finding *f, size_t n, int side)
{
	fprintf(o, "\n%s%s\n", title, n ? "" : ": none");
	for (size_t i = 0; i < n; i++) {
		char sev[16], sev2[16];
		upper(sev, sizeof sev, side == 0 ? f[i].severity_a : f[i].severity_b);
		if (side == 2) {
			upper(sev, sizeof sev, f[i].severity_a);
			upper(sev2, sizeof sev2, f[i].severity_b);
			fprintf(o, "  %s -> %s  %s", sev, sev2, f[i].check);
		} else {
			fprintf(o, "  %-8s %s", sev, f[i].check);
		}
		if (f[i].culprit)
			fprintf(o, " in %s", f[i].culprit);
		if (f[i].location)
			fprintf(o, " (tasks spawned at %s)", f[i].location);
		fputc('\n', o);
		if (f[i].message)
			fprintf(o, "           %s\n", f[i].message);
	}
}

static void text_side(FILE *o, const char *which, const struct ss_cmp_side *s)
{
	char d[32], rec[48];
	ss_fmt_dur(d, sizeof d, (double)s->duration_ns);
	if (s->recording_id)
		snprintf(rec, sizeof rec, "recording #%lld", (long long)s->recording_id);
	else
		snprintf(rec, sizeof rec, "%zu recording%s", s->recordings, s->recordings == 1 ? "" : "s");
	const char *exe = s->executable ? strrchr(s->executable, '/') : NULL;
	fprintf(o, "  %s: %s (%s of %s, %s): %llu polls, %llu CPU samples, %zu findings\n", which, s->path, rec,
		exe ? exe + 1 : s->executable ? s->executable : "?", d, (unsigned long long)s->polls,
		(unsigned long long)s->cpu_samples, s->findings);
}

static void text(FILE *o, const struct ss_comparison *c, size_t top)
{
	fputs("stallscope compare\n", o);
	text_side(o, "A", &c->a);
	text_side(o, "B", &c->b);
	if (!c->same_program)
		fputs("  note: A and B recorded different programs; figures are matched by name\n", o);
	fputs("  B/A is B's figure over A's; 'new': only B has it, 'gone': only A has it; CPU share: of\n"
	      "  each trace's CPU samples\n", o);
	text_rows(o, "spawn locations", c->locations, c->n_locations, top);
	text_rows(o, "culprit functions", c->functions, c->n_functions, top);
	text_moves(o, c, top);
	text_findings(o, "findings only in A", c->only_a, c->n_only_a, 0);
	text_findings(o, "findings only in B", c->only_b, c->n_only_b, 1);
	text_findings(o, "findings in both, at another severity (A -> B)", c->changed, c->n_changed, 2);
	if (ss_compare_identical(c))
		fputs("\nno differences: every figure is the same in both, and so are the findings\n", o);
}

/* ---- JSON -------------------------------------------------------------------------- */

static void json_ratio(struct ss_json *j, const char *key, const struct ss_cmp_ratio *r)
{
	switch (r->change) {
	case SS_CMP_RATIO: ss_json_num(j, key, r->ratio); break;
	case SS_CMP_NEW: ss_json_str(j, key, "new"); break;
	case SS_CMP_GONE: ss_json_str(j, key, "gone"); break;
	default: ss_json_null(j, key); break;
	}
}

static void json_figures(struct ss_json *j, const char *key, const struct ss_cmp_figures *f)
{
	ss_json_open(j, key, '{');
	ss_json_num(j, "polls", (double)f->polls);
	ss_json_num(j, "p50_ns", f->polls ? f->p50 : NAN);
	ss_json_num(j, "p99_ns", f->polls ? f->p99 : NAN);
	ss_json_num(j, "max_ns", f->polls ? f->max : NAN);
	ss_json_num(j, "cpu_samples", (double)f->cpu_samples);
	ss_json_num(j, "cpu_share", f->cpu_share >= 0 ? f->cpu_share : NAN);
	ss_json_num(j, "wakes", (double)f->wakes);
	ss_json_num(j, "wake_p99_ns", f->wakes ? f->wake_p99 : NAN);
	ss_json_close(j, '{');
}

static void json_rows(struct ss_json *j, const char *key, const struct ss_cmp_row *rows, size_t n, size_t top)
{
	ss_json_open(j, key, '[');
	for (size_t i = 0; i < shown(n, top); i++) {
		const struct ss_cmp_row *r = &rows[i];
		const char *st = row_status(r);
		ss_json_open(j, NULL, '{');
		ss_json_str(j, "name", r->name);
		ss_json_str(j, "function", r->function);
		ss_json_str(j, "file", r->file);
		ss_json_num(j, "line", r->line > 0 ? (double)r->line : NAN);
		ss_json_str(j, "status", st[0] ? st : "both");
		json_figures(j, "a", &r->a);
		json_figures(j, "b", &r->b);
		ss_json_open(j, "ratio", '{');
		for (int m = 0; m < SS_CMP_METRICS; m++)
			json_ratio(j, ss_cmp_metric_names[m], &r->ratio[m]);
		ss_json_close(j, '{');
		ss_json_close(j, '{');
	}
	ss_json_close(j, '[');
}

static void json_findings(struct ss_json *j, const char *key, const struct ss_cmp_finding *f, size_t n)
{
	ss_json_open(j, key, '[');
	for (size_t i = 0; i < n; i++) {
		ss_json_open(j, NULL, '{');
		ss_json_str(j, "check", f[i].check);
		ss_json_str(j, "severity_a", f[i].count_a ? ss_severity_name(f[i].severity_a) : NULL);
		ss_json_str(j, "severity_b", f[i].count_b ? ss_severity_name(f[i].severity_b) : NULL);
		ss_json_int(j, "count_a", f[i].count_a);
		ss_json_int(j, "count_b", f[i].count_b);
		ss_json_str(j, "culprit", f[i].culprit);
		ss_json_str(j, "location", f[i].location);
		ss_json_str(j, "message", f[i].message);
		ss_json_close(j, '{');
	}
	ss_json_close(j, '[');
}

static void json_side(struct ss_json *j, const char *key, const struct ss_cmp_side *s)
{
	ss_json_open(j, key, '{');
	ss_json_str(j, "database", s->path);
	ss_json_num(j, "recording", s->recording_id ? (double)s->recording_id : NAN);
	ss_json_num(j, "recordings", (double)s->recordings);
	ss_json_str(j, "executable", s->executable);
	ss_json_num(j, "duration_ns", (double)s->duration_ns);
	ss_json_num(j, "polls", (double)s->polls);
	ss_json_num(j, "cpu_samples", (double)s->cpu_samples);
	ss_json_num(j, "wakes", (double)s->wakes);
	ss_json_num(j, "findings", (double)s->findings);
	ss_json_close(j, '{');
}

static void json(FILE *o, const struct ss_comparison *c, size_t top)
{
	struct ss_json j = { .pretty = true };
	ss_json_begin(&j, o);
	j.pretty = true;
	ss_json_open(&j, NULL, '{');
	json_side(&j, "a", &c->a);
	json_side(&j, "b", &c->b);
	ss_json_bool(&j, "same_program", c->same_program);
	ss_json_bool(&j, "identical", ss_compare_identical(c));
	json_rows(&j, "locations", c->locations, c->n_locations, top);
	json_rows(&j, "functions", c->functions, c->n_functions, top);
	ss_json_open(&j, "cpu_share_moves", '[');
	for (size_t i = 0; i < shown(c->n_moves, top); i++) {
		const struct ss_cmp_row *r = &c->functions[c->moves[i]];
		double sa = r->a.cpu_share > 0 ? r->a.cpu_share : 0, sb = r->b.cpu_share > 0 ? r->b.cpu_share : 0;
		ss_json_open(&j, NULL, '{');
		ss_json_str(&j, "function", r->name);
		ss_json_str(&j, "file", r->file);
		ss_json_num(&j, "a", sa);
		ss_json_num(&j, "b", sb);
		ss_json_num(&j, "delta", sb - sa);
		json_ratio(&j, "ratio", &r->ratio[SS_CMP_CPU_SHARE]);
		ss_json_close(&j, '{');
	}
	ss_json_close(&j, '[');
	ss_json_open(&j, "findings", '{');
	json_findings(&j, "only_a", c->only_a, c->n_only_a);
	json_findings(&j, "only_b", c->only_b, c->n_only_b);
	json_findings(&j, "changed", c->changed, c->n_changed);
	ss_json_close(&j, '{');
	ss_json_close(&j, '{');
}

/* ---- the command ---------------------------------------------------------------------- */

int cmd_compare(int argc, char **argv)
{
	struct options o;
	int pr = parse(argc, argv, &o);
	if (pr <= 0)
		return pr < 0 ? SS_EXIT_USAGE : SS_EXIT_OK;
	sqlite3 *db[2] = { NULL, NULL };
	struct ss_store_budget budget[2];
	struct ss_scope scope[2];
	if (cli_open_trace("compare", "A", o.path[0], o.timeout, &o.scope[0], &db[0], &budget[0], &scope[0]) != 0 ||
	    cli_open_trace("compare", "B", o.path[1], o.timeout, &o.scope[1], &db[1], &budget[1], &scope[1]) != 0) {
		sqlite3_close(db[0]);
		return SS_EXIT_USAGE;
	}
	char err[1024];
	struct ss_comparison c;
	/* The analyses list every finding of a kind, so that a cut-off list
	 * never reads as a finding gone. */
	int rc = ss_compare_run(db[0], &scope[0], o.path[0], db[1], &scope[1], o.path[1], 1000, &c, err, sizeof err);
	if (rc != 0) {
		for (int k = 0; k < 2; k++)
			if (budget[k].expired) {
				char why[512];
				ss_store_error(db[k], &budget[k], why, sizeof why);
				snprintf(err, sizeof err, "%s: %s", k ? "B" : "A", why);
			}
		fprintf(stderr, "stallscope compare: %s\n", err);
		sqlite3_close(db[0]);
		sqlite3_close(db[1]);
		return SS_EXIT_USAGE;
	}
	if (o.json)
		json(stdout, &c, o.top);
	else
		text(stdout, &c, o.top);
	ss_compare_free(&c);
	sqlite3_close(db[0]);
	sqlite3_close(db[1]);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "stallscope compare: writing the comparison failed\n");
		return SS_EXIT_USAGE;
	}
	return SS_EXIT_OK;
}

/*
 * cmd_export.c - `stallscope export trace.db --format folded|chrome|pprof`:
 * the trace in a format other tools open. The writers are viewer/export/;
 * this file parses the options, opens and scopes the database, and sees that
 * a file named by -o is either the whole export or untouched: the export is
 * written beside it and renamed over it only when complete.
 */
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli_open.h"
#include "commands.h"
#include "export.h"
#include "store_open.h"

void cmd_export_help(FILE *out)
{
	fputs("usage: stallscope export TRACE.db --format folded|chrome|pprof [-o FILE]\n"
	      "                         [--from T] [--to T] [--recording ID] [--worker W] [--task N]\n"
	      "                         [--offcpu] [--value samples|ns] [--timeout S] [-q]\n"
	      "\n"
	      "Writes an imported trace (see 'stallscope import') in a format other tools open:\n"
	      "  folded   one line per distinct stack, root first, frames joined by ';', then a\n"
	      "           space and a count: for flamegraph.pl, inferno-flamegraph, speedscope\n"
	      "  chrome   Chrome trace event JSON, for ui.perfetto.dev and chrome://tracing: a\n"
	      "           process per recording, a thread per worker; polls and parks as slices\n"
	      "           (task, location, verdict), blocked and preempted time on a lane below\n"
	      "           each worker, stall captures and samples as instant events with stacks\n"
	      "  pprof    a gzipped profile.proto, for go tool pprof, Pyroscope and the\n"
	      "           OpenTelemetry profiles converter: values samples/count and\n"
	      "           cpu/nanoseconds, labels worker and thread", out);
	if (!ss_export_have_pprof())
		fputs(" (not in this build: it was\n           configured without protobuf-c or zlib)", out);
	fputs("\n"
	      "\n"
	      "  --format F          folded, chrome or pprof (required)\n"
	      "  -o FILE             write to FILE (replaced only when the export is complete);\n"
	      "                      default: standard output ('-' too)\n"
	      "  --from T, --to T    only the window [T, T') of the trace, T as time since its first\n"
	      "                      event (the viewer's ruler): ns, or with a unit: 250us, 1.5ms, 2s\n"
	      "  --recording ID      only recording ID of a database holding several\n"
	      "  --worker W          only worker W: RUNTIME#INDEX as the report names it\n"
	      "                      (example#3), or INDEX for that index in any runtime\n"
	      "  --task N            only the polls of task N (the runtime's task number, as the\n"
	      "                      report prints it) and the samples and stalls taken in them\n"
	      "  --offcpu            off-CPU samples (a stack at each switch-out of a worker, when\n"
	      "                      the recording has them) instead of CPU samples\n"
	      "  --value V           what folded lines count: samples, or ns (CPU samples: the CPU\n"
	      "                      time each stands for; off-CPU samples: the time off CPU that\n"
	      "                      began there). Default: samples, and ns with --offcpu. pprof\n"
	      "                      always carries both\n"
	      "  --timeout S         stop reading after S seconds (default 3600; 0 = no limit)\n"
	      "  -q, --quiet         no progress or summary on standard error\n"
	      "\n"
	      "Examples:\n"
	      "  stallscope export trace.db --format folded | flamegraph.pl > cpu.svg\n"
	      "  stallscope export trace.db --format chrome -o trace.json   # open in ui.perfetto.dev\n"
	      "  stallscope export trace.db --format pprof -o cpu.pb.gz && go tool pprof -top cpu.pb.gz\n"
	      "\n"
	      "Exit status: 0 the export was written; 1 bad arguments, a file that is not a\n"
	      "stallscope database, a scope with nothing to export, or a read or write that\n"
	      "failed.\n", out);
}

enum format { FMT_NONE, FMT_FOLDED, FMT_CHROME, FMT_PPROF };

struct options {
	const char *path, *out;
	enum format format;
	bool quiet;
	double timeout;
	struct cli_scope_args scope;
	char runtime[128];
	struct ss_export_opts x;
};

__attribute__((format(printf, 1, 2))) static int bad(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("stallscope export: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return -1;
}

/* "example#3" or "3". */
static int parse_worker(const char *v, struct options *o)
{
	const char *hash = strrchr(v, '#');
	const char *num = hash ? hash + 1 : v;
	char *end;
	errno = 0;
	long long idx = strtoll(num, &end, 10);
	if (!*num || *end || errno || idx < 0 || (hash && hash == v) ||
	    (hash && (size_t)(hash - v) >= sizeof o->runtime))
		return -1;
	o->x.has_worker = true;
	o->x.worker_index = idx;
	if (hash) {
		snprintf(o->runtime, sizeof o->runtime, "%.*s", (int)(hash - v), v);
		o->x.runtime = o->runtime;
	}
	return 0;
}

static int parse(int argc, char **argv, struct options *o)
{
	memset(o, 0, sizeof *o);
	o->timeout = 3600;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			cmd_export_help(stdout);
			return 0;
		} else if (!strcmp(a, "--offcpu")) {
			o->x.offcpu = true;
		} else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
			o->quiet = true;
		} else if (!strcmp(a, "--format") || !strcmp(a, "-o") || !strcmp(a, "--from") || !strcmp(a, "--to") ||
			   !strcmp(a, "--recording") || !strcmp(a, "--worker") || !strcmp(a, "--task") ||
			   !strcmp(a, "--value") || !strcmp(a, "--timeout")) {
			if (!v)
				return bad("%s needs a value; see 'stallscope export --help'", a);
			i++;
			char *end;
			errno = 0;
			if (!strcmp(a, "--format")) {
				o->format = !strcmp(v, "folded") ? FMT_FOLDED
					    : !strcmp(v, "chrome") ? FMT_CHROME
					    : !strcmp(v, "pprof")  ? FMT_PPROF
								   : FMT_NONE;
				if (o->format == FMT_NONE)
					return bad("unknown format '%s': the formats are folded, chrome and pprof", v);
			} else if (!strcmp(a, "-o")) {
				o->out = strcmp(v, "-") ? v : NULL;
			} else if (!strcmp(a, "--from") || !strcmp(a, "--to") || !strcmp(a, "--recording")) {
				if (cli_scope_option("export", a, v, &o->scope) != 0)
					return -1;
			} else if (!strcmp(a, "--worker")) {
				if (parse_worker(v, o) != 0)
					return bad("--worker takes RUNTIME#INDEX (example#3) or INDEX, not '%s'", v);
			} else if (!strcmp(a, "--task")) {
				long long n = strtoll(v, &end, 10);
				if (!*v || *end || errno)
					return bad("--task takes a task number (the tasks table's task), not '%s'", v);
				o->x.has_task = true;
				o->x.task = n;
			} else if (!strcmp(a, "--value")) {
				if (!strcmp(v, "samples"))
					o->x.value = SS_EXPORT_VALUE_SAMPLES;
				else if (!strcmp(v, "ns"))
					o->x.value = SS_EXPORT_VALUE_NS;
				else
					return bad("--value takes samples or ns, not '%s'", v);
			} else {
				o->timeout = strtod(v, &end);
				if (*end || !(o->timeout >= 0) || o->timeout > 1e7)
					return bad("--timeout takes seconds (0 = no limit), not '%s'", v);
			}
		} else if ((a[0] == '-' && a[1]) || o->path) {
			return bad("unexpected '%s'; see 'stallscope export --help'", a);
		} else {
			o->path = a;
		}
	}
	return 1;
}

/* ---- progress ---------------------------------------------------------------------- */

struct progress {
	double next;
	bool shown;
};

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void progress(void *ctx, uint64_t rows)
{
	struct progress *p = ctx;
	double t = now_s();
	if (t < p->next)
		return;
	p->next = t + 0.5;
	fprintf(stderr, "\rstallscope export: %" PRIu64 " rows ...", rows);
	p->shown = true;
}

/* ---- output -------------------------------------------------------------------------- */

/* A temporary file beside path, renamed over it when the export is complete. */
static FILE *open_beside(const char *path, char *tmp, size_t len)
{
	snprintf(tmp, len, "%s.tmp.XXXXXX", path);
	int fd = mkstemp(tmp);
	if (fd < 0)
		return NULL;
	/* mkstemp makes 0600; the export gets what any new file would. */
	mode_t mask = umask(0);
	umask(mask);
	fchmod(fd, 0666 & ~mask);
	FILE *f = fdopen(fd, "wb");
	if (!f) {
		close(fd);
		unlink(tmp);
	}
	return f;
}

static const char *format_name(enum format f)
{
	return f == FMT_FOLDED ? "folded" : f == FMT_CHROME ? "chrome" : "pprof";
}

int cmd_export(int argc, char **argv)
{
	struct options o;
	int pr = parse(argc, argv, &o);
	if (pr <= 0)
		return pr < 0 ? SS_EXIT_USAGE : SS_EXIT_OK;
	if (!o.path) {
		fprintf(stderr, "stallscope export: no database given; see 'stallscope export --help'\n");
		return SS_EXIT_USAGE;
	}
	if (o.format == FMT_NONE) {
		fprintf(stderr, "stallscope export: no --format given: folded, chrome or pprof\n");
		return SS_EXIT_USAGE;
	}
	if (o.format == FMT_PPROF && !ss_export_have_pprof()) {
		char err[512];
		ss_export_pprof(NULL, NULL, NULL, &(struct ss_export_stats){ 0 }, err, sizeof err);
		fprintf(stderr, "stallscope export: %s\n", err);
		return SS_EXIT_USAGE;
	}
	if (o.format == FMT_PPROF && !o.out && isatty(STDOUT_FILENO)) {
		fprintf(stderr, "stallscope export: a pprof profile is binary: give -o FILE, or redirect the output\n");
		return SS_EXIT_USAGE;
	}
	char err[1024];
	sqlite3 *db;
	struct ss_store_budget budget;
	if (cli_open_trace("export", NULL, o.path, o.timeout, &o.scope, &db, &budget, &o.x.scope) != 0)
		return SS_EXIT_USAGE;
	if (ss_export_check_filters(db, &o.x, err, sizeof err) != 0) {
		if (budget.expired)
			ss_store_error(db, &budget, err, sizeof err);
		fprintf(stderr, "stallscope export: %s: %s\n", o.path, err);
		sqlite3_close(db);
		return SS_EXIT_USAGE;
	}
	o.x.source = o.path;
	struct progress pg = { .next = now_s() + 1 };
	if (!o.quiet && isatty(STDERR_FILENO)) {
		o.x.progress = progress;
		o.x.progress_ctx = &pg;
	}
	char tmp[4096 + 16] = "";
	FILE *out = stdout;
	if (o.out) {
		if (strlen(o.out) > 4096 || !(out = open_beside(o.out, tmp, sizeof tmp))) {
			fprintf(stderr, "stallscope export: cannot write %s: %s\n", o.out, strerror(errno));
			sqlite3_close(db);
			return SS_EXIT_USAGE;
		}
	}
	struct ss_export_stats st;
	int rc = o.format == FMT_FOLDED   ? ss_export_folded(db, &o.x, out, &st, err, sizeof err)
		 : o.format == FMT_CHROME ? ss_export_chrome(db, &o.x, out, &st, err, sizeof err)
					  : ss_export_pprof(db, &o.x, out, &st, err, sizeof err);
	if (rc != 0 && budget.expired)
		ss_store_error(db, &budget, err, sizeof err);
	if (pg.shown)
		fputs("\r\033[K", stderr);
	sqlite3_close(db);
	bool write_failed = fflush(out) != 0 || ferror(out);
	if (o.out) {
		write_failed |= fclose(out) != 0;
		if (rc == 0 && !write_failed && rename(tmp, o.out) != 0) {
			fprintf(stderr, "stallscope export: cannot write %s: %s\n", o.out, strerror(errno));
			unlink(tmp);
			return SS_EXIT_USAGE;
		}
		if (rc != 0 || write_failed)
			unlink(tmp);
	}
	if (rc != 0) {
		fprintf(stderr, "stallscope export: %s: %s\n", o.path, err);
		return SS_EXIT_USAGE;
	}
	if (write_failed) {
		fprintf(stderr, "stallscope export: writing %s failed\n", o.out ? o.out : "the output");
		return SS_EXIT_USAGE;
	}
	if (!o.quiet && o.out) {
		const char *kind = o.x.offcpu ? "off-CPU samples" : "CPU samples";
		if (o.format == FMT_CHROME)
			fprintf(stderr, "stallscope export: %s: %" PRIu64 " events (%" PRIu64 " polls, %" PRIu64
				" %s) to %s\n", format_name(o.format), st.events, st.polls, st.samples, kind, o.out);
		else
			fprintf(stderr, "stallscope export: %s: %" PRIu64 " %s in %" PRIu64 " stacks to %s\n",
				format_name(o.format), st.samples, kind, st.stacks, o.out);
	}
	return SS_EXIT_OK;
}

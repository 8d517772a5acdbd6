/*
 * test_unwind.c - whole stacks for a program built without frame pointers, end
 * to end: nofp_chain (-O2 -fomit-frame-pointer) records itself through
 * libstallscope, `stallscope import` loads the segments, and the stacks are read
 * back by name through SQL (callsite_frames).
 *
 *   auto     >= 90% of the workers' CPU samples reach the thread's start function
 *            (worker_main), and >= 90% of those in the spin leaf name the known
 *            chain in order: spin_leaf <- chain_6 <- ... <- chain_1 <- worker_main;
 *            META "unwind" says auto, and so do the metrics (which count the CFI
 *            unwinds, and in the truncated run the stacks the copy cut short)
 *   fp       the same run with STALLSCOPE_UNWIND=fp: at most 10% reach worker_main,
 *            and auto's share beats it by 80 points (the difference is the unwinder)
 *   timer    dwarf with the timer fallback forced (STALLSCOPE_SAMPLER=timer): the
 *            signal handler's copies unwind as whole as perf's
 *   another machine  after `stallscope symbolize` the segments import with
 *            --no-symbols (nothing looked up here, the segment's own table only)
 *            and still name the whole chain
 *   truncated  a 1 KiB stack copy (STALLSCOPE_STACK_COPY=1K) cannot reach past
 *            chain_3's 3 KB frame: those stacks end there under a '[truncated]'
 *            root, every frame of them named (no guessed frame), none reaches
 *            worker_main
 *   stalls   a 150 ms poll spinning under the chain is captured by signal with
 *            its callers up to worker_main; one blocked in clock_nanosleep under
 *            the chain is captured blocked, with its callers up to worker_main
 *
 * Shares, not counts, are asserted: a loaded machine gives fewer samples, not
 * other stacks. At least 50 samples are asked of each run (retried once).
 *
 *     test_unwind NOFP_CHAIN STALLSCOPE_CLI
 */
#include <elf.h>
#include <errno.h>
#include <spawn.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "soft_check.h"

extern char **environ;

static const char *prog, *cli;
static char tmp[256];

#define CHAIN "spin_leaf <- chain_6 <- chain_5 <- chain_4 <- chain_3 <- chain_2 <- chain_1 <- worker_main"

static int run(char *const argv[], char *const extra_env[], int quiet)
{
	/* The child's environment: ours without any STALLSCOPE_ or DEBUGINFOD_
	 * variable, plus extra_env. */
	char *envp[256];
	size_t n = 0;
	for (char **e = environ; *e && n < 200; e++)
		if (strncmp(*e, "STALLSCOPE_", 11) != 0 && strncmp(*e, "DEBUGINFOD_", 11) != 0)
			envp[n++] = *e;
	for (size_t i = 0; extra_env && extra_env[i] && n < 254; i++)
		envp[n++] = extra_env[i];
	envp[n] = NULL;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	if (quiet)
		posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", 0, 0);
	pid_t pid;
	int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0) {
		fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(rc));
		return -1;
	}
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Records nofp_chain ARGS into tmp/NAME with the given STALLSCOPE_ settings
 * and imports it into tmp/NAME.db (extra import options in imp_opt). */
static void record(const char *name, const char *mode, const char *const settings[])
{
	char dir[400], env_dir[440], db[420], env_metrics[460];
	snprintf(dir, sizeof dir, "%s/%s", tmp, name);
	snprintf(db, sizeof db, "%s/%s.db", tmp, name);
	snprintf(env_dir, sizeof env_dir, "STALLSCOPE_OUTPUT_DIR=%s", dir);
	snprintf(env_metrics, sizeof env_metrics, "STALLSCOPE_METRICS_FILE=%s/%s.prom", tmp, name);
	char rmcmd[900];
	snprintf(rmcmd, sizeof rmcmd, "rm -rf '%s' '%s'", dir, db);
	if (system(rmcmd) != 0)
		exit(1);
	char *env[16];
	size_t k = 0;
	env[k++] = (char *)"STALLSCOPE_ENABLED=1";
	env[k++] = env_dir;
	env[k++] = env_metrics;
	for (size_t i = 0; settings[i] && k < 15; i++)
		env[k++] = (char *)settings[i];
	env[k] = NULL;
	char *argv_spin[] = { (char *)prog, (char *)"spin", (char *)"1.5", (char *)"2", NULL };
	char *argv_one[] = { (char *)prog, (char *)mode, NULL };
	int rc = run(strcmp(mode, "spin") == 0 ? argv_spin : argv_one, env, 1);
	if (rc != 0) {
		fprintf(stderr, "FAIL: %s (%s) exited %d\n", prog, name, rc);
		exit(1);
	}
	char *imp[] = { (char *)cli, (char *)"import", (char *)"-q", dir, (char *)"-o", db, NULL };
	if (run(imp, NULL, 0) != 0) {
		fprintf(stderr, "FAIL: import of %s\n", dir);
		exit(1);
	}
}

static sqlite3 *open_db(const char *name)
{
	char db[420];
	snprintf(db, sizeof db, "%s/%s.db", tmp, name);
	sqlite3 *d;
	if (sqlite3_open_v2(db, &d, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		fprintf(stderr, "FAIL: cannot open %s\n", db);
		exit(1);
	}
	return d;
}

/* The value of one series in the metrics file the run left (written at stop),
 * -1 when it is not there. */
static long long metric(const char *name, const char *series)
{
	char path[400], line[512];
	snprintf(path, sizeof path, "%s/%s.prom", tmp, name);
	FILE *f = fopen(path, "r");
	long long v = -1;
	size_t sl = strlen(series);
	while (f && fgets(line, sizeof line, f))
		if (strncmp(line, series, sl) == 0 && line[sl] == ' ')
			v = atoll(line + sl + 1);
	if (f)
		fclose(f);
	return v;
}

static char *q_text(sqlite3 *d, const char *sql)
{
	sqlite3_stmt *s;
	char *out = NULL;
	if (sqlite3_prepare_v2(d, sql, -1, &s, NULL) != SQLITE_OK) {
		fprintf(stderr, "FAIL: %s: %s\n", sql, sqlite3_errmsg(d));
		exit(1);
	}
	if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
		out = strdup((const char *)sqlite3_column_text(s, 0));
	sqlite3_finalize(s);
	return out ? out : strdup("");
}

/* The stack of a callsite leaf first, as "f0 <- f1 <- ..." ('?MAPPING' for a frame
 * without a name). */
static char *stack_of(sqlite3 *d, sqlite3_int64 cs)
{
	static sqlite3_stmt *s;
	static sqlite3 *sd;
	if (sd != d) {
		if (s)
			sqlite3_finalize(s);
		sqlite3_prepare_v2(d, "SELECT coalesce(function, '?' || mapping) FROM callsite_frames"
				   " WHERE callsite_id = ? ORDER BY depth", -1, &s, NULL);
		sd = d;
	}
	sqlite3_reset(s);
	sqlite3_bind_int64(s, 1, cs);
	size_t cap = 256, len = 0;
	char *out = calloc(1, cap);
	while (sqlite3_step(s) == SQLITE_ROW) {
		const char *f = (const char *)sqlite3_column_text(s, 0);
		size_t fl = strlen(f);
		if (len + fl + 8 > cap) {
			cap = 2 * (len + fl + 8);
			out = realloc(out, cap);
		}
		len += (size_t)sprintf(out + len, "%s%s", len ? " <- " : "", f);
	}
	return out;
}

struct shares {
	long samples, reach, leaf, chain;
	char example[1024];
};

/* The workers' CPU samples: how many reach worker_main, how many are in the
 * spin leaf, how many of those name the whole chain in order. */
static struct shares cpu_shares(sqlite3 *d)
{
	struct shares r = { 0 };
	sqlite3_stmt *s;
	sqlite3_prepare_v2(d, "SELECT callsite_id, count(*) FROM samples WHERE kind = 'cpu' AND"
			   " worker_id IS NOT NULL AND callsite_id IS NOT NULL GROUP BY callsite_id"
			   " ORDER BY count(*) DESC", -1, &s, NULL);
	while (sqlite3_step(s) == SQLITE_ROW) {
		long n = sqlite3_column_int64(s, 1);
		char *st = stack_of(d, sqlite3_column_int64(s, 0));
		r.samples += n;
		if (strstr(st, "worker_main"))
			r.reach += n;
		if (strncmp(st, "spin_leaf", 9) == 0) {
			r.leaf += n;
			if (strncmp(st, CHAIN, strlen(CHAIN)) == 0)
				r.chain += n;
		}
		if (!r.example[0])
			snprintf(r.example, sizeof r.example, "%s", st);
		free(st);
	}
	sqlite3_finalize(s);
	return r;
}

static double pct(long a, long b)
{
	return b ? 100.0 * (double)a / (double)b : 0;
}

/* A run with enough samples to judge shares; once more when the machine gave
 * too little CPU. */
static struct shares spin_run(const char *name, const char *const settings[])
{
	struct shares r = { 0 };
	for (int attempt = 0; attempt < 2; attempt++) {
		record(name, "spin", settings);
		sqlite3 *d = open_db(name);
		r = cpu_shares(d);
		sqlite3_close(d);
		if (r.samples >= 50)
			break;
		printf("  %s: only %ld samples, again\n", name, r.samples);
	}
	printf("  %s: %ld CPU samples on workers, %.1f%% reach worker_main, %ld in spin_leaf, "
	       "%.1f%% of those name the chain; most common: %s\n", name, r.samples,
	       pct(r.reach, r.samples), r.leaf, pct(r.chain, r.leaf), r.example);
	return r;
}

static void test_cpu(void)
{
	static const char *const auto_s[] = { "STALLSCOPE_UNWIND=auto", NULL };
	static const char *const fp_s[] = { "STALLSCOPE_UNWIND=fp", NULL };
	static const char *const timer_s[] = { "STALLSCOPE_UNWIND=dwarf", "STALLSCOPE_SAMPLER=timer", NULL };
	struct shares a = spin_run("auto", auto_s);
	sqlite3 *d = open_db("auto");
	char *meta = q_text(d, "SELECT value FROM metadata WHERE key = 'unwind'");
	if (strncmp(meta, "fp:", 3) == 0 && strstr(meta, "CFI refused")) {
		/* A build without libdw, or another architecture: nothing to test here. */
		printf("SKIP: %s\n", meta);
		exit(77);
	}
	CHECK(strncmp(meta, "auto:", 5) == 0, "META unwind: '%s'", meta);
	free(meta);
	sqlite3_close(d);
	CHECK(a.samples >= 50, "auto: %ld samples", a.samples);
	CHECK(pct(a.reach, a.samples) >= 90, "auto: %.1f%% reach worker_main", pct(a.reach, a.samples));
	CHECK(a.leaf * 2 >= a.samples, "auto: only %ld of %ld samples in spin_leaf", a.leaf, a.samples);
	CHECK(pct(a.chain, a.leaf) >= 90, "auto: %.1f%% name the chain in order", pct(a.chain, a.leaf));
	CHECK(metric("auto", "stallscope_unwind_mode{mode=\"auto\"}") == 1, "metric: unwind mode auto");
	CHECK(metric("auto", "stallscope_unwind_stacks_total{method=\"cfi\"}") >= a.samples / 2,
	      "metric: %lld stacks unwound by CFI for %ld samples",
	      metric("auto", "stallscope_unwind_stacks_total{method=\"cfi\"}"), a.samples);

	struct shares f = spin_run("fp", fp_s);
	CHECK(f.samples >= 50, "fp: %ld samples", f.samples);
	CHECK(pct(f.reach, f.samples) <= 10, "fp: %.1f%% reach worker_main: the program has frame "
	      "pointers after all?", pct(f.reach, f.samples));
	CHECK(pct(a.reach, a.samples) - pct(f.reach, f.samples) >= 80, "auto beats fp by %.1f points only",
	      pct(a.reach, a.samples) - pct(f.reach, f.samples));
	d = open_db("fp");
	meta = q_text(d, "SELECT value FROM metadata WHERE key = 'unwind'");
	CHECK(strncmp(meta, "fp:", 3) == 0, "META unwind: '%s'", meta);
	free(meta);
	sqlite3_close(d);
	CHECK(metric("fp", "stallscope_unwind_mode{mode=\"fp\"}") == 1 &&
	      metric("fp", "stallscope_unwind_stacks_total{method=\"cfi\"}") == 0, "metric: unwind mode fp");

	struct shares t = spin_run("timer", timer_s);
	CHECK(t.samples >= 50, "timer: %ld samples", t.samples);
	CHECK(pct(t.reach, t.samples) >= 90, "timer: %.1f%% reach worker_main", pct(t.reach, t.samples));
	CHECK(pct(t.chain, t.leaf) >= 90, "timer: %.1f%% name the chain", pct(t.chain, t.leaf));
	d = open_db("timer");
	meta = q_text(d, "SELECT value FROM metadata WHERE key = 'sampler'");
	CHECK(strncmp(meta, "timer:", 6) == 0, "META sampler: '%s'", meta);
	free(meta);
	sqlite3_close(d);

	/* Another machine: the segment's own symbol table, nothing looked up here. */
	char dir[400], db2[420];
	snprintf(dir, sizeof dir, "%s/auto", tmp);
	snprintf(db2, sizeof db2, "%s/elsewhere.db", tmp);
	char *sym[] = { (char *)cli, (char *)"symbolize", (char *)"-q", dir, NULL };
	CHECK(run(sym, NULL, 0) == 0, "stallscope symbolize %s", dir);
	char *imp[] = { (char *)cli, (char *)"import", (char *)"-q", (char *)"--no-symbols", dir,
			(char *)"-o", db2, NULL };
	CHECK(run(imp, NULL, 0) == 0, "import --no-symbols");
	d = open_db("elsewhere");
	struct shares e = cpu_shares(d);
	sqlite3_close(d);
	printf("  elsewhere: %.1f%% reach worker_main, %.1f%% name the chain (symbol table only)\n",
	       pct(e.reach, e.samples), pct(e.chain, e.leaf));
	CHECK(e.samples == a.samples, "elsewhere: %ld samples, %ld before", e.samples, a.samples);
	CHECK(pct(e.reach, e.samples) >= 90 && pct(e.chain, e.leaf) >= 90,
	      "elsewhere: %.1f%% reach, %.1f%% chain", pct(e.reach, e.samples), pct(e.chain, e.leaf));
}

/* The file-offset ranges of the program's PLT stubs (.plt, .plt.sec,
 * .plt.got), where a sample taken in a call through the PLT has its leaf: code
 * no symbol names, which the importer names as perf does (name@plt). Up to 4
 * ranges. */
static uint64_t plt_lo[4], plt_hi[4];
static int nplt;
static char prog_real[4096]; /* as the mappings name it */

static void read_plt_ranges(const char *path)
{
	CHECK(realpath(path, prog_real), "realpath %s", path);
	FILE *f = fopen(path, "rb");
	CHECK(f, "open %s", path);
	Elf64_Ehdr eh;
	CHECK(fread(&eh, sizeof eh, 1, f) == 1 && memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 &&
	      eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_shentsize == sizeof(Elf64_Shdr),
	      "%s: not a 64-bit ELF file", path);
	Elf64_Shdr *sh = calloc(eh.e_shnum, sizeof *sh);
	CHECK(sh && fseek(f, (long)eh.e_shoff, SEEK_SET) == 0 &&
	      fread(sh, sizeof *sh, eh.e_shnum, f) == eh.e_shnum, "%s: section headers", path);
	CHECK(eh.e_shstrndx < eh.e_shnum, "%s: no section names", path);
	const Elf64_Shdr *ns = &sh[eh.e_shstrndx];
	char *names = calloc(1, ns->sh_size + 1);
	CHECK(names && fseek(f, (long)ns->sh_offset, SEEK_SET) == 0 &&
	      fread(names, 1, ns->sh_size, f) == ns->sh_size, "%s: section names", path);
	for (unsigned i = 0; i < eh.e_shnum && nplt < 4; i++) {
		const char *n = sh[i].sh_name < ns->sh_size ? names + sh[i].sh_name : "";
		if (strcmp(n, ".plt") == 0 || strcmp(n, ".plt.sec") == 0 || strcmp(n, ".plt.got") == 0) {
			plt_lo[nplt] = sh[i].sh_offset;
			plt_hi[nplt++] = sh[i].sh_offset + sh[i].sh_size;
		}
	}
	free(names);
	free(sh);
	fclose(f);
}

/* Whether every frame of callsite cs is named, as a PLT stub where it is in
 * the program's PLT ("name@plt", or ".plt" for the lazy resolver); only vDSO
 * frames may be unnamed (real code the importer cannot name: it is no file).
 * *plt counts the PLT frames. */
static int frames_named(sqlite3 *d, sqlite3_int64 cs, int *plt)
{
	sqlite3_stmt *s;
	sqlite3_prepare_v2(d, "SELECT mapping, rel_pc, function FROM callsite_frames WHERE callsite_id = ?", -1, &s,
			   NULL);
	sqlite3_bind_int64(s, 1, cs);
	int ok = 1;
	*plt = 0;
	while (ok && sqlite3_step(s) == SQLITE_ROW) {
		const char *m = (const char *)sqlite3_column_text(s, 0);
		uint64_t pc = (uint64_t)sqlite3_column_int64(s, 1);
		const char *f = (const char *)sqlite3_column_text(s, 2);
		int stub = 0;
		for (int i = 0; m && strcmp(m, prog_real) == 0 && i < nplt; i++)
			stub |= pc >= plt_lo[i] && pc < plt_hi[i];
		size_t len = f ? strlen(f) : 0;
		if (stub) {
			*plt += 1;
			ok = f && ((len > 4 && strcmp(f + len - 4, "@plt") == 0) || strcmp(f, ".plt") == 0);
		} else {
			ok = f || (m && strcmp(m, "[vdso]") == 0);
		}
	}
	sqlite3_finalize(s);
	return ok;
}

static void test_truncated(void)
{
	static const char *const small[] = { "STALLSCOPE_UNWIND=dwarf", "STALLSCOPE_STACK_COPY=1K", NULL };
	struct shares r = spin_run("small-copy", small);
	sqlite3 *d = open_db("small-copy");
	CHECK(r.samples >= 50, "small copy: %ld samples", r.samples);
	/* Every stack through spin_leaf ends at chain_3 (whose caller is out of the
	 * copy) under the marker; no frame without a name (PLT stubs: name@plt). */
	long trunc = 0, named_ok = 0, through = 0, stubs = 0;
	sqlite3_stmt *s;
	sqlite3_prepare_v2(d, "SELECT callsite_id, count(*) FROM samples WHERE kind = 'cpu' AND"
			   " worker_id IS NOT NULL AND callsite_id IS NOT NULL GROUP BY callsite_id", -1, &s, NULL);
	char bad[1024] = "", unnamed[1024] = "";
	while (sqlite3_step(s) == SQLITE_ROW) {
		long n = sqlite3_column_int64(s, 1);
		char *st = stack_of(d, sqlite3_column_int64(s, 0));
		if (strncmp(st, "spin_leaf", 9) == 0) {
			const char *want = "spin_leaf <- chain_6 <- chain_5 <- chain_4 <- chain_3 <- [truncated]";
			if (strcmp(st, want) == 0)
				trunc += n;
			else if (!bad[0])
				snprintf(bad, sizeof bad, "%s", st);
		}
		int plt = 0;
		if (frames_named(d, sqlite3_column_int64(s, 0), &plt))
			named_ok += n;
		else if (!unnamed[0])
			snprintf(unnamed, sizeof unnamed, "%s", st);
		stubs += plt ? n : 0;
		/* (Not with chain_3 the leaf: in its prologue or epilogue the 3 KB
		 * frame is not there, and the copy rightly reaches its callers.) */
		if (strstr(st, "chain_3") && strstr(st, "worker_main") && strncmp(st, "chain_3 ", 8) != 0)
			through += n;
		free(st);
	}
	sqlite3_finalize(s);
	printf("  small-copy: %ld of %ld spin_leaf samples end at chain_3 under [truncated]%s%s; %ld stacks "
	       "through a PLT stub (name@plt)\n", trunc, r.leaf, bad[0] ? "; other: " : "", bad,
	       stubs);
	CHECK(pct(trunc, r.leaf) >= 90, "small copy: %.1f%% end truncated at chain_3 (e.g. %s)",
	      pct(trunc, r.leaf), bad);
	CHECK(named_ok == r.samples, "small copy: %ld of %ld stacks have a frame without a name, or a PLT "
	      "frame not named name@plt (e.g. %s)",
	      r.samples - named_ok, r.samples, unnamed);
	CHECK(through == 0, "small copy: %ld samples reach worker_main through chain_3's 3 KB frame "
	      "with a 1 KiB copy", through);
	CHECK(metric("small-copy", "stallscope_unwind_truncated_total{reason=\"stack_copy\"}") >= trunc / 2,
	      "metric: %lld stacks truncated by the copy for %ld samples",
	      metric("small-copy", "stallscope_unwind_truncated_total{reason=\"stack_copy\"}"), trunc);
	char *note = q_text(d, "SELECT symbol_note FROM frames WHERE function = '[truncated]'");
	CHECK(note[0], "the [truncated] frame has no note");
	free(note);
	sqlite3_close(d);
}

/* Captures of one stalled poll: at least one taken the way reason_like says,
 * whose stack holds the chain `callers` (from the stalled function up to the
 * thread's start). */
static void test_stall(const char *mode, const char *reason_like, const char *callers)
{
	static const char *const s[] = { "STALLSCOPE_UNWIND=auto", "STALLSCOPE_STALL_THRESHOLD_MS=20",
					  "STALLSCOPE_CPU_SAMPLING=0", NULL };
	record(mode, mode, s);
	sqlite3 *d = open_db(mode);
	sqlite3_stmt *st;
	sqlite3_prepare_v2(d, "SELECT kind, reason, callsite_id FROM stall_captures", -1, &st, NULL);
	int total = 0, ok = 0;
	char seen[1500] = "";
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *kind = (const char *)sqlite3_column_text(st, 0);
		const char *reason = (const char *)sqlite3_column_text(st, 1);
		char *stk = stack_of(d, sqlite3_column_int64(st, 2));
		total++;
		int good = reason && strstr(reason, reason_like) && strstr(stk, callers) &&
			   !strstr(stk, "[truncated]");
		ok += good;
		if (!good || !seen[0])
			snprintf(seen, sizeof seen, "%s | %s | %s", kind ? kind : "?", reason ? reason : "?", stk);
		free(stk);
	}
	sqlite3_finalize(st);
	sqlite3_close(d);
	printf("  %s: %d of %d captures %s with the whole chain; e.g. %s\n", mode, ok, total, reason_like, seen);
	CHECK(total >= 1, "%s: no capture", mode);
	CHECK(ok >= 1, "%s: no capture with the chain: %s", mode, seen);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: test_unwind NOFP_CHAIN STALLSCOPE_CLI\n");
		return 2;
	}
	prog = argv[1];
	cli = argv[2];
	snprintf(tmp, sizeof tmp, "/tmp/test_unwind.XXXXXX");
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 1;
	}
	printf("CPU samples:\n");
	test_cpu();
	printf("truncation:\n");
	read_plt_ranges(prog);
	test_truncated();
	printf("stalls:\n");
	test_stall("stall-running", "by signal",
		   "stall_spin <- chain_6 <- chain_5 <- chain_4 <- chain_3 <- chain_2 <- chain_1 <- worker_main");
	test_stall("stall-blocked", "blocked in clock_nanosleep",
		   " <- stall_sleep <- chain_6 <- chain_5 <- chain_4 <- chain_3 <- chain_2 <- chain_1 <- worker_main");
	if (failures) {
		fprintf(stderr, "%d checks failed; recordings left in %s\n", failures, tmp);
		return 1;
	}
	char rmcmd[300];
	snprintf(rmcmd, sizeof rmcmd, "rm -rf '%s'", tmp);
	if (system(rmcmd) != 0)
		return 1;
	printf("all unwinding checks passed\n");
	return 0;
}

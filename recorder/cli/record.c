/*
 * record.c - `stallscope record [options] -- CMD ARGS...` and `stallscope record
 * -p PID`: records a program, whatever it links.
 *
 * A dynamically linked CMD runs with the preload shim (recorder/preload/) in
 * LD_PRELOAD and recording switched on through the STALLSCOPE_* environment: every
 * thread is a lane, waits are parks, event-loop iterations are polls, CPU samples
 * come from inside. A program that links libstallscope and calls the hooks joins
 * the same recording. A statically linked CMD cannot load the shim: it is started
 * stopped (ptrace, only until its exec) and followed from outside like -p PID
 * (recorder/attach/). Ctrl-C and SIGTERM reach CMD; segments it could not seal are
 * sealed here afterwards; CMD's exit status is passed through, and a run that
 * recorded nothing says why and exits non-zero.
 *
 * recorder/cli/ is this command, built as the static library stallscope_record
 * (meson.build): record.c (options, starting or attaching, signals, exit),
 * record_program.c and record_summary.c (record-private.h), and record.h, the one
 * header the `stallscope` command table (viewer/cli/main.c) includes; nothing
 * else may depend on this folder.
 * May depend on recorder/src, recorder/attach, viewer/reader (the summary) and libc.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "attach.h"
#include "record-private.h"
#include "record.h"
#include "recorder-private.h"
#include "shim-abi.h"

#define GRACE_S 10 /* after --duration's SIGINT, how long CMD gets before SIGKILL */

static volatile sig_atomic_t child_pid, stop_flag, last_signal;

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	stop_flag = 1;
	last_signal = sig;
	/* A terminal's Ctrl-C reaches CMD itself (same process group, SI_KERNEL);
	 * a signal sent to us alone (kill, a supervisor) is passed on. */
	if (child_pid > 0 && (!si || si->si_code <= 0))
		kill((pid_t)child_pid, sig);
}

void cmd_record_help(FILE *out)
{
	fputs("usage: stallscope record [OPTIONS] -- CMD [ARGS...]\n"
	      "       stallscope record [OPTIONS] -p PID\n"
	      "\n"
	      "Records CMD, or the running process PID, into DIR/PREFIX.N.bin segments.\n"
	      "\n"
	      "CMD needs no change. A dynamically linked CMD runs with a preload shim that\n"
	      "makes every thread a lane, records waits for work (epoll, poll, select,\n"
	      "io_uring, condition variables, semaphores) as parks and each event-loop\n"
	      "iteration as a poll (watched for stalls), and samples CPU stacks. A program\n"
	      "that calls the stallscope hooks itself joins the same recording. A statically\n"
	      "linked CMD, and -p PID, are recorded from outside: CPU samples, on/off-CPU\n"
	      "switches, mappings and thread names of every thread, no parks or polls.\n"
	      "Ctrl-C stops CMD (or detaches from PID) and seals the segments. The exit status\n"
	      "is CMD's; it is non-zero, with the reason, when nothing could be recorded.\n"
	      "\n"
	      "options:\n"
	      "  -o, --output-dir DIR      where segments go (default: stallscope-trace)\n"
	      "      --prefix NAME         segment file prefix (default: stallscope)\n"
	      "  -s, --max-file-size SIZE  bytes per segment, K/M/G suffixes allowed (100M)\n"
	      "  -n, --rotation-count N    segments kept; budget = SIZE x N (10)\n"
	      "  -t, --rotation-period S   also rotate every S seconds (60)\n"
	      "  -f, --flush-ms MS         longest time an event waits in memory (100)\n"
	      "  -m, --metrics-file FILE   Prometheus textfile, rewritten every 10 s\n"
	      "      --hz N                CPU samples per second per thread (999)\n"
	      "      --offcpu-stacks auto|on|all|off\n"
	      "                            a stack at each switch-out inside a poll (needs kernel\n"
	      "                            samples; every switch-out where BPF is refused, or all)\n"
	      "      --unwind fp|dwarf|auto\n"
	      "                            how sampled stacks are unwound (STALLSCOPE_UNWIND)\n"
	      "      --duration S          stop after S seconds (CMD gets SIGINT, as Ctrl-C;\n"
	      "                            with -p, detach)\n"
	      "      --hooks auto|preload|none\n"
	      "                            preload: the shim (dynamic programs only); none: only\n"
	      "                            what CMD records itself; auto (default): preload for\n"
	      "                            dynamic programs, from outside for static ones\n"
	      "      --follow-children     forked and executed children record too, each into\n"
	      "                            DIR/PREFIX-PID.N.bin (a recording per process)\n"
	      "  -p, --pid PID             record the running process PID from outside\n"
	      "  -h, --help                this text\n"
	      "\n"
	      "Options set the STALLSCOPE_* variable of the same meaning for CMD; other\n"
	      "STALLSCOPE_* variables already in the environment are passed through.\n",
	      out);
}

struct opt {
	const char *s, *l, *var;
};

static const struct opt opts[] = {
	{"-o", "--output-dir", "STALLSCOPE_OUTPUT_DIR"},
	{NULL, "--prefix", "STALLSCOPE_FILE_PREFIX"},
	{"-s", "--max-file-size", "STALLSCOPE_MAX_FILE_SIZE"},
	{"-n", "--rotation-count", "STALLSCOPE_ROTATION_COUNT"},
	{"-t", "--rotation-period", "STALLSCOPE_ROTATION_PERIOD_S"},
	{"-f", "--flush-ms", "STALLSCOPE_FLUSH_INTERVAL_MS"},
	{"-m", "--metrics-file", "STALLSCOPE_METRICS_FILE"},
	{NULL, "--hz", "STALLSCOPE_SAMPLE_HZ"},
	{NULL, "--offcpu-stacks", "STALLSCOPE_OFFCPU_STACKS"},
	{NULL, "--unwind", "STALLSCOPE_UNWIND"},
	/* not variables */
	{NULL, "--duration", NULL},
	{NULL, "--hooks", NULL},
	{"-p", "--pid", NULL},
};
enum { OPT_DURATION = 10, OPT_HOOKS, OPT_PID, NOPTS };

enum hooks { HOOKS_AUTO, HOOKS_PRELOAD, HOOKS_NONE };

struct run {
	const char *dir, *prefix;
	enum hooks hooks;
	int follow;
	double duration;
	pid_t pid;                 /* -p */
	enum ss_unwind_req unwind;
	struct stallscope_config cfg;
	uint64_t since;
};

static int fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("stallscope record: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return code;
}

static int mkdir_p(const char *path)
{
	char buf[4096];
	if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
		return errno = ENAMETOOLONG, -1;
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, 0750) != 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(buf, 0750) != 0 && errno != EEXIST ? -1 : 0;
}

/* The option a variable came from, for messages about its value. */
static const char *option_of(const char *msg)
{
	for (int k = 0; k < OPT_DURATION; k++)
		if (opts[k].var && strstr(msg, opts[k].var))
			return opts[k].s ? opts[k].s : opts[k].l;
	return NULL;
}

static int parse_duration(const char *v, double *out)
{
	char *end;
	errno = 0;
	double d = strtod(v, &end);
	if (errno || end == v || *end || !(d > 0) || d > 86400.0 * 365)
		return -1;
	*out = d;
	return 0;
}

static int parse_args(int argc, char **argv, struct run *r, int *cmd_index)
{
	int i = 1;
	for (; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			cmd_record_help(stdout);
			return -2;
		}
		if (!strcmp(a, "--follow-children")) {
			r->follow = 1;
			continue;
		}
		if (a[0] != '-')
			break; /* the command itself, without "--" */
		int k = 0;
		const char *val = NULL;
		for (; k < NOPTS; k++) {
			size_t ll = strlen(opts[k].l);
			if ((opts[k].s && !strcmp(a, opts[k].s)) || !strcmp(a, opts[k].l)) {
				if (i + 1 >= argc)
					return fail(SS_RECORD_EXIT_USAGE, "%s needs a value", a), -1;
				val = argv[++i];
				break;
			}
			if (!strncmp(a, opts[k].l, ll) && a[ll] == '=') {
				val = a + ll + 1;
				break;
			}
		}
		if (k == NOPTS)
			return fail(SS_RECORD_EXIT_USAGE, "unknown option '%s'; see 'stallscope record --help'",
				    a), -1;
		if (k == OPT_DURATION) {
			if (parse_duration(val, &r->duration) != 0)
				return fail(SS_RECORD_EXIT_USAGE, "--duration %s: not a number of seconds "
					    "above 0", val), -1;
		} else if (k == OPT_HOOKS) {
			if (!strcmp(val, "auto"))
				r->hooks = HOOKS_AUTO;
			else if (!strcmp(val, "preload"))
				r->hooks = HOOKS_PRELOAD;
			else if (!strcmp(val, "none"))
				r->hooks = HOOKS_NONE;
			else
				return fail(SS_RECORD_EXIT_USAGE, "--hooks %s: use auto, preload or none",
					    val), -1;
		} else if (k == OPT_PID) {
			char *end;
			long p = strtol(val, &end, 10);
			if (*end || end == val || p <= 0 || p > 0x7fffffff)
				return fail(SS_RECORD_EXIT_USAGE, "-p %s: not a process id", val), -1;
			r->pid = (pid_t)p;
		} else {
			if (!strcmp(opts[k].l, "--unwind")) {
				if (!strcmp(val, "fp"))
					r->unwind = SS_UNWIND_REQ_FP;
				else if (!strcmp(val, "dwarf"))
					r->unwind = SS_UNWIND_REQ_DWARF;
				else if (!strcmp(val, "auto"))
					r->unwind = SS_UNWIND_REQ_AUTO;
				else
					return fail(SS_RECORD_EXIT_USAGE, "--unwind %s: use fp, dwarf or auto",
						    val), -1;
			}
			setenv(opts[k].var, val, 1);
			if (k == 0)
				r->dir = val;
			if (k == 1)
				r->prefix = val;
		}
	}
	*cmd_index = i;
	return 0;
}

static void print_summary(const struct run *r, const struct ss_run_summary *s, const char *mode)
{
	fprintf(stderr, "stallscope record: %s: %llu thread%s, %llu parks, %llu loop iterations "
		"or polls, %llu CPU samples, %llu switches, %llu stalls in %u recording%s\n", mode,
		(unsigned long long)s->threads, s->threads == 1 ? "" : "s",
		(unsigned long long)s->parks, (unsigned long long)s->polls,
		(unsigned long long)s->samples, (unsigned long long)s->switches,
		(unsigned long long)s->stalls, s->recordings, s->recordings == 1 ? "" : "s");
	fprintf(stderr, "stallscope record: %u segment%s%s, %.1f MiB in %s\n", s->segments,
		s->segments == 1 ? "" : "s",
		s->active_segments ? " (some unsealed: a process is still running)" : "",
		(double)s->bytes / 1048576.0, s->files);
	if (s->sampler[0])
		fprintf(stderr, "stallscope record: sampler: %s\n", s->sampler);
	int sampling = !strncmp(s->sampler, "perf", 4) || !strncmp(s->sampler, "timer", 5);
	if (!s->samples)
		fprintf(stderr, "stallscope record: no CPU samples were recorded (%s)\n",
			sampling ? "its threads used less CPU time than one sample period"
				 : "the sampler line says why");
	fprintf(stderr, "stallscope record: inspect with: stallscope import %s -o trace.db\n",
		r->dir);
}

static int recorded_nothing(const struct ss_run_summary *s)
{
	return !s->segments || (!s->events && !s->samples && !s->switches);
}

/* ---- -p PID -------------------------------------------------------------------- */

/* Our child waits, stopped at its exec, until its threads are followed. */
static void release_child(pid_t pid)
{
	ptrace(PTRACE_DETACH, pid, NULL, NULL);
}

static int run_attach(struct run *r, pid_t pid, int reap, int *child_status, const char *mode)
{
	struct ss_attach_config ac = {
		.pid = pid, .rec = r->cfg, .unwind = r->unwind, .duration_s = r->duration,
		.stop = &stop_flag, .reap_child = reap, .child_status = child_status,
		.started = reap ? release_child : NULL,
	};
	struct ss_attach_result res;
	char err[512];
	if (ss_attach_run(&ac, &res, err, sizeof err) != 0)
		return fail(SS_RECORD_EXIT_USAGE, "nothing was recorded: %s", err);
	if (!reap)
		fprintf(stderr, "stallscope record: %s process %d; it keeps running as it was\n",
			res.target_ended ? "followed until the end of" : "detached from", (int)pid);
	struct ss_run_summary s;
	ss_run_summarise(r->dir, r->prefix, r->since, &s);
	if (res.status[0])
		snprintf(s.sampler, sizeof s.sampler, "%s", res.status);
	print_summary(r, &s, mode);
	if (res.threads_refused)
		fprintf(stderr, "stallscope record: %u thread%s could not be followed (see the "
			"sampler line)\n", res.threads_refused, res.threads_refused == 1 ? "" : "s");
	if (!res.threads)
		return fail(SS_RECORD_EXIT_USAGE, "nothing was recorded from process %d: none of its "
			    "threads could be followed", (int)pid);
	return SS_RECORD_EXIT_OK;
}

/* ---- -- CMD ----------------------------------------------------------------------- */

static int exit_code(int status, const char *cmd)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status)) {
		fprintf(stderr, "stallscope record: %s was killed by signal %d (%s)\n", cmd,
			WTERMSIG(status), strsignal(WTERMSIG(status)));
		return 128 + WTERMSIG(status);
	}
	return SS_RECORD_EXIT_USAGE;
}

/* Waits for CMD, ending it when --duration is over: SIGINT as Ctrl-C would, and
 * SIGKILL if it still runs GRACE_S later. */
static int wait_child(pid_t pid, double duration)
{
	uint64_t t0 = ss_now();
	uint64_t until = duration > 0 ? t0 + (uint64_t)(duration * 1e9) : UINT64_MAX;
	int sent = 0, status = 0;
	for (;;) {
		pid_t w = waitpid(pid, &status, duration > 0 ? WNOHANG : 0);
		if (w == pid)
			return status;
		if (w < 0 && errno != EINTR)
			return 0;
		if (duration <= 0)
			continue;
		uint64_t now = ss_now();
		if (!sent && now >= until) {
			kill(pid, SIGINT);
			sent = 1;
		} else if (sent == 1 && now >= until + GRACE_S * 1000000000ull) {
			fprintf(stderr, "stallscope record: still running %d s after SIGINT: killing it\n",
				GRACE_S);
			kill(pid, SIGKILL);
			sent = 2;
		}
		struct timespec ts = { 0, 5000000 };
		nanosleep(&ts, NULL);
	}
}

static void exec_child(const struct ss_prog_info *pi, char **argv, int traced)
{
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	signal(SIGQUIT, SIG_DFL);
	char v[24];
	snprintf(v, sizeof v, "%d", (int)getpid());
	setenv(SS_SHIM_ENV_ROOT_PID, v, 1);
	if (traced && ptrace(PTRACE_TRACEME, 0, NULL, NULL) != 0) {
		fprintf(stderr, "stallscope record: cannot start %s stopped for recording from "
			"outside: ptrace: %s\n", argv[0], strerror(errno));
		_exit(126);
	}
	execv(pi->path, argv);
	int e = errno;
	fprintf(stderr, "stallscope record: cannot run %s: %s\n", argv[0], strerror(e));
	_exit(e == ENOENT ? 127 : 126);
}

static int run_command(struct run *r, char **argv)
{
	struct ss_prog_info pi;
	if (ss_prog_inspect(argv[0], &pi) != 0) {
		int e = errno;
		fprintf(stderr, "stallscope record: cannot run %s: %s\n", argv[0], strerror(e));
		return e == ENOENT ? 127 : 126;
	}
	enum hooks h = r->hooks;
	int outside = 0;
	const char *what = pi.interp[0] ? pi.interp : pi.path;
	if (pi.setuid && h != HOOKS_NONE)
		return fail(SS_RECORD_EXIT_USAGE, "%s is set-user-ID or set-group-ID: the loader ignores "
			    "LD_PRELOAD for it (secure execution). Run it as its owner, or with "
			    "--hooks none if it records itself", what);
	if (pi.kind == SS_PROG_STATIC) {
		if (h == HOOKS_PRELOAD)
			return fail(SS_RECORD_EXIT_USAGE, "%s is statically linked: the loader cannot preload "
				    "the shim into it. Use --hooks auto to record it from outside (CPU "
				    "samples, switches and mappings; no parks or loop iterations)",
				    what);
		if (h == HOOKS_AUTO) {
			fprintf(stderr, "stallscope record: %s is statically linked, so the preload "
				"shim cannot load into it: recording it from outside instead. Recorded: "
				"CPU samples, on/off-CPU switches, mappings and names of every thread. "
				"Not recorded: parks, loop iterations and stalls (they need the shim or "
				"the program's own hooks)\n", what);
			outside = 1;
		}
	} else if (h == HOOKS_AUTO) {
		h = HOOKS_PRELOAD;
	}
	static char shim[4096], mode_buf[4200];
	if (h == HOOKS_PRELOAD && !outside) {
		char tried[8192];
		if (ss_preload_find(shim, sizeof shim, tried, sizeof tried) != 0)
			return fail(SS_RECORD_EXIT_USAGE, "cannot find libstallscope_preload.so (tried %s); "
				    "is stallscope installed completely?", tried);
		const char *old = getenv("LD_PRELOAD");
		char *v = malloc(strlen(shim) + (old ? strlen(old) : 0) + 2);
		if (!v)
			return fail(SS_RECORD_EXIT_USAGE, "out of memory");
		sprintf(v, "%s%s%s", shim, old && *old ? ":" : "", old && *old ? old : "");
		setenv("LD_PRELOAD", v, 1);
		free(v);
	}
	if (r->follow)
		setenv(SS_SHIM_ENV_FOLLOW, "1", 1);
	else
		unsetenv(SS_SHIM_ENV_FOLLOW);
	if (outside)
		unsetenv("STALLSCOPE_ENABLED"); /* recorded from here, not by itself too */

	pid_t pid = fork();
	if (pid < 0)
		return fail(SS_RECORD_EXIT_USAGE, "cannot start %s: %s", argv[0], strerror(errno));
	if (pid == 0)
		exec_child(&pi, argv, outside);
	child_pid = pid;

	int status = 0;
	snprintf(mode_buf, sizeof mode_buf, "preload shim %s", shim);
	const char *mode = h == HOOKS_PRELOAD ? mode_buf : h == HOOKS_NONE ? "own hooks" : "";
	if (outside) {
		/* Stopped at its exec: the perf events exist before its first instruction. */
		int st;
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		if (!WIFSTOPPED(st))
			return exit_code(st, argv[0]);
		status = -1;
		int rc = run_attach(r, pid, 1, &status, "from outside");
		if (status == -1) {
			/* The attachment failed before the program ran: let it go. */
			ptrace(PTRACE_DETACH, pid, NULL, NULL);
			status = wait_child(pid, r->duration);
		}
		child_pid = 0;
		int code = exit_code(status, argv[0]);
		return code ? code : rc;
	}
	status = wait_child(pid, r->duration);
	child_pid = 0;
	ss_run_repair(r->dir, &r->cfg);
	struct ss_run_summary s;
	ss_run_summarise(r->dir, r->prefix, r->since, &s);
	int code = exit_code(status, argv[0]);
	if (recorded_nothing(&s)) {
		if (h == HOOKS_NONE)
			fprintf(stderr, "stallscope record: nothing was recorded: %s did not start the "
				"recorder (with --hooks none it must link libstallscope and call "
				"stallscope_start_from_env(); leave --hooks at auto to record any "
				"dynamically linked program)\n", argv[0]);
		else if (s.segments)
			fprintf(stderr, "stallscope record: nothing was recorded: %s ended before its "
				"recorder wrote anything\n", argv[0]);
		else
			fprintf(stderr, "stallscope record: nothing was recorded: the recorder did not "
				"start in %s (its messages above say why)\n", argv[0]);
		return code ? code : SS_RECORD_EXIT_USAGE;
	}
	print_summary(r, &s, mode);
	return code;
}

int cmd_record(int argc, char **argv)
{
	struct run r = { .dir = getenv("STALLSCOPE_OUTPUT_DIR"),
			 .prefix = getenv("STALLSCOPE_FILE_PREFIX") };
	int ci = 0;
	int pr = parse_args(argc, argv, &r, &ci);
	if (pr == -2)
		return SS_RECORD_EXIT_OK;
	if (pr != 0)
		return SS_RECORD_EXIT_USAGE;
	if (r.pid && ci < argc)
		return fail(SS_RECORD_EXIT_USAGE, "give either -p PID or a command, not both");
	if (!r.pid && ci >= argc)
		return fail(SS_RECORD_EXIT_USAGE, "no command given; see 'stallscope record --help'");
	if (r.pid && (r.follow || r.hooks != HOOKS_AUTO))
		return fail(SS_RECORD_EXIT_USAGE, "--hooks and --follow-children need a command: a "
			    "running process is recorded from outside");
	if (!r.dir || !*r.dir) {
		r.dir = "stallscope-trace";
		setenv("STALLSCOPE_OUTPUT_DIR", r.dir, 1);
	}
	if (!r.prefix || !*r.prefix)
		r.prefix = "stallscope";
	setenv("STALLSCOPE_ENABLED", "1", 1);

	/* The values CMD's recorder will read, checked now as it would check them. */
	char err[512] = "";
	if (ss_config_from_env(&r.cfg, err, sizeof err) < 0) {
		const char *o = option_of(err);
		return fail(SS_RECORD_EXIT_USAGE, "%s%s%s%s; nothing was run", err, o ? " (from " : "",
			    o ? o : "", o ? ")" : "");
	}
	if (mkdir_p(r.dir) != 0)
		return fail(SS_RECORD_EXIT_USAGE, "cannot create output directory %s: %s", r.dir,
			    strerror(errno));
	if (access(r.dir, W_OK | X_OK) != 0)
		return fail(SS_RECORD_EXIT_USAGE, "output directory %s is not writable: %s", r.dir,
			    strerror(errno));

	struct sigaction sa = {.sa_sigaction = on_signal, .sa_flags = SA_SIGINFO | SA_RESTART};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGQUIT, &sa, NULL);
	r.since = ss_now();
	if (r.pid)
		return run_attach(&r, r.pid, 0, NULL, "from outside");
	return run_command(&r, argv + ci);
}

/*
 * record.c - `stallscope record [options] -- CMD ARGS...`: runs a program that links
 * libstallscope with recording switched on through the STALLSCOPE_* environment
 * (the program calls stallscope_start_from_env()), forwards Ctrl-C and SIGTERM to
 * it so it can stop cleanly and seal its last segment, then says what was written.
 * The exit status is the program's.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "commands.h"

static volatile sig_atomic_t child_pid;

static void forward(int sig)
{
	if (child_pid > 0)
		kill((pid_t)child_pid, sig);
}

void cmd_record_help(FILE *out)
{
	fputs("usage: stallscope record [OPTIONS] -- CMD [ARGS...]\n"
	      "\n"
	      "Runs CMD with stallscope recording enabled. CMD must link libstallscope and call\n"
	      "stallscope_start_from_env() (the example runtime does). Segments are written to\n"
	      "DIR/PREFIX.N.bin; Ctrl-C is passed to CMD so it can stop and seal them.\n"
	      "\n"
	      "options (each sets the STALLSCOPE_* variable of the same name):\n"
	      "  -o, --output-dir DIR      where segments go (default: stallscope-trace)\n"
	      "  -p, --prefix NAME         segment file prefix (default: stallscope)\n"
	      "  -s, --max-file-size SIZE  bytes per segment, K/M/G suffixes allowed (100M)\n"
	      "  -n, --rotation-count N    segments kept; budget = SIZE x N (10)\n"
	      "  -t, --rotation-period S   also rotate every S seconds (60)\n"
	      "  -f, --flush-ms MS         longest time an event waits in memory (100)\n"
	      "  -m, --metrics-file FILE   Prometheus textfile, rewritten every 10 s\n"
	      "  -h, --help                this text\n"
	      "\n"
	      "Other STALLSCOPE_* variables already in the environment are passed through.\n",
	      out);
}

struct opt {
	const char *s, *l, *var;
};

static const struct opt opts[] = {
	{"-o", "--output-dir", "STALLSCOPE_OUTPUT_DIR"},
	{"-p", "--prefix", "STALLSCOPE_FILE_PREFIX"},
	{"-s", "--max-file-size", "STALLSCOPE_MAX_FILE_SIZE"},
	{"-n", "--rotation-count", "STALLSCOPE_ROTATION_COUNT"},
	{"-t", "--rotation-period", "STALLSCOPE_ROTATION_PERIOD_S"},
	{"-f", "--flush-ms", "STALLSCOPE_FLUSH_INTERVAL_MS"},
	{"-m", "--metrics-file", "STALLSCOPE_METRICS_FILE"},
};

/* Counts this prefix's segments in dir and their bytes. */
static void summarise(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	if (!d) {
		fprintf(stderr, "stallscope record: no segments: %s: %s\n", dir, strerror(errno));
		return;
	}
	size_t pl = strlen(prefix), sealed = 0, active = 0;
	unsigned long long bytes = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, prefix, pl) != 0 || de->d_name[pl] != '.')
			continue;
		const char *tail = strstr(de->d_name + pl, ".bin");
		if (!tail)
			continue;
		struct stat st;
		if (fstatat(dirfd(d), de->d_name, &st, 0) != 0)
			continue;
		if (!strcmp(tail, ".bin"))
			sealed++;
		else if (!strcmp(tail, ".bin.active"))
			active++;
		else
			continue;
		bytes += (unsigned long long)st.st_size;
	}
	closedir(d);
	if (!sealed && !active) {
		fprintf(stderr, "stallscope record: no segments were written to %s. Does the program "
			"link libstallscope and call stallscope_start_from_env()?\n", dir);
		return;
	}
	fprintf(stderr, "stallscope record: %zu sealed segment%s%s, %.1f MiB in %s/%s.*.bin\n",
		sealed, sealed == 1 ? "" : "s",
		active ? " (and an unsealed .active one: the program did not stop cleanly)" : "",
		(double)bytes / 1048576.0, dir, prefix);
	fprintf(stderr, "stallscope record: inspect with: stallscope dump --summary %s/%s.*.bin\n",
		dir, prefix);
}

int cmd_record(int argc, char **argv)
{
	const char *dir = getenv("STALLSCOPE_OUTPUT_DIR");
	const char *prefix = getenv("STALLSCOPE_FILE_PREFIX");
	int i = 1;
	for (; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			cmd_record_help(stdout);
			return SS_EXIT_OK;
		}
		if (a[0] != '-')
			break; /* the command itself, without "--" */
		size_t k = 0, n = sizeof opts / sizeof opts[0];
		const char *val = NULL;
		for (; k < n; k++) {
			size_t ll = strlen(opts[k].l);
			if (!strcmp(a, opts[k].s) || !strcmp(a, opts[k].l)) {
				if (i + 1 >= argc) {
					fprintf(stderr, "stallscope record: %s needs a value\n", a);
					return SS_EXIT_USAGE;
				}
				val = argv[++i];
				break;
			}
			if (!strncmp(a, opts[k].l, ll) && a[ll] == '=') {
				val = a + ll + 1;
				break;
			}
		}
		if (k == n) {
			fprintf(stderr, "stallscope record: unknown option '%s'; see 'stallscope record --help'\n", a);
			return SS_EXIT_USAGE;
		}
		setenv(opts[k].var, val, 1);
		if (k == 0)
			dir = val;
		if (k == 1)
			prefix = val;
	}
	if (i >= argc) {
		fprintf(stderr, "stallscope record: no command given; see 'stallscope record --help'\n");
		return SS_EXIT_USAGE;
	}
	if (!dir || !*dir) {
		dir = "stallscope-trace";
		setenv("STALLSCOPE_OUTPUT_DIR", dir, 1);
	}
	if (!prefix || !*prefix)
		prefix = "stallscope";
	setenv("STALLSCOPE_ENABLED", "1", 1);

	struct sigaction sa = {.sa_handler = forward};
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "stallscope record: cannot start %s: %s\n", argv[i], strerror(errno));
		return SS_EXIT_USAGE;
	}
	if (pid == 0) {
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		execvp(argv[i], argv + i);
		fprintf(stderr, "stallscope record: cannot run %s: %s\n", argv[i], strerror(errno));
		_exit(127);
	}
	child_pid = pid;
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	summarise(dir, prefix);
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status)) {
		fprintf(stderr, "stallscope record: %s was killed by signal %d\n", argv[i], WTERMSIG(status));
		return 128 + WTERMSIG(status);
	}
	return SS_EXIT_USAGE;
}

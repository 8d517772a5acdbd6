/*
 * archive.c - STALLSCOPE_ARCHIVE_COMMAND: ships sealed segments off the host the
 * way PostgreSQL's archiver ships WAL files. A thread of its own (never the
 * hook path, never the writer) runs the command for one segment at a time,
 * oldest first, through /bin/sh started with posix_spawn, in a process group of
 * its own so that a command past its time limit is killed with everything it
 * started. Exit status 0 means shipped: the segment gets a marker,
 * PREFIX.N.bin.shipped, beside it (so a restart ships nothing twice, and the
 * writer's eviction deletes shipped segments first). Anything else is counted
 * and the same segment is tried again after 1 s, 2 s, 4 s ... up to 60 s.
 *
 * The thread finds its work by listing the directory (woken by each seal, else
 * every few seconds), so segments sealed by an earlier run of the program, or
 * recovered at start, are shipped too. At stop it gets a last few seconds to
 * ship what is left; whatever is still pending then is shipped by the next run
 * that records into the same directory.
 *
 * The command's environment is the program's without STALLSCOPE_* and without
 * a stallscope preload shim, so the transfer tool is not itself recorded.
 */
#include "recorder-private.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define BACKOFF_FIRST_NS 1000000000ull
#define BACKOFF_MAX_NS 60000000000ull
#define RESCAN_NS 5000000000ull
/* What stop leaves for shipping the last segments (at most the time limit). */
#define FINAL_PASS_NS 5000000000ull

static struct {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int running, kicked, started;
	char *dir, *prefix, *command, *host;
	uint64_t timeout_ns;
	uint64_t retry_at, backoff;
	/* 0 while recording; the end of the final pass (set by stop while a
	 * command may be running). */
	_Atomic uint64_t stop_deadline;
} ar;

static uint64_t now_real_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec;
}

/* ---- markers -------------------------------------------------------------------- */

static int marker_path(const char *seg, char *out, size_t len)
{
	int n = snprintf(out, len, "%s.shipped", seg);
	return n > 0 && (size_t)n < len ? 0 : -1;
}

/* Shipped: a marker at least as new as the segment (a segment of the same name
 * written later, after the directory was cleaned, is not shipped). */
SS_INTERNAL int ss_archive_is_shipped(const char *seg)
{
	char m[PATH_MAX];
	struct stat a, b;
	if (marker_path(seg, m, sizeof m) != 0 || stat(m, &b) != 0 || stat(seg, &a) != 0)
		return 0;
	return b.st_mtim.tv_sec > a.st_mtim.tv_sec ||
	       (b.st_mtim.tv_sec == a.st_mtim.tv_sec && b.st_mtim.tv_nsec >= a.st_mtim.tv_nsec);
}

SS_INTERNAL void ss_archive_forget(const char *seg)
{
	char m[PATH_MAX];
	if (marker_path(seg, m, sizeof m) == 0)
		unlink(m);
}

static void mark_shipped(const char *seg)
{
	char m[PATH_MAX];
	if (marker_path(seg, m, sizeof m) != 0)
		return;
	int fd = open(m, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0640);
	if (fd < 0) {
		ss_log("archive: cannot write %s: %m; the segment may be shipped again", m);
		atomic_fetch_add(&ss_counters.errors, 1);
		return;
	}
	/* The marker must not predate the segment's last change (coarse clocks). */
	futimens(fd, NULL);
	close(fd);
}

/* ---- the command ---------------------------------------------------------------- */

/* The command with %p, %f, %h and %% replaced; NULL when it does not fit. */
static char *expand(const char *path)
{
	const char *file = strrchr(path, '/');
	file = file ? file + 1 : path;
	size_t cap = strlen(ar.command) * 2 + 4 * (strlen(path) + strlen(ar.host)) + 64, n = 0;
	char *out = malloc(cap);
	if (!out)
		return NULL;
	for (const char *c = ar.command; *c; c++) {
		const char *ins = NULL;
		char one[2] = { *c, 0 };
		if (*c == '%' && c[1]) {
			c++;
			ins = *c == 'p' ? path : *c == 'f' ? file : *c == 'h' ? ar.host : *c == '%' ? "%" : NULL;
			if (!ins) {
				one[0] = '%';
				ins = one; /* unknown: kept, as PostgreSQL does */
				c--;
			}
		} else {
			ins = one;
		}
		size_t k = strlen(ins);
		if (n + k + 1 > cap) {
			char *grown = realloc(out, cap * 2 + k);
			if (!grown) {
				free(out);
				return NULL;
			}
			out = grown;
			cap = cap * 2 + k;
		}
		memcpy(out + n, ins, k);
		n += k;
	}
	out[n] = 0;
	return out;
}

static int keep_env(const char *e)
{
	if (strncmp(e, "STALLSCOPE_", 11) == 0)
		return 0;
	if (strncmp(e, "LD_PRELOAD=", 11) == 0 && strstr(e, "stallscope"))
		return 0;
	return 1;
}

/* Runs the command for one segment within deadline (CLOCK_MONOTONIC). Returns
 * 0 shipped, 1 failed, 2 killed at the time limit, 3 killed because recording
 * stopped (not the command's failure: it stays pending, uncounted). */
static int run_one(const char *path, uint64_t deadline)
{
	char *cmd = expand(path);
	size_t ne = 0;
	for (char **e = environ; e && *e; e++)
		ne++;
	char **env = calloc(ne + 1, sizeof *env);
	if (!cmd || !env) {
		free(cmd);
		free(env);
		return 1;
	}
	size_t k = 0;
	for (char **e = environ; e && *e; e++)
		if (keep_env(*e))
			env[k++] = *e;
	posix_spawnattr_t at;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_init(&at);
	posix_spawn_file_actions_init(&fa);
	/* Its own process group (to kill it whole), default signal dispositions
	 * and an empty mask whatever the program set, stdin from /dev/null. */
	sigset_t none, all;
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	posix_spawnattr_setpgroup(&at, 0);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	char sh[] = "sh", dash_c[] = "-c";
	char *argv[] = { sh, dash_c, cmd, NULL };
	pid_t pid;
	int rc = posix_spawn(&pid, "/bin/sh", &fa, &at, argv, env);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	free(env);
	if (rc != 0) {
		ss_log("archive: cannot start /bin/sh: %s", strerror(rc));
		free(cmd);
		return 1;
	}
	int status = 0, result = 1;
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid) {
			result = WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
			if (result)
				ss_log("archive: '%s' %s %d", cmd, WIFEXITED(status) ? "exited with status" : "died of signal",
				       WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
			break;
		}
		if (w < 0 && errno != EINTR) {
			/* Reaped by someone else (a SIGCHLD handler of the program): the
			 * outcome is unknown, so the segment is tried again. */
			ss_log("archive: lost track of '%s': %m", cmd);
			break;
		}
		uint64_t stop = atomic_load(&ar.stop_deadline);
		bool stopping = stop && ss_now() >= stop;
		if (ss_now() >= deadline || stopping) {
			kill(-pid, SIGKILL);
			waitpid(pid, &status, 0);
			if (stopping && ss_now() < deadline)
				ss_log("archive: '%s' killed at stop, unfinished: the next run into this"
				       " directory ships the segment", cmd);
			else
				ss_log("archive: '%s' killed at its time limit", cmd);
			result = stopping && ss_now() < deadline ? 3 : 2;
			break;
		}
		struct timespec ts = { 0, 10000000 };
		nanosleep(&ts, NULL);
	}
	free(cmd);
	return result;
}

/* ---- the directory --------------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The sealed segments' numbers, ascending; markers whose segment is gone are
 * removed on the way. Returns the count (caller frees *out). */
static size_t list_sealed(uint64_t **out)
{
	*out = NULL;
	DIR *d = opendir(ar.dir);
	if (!d)
		return 0;
	size_t n = 0, cap = 0, pl = strlen(ar.prefix);
	uint64_t *v = NULL;
	struct dirent *e;
	while ((e = readdir(d))) {
		const char *s = e->d_name;
		if (strncmp(s, ar.prefix, pl) != 0 || s[pl] != '.' || s[pl + 1] < '0' || s[pl + 1] > '9')
			continue;
		char *end;
		uint64_t seq = strtoull(s + pl + 1, &end, 10);
		if (strcmp(end, ".bin.shipped") == 0) {
			char seg[PATH_MAX];
			struct stat st;
			if (snprintf(seg, sizeof seg, "%s/%.*s", ar.dir, (int)(strlen(s) - 8), s) < (int)sizeof seg &&
			    stat(seg, &st) != 0 && errno == ENOENT) {
				char m[PATH_MAX];
				if (snprintf(m, sizeof m, "%s/%s", ar.dir, s) < (int)sizeof m)
					unlink(m);
			}
			continue;
		}
		if (strcmp(end, ".bin") != 0)
			continue;
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 64;
			uint64_t *nv = realloc(v, nc * sizeof *nv);
			if (!nv)
				break;
			v = nv;
			cap = nc;
		}
		v[n++] = seq;
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof *v, cmp_u64);
	*out = v;
	return n;
}

static void seg_name(uint64_t seq, char *out, size_t len)
{
	snprintf(out, len, "%s/%s.%llu.bin", ar.dir, ar.prefix, (unsigned long long)seq);
}

/* One pass: ships pending segments in order until one fails or time is up.
 * Returns 1 when it shipped something and should look again at once. */
static int pass(void)
{
	uint64_t *seqs;
	size_t n = list_sealed(&seqs);
	uint64_t pending = 0;
	size_t first = n;
	char path[PATH_MAX];
	for (size_t i = 0; i < n; i++) {
		seg_name(seqs[i], path, sizeof path);
		if (!ss_archive_is_shipped(path)) {
			pending++;
			if (first == n)
				first = i;
		}
	}
	atomic_store(&ss_counters.archive_pending, pending);
	int again = 0;
	uint64_t now = ss_now();
	uint64_t stop = atomic_load(&ar.stop_deadline);
	if (first < n && (stop || now >= ar.retry_at)) {
		seg_name(seqs[first], path, sizeof path);
		uint64_t deadline = now + ar.timeout_ns;
		int r = run_one(path, deadline);
		if (r == 0) {
			mark_shipped(path);
			atomic_fetch_add(&ss_counters.archive_shipped, 1);
			atomic_store(&ss_counters.archive_last_success_s, now_real_s());
			atomic_store(&ss_counters.archive_pending, pending - 1);
			ar.backoff = 0;
			again = 1;
		} else if (r != 3) {
			atomic_fetch_add(&ss_counters.archive_failed, 1);
			if (r == 2)
				atomic_fetch_add(&ss_counters.archive_timeouts, 1);
			ar.backoff = ar.backoff ? ar.backoff * 2 : BACKOFF_FIRST_NS;
			if (ar.backoff > BACKOFF_MAX_NS)
				ar.backoff = BACKOFF_MAX_NS;
			ar.retry_at = ss_now() + ar.backoff;
		}
	}
	free(seqs);
	return again;
}

static void *archive_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "ss-archive");
	for (;;) {
		int again = pass();
		pthread_mutex_lock(&ar.mu);
		if (!ar.running) {
			pthread_mutex_unlock(&ar.mu);
			break;
		}
		if (!again && !ar.kicked) {
			uint64_t now = ss_now(), wake = now + RESCAN_NS;
			if (ar.retry_at > now && ar.retry_at < wake)
				wake = ar.retry_at;
			struct timespec ts = { (time_t)(wake / 1000000000u), (long)(wake % 1000000000u) };
			pthread_cond_timedwait(&ar.cv, &ar.mu, &ts);
		}
		ar.kicked = 0;
		pthread_mutex_unlock(&ar.mu);
	}
	/* The final pass: what is left, while the stop's time lasts, no retries. */
	while (ss_now() < atomic_load(&ar.stop_deadline) && pass())
		;
	return NULL;
}

SS_INTERNAL int ss_archive_start(const char *dir, const char *prefix, const char *command, uint32_t timeout_s,
				 const char *host)
{
	memset(&ar, 0, sizeof ar);
	ar.dir = strdup(dir);
	ar.prefix = strdup(prefix);
	ar.command = strdup(command);
	ar.host = strdup(host && *host ? host : "localhost");
	ar.timeout_ns = (uint64_t)(timeout_s ? timeout_s : 300) * 1000000000u;
	if (!ar.dir || !ar.prefix || !ar.command || !ar.host)
		goto fail;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&ar.cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&ar.mu, NULL);
	ar.running = 1;
	atomic_store(&ss_counters.archive_enabled, 1u);
	if (pthread_create(&ar.thread, NULL, archive_main, NULL) != 0) {
		pthread_mutex_destroy(&ar.mu);
		pthread_cond_destroy(&ar.cv);
		goto fail;
	}
	ar.started = 1;
	return 0;
fail:
	ss_log("archive: cannot start the archiver; segments stay on this host");
	atomic_fetch_add(&ss_counters.errors, 1);
	atomic_store(&ss_counters.archive_enabled, 0u);
	free(ar.dir);
	free(ar.prefix);
	free(ar.command);
	free(ar.host);
	memset(&ar, 0, sizeof ar);
	return -1;
}

SS_INTERNAL int ss_archive_enabled(void)
{
	return ar.started;
}

SS_INTERNAL void ss_archive_kick(void)
{
	if (!ar.started)
		return;
	pthread_mutex_lock(&ar.mu);
	ar.kicked = 1;
	pthread_cond_signal(&ar.cv);
	pthread_mutex_unlock(&ar.mu);
}

SS_INTERNAL void ss_archive_stop(void)
{
	if (!ar.started)
		return;
	uint64_t budget = ar.timeout_ns < FINAL_PASS_NS ? ar.timeout_ns : FINAL_PASS_NS;
	pthread_mutex_lock(&ar.mu);
	atomic_store(&ar.stop_deadline, ss_now() + budget);
	ar.running = 0;
	pthread_cond_signal(&ar.cv);
	pthread_mutex_unlock(&ar.mu);
	pthread_join(ar.thread, NULL);
	pthread_mutex_destroy(&ar.mu);
	pthread_cond_destroy(&ar.cv);
	free(ar.dir);
	free(ar.prefix);
	free(ar.command);
	free(ar.host);
	memset(&ar, 0, sizeof ar);
	atomic_store(&ss_counters.archive_enabled, 0u);
}

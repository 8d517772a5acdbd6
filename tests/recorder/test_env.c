/*
 * test_env.c - stallscope_start_from_env() and the STALLSCOPE_* variables.
 *
 *   - STALLSCOPE_ENABLED unset or false (0/false/no/off/empty): returns 0, records
 *     nothing, creates no directory and no file, even when other variables are bad;
 *   - every bad value of every variable (not a number, negative, out of range, bad
 *     suffix, bad boolean, a prefix with '/', an empty output directory, a file size
 *     below the minimum...) returns -1 with stallscope_last_error() naming the
 *     variable; recording stays off (is_recording 0, hooks are harmless no-ops) and
 *     nothing is written;
 *   - a good environment records into OUTPUT_DIR (created, nested) with FILE_PREFIX,
 *     and honours MAX_FILE_SIZE (no segment is bigger), ROTATION_COUNT (old segments
 *     are evicted: at most COUNT files, at most SIZE x COUNT bytes, the newest kept),
 *     ROTATION_PERIOD_S (a 1 s period over ~2.5 s gives >= 3 segments, each >= 1 s)
 *     and METRICS_FILE (appears while recording, holds every metric, and is replaced
 *     atomically: a reader polling it never sees a partial file).
 * Variables are changed in-process with setenv/unsetenv between cases.
 *
 * The size case mixes a steady trickle with bursts of 20,000 events (~140 KB,
 * more than two whole segments) made between two writer cycles: a segment must
 * stay within MAX_FILE_SIZE however much one cycle finds in the rings.
 */
#include <stallscope/stallscope.h>

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "trace_check.h"

static const char *const all_vars[] = {
	"STALLSCOPE_ENABLED", "STALLSCOPE_OUTPUT_DIR", "STALLSCOPE_FILE_PREFIX",
	"STALLSCOPE_MAX_FILE_SIZE", "STALLSCOPE_ROTATION_COUNT", "STALLSCOPE_ROTATION_PERIOD_S",
	"STALLSCOPE_CPU_SAMPLING", "STALLSCOPE_SAMPLE_HZ", "STALLSCOPE_STALL_THRESHOLD_MS",
	"STALLSCOPE_TASK_DUMP_ENABLED", "STALLSCOPE_TASK_DUMP_IDLE_THRESHOLD_MS",
	"STALLSCOPE_METRICS_FILE", "STALLSCOPE_FLUSH_INTERVAL_MS", "STALLSCOPE_BUFFER_EVENTS",
	"STALLSCOPE_MAX_THREADS", "STALLSCOPE_COMPRESS", "STALLSCOPE_UNWIND", "STALLSCOPE_STACK_COPY",
	"STALLSCOPE_TEST_UNKNOWN", NULL,
};

static const char *const metric_names[] = {
	"stallscope_supported", "stallscope_configured", "stallscope_active_sessions",
	"stallscope_disk_usage_bytes", "stallscope_errors_total", "stallscope_events_total",
	"stallscope_events_dropped_total", "stallscope_segments_sealed_total",
	"stallscope_segments_evicted_total", "stallscope_writer_healthy", NULL,
};

static char *base; /* the test's directory */

static void clear_env(void)
{
	for (int i = 0; all_vars[i]; i++)
		unsetenv(all_vars[i]);
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Entries of dir other than . and ..; -1 when it does not exist. */
static int dir_entries(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL)
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	closedir(d);
	return n;
}

static void hooks_are_harmless(void)
{
	stallscope_worker_begin("env", 1);
	stallscope_poll_begin(1, 0);
	stallscope_poll_end();
	stallscope_park();
	stallscope_unpark();
	stallscope_worker_end();
	CHECK(!stallscope_is_recording(), "recording");
}

/* ---- disabled ----------------------------------------------------------------- */

static void check_disabled(void)
{
	char out[600];
	snprintf(out, sizeof out, "%s/disabled-out", base);
	static const char *const off[] = {NULL, "0", "false", "FALSE", "no", "off", "", NULL};
	for (int i = 0; i < 7; i++) {
		clear_env();
		if (i > 0)
			setenv("STALLSCOPE_ENABLED", off[i], 1);
		setenv("STALLSCOPE_OUTPUT_DIR", out, 1);
		/* Bad values of other variables are not even looked at. */
		setenv("STALLSCOPE_MAX_FILE_SIZE", "banana", 1);
		CHECK(stallscope_start_from_env() == 0, "ENABLED=%s: start_from_env did not return 0",
		      off[i] ? off[i] : "(unset)");
		hooks_are_harmless();
		CHECK(dir_entries(out) == -1, "ENABLED=%s created %s", off[i] ? off[i] : "(unset)", out);
	}
	/* The default output directory is "." : nothing appears in the cwd either. */
	CHECK(dir_entries(".") == 0, "files appeared in the working directory");
}

/* ---- bad values ----------------------------------------------------------------- */

struct bad {
	const char *var, *value;
};

static const struct bad bad_values[] = {
	{"STALLSCOPE_ENABLED", "maybe"},
	{"STALLSCOPE_ENABLED", "2"},
	{"STALLSCOPE_OUTPUT_DIR", ""},
	{"STALLSCOPE_FILE_PREFIX", "a/b"},
	{"STALLSCOPE_FILE_PREFIX", "/abs"},
	{"STALLSCOPE_FILE_PREFIX", ""},
	{"STALLSCOPE_FILE_PREFIX", ".."},
	{"STALLSCOPE_MAX_FILE_SIZE", "abc"},
	{"STALLSCOPE_MAX_FILE_SIZE", "-1"},
	{"STALLSCOPE_MAX_FILE_SIZE", "+5M"},
	{"STALLSCOPE_MAX_FILE_SIZE", "1000"},      /* below the 65536-byte minimum */
	{"STALLSCOPE_MAX_FILE_SIZE", "65535"},
	{"STALLSCOPE_MAX_FILE_SIZE", "10X"},
	{"STALLSCOPE_MAX_FILE_SIZE", "5 M"},
	{"STALLSCOPE_MAX_FILE_SIZE", "99999999999999999999999"},
	{"STALLSCOPE_MAX_FILE_SIZE", "99999999999G"},
	{"STALLSCOPE_MAX_FILE_SIZE", ""},
	{"STALLSCOPE_ROTATION_COUNT", "ten"},
	{"STALLSCOPE_ROTATION_COUNT", "-3"},
	{"STALLSCOPE_ROTATION_COUNT", "0"},
	{"STALLSCOPE_ROTATION_COUNT", "1000001"},
	{"STALLSCOPE_ROTATION_COUNT", "4K"},
	{"STALLSCOPE_ROTATION_PERIOD_S", "1.5"},
	{"STALLSCOPE_ROTATION_PERIOD_S", "-1"},
	{"STALLSCOPE_ROTATION_PERIOD_S", "99999999999"},
	{"STALLSCOPE_ROTATION_PERIOD_S", "60s"},
	{"STALLSCOPE_CPU_SAMPLING", "sometimes"},
	{"STALLSCOPE_CPU_SAMPLING", "2"},
	{"STALLSCOPE_SAMPLE_HZ", "fast"},
	{"STALLSCOPE_SAMPLE_HZ", "0"},
	{"STALLSCOPE_SAMPLE_HZ", "100001"},
	{"STALLSCOPE_SAMPLE_HZ", "-99"},
	{"STALLSCOPE_STALL_THRESHOLD_MS", "ms"},
	{"STALLSCOPE_STALL_THRESHOLD_MS", "-10"},
	{"STALLSCOPE_STALL_THRESHOLD_MS", "3600001"},
	{"STALLSCOPE_TASK_DUMP_ENABLED", "yesplease"},
	{"STALLSCOPE_UNWIND", "cfi"},
	{"STALLSCOPE_UNWIND", ""},
	{"STALLSCOPE_UNWIND", "dwarf,8192"},
	{"STALLSCOPE_STACK_COPY", "512"},           /* below 1 KiB */
	{"STALLSCOPE_STACK_COPY", "64K"},           /* above what the kernel copies */
	{"STALLSCOPE_STACK_COPY", "eight"},
	{"STALLSCOPE_STACK_COPY", "-8192"},
	{"STALLSCOPE_TASK_DUMP_IDLE_THRESHOLD_MS", "0"},
	{"STALLSCOPE_TASK_DUMP_IDLE_THRESHOLD_MS", "x"},
	{"STALLSCOPE_TASK_DUMP_IDLE_THRESHOLD_MS", "3600001"},
	{"STALLSCOPE_FLUSH_INTERVAL_MS", "0"},
	{"STALLSCOPE_FLUSH_INTERVAL_MS", "soon"},
	{"STALLSCOPE_BUFFER_EVENTS", "63"},
	{"STALLSCOPE_BUFFER_EVENTS", "many"},
	{"STALLSCOPE_MAX_THREADS", "0"},
	{"STALLSCOPE_MAX_THREADS", "65537"},
	{"STALLSCOPE_COMPRESS", "zstd"},
};

static void check_bad_values(void)
{
	char out[600];
	snprintf(out, sizeof out, "%s/bad-out", base);
	struct stallscope_stats st;
	for (size_t i = 0; i < sizeof bad_values / sizeof bad_values[0]; i++) {
		const struct bad *b = &bad_values[i];
		clear_env();
		setenv("STALLSCOPE_ENABLED", "1", 1);
		setenv("STALLSCOPE_OUTPUT_DIR", out, 1);
		setenv(b->var, b->value, 1);
		CHECK(stallscope_start_from_env() == -1, "%s=\"%s\" was accepted", b->var, b->value);
		const char *err = stallscope_last_error();
		CHECK(err && strstr(err, b->var), "%s=\"%s\": error \"%s\" does not name the variable",
		      b->var, b->value, err ? err : "(null)");
		hooks_are_harmless();
		stallscope_get_stats(&st);
		CHECK(!st.recording && !st.writer_healthy, "stats say recording after a bad value");
		CHECK(dir_entries(out) == -1, "%s=\"%s\": the output directory was created", b->var,
		      b->value);
	}
	CHECK(stallscope_stop() == 0, "stop without a session");
	printf("env: %zu bad values refused by name\n", sizeof bad_values / sizeof bad_values[0]);
}

/* ---- the metrics file, polled while recording --------------------------------- */

struct poller {
	const char *path;
	const char *seg_dir;   /* also watched: the largest segment file ever seen */
	uint64_t max_seg_bytes;
	_Atomic int stop;
	uint64_t reads, changes;
	uint64_t first_seen_ns;
	char last[8192];
	char bad[256];
};

/* A complete metrics text: every name, a HELP and TYPE line each, ends in '\n'. */
static int complete(const char *text, size_t n, char *why, size_t whylen)
{
	if (n == 0 || text[n - 1] != '\n') {
		snprintf(why, whylen, "%zu bytes, no final newline", n);
		return 0;
	}
	for (int i = 0; metric_names[i]; i++) {
		char help[128], type[128], value[128];
		snprintf(help, sizeof help, "# HELP %s ", metric_names[i]);
		snprintf(type, sizeof type, "# TYPE %s ", metric_names[i]);
		snprintf(value, sizeof value, "\n%s ", metric_names[i]);
		if (!strstr(text, help) || !strstr(text, type) || !strstr(text, value)) {
			snprintf(why, whylen, "%s missing", metric_names[i]);
			return 0;
		}
	}
	return 1;
}

static void *poll_metrics(void *arg)
{
	struct poller *p = arg;
	char buf[8192];
	while (!atomic_load(&p->stop)) {
		int fd = open(p->path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			size_t n = 0;
			ssize_t r;
			while (n < sizeof buf - 1 && (r = read(fd, buf + n, sizeof buf - 1 - n)) > 0)
				n += (size_t)r;
			close(fd);
			buf[n] = 0;
			if (!p->first_seen_ns)
				p->first_seen_ns = now_ns();
			p->reads++;
			char why[128];
			if (!complete(buf, n, why, sizeof why) && !p->bad[0])
				snprintf(p->bad, sizeof p->bad, "read %llu: %s", (unsigned long long)p->reads, why);
			if (strcmp(buf, p->last) != 0) {
				p->changes++;
				memcpy(p->last, buf, n + 1);
			}
		}
		DIR *d = opendir(p->seg_dir);
		struct dirent *de;
		while (d && (de = readdir(d)) != NULL) {
			struct stat st;
			if (de->d_name[0] != '.' && fstatat(dirfd(d), de->d_name, &st, 0) == 0 &&
			    (uint64_t)st.st_size > p->max_seg_bytes)
				p->max_seg_bytes = (uint64_t)st.st_size;
		}
		if (d)
			closedir(d);
		struct timespec ts = {0, 200000};
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static uint64_t metric_value(const char *text, const char *name)
{
	char key[128];
	snprintf(key, sizeof key, "\n%s ", name);
	const char *p = strstr(text, key);
	CHECK(p, "%s not in the metrics file", name);
	return strtoull(p + strlen(key), NULL, 10);
}

/* ---- good environments --------------------------------------------------------- */

struct seg_file {
	uint64_t seq;
	uint64_t bytes;
};

/* Lists dir: every entry must be PREFIX.N.bin (or the metrics file named keep). */
static size_t list_segments(const char *dir, const char *prefix, const char *keep,
			    struct seg_file *out, size_t cap)
{
	DIR *d = opendir(dir);
	CHECK(d, "opendir %s", dir);
	size_t n = 0, pl = strlen(prefix);
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    (keep && !strcmp(de->d_name, keep)))
			continue;
		char *end;
		CHECK(!strncmp(de->d_name, prefix, pl) && de->d_name[pl] == '.', "stray file %s/%s", dir,
		      de->d_name);
		unsigned long long seq = strtoull(de->d_name + pl + 1, &end, 10);
		CHECK(end != de->d_name + pl + 1 && !strcmp(end, ".bin"), "unexpected file %s", de->d_name);
		char path[1200];
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		struct stat st;
		CHECK(stat(path, &st) == 0, "stat %s", path);
		CHECK(n < cap, "too many segments");
		out[n].seq = seq;
		out[n].bytes = (uint64_t)st.st_size;
		n++;
	}
	closedir(d);
	return n;
}

static void check_size_count_metrics(void)
{
	char out[600], metrics[600];
	snprintf(out, sizeof out, "%s/good/nested/dir", base);
	snprintf(metrics, sizeof metrics, "%s/stallscope.prom", base);
	clear_env();
	setenv("STALLSCOPE_ENABLED", "yes", 1);
	setenv("STALLSCOPE_OUTPUT_DIR", out, 1);
	setenv("STALLSCOPE_FILE_PREFIX", "envgood", 1);
	setenv("STALLSCOPE_MAX_FILE_SIZE", "64K", 1);
	setenv("STALLSCOPE_ROTATION_COUNT", "3", 1);
	setenv("STALLSCOPE_ROTATION_PERIOD_S", "0", 1); /* size only */
	setenv("STALLSCOPE_COMPRESS", "off", 1);
	setenv("STALLSCOPE_CPU_SAMPLING", "false", 1);
	setenv("STALLSCOPE_STALL_THRESHOLD_MS", "0", 1);
	setenv("STALLSCOPE_METRICS_FILE", metrics, 1);
	setenv("STALLSCOPE_TEST_UNKNOWN", "1", 1); /* warned about, not fatal */

	struct stallscope_stats before, after;
	stallscope_get_stats(&before);
	struct poller p = {.path = metrics, .seg_dir = out};
	pthread_t th;
	uint64_t t0 = now_ns();
	CHECK(stallscope_start_from_env() == 0, "good environment refused: %s", stallscope_last_error());
	CHECK(stallscope_is_recording(), "not recording");
	CHECK(pthread_create(&th, NULL, poll_metrics, &p) == 0, "pthread_create");
	/* ~1.2 MB of uncompressed events: several times the 3 x 64 KiB budget. */
	uint32_t loc = STALLSCOPE_LOCATION();
	uint64_t task = 1;
	for (int round = 0; round < 300; round++) {
		int burst = round % 50 == 25 ? 10000 : 50; /* pairs */
		for (int i = 0; i < burst; i++) {
			stallscope_poll_begin(task * 2654435761u, loc);
			stallscope_poll_end();
			task++;
		}
		sleep_ms(10);
	}
	uint64_t seen_while_recording = p.reads;
	CHECK(stallscope_stop() == 0, "stop: %s", stallscope_last_error());
	sleep_ms(50);
	atomic_store(&p.stop, 1);
	pthread_join(th, NULL);
	stallscope_get_stats(&after);

	CHECK(!p.bad[0], "the metrics file was seen incomplete: %s", p.bad);
	CHECK(seen_while_recording > 0 && p.first_seen_ns && p.first_seen_ns - t0 < 11000000000ull,
	      "the metrics file did not appear while recording");
	CHECK(complete(p.last, strlen(p.last), (char[128]){0}, 128), "final metrics file incomplete");
	CHECK(metric_value(p.last, "stallscope_supported") == 1, "supported");
	CHECK(metric_value(p.last, "stallscope_configured") == 1, "configured");
	CHECK(metric_value(p.last, "stallscope_segments_sealed_total") >= 1, "sealed");
	/* Rewritten at stop: the file left behind describes the stopped recorder. */
	CHECK(metric_value(p.last, "stallscope_active_sessions") == 0,
	      "the metrics file left after stop says active_sessions %llu",
	      (unsigned long long)metric_value(p.last, "stallscope_active_sessions"));
	CHECK(metric_value(p.last, "stallscope_writer_healthy") == 0,
	      "the metrics file left after stop says writer_healthy %llu",
	      (unsigned long long)metric_value(p.last, "stallscope_writer_healthy"));
	CHECK(metric_value(p.last, "stallscope_events_total") >= 60000, "events_total %llu",
	      (unsigned long long)metric_value(p.last, "stallscope_events_total"));
	/* No temporary file is left next to it. */
	CHECK(dir_entries(base) >= 0, "base");
	DIR *d = opendir(base);
	struct dirent *de;
	while ((de = readdir(d)) != NULL)
		CHECK(!strstr(de->d_name, ".tmp"), "temporary metrics file left: %s", de->d_name);
	closedir(d);

	/* Size and count. */
	struct seg_file segs[64];
	size_t n = list_segments(out, "envgood", NULL, segs, 64);
	uint64_t total = 0, maxseq = 0, minseq = UINT64_MAX, maxbytes = 0;
	for (size_t i = 0; i < n; i++) {
		total += segs[i].bytes;
		maxseq = segs[i].seq > maxseq ? segs[i].seq : maxseq;
		minseq = segs[i].seq < minseq ? segs[i].seq : minseq;
		maxbytes = segs[i].bytes > maxbytes ? segs[i].bytes : maxbytes;
	}
	CHECK(n >= 1 && n <= 3, "%zu segments kept with ROTATION_COUNT=3", n);
	CHECK(maxbytes <= 65536, "a segment of %llu bytes with MAX_FILE_SIZE=64K",
	      (unsigned long long)maxbytes);
	CHECK(p.max_seg_bytes <= 65536, "a segment file grew to %llu bytes while recording",
	      (unsigned long long)p.max_seg_bytes);
	CHECK(total <= 3 * 65536, "%llu bytes on disk, budget %d", (unsigned long long)total, 3 * 65536);
	CHECK(maxseq - minseq + 1 == n, "kept segments are not the newest contiguous ones");
	CHECK(minseq > 0 && after.segments_evicted - before.segments_evicted == minseq,
	      "evicted %llu, oldest kept %llu",
	      (unsigned long long)(after.segments_evicted - before.segments_evicted),
	      (unsigned long long)minseq);
	CHECK(after.segments_sealed - before.segments_sealed == maxseq + 1, "sealed %llu, newest %llu",
	      (unsigned long long)(after.segments_sealed - before.segments_sealed),
	      (unsigned long long)maxseq);
	struct tc_trace t;
	CHECK(tc_load_dir(&t, out, "envgood", false) == 0, "load");
	CHECK(t.nsegs == n && t.corrupt_segments == 0 && t.truncated_segments == 0 &&
	      t.header_failures == 0, "segments damaged");
	CHECK(t.by_type[SS_REC_POLL_BEGIN] > 0, "no events in the kept segments");
	tc_free(&t);
	printf("env: size/count: %zu segments kept (seq %llu..%llu), largest %llu bytes (%llu seen "
	       "while recording), %llu on disk; metrics file read %llu times, %llu versions, "
	       "never partial\n",
	       n, (unsigned long long)minseq, (unsigned long long)maxseq,
	       (unsigned long long)maxbytes, (unsigned long long)p.max_seg_bytes,
	       (unsigned long long)total,
	       (unsigned long long)p.reads, (unsigned long long)p.changes);
}

static void check_period(void)
{
	char out[600];
	snprintf(out, sizeof out, "%s/timed", base);
	clear_env();
	setenv("STALLSCOPE_ENABLED", "TRUE", 1);
	setenv("STALLSCOPE_OUTPUT_DIR", out, 1);
	setenv("STALLSCOPE_FILE_PREFIX", "envtime", 1);
	setenv("STALLSCOPE_ROTATION_PERIOD_S", "1", 1);
	setenv("STALLSCOPE_MAX_FILE_SIZE", "100M", 1);
	setenv("STALLSCOPE_ROTATION_COUNT", "20", 1);
	setenv("STALLSCOPE_CPU_SAMPLING", "0", 1);
	CHECK(stallscope_start_from_env() == 0, "start: %s", stallscope_last_error());
	uint64_t t0 = now_ns();
	for (uint64_t task = 1; now_ns() - t0 < 2500000000ull; task++) {
		stallscope_poll_begin(task, 0);
		stallscope_poll_end();
		sleep_ms(10);
	}
	CHECK(stallscope_stop() == 0, "stop: %s", stallscope_last_error());
	struct tc_trace t;
	CHECK(tc_load_dir(&t, out, "envtime", false) == 0, "load");
	CHECK(t.nsegs >= 3, "%zu segments after 2.5 s with ROTATION_PERIOD_S=1", t.nsegs);
	for (size_t i = 0; i < t.nsegs; i++) {
		const struct tc_segment *s = &t.segs[i];
		CHECK(s->sealed && s->damage == SS_DAMAGE_NONE, "%s", s->path);
		uint64_t dur = s->footer.end_ts - s->footer.start_ts;
		if (i + 1 < t.nsegs)
			CHECK(dur >= 1000000000ull, "segment %zu lasted %llu ns, period 1 s", i,
			      (unsigned long long)dur);
	}
	printf("env: period: %zu segments in ~2.5 s\n", t.nsegs);
	tc_free(&t);
}

int main(void)
{
	base = tc_tmpdir("env");
	char cwd[600];
	snprintf(cwd, sizeof cwd, "%s/cwd", base);
	CHECK(mkdir(cwd, 0700) == 0 && chdir(cwd) == 0, "chdir %s", cwd);

	check_disabled();
	check_bad_values();
	check_size_count_metrics();
	check_period();
	CHECK(dir_entries(".") == 0, "files appeared in the working directory");

	clear_env();
	CHECK(chdir("/") == 0, "chdir");
	tc_rmrf(base);
	free(base);
	printf("env: ok\n");
	return 0;
}

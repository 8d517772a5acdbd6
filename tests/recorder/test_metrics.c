/*
 * test_metrics.c - stallscope_metrics_text() is complete, truthful and snprintf-like.
 *
 *   - every metric (supported, configured, active_sessions, disk_usage_bytes,
 *     errors_total, events_total, events_dropped_total, segments_sealed_total,
 *     segments_evicted_total, writer_healthy) is present with its # HELP and # TYPE
 *     lines, gauges and counters typed as such;
 *   - values tell the truth: before start configured 0 and active 0; while recording
 *     active 1, writer_healthy 1 and events_total growing with the hooks made; after
 *     stop active 0, writer_healthy 0, segments_sealed_total >= 1, and
 *     disk_usage_bytes equal to the bytes of the segment files actually on disk;
 *   - the return value contract of snprintf: the full length is returned whatever
 *     the buffer; a small buffer holds exactly the first len-1 bytes of the text and
 *     a NUL; len 0 (even with a NULL buffer) writes nothing.
 */
#include <stallscope/stallscope.h>

#include <dirent.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "trace_check.h"

static const struct {
	const char *name, *type;
} metrics[] = {
	{"stallscope_supported", "gauge"},
	{"stallscope_configured", "gauge"},
	{"stallscope_active_sessions", "gauge"},
	{"stallscope_disk_usage_bytes", "gauge"},
	{"stallscope_errors_total", "counter"},
	{"stallscope_events_total", "counter"},
	{"stallscope_events_dropped_total", "counter"},
	{"stallscope_segments_sealed_total", "counter"},
	{"stallscope_segments_evicted_total", "counter"},
	{"stallscope_writer_healthy", "gauge"},
};
#define NMETRICS (sizeof metrics / sizeof metrics[0])

static char text[16384];

static void snapshot(void)
{
	size_t n = stallscope_metrics_text(text, sizeof text);
	CHECK(n < sizeof text, "metrics text of %zu bytes", n);
	CHECK(strlen(text) == n, "returned %zu, strlen %zu", n, strlen(text));
	CHECK(n > 0 && text[n - 1] == '\n', "text does not end with a newline");
	for (size_t i = 0; i < NMETRICS; i++) {
		char help[128], type[128], line[128];
		snprintf(help, sizeof help, "# HELP %s ", metrics[i].name);
		snprintf(type, sizeof type, "# TYPE %s %s\n", metrics[i].name, metrics[i].type);
		snprintf(line, sizeof line, "\n%s ", metrics[i].name);
		const char *h = strstr(text, help);
		CHECK(h && (h == text || h[-1] == '\n'), "no HELP line for %s", metrics[i].name);
		CHECK(h[strlen(help)] != '\n', "empty HELP text for %s", metrics[i].name);
		CHECK(strstr(text, type), "no \"%s\" TYPE line", metrics[i].name);
		CHECK(strstr(text, line), "no sample line for %s", metrics[i].name);
	}
}

static uint64_t value(const char *name)
{
	char key[128];
	snprintf(key, sizeof key, "\n%s ", name);
	const char *p = strstr(text, key);
	CHECK(p, "%s missing", name);
	char *end;
	unsigned long long v = strtoull(p + strlen(key), &end, 10);
	CHECK(end != p + strlen(key) && *end == '\n', "%s: bad value", name);
	return v;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static uint64_t disk_bytes(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	CHECK(d, "opendir");
	uint64_t total = 0;
	size_t pl = strlen(prefix);
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, prefix, pl) != 0 || de->d_name[pl] != '.')
			continue;
		char path[1200];
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		struct stat st;
		CHECK(stat(path, &st) == 0, "stat %s", path);
		total += (uint64_t)st.st_size;
	}
	closedir(d);
	return total;
}

static mode_t tc_umask(void)
{
	mode_t m = umask(0);
	umask(m);
	return m;
}

static void check_snprintf_contract(void)
{
	size_t full = stallscope_metrics_text(NULL, 0);
	CHECK(full > 500, "full length %zu", full);
	char *ref = malloc(full + 1);
	CHECK(ref, "out of memory");
	CHECK(stallscope_metrics_text(ref, full + 1) == full, "length changed");
	CHECK(strlen(ref) == full, "exact-size buffer: strlen %zu of %zu", strlen(ref), full);

	/* len 0: nothing written, even one byte. */
	char one = 'X';
	CHECK(stallscope_metrics_text(&one, 0) == full && one == 'X', "len 0 wrote into the buffer");

	/* Buffers too small by various amounts, including mid-line cuts. */
	size_t sizes[] = {1, 2, 10, 37, 100, 255, full / 2, full - 1, full};
	char *buf = malloc(full + 16);
	CHECK(buf, "out of memory");
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		size_t len = sizes[i];
		memset(buf, 'X', full + 16);
		size_t r = stallscope_metrics_text(buf, len);
		CHECK(r == full, "len %zu: returned %zu, want %zu", len, r, full);
		CHECK(buf[len - 1] == 0, "len %zu: not NUL terminated at len-1", len);
		CHECK(strlen(buf) == len - 1, "len %zu: strlen %zu, want %zu (snprintf fills the buffer)",
		      len, strlen(buf), len - 1);
		CHECK(memcmp(buf, ref, len - 1) == 0, "len %zu: not a prefix of the full text", len);
		CHECK(buf[len] == 'X', "len %zu: wrote past the buffer", len);
	}
	free(buf);
	free(ref);
}

int main(void)
{
	/* Before anything: supported, not configured, not active. */
	snapshot();
	CHECK(value("stallscope_supported") == 1, "supported");
	CHECK(value("stallscope_configured") == 0, "configured before start");
	CHECK(value("stallscope_active_sessions") == 0, "active before start");
	CHECK(value("stallscope_writer_healthy") == 0, "writer healthy before start");
	CHECK(value("stallscope_events_total") == 0, "events before start");
	check_snprintf_contract();

	char *dir = tc_tmpdir("metrics");
	struct stallscope_config cfg;
	stallscope_config_init(&cfg);
	cfg.output_dir = dir;
	cfg.file_prefix = "mt";
	cfg.cpu_sampling = 0;
	CHECK(stallscope_start(&cfg) == 0, "start: %s", stallscope_last_error());

	/* Recording. */
	snapshot();
	CHECK(value("stallscope_configured") == 1, "configured while recording");
	CHECK(value("stallscope_active_sessions") == 1, "active while recording");
	uint64_t ev0 = value("stallscope_events_total");
	for (uint64_t i = 0; i < 1000; i++) {
		stallscope_poll_begin(i + 1, 0);
		stallscope_poll_end();
	}
	/* The writer runs a cycle every 10 ms; give a loaded machine plenty of time. */
	for (int i = 0; i < 500; i++) {
		snapshot();
		if (value("stallscope_writer_healthy") == 1 && value("stallscope_disk_usage_bytes") > 0)
			break;
		sleep_ms(10);
	}
	CHECK(value("stallscope_writer_healthy") == 1, "writer not healthy while recording");
	CHECK(value("stallscope_disk_usage_bytes") > 0, "no disk usage while recording");
	uint64_t ev1 = value("stallscope_events_total");
	CHECK(ev1 >= ev0 + 2000, "events_total %llu -> %llu after 2000 hooks",
	      (unsigned long long)ev0, (unsigned long long)ev1);
	CHECK(value("stallscope_events_dropped_total") == 0, "dropped");
	CHECK(value("stallscope_errors_total") == 0, "errors");
	check_snprintf_contract();
	stallscope_poll_begin(99999, 0);
	snapshot();
	CHECK(value("stallscope_events_total") == ev1 + 1, "events_total did not count one hook");

	CHECK(stallscope_stop() == 0, "stop: %s", stallscope_last_error());

	/* Stopped. */
	snapshot();
	CHECK(value("stallscope_configured") == 1, "configured after stop");
	CHECK(value("stallscope_active_sessions") == 0, "active after stop");
	CHECK(value("stallscope_writer_healthy") == 0, "writer healthy after stop");
	CHECK(value("stallscope_segments_sealed_total") >= 1, "sealed after stop");
	CHECK(value("stallscope_segments_evicted_total") == 0, "evicted");
	CHECK(value("stallscope_events_total") == ev1 + 1, "events_total changed after stop");
	uint64_t on_disk = disk_bytes(dir, "mt");
	CHECK(value("stallscope_disk_usage_bytes") == on_disk, "disk_usage_bytes %llu, files %llu",
	      (unsigned long long)value("stallscope_disk_usage_bytes"), (unsigned long long)on_disk);
	struct stallscope_stats st;
	stallscope_get_stats(&st);
	CHECK(st.disk_usage_bytes == on_disk && st.segments_sealed == value("stallscope_segments_sealed_total"),
	      "stats and metrics disagree");
	check_snprintf_contract();

	/* Hooks after stop change nothing. */
	stallscope_poll_end();
	snapshot();
	CHECK(value("stallscope_events_total") == ev1 + 1, "a hook after stop was counted");

	/* The metrics file: its temporary name is created with O_EXCL, so a hard
	 * link planted there is refused (and counted), never written through; a
	 * file written is 0640 like the segments. */
	char victim[4200], prom[4200], plant[4300];
	snprintf(victim, sizeof victim, "%s/victim", dir);
	snprintf(prom, sizeof prom, "%s/m.prom", dir);
	snprintf(plant, sizeof plant, "%s.tmp.%d", prom, (int)getpid());
	FILE *vf = fopen(victim, "w");
	CHECK(vf && fputs("keep me\n", vf) >= 0 && fclose(vf) == 0, "victim file");
	CHECK(link(victim, plant) == 0, "plant a hard link at %s", plant);
	uint64_t err0 = value("stallscope_errors_total");
	cfg.metrics_file = prom;
	CHECK(stallscope_start(&cfg) == 0, "start with a metrics file: %s", stallscope_last_error());
	CHECK(stallscope_stop() == 0, "stop: %s", stallscope_last_error());
	char got[64] = "";
	vf = fopen(victim, "r");
	CHECK(vf && fgets(got, sizeof got, vf) && !strcmp(got, "keep me\n"), "the planted link was written through: '%s'", got);
	if (vf)
		fclose(vf);
	struct stat pst;
	CHECK(stat(prom, &pst) != 0, "metrics written through a refused temporary file");
	snapshot();
	CHECK(value("stallscope_errors_total") > err0, "the refused temporary file is not counted as an error");
	unlink(plant);
	CHECK(stallscope_start(&cfg) == 0, "start: %s", stallscope_last_error());
	CHECK(stallscope_stop() == 0, "stop: %s", stallscope_last_error());
	CHECK(stat(prom, &pst) == 0 && (pst.st_mode & 0777) == (0640 & ~tc_umask()), "metrics file mode %o",
	      (unsigned)(pst.st_mode & 0777));
	CHECK(stat(plant, &pst) != 0, "temporary file left behind");

	tc_rmrf(dir);
	free(dir);
	printf("metrics: ok\n");
	return 0;
}

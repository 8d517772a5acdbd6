/*
 * test_hostile_fs.c - the recorder on a hostile or broken file system:
 *  (a) an output directory that cannot exist (a path under a regular file, or a
 *      regular file where the directory should be): start returns -1, the last
 *      error names the directory and the reason, nothing is recorded and every
 *      hook is a harmless no-op;
 *  (b) symlinks planted at segment names (PREFIX.0.bin.active, PREFIX.0.bin, and
 *      while recording at the next segment's .active name and at the active
 *      segment's final .bin name) are never followed or written through: the
 *      victim file they point at is unchanged, and recording carries on under
 *      other numbers;
 *  (c) segment files are created 0640 and a created directory 0750 (umask 022);
 *  (d) garbage at PREFIX.3.bin.active (random bytes; an empty file; a valid header
 *      followed by garbage) is removed or recovered with a log line at start,
 *      never a crash, and recording works.
 * As root permission bits do not stop writes, (a) uses structural failures.
 */
#include <stallscope/stallscope.h>

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "resil.h"
#include "trace_check.h"

static void base_config(struct stallscope_config *cfg, const char *dir, const char *prefix)
{
	stallscope_config_init(cfg);
	cfg->output_dir = dir;
	cfg->file_prefix = prefix;
	cfg->cpu_sampling = 0;
}

static void all_hooks(void)
{
	uint32_t loc = stallscope_location("hostile.c", 1, "all_hooks");
	uint32_t nm = stallscope_name("n");
	stallscope_worker_begin("h", 0);
	stallscope_task_spawn(1, loc);
	stallscope_poll_begin(1, loc);
	stallscope_task_wake(2);
	stallscope_queue_depth(1, 2);
	stallscope_mark(nm, 5);
	stallscope_span_begin(nm);
	stallscope_span_end(nm);
	stallscope_poll_end();
	stallscope_park();
	stallscope_unpark();
	stallscope_task_terminate(1);
	stallscope_worker_end();
}

static void *hooks_thread(void *arg)
{
	(void)arg;
	for (int i = 0; i < 1000; i++)
		all_hooks();
	return NULL;
}

static void expect_start_fails(const char *outdir, const char *reason)
{
	struct stallscope_config cfg;
	base_config(&cfg, outdir, "hx");
	struct stallscope_stats s0, s1;
	stallscope_get_stats(&s0);
	CHECK(stallscope_start(&cfg) == -1, "start into %s succeeded", outdir);
	const char *err = stallscope_last_error();
	printf("start into %s: %s\n", outdir, err);
	CHECK(strstr(err, outdir) != NULL, "last error does not name %s: %s", outdir, err);
	CHECK(strstr(err, reason) != NULL, "last error does not say \"%s\": %s", reason, err);
	CHECK(!stallscope_is_recording(), "recording after a failed start");
	pthread_t th;
	CHECK(pthread_create(&th, NULL, hooks_thread, NULL) == 0, "pthread_create");
	hooks_thread(NULL);
	pthread_join(th, NULL);
	stallscope_get_stats(&s1);
	CHECK(s1.events == s0.events && s1.bytes_written == s0.bytes_written && !s1.recording,
	      "hooks recorded something after a failed start");
	CHECK(stallscope_stop() == 0, "stop without a session");
}

static void test_unwritable(void)
{
	char *dir = tc_tmpdir("hostile-a");
	char file[600], under[700];
	snprintf(file, sizeof file, "%s/plainfile", dir);
	CHECK(rs_write_file(file, "x", 1) == 0, "create %s", file);
	snprintf(under, sizeof under, "%s/x", file);
	expect_start_fails(under, "Not a directory");
	/* A regular file where the directory should be, executable or not. */
	chmod(file, 0644);
	expect_start_fails(file, "Not a directory");
	chmod(file, 0755);
	expect_start_fails(file, "Not a directory");
	/* Nothing was created next to it. */
	struct rs_file f[8];
	CHECK(rs_list(dir, "hx", f, 8) == 0, "segment files created");
	size_t len = 0;
	char *c = rs_read_file(file, &len);
	CHECK(c && len == 1 && c[0] == 'x', "the regular file was changed");
	free(c);
	tc_rmrf(dir);
	free(dir);
}

static const char victim_text[] = "precious data that no recorder may touch\n";

static void check_victim(const char *victim, const char *when)
{
	size_t len = 0;
	char *c = rs_read_file(victim, &len);
	CHECK(c && len == sizeof victim_text - 1 && !memcmp(c, victim_text, len),
	      "%s: the victim file changed (%zu bytes)", when, len);
	free(c);
}

static void check_link(const char *path, const char *victim)
{
	struct stat st;
	char target[1024];
	CHECK(lstat(path, &st) == 0 && S_ISLNK(st.st_mode), "%s is no longer a symlink", path);
	ssize_t n = readlink(path, target, sizeof target - 1);
	CHECK(n > 0, "readlink %s", path);
	target[n] = 0;
	CHECK(!strcmp(target, victim), "%s now points at %s", path, target);
}

static void test_symlinks(void)
{
	char *top = tc_tmpdir("hostile-b");
	char dir[600], victim[600], p[800], p2[800];
	snprintf(dir, sizeof dir, "%s/out", top);
	snprintf(victim, sizeof victim, "%s/victim", top);
	CHECK(mkdir(dir, 0755) == 0, "mkdir");
	CHECK(rs_write_file(victim, victim_text, sizeof victim_text - 1) == 0, "victim");
	snprintf(p, sizeof p, "%s/sl.0.bin.active", dir);
	snprintf(p2, sizeof p2, "%s/sl.0.bin", dir);
	CHECK(symlink(victim, p) == 0 && symlink(victim, p2) == 0, "symlink");

	struct stallscope_config cfg;
	base_config(&cfg, dir, "sl");
	cfg.rotation_period_s = 1;
	CHECK(stallscope_start(&cfg) == 0, "start: %s", stallscope_last_error());
	check_victim(victim, "after start");
	check_link(p, victim);
	check_link(p2, victim);

	/* The active segment now: plant links at its final name and at the next
	 * segment's .active name before the period rotation reaches them. */
	struct rs_file f[64];
	int n = rs_list(dir, "sl", f, 64);
	uint64_t active = UINT64_MAX;
	for (int i = 0; i < n; i++)
		if (f[i].active && f[i].regular)
			active = f[i].seq;
	CHECK(active != UINT64_MAX && active >= 1, "no active segment after start");
	char next_active[800], cur_final[800];
	snprintf(next_active, sizeof next_active, "%s/sl.%llu.bin.active", dir,
		 (unsigned long long)(active + 1));
	snprintf(cur_final, sizeof cur_final, "%s/sl.%llu.bin", dir, (unsigned long long)active);
	CHECK(symlink(victim, next_active) == 0, "symlink %s", next_active);
	CHECK(symlink(victim, cur_final) == 0, "symlink %s", cur_final);
	uint64_t planted_ts = rs_now();

	struct rs_producer prod = {.tag = 7, .burst = 20, .pause_us = 2000};
	rs_producers_start(&prod, 1);
	rs_sleep_ms(3500);
	rs_producers_stop(&prod, 1);
	CHECK(stallscope_is_recording(), "recording stopped");
	CHECK(stallscope_stop() == 0, "stop: %s", stallscope_last_error());

	check_victim(victim, "after recording");
	check_link(p, victim);
	check_link(p2, victim);
	check_link(next_active, victim);
	/* The rename at seal replaced the link at the final name with the segment. */
	struct stat st;
	CHECK(lstat(cur_final, &st) == 0 && S_ISREG(st.st_mode), "%s is not the sealed segment",
	      cur_final);

	struct rs_file g[64];
	n = rs_list(dir, "sl", g, 64);
	int segs_after = 0;
	for (int i = 0; i < n; i++) {
		if (g[i].symlink)
			continue;
		CHECK(g[i].regular && !g[i].active, "%s", g[i].name);
		CHECK(g[i].seq != active + 1, "segment %s written at a refused name", g[i].name);
		segs_after += g[i].seq > active + 1;
	}
	CHECK(segs_after >= 2, "recording did not continue past the refused name (%d segments)",
	      segs_after);
	/* Read the regular segments (the loader skips nothing, so load by prefix and
	 * ignore the symlinked names, which open as the victim: not segments). */
	struct tc_trace t;
	CHECK(tc_load_dir(&t, dir, "sl", true) == 0, "load");
	uint64_t later = 0;
	for (size_t i = 0; i < t.nsegs; i++) {
		struct stat ls;
		if (lstat(t.segs[i].path, &ls) == 0 && S_ISLNK(ls.st_mode))
			continue;
		CHECK(t.segs[i].sealed && t.segs[i].damage == SS_DAMAGE_NONE, "%s: %s",
		      t.segs[i].path, t.segs[i].damage_reason);
	}
	for (size_t i = 0; i < t.nevents; i++)
		later += t.events[i].type == SS_REC_MARK && t.events[i].ts > planted_ts + 1500000000ull;
	CHECK(later > 100, "only %llu events after the refused rotation", (unsigned long long)later);
	printf("symlinks: refused sl.%llu.bin.active; %d segments after it; %llu events lost "
	       "(WRITE_FAILED) around it\n", (unsigned long long)(active + 1), segs_after,
	       (unsigned long long)t.lost_by_reason[SS_LOSS_WRITE_FAILED]);
	CHECK(t.lost == 0, "%llu events lost to the refused name", (unsigned long long)t.lost);
	tc_free(&t);
	tc_rmrf(top);
	free(top);
}

static void test_modes(void)
{
	char *top = tc_tmpdir("hostile-c");
	char dir[600];
	snprintf(dir, sizeof dir, "%s/new/sub", top);
	mode_t old = umask(022);
	struct stallscope_config cfg;
	base_config(&cfg, dir, "md");
	cfg.max_file_size = 65536;
	CHECK(stallscope_start(&cfg) == 0, "start: %s", stallscope_last_error());
	struct rs_producer prod = {.tag = 3, .burst = 100, .pause_us = 1000};
	rs_producers_start(&prod, 1);
	rs_sleep_ms(300);
	rs_producers_stop(&prod, 1);
	CHECK(stallscope_stop() == 0, "stop: %s", stallscope_last_error());
	umask(old);
	struct stat st;
	CHECK(stat(dir, &st) == 0 && (st.st_mode & 07777) == 0750, "created directory mode %o",
	      st.st_mode & 07777);
	struct rs_file f[64];
	int n = rs_list(dir, "md", f, 64);
	CHECK(n >= 1, "no segment");
	for (int i = 0; i < n; i++) {
		char p[900];
		snprintf(p, sizeof p, "%s/%s", dir, f[i].name);
		CHECK(stat(p, &st) == 0 && (st.st_mode & 07777) == 0640, "%s has mode %o", p,
		      st.st_mode & 07777);
	}
	printf("modes: %d segments 0640, directory 0750\n", n);
	tc_rmrf(top);
	free(top);
}

/* Starts and stops a short recording in dir with stderr captured; returns what the
 * recorder logged (malloc'd). */
static char *record_capturing_stderr(const char *dir, const char *prefix, const char *logpath)
{
	fflush(stderr);
	int saved = dup(2);
	int fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(saved >= 0 && fd >= 0, "log file");
	dup2(fd, 2);
	close(fd);
	struct stallscope_config cfg;
	base_config(&cfg, dir, prefix);
	int rc = stallscope_start(&cfg);
	if (rc == 0) {
		all_hooks();
		rc = stallscope_stop();
	}
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	char *log = rs_read_file(logpath, NULL);
	CHECK(rc == 0, "recording with garbage present failed: %s", stallscope_last_error());
	CHECK(log, "read log");
	fprintf(stderr, "%s", log);
	return log;
}

static void test_garbage(void)
{
	char *dir = tc_tmpdir("hostile-d");
	char p[800], logpath[800];
	snprintf(logpath, sizeof logpath, "%s/log.txt", dir);
	uint64_t rng = 12345;

	/* Random bytes, and an empty file, where orphans would be. */
	uint8_t junk[5000];
	for (size_t i = 0; i < sizeof junk; i++)
		junk[i] = (uint8_t)rs_rand(&rng);
	snprintf(p, sizeof p, "%s/g.3.bin.active", dir);
	CHECK(rs_write_file(p, junk, sizeof junk) == 0, "write");
	snprintf(p, sizeof p, "%s/g.5.bin.active", dir);
	CHECK(rs_write_file(p, "", 0) == 0, "write");
	char *log = record_capturing_stderr(dir, "g", logpath);
	CHECK(strstr(log, "g.3.bin.active") && strstr(log, "g.5.bin.active"),
	      "no log line about the garbage files");
	free(log);
	struct tc_trace t;
	CHECK(tc_load_dir(&t, dir, "g", false) == 0, "load");
	for (size_t i = 0; i < t.nsegs; i++) {
		CHECK(!t.segs[i].active, "%s left", t.segs[i].path);
		CHECK(t.segs[i].damage == SS_DAMAGE_NONE, "%s: %s", t.segs[i].path,
		      t.segs[i].damage_reason);
	}
	CHECK(t.nsegs == 1 && t.segs[0].seq == 6 && t.segs[0].events > 0,
	      "%zu segments, first %llu", t.nsegs, t.nsegs ? (unsigned long long)t.segs[0].seq : 0ull);
	tc_free(&t);

	/* A valid file header (from a real segment) followed by garbage. */
	snprintf(p, sizeof p, "%s/g.6.bin", dir);
	size_t len = 0;
	char *real = rs_read_file(p, &len);
	CHECK(real && len > sizeof(struct ss_file_header), "read %s", p);
	uint32_t hsize;
	memcpy(&hsize, real + offsetof(struct ss_file_header, header_size), sizeof hsize);
	CHECK(hsize >= sizeof(struct ss_file_header) && hsize < len, "header size %u", hsize);
	size_t glen = hsize + 3000;
	uint8_t *g = malloc(glen);
	CHECK(g, "oom");
	memcpy(g, real, hsize);
	for (size_t i = hsize; i < glen; i++)
		g[i] = (uint8_t)rs_rand(&rng);
	free(real);
	snprintf(p, sizeof p, "%s/h.3.bin.active", dir);
	CHECK(rs_write_file(p, g, glen) == 0, "write");
	free(g);
	log = record_capturing_stderr(dir, "h", logpath);
	CHECK(strstr(log, "h.3.bin"), "no log line about h.3.bin.active");
	free(log);
	CHECK(tc_load_dir(&t, dir, "h", false) == 0, "load");
	for (size_t i = 0; i < t.nsegs; i++) {
		CHECK(!t.segs[i].active, "%s left", t.segs[i].path);
		CHECK(t.segs[i].sealed && t.segs[i].damage == SS_DAMAGE_NONE, "%s: %s",
		      t.segs[i].path, t.segs[i].damage_reason);
		if (t.segs[i].seq == 3)
			CHECK(t.segs[i].events == 0 &&
			      t.segs[i].footer.sealed_by == SS_SEALED_RECOVERY, "recovered garbage");
	}
	CHECK(t.nsegs >= 1 && t.segs[t.nsegs - 1].seq == 4 && t.segs[t.nsegs - 1].events > 0,
	      "no new segment after the garbage");
	printf("garbage: %zu h-segments (the header-only orphan %s)\n", t.nsegs,
	       t.nsegs == 2 ? "recovered empty" : "removed");
	tc_free(&t);
	tc_rmrf(dir);
	free(dir);
}

int main(void)
{
	test_unwritable();
	test_symlinks();
	test_modes();
	test_garbage();
	printf("test_hostile_fs: ok\n");
	return 0;
}

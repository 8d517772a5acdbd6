/*
 * test_toggle.c - the runtime toggle and a second session in the same process.
 *
 * Session 1: stallscope_set_enabled(0) turns every hook into a no-op
 * (stallscope_is_recording() is 0) and set_enabled(1) resumes in the same session
 * and the same segment; the trace holds exactly the events made while enabled
 * (each phase uses its own task ids), on the main thread and on a worker thread.
 *
 * Session 2 (stop, then start again with the same directory and prefix): segment
 * numbering continues after session 1's, the session id changes, location and name
 * ids cached by STALLSCOPE_LOCATION()/STALLSCOPE_NAME() in session 1 still resolve
 * because session 2's segment defines them again itself, and a thread that became
 * a worker before any start (worker_begin before stallscope_start) is announced as
 * a worker (WORKER_BEGIN with its runtime and index) in each session. In each
 * session the recorder's thread carries its name (ss-writer), so `top -H` and
 * profiles of the host tell it from the program's threads; hooks only (no CPU
 * sampling, no task dumps) the writer's thread also takes the stall watchdog's
 * looks, so there is no ss-watchdog thread. Sessions 3 and 4 (another
 * directory): with task dumps on, then with CPU sampling on, the watchdog has
 * a thread of its own, named ss-watchdog when start returns (by borrowing the
 * caller's name, or, sampling on, by naming it from outside), and the
 * caller's own name is its own again.
 */
#include <stallscope/stallscope.h>

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>

#include "trace_check.h"

#define PHASE_ON1 100u
#define PHASE_OFF 200u
#define PHASE_ON2 300u
#define PHASE_S2 400u
#define PER_PHASE 50u

static pthread_barrier_t bar;

static uint32_t site_location(void)
{
	return STALLSCOPE_LOCATION();
}

static uint32_t site_name(void)
{
	return STALLSCOPE_NAME("toggle-span");
}

static void hooks(uint64_t base)
{
	for (uint64_t k = 0; k < PER_PHASE; k++) {
		stallscope_poll_begin(base + k, site_location());
		stallscope_span_begin(site_name());
		stallscope_span_end(site_name());
		stallscope_poll_end();
	}
}

/* The worker: worker_begin before any session, then one phase per barrier step. */
static void *worker(void *arg)
{
	(void)arg;
	stallscope_worker_begin("toggle-rt", 7);
	pthread_barrier_wait(&bar); /* A: session 1 started */
	hooks(10000 + PHASE_ON1);
	pthread_barrier_wait(&bar); /* B: done */
	pthread_barrier_wait(&bar); /* C: disabled */
	hooks(10000 + PHASE_OFF);
	pthread_barrier_wait(&bar); /* D: done */
	pthread_barrier_wait(&bar); /* E: enabled again */
	hooks(10000 + PHASE_ON2);
	pthread_barrier_wait(&bar); /* F: done */
	pthread_barrier_wait(&bar); /* G: session 1 stopped, session 2 started */
	hooks(10000 + PHASE_S2);
	pthread_barrier_wait(&bar); /* H: done */
	pthread_barrier_wait(&bar); /* I: session 2 stopped */
	return NULL;
}

struct seg_scan {
	uint64_t seq, session_id;
	int loc_defined, name_defined, loc_func_ok;
	uint64_t loc_func;
	int worker_begin;           /* WORKER_BEGIN "toggle-rt"/7 seen */
	uint64_t worker_thread;     /* the lane that WORKER_BEGIN is on */
	uint64_t tasks[4];          /* poll_begin count per phase of the main thread */
	uint64_t wtasks[4];         /* ... of the worker */
	uint64_t other_events;
	uint32_t loc, name;
	char func_name[64];
};

static int phase_of(uint64_t task)
{
	uint64_t b = task % 10000;
	if (b >= PHASE_ON1 && b < PHASE_ON1 + PER_PHASE) return 0;
	if (b >= PHASE_OFF && b < PHASE_OFF + PER_PHASE) return 1;
	if (b >= PHASE_ON2 && b < PHASE_ON2 + PER_PHASE) return 2;
	if (b >= PHASE_S2 && b < PHASE_S2 + PER_PHASE) return 3;
	return -1;
}

/* Reads one segment on its own: definitions must come from this file alone. */
static void scan_segment(const char *path, struct seg_scan *s)
{
	struct ss_reader *r;
	char err[256];
	CHECK(ss_reader_open_file(&r, path, NULL, NULL, err, sizeof err) == 0, "%s: %s", path, err);
	s->seq = ss_reader_header(r)->segment_seq;
	s->session_id = ss_reader_header(r)->session_id;
	struct ss_block_info b;
	struct ss_record rec;
	uint64_t func_string = 0;
	while (ss_reader_next_block(r, &b)) {
		while (ss_reader_next_record(r, &rec)) {
			switch (rec.type) {
			case SS_REC_LOCATION:
				if (rec.u.location.id == s->loc) {
					s->loc_defined = 1;
					func_string = rec.u.location.function;
				}
				continue;
			case SS_REC_STRING:
				if (rec.u.string.id == s->name && rec.u.string.len == 11 &&
				    !memcmp(rec.u.string.data, "toggle-span", 11))
					s->name_defined = 1;
				continue;
			case SS_REC_WORKER_BEGIN: {
				const struct ss_string_def *rt = ss_reader_string(r, rec.u.worker_begin.runtime);
				if (rt && !strcmp(rt->data, "toggle-rt") && rec.u.worker_begin.index == 7) {
					s->worker_begin++;
					s->worker_thread = rec.thread;
				}
				continue;
			}
			case SS_REC_POLL_BEGIN: {
				int ph = phase_of(rec.u.poll_begin.task);
				CHECK(ph >= 0, "unexpected task %llu", (unsigned long long)rec.u.poll_begin.task);
				CHECK(rec.u.poll_begin.location == s->loc, "location id %llu, want %u",
				      (unsigned long long)rec.u.poll_begin.location, s->loc);
				if (rec.u.poll_begin.task >= 10000)
					s->wtasks[ph]++;
				else
					s->tasks[ph]++;
				continue;
			}
			case SS_REC_SPAN_BEGIN:
			case SS_REC_SPAN_END:
				CHECK(rec.u.span.name == s->name, "span name id");
				continue;
			case SS_REC_POLL_END:
			case SS_REC_THREAD_EXIT:
			case SS_REC_WORKER_END:
				continue;
			default:
				if (rec.is_event)
					s->other_events++;
			}
		}
	}
	CHECK(ss_reader_damage(r)->kind == SS_DAMAGE_NONE, "%s: %s", path, ss_reader_damage(r)->reason);
	CHECK(ss_reader_stats(r)->sealed, "%s not sealed", path);
	if (func_string) {
		const struct ss_string_def *f = ss_reader_string(r, func_string);
		if (f)
			snprintf(s->func_name, sizeof s->func_name, "%s", f->data);
	}
	ss_reader_close(r);
}

/* Whether a thread of this process is called name. */
static int has_thread(const char *name)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int found = 0;
	while (d && !found && (e = readdir(d))) {
		char path[300], comm[64] = "";
		snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
		FILE *f = fopen(path, "r");
		if (f && fgets(comm, sizeof comm, f))
			comm[strcspn(comm, "\n")] = 0;
		if (f)
			fclose(f);
		found = strcmp(comm, name) == 0;
	}
	if (d)
		closedir(d);
	return found;
}

/* A session with task dumps (dumps) or CPU sampling on: ss-watchdog named
 * when start returns, the caller's name unchanged. */
static void named_watchdog(const char *what, int dumps)
{
	char *dir = tc_tmpdir("toggle-wd");
	struct stallscope_config cfg;
	stallscope_config_init(&cfg);
	cfg.output_dir = dir;
	cfg.file_prefix = "tw";
	cfg.cpu_sampling = !dumps;
	cfg.task_dump_enabled = dumps;
	char own0[17] = "", own1[17] = "";
	prctl(PR_GET_NAME, own0, 0, 0, 0);
	CHECK(stallscope_start(&cfg) == 0, "start (%s): %s", what, stallscope_last_error());
	int writer = has_thread("ss-writer"), watchdog = has_thread("ss-watchdog");
	prctl(PR_GET_NAME, own1, 0, 0, 0);
	static char metrics[65536];
	stallscope_metrics_text(metrics, sizeof metrics);
	int sampling = !strstr(metrics, "stallscope_sampler_mode{mode=\"off\"} 1");
	CHECK(stallscope_stop() == 0, "stop (%s): %s", what, stallscope_last_error());
	tc_rmrf(dir);
	free(dir);
	if (!dumps && !sampling) {
		printf("SKIP: %s: the CPU sampler did not start (no perf, no timer)\n", what);
		return;
	}
	printf("%s: ss-writer %d, ss-watchdog %d, caller \"%s\" -> \"%s\"\n", what, writer,
	       watchdog, own0, own1);
	CHECK(writer && watchdog, "%s: the recorder's threads are not named (ss-writer %d, "
	      "ss-watchdog %d)", what, writer, watchdog);
	CHECK(!strcmp(own0, own1), "%s: the caller's name went from \"%s\" to \"%s\"", what,
	      own0, own1);
}

int main(void)
{
	char *dir = tc_tmpdir("toggle");
	struct stallscope_config cfg;
	stallscope_config_init(&cfg);
	cfg.output_dir = dir;
	cfg.file_prefix = "tg";
	cfg.cpu_sampling = 0;
	cfg.rotation_period_s = UINT32_MAX; /* one segment per session */

	CHECK(pthread_barrier_init(&bar, NULL, 2) == 0, "barrier");
	pthread_t th;
	CHECK(pthread_create(&th, NULL, worker, NULL) == 0, "pthread_create");

	/* Session 1. */
	CHECK(stallscope_start(&cfg) == 0, "start 1: %s", stallscope_last_error());
	CHECK(stallscope_is_recording() == 1, "recording after start");
	CHECK(has_thread("ss-writer") && !has_thread("ss-watchdog"),
	      "session 1: the recorder's thread is not named, or hooks only has two threads");
	pthread_barrier_wait(&bar); /* A */
	hooks(PHASE_ON1);
	pthread_barrier_wait(&bar); /* B */
	stallscope_set_enabled(0);
	CHECK(stallscope_is_recording() == 0, "recording while disabled");
	struct stallscope_stats st;
	stallscope_get_stats(&st);
	CHECK(st.recording == 0, "stats.recording while disabled");
	uint64_t events_off = st.events, dropped_off = st.events_dropped;
	pthread_barrier_wait(&bar); /* C */
	hooks(PHASE_OFF);
	pthread_barrier_wait(&bar); /* D */
	stallscope_get_stats(&st);
	CHECK(st.events == events_off && st.events_dropped == dropped_off,
	      "disabled hooks counted: events %llu -> %llu, dropped %llu -> %llu",
	      (unsigned long long)events_off, (unsigned long long)st.events,
	      (unsigned long long)dropped_off, (unsigned long long)st.events_dropped);
	stallscope_set_enabled(1);
	CHECK(stallscope_is_recording() == 1, "not recording after re-enable");
	pthread_barrier_wait(&bar); /* E */
	hooks(PHASE_ON2);
	pthread_barrier_wait(&bar); /* F */
	CHECK(stallscope_stop() == 0, "stop 1: %s", stallscope_last_error());
	CHECK(stallscope_is_recording() == 0, "recording after stop");

	/* Session 2, same directory and prefix. */
	CHECK(stallscope_start(&cfg) == 0, "start 2: %s", stallscope_last_error());
	CHECK(has_thread("ss-writer") && !has_thread("ss-watchdog"),
	      "session 2: the recorder's thread is not named, or hooks only has two threads");
	pthread_barrier_wait(&bar); /* G */
	hooks(PHASE_S2);
	pthread_barrier_wait(&bar); /* H */
	CHECK(stallscope_stop() == 0, "stop 2: %s", stallscope_last_error());
	pthread_barrier_wait(&bar); /* I */
	pthread_join(th, NULL);
	pthread_barrier_destroy(&bar);

	struct tc_trace t;
	CHECK(tc_load_dir(&t, dir, "tg", false) == 0, "load");
	CHECK(t.nsegs == 2, "%zu segments, want one per session", t.nsegs);
	CHECK(t.segs[0].seq + 1 == t.segs[1].seq, "numbering: %llu then %llu",
	      (unsigned long long)t.segs[0].seq, (unsigned long long)t.segs[1].seq);
	CHECK(t.lost == 0, "lost %llu", (unsigned long long)t.lost);

	struct seg_scan s1 = {.loc = site_location(), .name = site_name()};
	struct seg_scan s2 = s1;
	scan_segment(t.segs[0].path, &s1);
	scan_segment(t.segs[1].path, &s2);
	CHECK(s1.session_id != s2.session_id, "both sessions have id %llu",
	      (unsigned long long)s1.session_id);

	/* Session 1: both enabled phases whole, the disabled phase absent. */
	CHECK(s1.tasks[0] == PER_PHASE && s1.tasks[1] == 0 && s1.tasks[2] == PER_PHASE && s1.tasks[3] == 0,
	      "main thread, session 1: phases %llu %llu %llu %llu", (unsigned long long)s1.tasks[0],
	      (unsigned long long)s1.tasks[1], (unsigned long long)s1.tasks[2],
	      (unsigned long long)s1.tasks[3]);
	CHECK(s1.wtasks[0] == PER_PHASE && s1.wtasks[1] == 0 && s1.wtasks[2] == PER_PHASE &&
	      s1.wtasks[3] == 0, "worker, session 1: phases %llu %llu %llu %llu",
	      (unsigned long long)s1.wtasks[0], (unsigned long long)s1.wtasks[1],
	      (unsigned long long)s1.wtasks[2], (unsigned long long)s1.wtasks[3]);
	/* Session 2: only its own phase. */
	CHECK(s2.tasks[3] == PER_PHASE && s2.tasks[0] + s2.tasks[1] + s2.tasks[2] == 0,
	      "main thread, session 2: %llu", (unsigned long long)s2.tasks[3]);
	CHECK(s2.wtasks[3] == PER_PHASE && s2.wtasks[0] + s2.wtasks[1] + s2.wtasks[2] == 0,
	      "worker, session 2: %llu", (unsigned long long)s2.wtasks[3]);
	CHECK(s1.other_events == 0 && s2.other_events == 0, "unexpected events");

	/* Ids cached in session 1 are defined again by session 2's own segment. */
	for (int i = 0; i < 2; i++) {
		struct seg_scan *s = i ? &s2 : &s1;
		CHECK(s->loc_defined, "session %d: location %u not defined in its segment", i + 1, s->loc);
		CHECK(!strcmp(s->func_name, "site_location"), "session %d: location function \"%s\"",
		      i + 1, s->func_name);
		CHECK(s->name_defined, "session %d: name %u not defined in its segment", i + 1, s->name);
		CHECK(s->worker_begin == 1, "session %d: %d WORKER_BEGIN toggle-rt/7 records", i + 1,
		      s->worker_begin);
	}
	CHECK(tc_thread(&t, s2.worker_thread), "worker thread has no definition");

	tc_free(&t);
	tc_rmrf(dir);
	free(dir);

	/* Sessions 3 and 4. */
	named_watchdog("task dumps on", 1);
	named_watchdog("CPU sampling on", 0);
	printf("toggle: ok\n");
	return 0;
}

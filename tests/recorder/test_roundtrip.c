/*
 * test_roundtrip.c - every hook comes back out of the segment exactly: kind, fields,
 * thread, worker identity, time order, names and locations; files are 0640.
 */
#include <stallscope/stallscope.h>

#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trace_check.h"

static uint32_t loc_a, loc_b, name_req, name_val;

static void *waker(void *arg)
{
	(void)arg;
	/* A thread that is not a worker: its wakes are recorded on its own lane. */
	stallscope_task_wake(77);
	stallscope_mark(name_val, -5);
	return NULL;
}

int main(void)
{
	char *dir = tc_tmpdir("roundtrip");
	struct stallscope_config cfg;
	stallscope_config_init(&cfg);
	cfg.output_dir = dir;
	cfg.file_prefix = "rt";

	/* Hooks before start are no-ops. */
	stallscope_poll_begin(1, 1);
	stallscope_poll_end();
	CHECK(!stallscope_is_recording(), "recording before start");

	loc_a = STALLSCOPE_LOCATION();
	loc_b = stallscope_location("src/other.c", 42, "other_fn");
	CHECK(loc_a && loc_b && loc_a != loc_b, "location ids %u %u", loc_a, loc_b);
	CHECK(stallscope_location("src/other.c", 42, "other_fn") == loc_b, "interning is stable");
	name_req = STALLSCOPE_NAME("request");
	name_val = stallscope_name("value");

	CHECK(stallscope_start(&cfg) == 0, "start: %s", stallscope_last_error());
	CHECK(stallscope_is_recording(), "not recording after start");
	stallscope_worker_begin("rt-main", 3);
	stallscope_task_spawn(10, loc_a);
	stallscope_poll_begin(10, loc_a);
	stallscope_task_spawn(11, loc_b);
	stallscope_task_wake(11);
	stallscope_span_begin(name_req);
	stallscope_mark(name_val, 123456789012345);
	stallscope_span_end(name_req);
	stallscope_poll_end();
	stallscope_queue_depth(5, 70000);
	stallscope_park();
	stallscope_unpark();
	stallscope_poll_begin(11, loc_b);
	stallscope_poll_end();
	stallscope_task_terminate(11);
	stallscope_task_terminate(10);
	pthread_t th;
	pthread_create(&th, NULL, waker, NULL);
	pthread_join(th, NULL);
	stallscope_worker_end();
	CHECK(stallscope_stop() == 0, "stop: %s", stallscope_last_error());
	CHECK(!stallscope_is_recording(), "recording after stop");

	/* Hooks after stop are no-ops too. */
	stallscope_poll_begin(99, loc_a);
	stallscope_poll_end();

	struct tc_trace t;
	CHECK(tc_load_dir(&t, dir, "rt", true) == 0, "load");
	CHECK(t.nsegs == 1, "%zu segments", t.nsegs);
	CHECK(t.segs[0].sealed && !t.segs[0].active, "segment sealed and renamed");
	CHECK(t.segs[0].damage == SS_DAMAGE_NONE, "damage: %s", t.segs[0].damage_reason);
	struct stat st;
	CHECK(stat(t.segs[0].path, &st) == 0 && (st.st_mode & 0777) == (0640 & ~(mode_t)022),
	      "mode %o", st.st_mode & 0777);

	static const struct { uint8_t type; uint64_t a, b; } want[] = {
		{SS_REC_WORKER_BEGIN, 0, 3}, {SS_REC_SPAWN, 10, 0}, {SS_REC_POLL_BEGIN, 10, 0},
		{SS_REC_SPAWN, 11, 1}, {SS_REC_WAKE, 11, 0}, {SS_REC_SPAN_BEGIN, 0, 0},
		{SS_REC_MARK, 0, 123456789012345}, {SS_REC_SPAN_END, 0, 0}, {SS_REC_POLL_END, 0, 0},
		{SS_REC_QUEUE, 5, 70000}, {SS_REC_PARK, 0, 0}, {SS_REC_UNPARK, 0, 0},
		{SS_REC_POLL_BEGIN, 11, 1}, {SS_REC_POLL_END, 0, 0}, {SS_REC_TERMINATE, 11, 0},
		{SS_REC_TERMINATE, 10, 0}, {SS_REC_WORKER_END, 0, 0},
	};
	size_t nwant = sizeof want / sizeof want[0];
	uint64_t main_thread = 0, prev_ts = 0;
	size_t k = 0;
	for (size_t i = 0; i < t.nevents; i++) {
		const struct tc_event *e = &t.events[i];
		if (e->type == SS_REC_THREAD_EXIT || (main_thread && e->thread != main_thread))
			continue;
		if (!main_thread)
			main_thread = e->thread;
		CHECK(k < nwant, "extra event type 0x%x", e->type);
		CHECK(e->type == want[k].type, "event %zu: type 0x%x, want 0x%x", k, e->type, want[k].type);
		CHECK(e->ts >= prev_ts, "time went back at event %zu", k);
		prev_ts = e->ts;
		switch (e->type) {
		case SS_REC_SPAWN:
		case SS_REC_POLL_BEGIN:
			CHECK(e->a == want[k].a, "task %llu", (unsigned long long)e->a);
			CHECK(e->b == (want[k].b ? loc_b : loc_a), "location %llu", (unsigned long long)e->b);
			break;
		case SS_REC_WAKE:
		case SS_REC_TERMINATE:
			CHECK(e->a == want[k].a, "task %llu", (unsigned long long)e->a);
			break;
		case SS_REC_QUEUE:
			CHECK(e->a == 5 && e->b == 70000, "queue %llu %llu", (unsigned long long)e->a,
			      (unsigned long long)e->b);
			break;
		case SS_REC_MARK:
			CHECK(e->a == name_val && (int64_t)e->b == 123456789012345, "mark");
			CHECK(!strcmp(tc_string(&t, e->a), "value"), "mark name");
			break;
		case SS_REC_SPAN_BEGIN:
		case SS_REC_SPAN_END:
			CHECK(!strcmp(tc_string(&t, e->a), "request"), "span name");
			break;
		case SS_REC_WORKER_BEGIN:
			CHECK(!strcmp(tc_string(&t, e->a), "rt-main") && e->b == 3, "worker identity");
			break;
		}
		k++;
	}
	CHECK(k == nwant, "decoded %zu of %zu events", k, nwant);

	const struct tc_thread *mt = tc_thread(&t, main_thread);
	CHECK(mt && mt->tid == (uint64_t)getpid(), "main thread tid");
	CHECK(t.loc_func && loc_b < t.nlocs && !strcmp(tc_string(&t, t.loc_func[loc_b]), "other_fn"),
	      "location function name");

	/* The waker thread: a separate lane with a wake and a negative mark, and exit. */
	int found_wake = 0, found_mark = 0;
	for (size_t i = 0; i < t.nevents; i++) {
		const struct tc_event *e = &t.events[i];
		if (e->thread == main_thread)
			continue;
		found_wake += e->type == SS_REC_WAKE && e->a == 77;
		found_mark += e->type == SS_REC_MARK && (int64_t)e->b == -5;
	}
	CHECK(found_wake == 1 && found_mark == 1, "waker thread events %d %d", found_wake, found_mark);
	CHECK(t.lost == 0, "lost %llu", (unsigned long long)t.lost);
	CHECK(t.segs[0].footer.events == t.segs[0].events, "footer count %llu vs %llu",
	      (unsigned long long)t.segs[0].footer.events, (unsigned long long)t.segs[0].events);
	tc_free(&t);
	tc_rmrf(dir);
	free(dir);
	printf("roundtrip: ok\n");
	return 0;
}

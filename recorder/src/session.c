/*
 * session.c - starting, stopping and toggling a recording, and the control calls
 * that do not belong to a more specific file.
 *
 * One session at a time, serialised by a mutex. Hooks never see that mutex: they
 * see only ss_state, which is the session number while recording and 0 otherwise.
 */
#include "recorder-private.h"
#include "clock.h"
#include "sampler.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

static pthread_mutex_t session_mu = PTHREAD_MUTEX_INITIALIZER;
static uint32_t session_counter;
static uint32_t active_session;  /* under session_mu: the running session, or 0 */
static int enabled_flag = 1;     /* the toggle, kept across sessions */
static struct stallscope_config active_cfg;
static char *cfg_strings[4];
static int atexit_done, atfork_done;

STALLSCOPE_API void stallscope_config_init(struct stallscope_config *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	cfg->struct_size = sizeof *cfg;
	cfg->output_dir = ".";
	cfg->file_prefix = "stallscope";
	cfg->max_file_size = 104857600;
	cfg->rotation_count = 10;
	cfg->rotation_period_s = 60;
	cfg->flush_interval_ms = 100;
	cfg->buffer_events = 65536;
	cfg->max_threads = 256;
	cfg->compress = 1;
	cfg->sample_hz = 999;
	cfg->cpu_sampling = 1;
	cfg->stall_threshold_ms = 10;
	cfg->task_dump_enabled = 0;
	cfg->task_dump_idle_threshold_ms = 10;
	cfg->unwind = STALLSCOPE_UNWIND_AUTO;
	cfg->stack_copy_bytes = 8192;
	cfg->archive_timeout_s = 300;
}

/* The layout is ABI: fields only ever take the place of reserved words. */
_Static_assert(sizeof(struct stallscope_config) == 144, "struct stallscope_config size");

static uint32_t round_pow2(uint32_t v)
{
	uint32_t p = 64;
	while (p < v && p < (1u << 26))
		p <<= 1;
	return p;
}

/* Copies cfg with defaults applied and its strings owned by us. */
static int adopt_config(const struct stallscope_config *in)
{
	struct stallscope_config d;
	stallscope_config_init(&d);
	struct stallscope_config c = *in;
	if (c.struct_size != sizeof c) {
		ss_set_error("stallscope_config was not initialised with stallscope_config_init() "
			     "(or comes from another library version)");
		return -1;
	}
	if (!c.output_dir || !*c.output_dir)
		c.output_dir = d.output_dir;
	if (!c.file_prefix || !*c.file_prefix)
		c.file_prefix = d.file_prefix;
	if (strchr(c.file_prefix, '/')) {
		ss_set_error("file prefix \"%s\" must not contain '/'", c.file_prefix);
		return -1;
	}
	if (!c.max_file_size)
		c.max_file_size = d.max_file_size;
	if (c.max_file_size < 65536) {
		ss_set_error("max_file_size %llu is below the minimum of 65536 bytes",
			     (unsigned long long)c.max_file_size);
		return -1;
	}
	if (!c.rotation_count)
		c.rotation_count = d.rotation_count;
	if (!c.rotation_period_s)
		c.rotation_period_s = d.rotation_period_s;
	if (!c.flush_interval_ms)
		c.flush_interval_ms = d.flush_interval_ms;
	c.buffer_events = round_pow2(c.buffer_events ? c.buffer_events : d.buffer_events);
	if (!c.max_threads)
		c.max_threads = d.max_threads;
	if (!c.sample_hz)
		c.sample_hz = d.sample_hz;
	if (!c.task_dump_idle_threshold_ms)
		c.task_dump_idle_threshold_ms = d.task_dump_idle_threshold_ms;
	if (c.unwind < STALLSCOPE_UNWIND_AUTO || c.unwind > STALLSCOPE_UNWIND_DWARF) {
		ss_set_error("unwind %d is not STALLSCOPE_UNWIND_AUTO, _FP or _DWARF", (int)c.unwind);
		return -1;
	}
	if (!c.stack_copy_bytes)
		c.stack_copy_bytes = d.stack_copy_bytes;
	if (c.hook_clock < STALLSCOPE_CLOCK_AUTO || c.hook_clock > STALLSCOPE_CLOCK_VDSO) {
		ss_set_error("hook_clock %d is not STALLSCOPE_CLOCK_AUTO, _TSC or _VDSO", (int)c.hook_clock);
		return -1;
	}
	if (c.stack_copy_bytes < 1024 || c.stack_copy_bytes > 65528) {
		ss_set_error("stack_copy_bytes %u is out of range (1024 to 65528)", c.stack_copy_bytes);
		return -1;
	}
	if (!c.archive_timeout_s)
		c.archive_timeout_s = d.archive_timeout_s;
	for (int i = 0; i < 4; i++) {
		free(cfg_strings[i]);
		cfg_strings[i] = NULL;
	}
	cfg_strings[0] = strdup(c.output_dir);
	cfg_strings[1] = strdup(c.file_prefix);
	cfg_strings[2] = c.metrics_file && *c.metrics_file ? strdup(c.metrics_file) : NULL;
	cfg_strings[3] = c.archive_command && *c.archive_command ? strdup(c.archive_command) : NULL;
	if (!cfg_strings[0] || !cfg_strings[1] || (c.archive_command && *c.archive_command && !cfg_strings[3])) {
		ss_set_error("out of memory");
		return -1;
	}
	c.output_dir = cfg_strings[0];
	c.file_prefix = cfg_strings[1];
	c.metrics_file = cfg_strings[2];
	c.archive_command = cfg_strings[3];
	active_cfg = c;
	return 0;
}

static void at_exit(void)
{
	/* Buffered events are the interesting ones (they precede the exit): write them. */
	stallscope_stop();
}

static void in_child(void)
{
	/* The writer thread does not exist in a forked child: recording is off there,
	 * and the parent's session is the parent's. */
	atomic_store(&ss_state, 0u);
	active_session = 0;
	atomic_store(&ss_counters.active, 0u);
	atomic_store(&ss_counters.writer_healthy, 0u);
	pthread_mutex_init(&session_mu, NULL);
	ss_tls_session = 0;
	ss_tls_slot = NULL;
	/* Before anything starts a session here: the parent's sampler state
	 * names rings this process does not have. */
	ss_sampler_after_fork();
}

static uint64_t random_id(void)
{
	uint64_t v = 0;
	if (getrandom(&v, sizeof v, GRND_NONBLOCK) != sizeof v)
		v = ss_now() ^ ((uint64_t)getpid() << 32);
	return v ? v : 1;
}

STALLSCOPE_API int stallscope_start(const struct stallscope_config *cfg)
{
	char err[512] = "";
	uint64_t cpu0 = ss_thread_cpu_ns();
	pthread_mutex_lock(&session_mu);
	atomic_store(&ss_counters.configured, 1u);
	if (active_session) {
		pthread_mutex_unlock(&session_mu);
		ss_set_error("a recording session is already running");
		return -1;
	}
	if (!cfg) {
		pthread_mutex_unlock(&session_mu);
		ss_set_error("stallscope_start: no configuration given");
		return -1;
	}
	if (adopt_config(cfg) != 0 ||
	    ss_pool_init(active_cfg.max_threads, active_cfg.buffer_events) != 0) {
		atomic_fetch_add(&ss_counters.errors, 1);
		pthread_mutex_unlock(&session_mu);
		return -1;
	}
	uint32_t session = ++session_counter;
	if (!session)
		session = ++session_counter;
	struct ss_writer_config wc = {
		.seg = {
			.dir = active_cfg.output_dir,
			.prefix = active_cfg.file_prefix,
			.max_file_size = active_cfg.max_file_size,
			.rotation_count = active_cfg.rotation_count,
			.session_id = random_id(),
			.archiving = active_cfg.archive_command != NULL,
		},
		.rotation_period_ns = active_cfg.rotation_period_s == UINT32_MAX
			? 0 : (uint64_t)active_cfg.rotation_period_s * 1000000000u,
		.flush_interval_ns = (uint64_t)active_cfg.flush_interval_ms * 1000000u,
		.compress = active_cfg.compress,
		.metrics_file = active_cfg.metrics_file,
		.session = session,
		.user = &active_cfg,
		.sample_all_threads = active_cfg.sample_all_threads,
	};
	/* The writer and watchdog threads are the recorder's: a preload shim that
	 * wraps pthread_create must not make them lanes. */
	ss_shim_tls.creating_internal = 1;
	int wrc = ss_writer_start(&wc, err, sizeof err);
	ss_shim_tls.creating_internal = 0;
	if (wrc != 0) {
		atomic_fetch_add(&ss_counters.errors, 1);
		pthread_mutex_unlock(&session_mu);
		ss_set_error("%s; recording is off", err);
		return -1;
	}
	active_session = session;
	atomic_store(&ss_counters.active, 1u);
	if (enabled_flag)
		atomic_store_explicit(&ss_state, session, memory_order_release);
	if (!atexit_done)
		atexit_done = atexit(at_exit) == 0;
	if (!atfork_done)
		atfork_done = pthread_atfork(NULL, NULL, in_child) == 0;
	atomic_store(&ss_counters.cpu_start_ns, ss_thread_cpu_ns() - cpu0 + ss_clock_start_cpu_ns());
	pthread_mutex_unlock(&session_mu);
	return 0;
}

STALLSCOPE_API int stallscope_start_from_env(void)
{
	struct stallscope_config cfg;
	char err[512] = "";
	int r = ss_config_from_env(&cfg, err, sizeof err);
	if (r == 0)
		return 0;
	if (r < 0) {
		atomic_store(&ss_counters.configured, 1u);
		atomic_fetch_add(&ss_counters.errors, 1);
		ss_set_error("%s; recording is off", err);
		return -1;
	}
	return stallscope_start(&cfg);
}

STALLSCOPE_API int stallscope_stop(void)
{
	uint64_t cpu0 = ss_thread_cpu_ns();
	pthread_mutex_lock(&session_mu);
	if (!active_session) {
		pthread_mutex_unlock(&session_mu);
		return 0;
	}
	atomic_store_explicit(&ss_state, 0u, memory_order_release);
	/* Before the writer's last cycle: the metrics file it writes at stop is the one
	 * left behind, and must say the session is over (active 0, writer not healthy). */
	atomic_store(&ss_counters.active, 0u);
	int rc = ss_writer_stop(cpu0);
	ss_pool_reset();
	active_session = 0;
	atomic_store(&ss_counters.cpu_stop_ns, ss_thread_cpu_ns() - cpu0);
	pthread_mutex_unlock(&session_mu);
	if (rc != 0)
		ss_set_error("the last segment could not be written completely");
	return rc;
}

STALLSCOPE_API void stallscope_set_enabled(int enabled)
{
	pthread_mutex_lock(&session_mu);
	enabled_flag = enabled != 0;
	atomic_store_explicit(&ss_state, enabled_flag ? active_session : 0u, memory_order_release);
	if (active_session)
		ss_writer_set_sampling(enabled_flag);
	pthread_mutex_unlock(&session_mu);
}

STALLSCOPE_API void stallscope_thread_attach(void)
{
	ss_learn_stack_bounds();
	uint32_t st = atomic_load_explicit(&ss_state, memory_order_acquire);
	if (st && ss_tls_session != st)
		ss_attach(st);
}

SS_INTERNAL void ss_worker_begin_id(uint32_t runtime_id, uint32_t index)
{
	ss_learn_stack_bounds();
	ss_tls_worker_runtime = runtime_id;
	ss_tls_worker_index = index;
	uint32_t st = atomic_load_explicit(&ss_state, memory_order_acquire);
	if (!st)
		return;
	if (ss_tls_session != st) {
		ss_attach(st); /* attaching announces the worker */
		return;
	}
	ss_push(ss_tls_slot, SS_EV_WORKER_BEGIN, ss_stamp(), ss_tls_worker_runtime, index, 0);
}

STALLSCOPE_API void stallscope_worker_begin(const char *runtime, uint32_t index)
{
	/* The thread's lane is the runtime's from now on: the preload shim stays out. */
	ss_shim_app_owns_thread();
	ss_worker_begin_id(ss_intern_string(runtime && *runtime ? runtime : "worker"), index);
}

STALLSCOPE_API void stallscope_worker_end(void)
{
	ss_tls_worker_runtime = 0;
	ss_tls_worker_index = 0;
	uint32_t st = atomic_load_explicit(&ss_state, memory_order_acquire);
	if (!st)
		return;
	/* A thread without a buffer tries once more; a refusal is counted as loss. */
	struct ss_slot *s = ss_tls_session == st ? ss_tls_slot : ss_attach(st);
	if (s)
		ss_push(s, SS_EV_WORKER_END, ss_stamp(), 0, 0, 0);
}

STALLSCOPE_API void stallscope_get_stats(struct stallscope_stats *st)
{
	memset(st, 0, sizeof *st);
	struct ss_pool *p = ss_pool_get();
	uint64_t buffered, dropped, taken, retired;
	/* Rings and totals read as one snapshot (ss_counters.stats_seq); after
	 * many tries with the writer mid-move (it was preempted there), the last
	 * reading is taken as it is. */
	for (int tries = 0;; tries++) {
		uint64_t s0 = atomic_load_explicit(&ss_counters.stats_seq, memory_order_acquire);
		buffered = dropped = 0;
		for (uint32_t i = 0, span = ss_pool_span(p); i < span; i++) {
			struct ss_slot *s = &p->slots[i];
			uint64_t h = atomic_load_explicit(&s->head, memory_order_relaxed);
			uint64_t t = atomic_load_explicit(&s->tail, memory_order_relaxed);
			buffered += h > t ? h - t : 0;
			dropped += atomic_load_explicit(&s->dropped, memory_order_relaxed);
		}
		taken = atomic_load_explicit(&ss_counters.events_taken, memory_order_relaxed);
		retired = atomic_load_explicit(&ss_counters.dropped_retired, memory_order_relaxed);
		atomic_thread_fence(memory_order_acquire);
		uint64_t s1 = atomic_load_explicit(&ss_counters.stats_seq, memory_order_relaxed);
		if ((s0 == s1 && !(s0 & 1)) || tries == 10000)
			break;
		sched_yield();
	}
	st->events = taken + buffered;
	st->events_dropped = dropped + retired + ss_pool_no_slot_drops();
	st->events_written = atomic_load(&ss_counters.events_written);
	st->events_lost_on_disk = atomic_load(&ss_counters.events_lost_on_disk);
	st->bytes_written = atomic_load(&ss_counters.bytes_written);
	st->segments_sealed = atomic_load(&ss_counters.segments_sealed);
	st->segments_evicted = atomic_load(&ss_counters.segments_evicted);
	st->disk_usage_bytes = atomic_load(&ss_counters.disk_usage);
	st->errors = atomic_load(&ss_counters.errors);
	st->recording = stallscope_is_recording();
	/* Healthy means: a session is active, its writer ran a cycle in the last five
	 * seconds, and its last write succeeded. */
	uint64_t beat = atomic_load(&ss_counters.last_cycle_ns);
	st->writer_healthy = atomic_load(&ss_counters.active) &&
			     atomic_load(&ss_counters.writer_healthy) &&
			     ss_now() - beat < 5000000000ull;
}

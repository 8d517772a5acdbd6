/*
 * metrics.c - the recorder's counters as Prometheus text, for
 * stallscope_metrics_text() and for the node_exporter textfile convention
 * (STALLSCOPE_METRICS_FILE, rewritten atomically: a temporary file, then rename).
 *
 * supported / configured / active_sessions are separate on purpose: they disagree
 * exactly when something needs diagnosing (asked for but failed to start, say).
 * writer_healthy is measured, not declared: see stallscope_get_stats().
 */
#include "recorder-private.h"
#include "sampler.h"
#include "unwind.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

SS_INTERNAL struct ss_counters ss_counters;

struct metric {
	const char *name, *type, *help;
	uint64_t value;
};

/* Like snprintf: as much as fits, even part of a line; need counts it all. n is
 * snprintf's result into line (cap bytes): a line cut there counts as cut, so
 * that no copy reads past it and every call's text is the same. */
static void append_line(char *buf, size_t len, size_t *need, const char *line, size_t cap, int n)
{
	if (n < 0 || !cap)
		return;
	if ((size_t)n >= cap)
		n = (int)(cap - 1);
	if (buf && *need + 1 < len) {
		size_t room = len - 1 - *need;
		memcpy(buf + *need, line, (size_t)n < room ? (size_t)n : room);
	}
	*need += (size_t)n;
}

/* An enum as a labelled gauge: one series per value, 1 for the one in use. */
#define append(buf, len, need, line, n) append_line(buf, len, need, line, sizeof line, n)

static void enum_gauge(char *buf, size_t len, size_t *need, const char *name, const char *help,
		       const char *const *values, size_t nvalues, const char *cur)
{
	char line[512];
	int n = snprintf(line, sizeof line, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
	append(buf, len, need, line, n);
	for (size_t i = 0; i < nvalues; i++) {
		n = snprintf(line, sizeof line, "%s{mode=\"%s\"} %d\n", name, values[i],
			     strcmp(values[i], cur) == 0);
		append(buf, len, need, line, n);
	}
}

STALLSCOPE_API size_t stallscope_metrics_text(char *buf, size_t len)
{
	struct stallscope_stats st;
	stallscope_get_stats(&st);
	const struct metric m[] = {
		{"stallscope_supported", "gauge", "The recorder library is linked and working (always 1).", 1},
		{"stallscope_configured", "gauge", "Recording was asked for (stallscope_start or STALLSCOPE_ENABLED).",
		 atomic_load(&ss_counters.configured)},
		{"stallscope_active_sessions", "gauge", "A session is recording (0 or 1).",
		 atomic_load(&ss_counters.active)},
		{"stallscope_disk_usage_bytes", "gauge", "Bytes of this prefix's segments on disk.", st.disk_usage_bytes},
		{"stallscope_errors_total", "counter", "Setup failures and I/O errors.", st.errors},
		{"stallscope_events_total", "counter", "Events accepted into thread buffers.", st.events},
		{"stallscope_events_dropped_total", "counter",
		 "Events lost: buffer full, no buffer free, or a failed write.",
		 st.events_dropped + st.events_lost_on_disk},
		{"stallscope_events_written_total", "counter", "Events written to segment files.", st.events_written},
		{"stallscope_bytes_written_total", "counter", "Bytes written to segment files.", st.bytes_written},
		{"stallscope_segments_sealed_total", "counter", "Segments completed with a footer.", st.segments_sealed},
		{"stallscope_segments_evicted_total", "counter", "Old segments deleted to keep the disk budget.",
		 st.segments_evicted},
		{"stallscope_archive_enabled", "gauge", "1 while STALLSCOPE_ARCHIVE_COMMAND ships sealed segments.",
		 atomic_load(&ss_counters.archive_enabled)},
		{"stallscope_archive_shipped_total", "counter", "Segments the archive command shipped (exit 0).",
		 atomic_load(&ss_counters.archive_shipped)},
		{"stallscope_archive_failed_total", "counter",
		 "Archive command runs that failed (non-zero exit, signal, or killed at the time limit).",
		 atomic_load(&ss_counters.archive_failed)},
		{"stallscope_archive_timeouts_total", "counter", "Archive command runs killed at their time limit.",
		 atomic_load(&ss_counters.archive_timeouts)},
		{"stallscope_archive_pending", "gauge", "Sealed segments not shipped yet.",
		 atomic_load(&ss_counters.archive_pending)},
		{"stallscope_archive_last_success_time_seconds", "gauge",
		 "When the archive command last succeeded (Unix time; 0: never).",
		 atomic_load(&ss_counters.archive_last_success_s)},
		{"stallscope_segments_evicted_unshipped_total", "counter",
		 "Segments deleted to keep the disk budget before they were shipped.",
		 atomic_load(&ss_counters.segments_evicted_unshipped)},
		{"stallscope_writer_healthy", "gauge",
		 "1 when the writer thread ran in the last 5 s and its last write succeeded.", st.writer_healthy},
		{"stallscope_writer_cycles_total", "counter", "Writer cycles (drains of the rings).",
		 atomic_load(&ss_counters.writer_cycles)},
		{"stallscope_watchdog_looks_total", "counter",
		 "Stall watchdog looks at the workers' polls.", atomic_load(&ss_counters.watchdog_looks)},
		{"stallscope_watchdog_own_thread", "gauge",
		 "1 while the stall watchdog's looks run on a thread of their own (sampling or task "
		 "dumps on, a seal under way, or a slow disk), 0 on the writer's thread or with no "
		 "watchdog; after stop, how the last session ended.",
		 atomic_load(&ss_counters.watchdog_own_thread)},
		{"stallscope_stall_capture_steps_total", "counter",
		 "Later steps of stall captures (a CPU-clock window's end, a look for a signal's answer).",
		 atomic_load(&ss_counters.capture_steps)},
	};
	size_t need = 0;
	char line[2048];
	for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
		int n = snprintf(line, sizeof line, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", m[i].name,
				 m[i].help, m[i].name, m[i].type, m[i].name,
				 (unsigned long long)m[i].value);
		append(buf, len, &need, line, n);
	}
	static const char *const sampler_modes[] = { "perf", "timer", "off" };
	enum_gauge(buf, len, &need, "stallscope_sampler_mode", "How CPU samples are taken: perf "
		   "(perf_event_open), timer (the signal-timer fallback) or off (none, or no session); "
		   "1 for the mode in use.", sampler_modes, 3,
		   ss_sampler_mode_name(ss_sampler_mode_published()));
	{
		int k = snprintf(line, sizeof line, "# HELP stallscope_sampler_foreign_records_total "
				 "Samples and switch records of other processes that per-CPU events of "
				 "every process (STALLSCOPE_SAMPLER=cpu) brought and the writer dropped "
				 "unwritten.\n# TYPE stallscope_sampler_foreign_records_total counter\n"
				 "stallscope_sampler_foreign_records_total %llu\n",
				 (unsigned long long)ss_sampler_foreign_total());
		append(buf, len, &need, line, k);
	}
	static const char *const unwind_modes[] = { "fp", "dwarf", "auto" };
	enum_gauge(buf, len, &need, "stallscope_unwind_mode", "How user stacks are taken: fp "
		   "(frame-pointer chains), dwarf (CFI on stack copies) or auto (frame-pointer chains "
		   "where whole, else CFI); 1 for the mode in use (fp when no session).", unwind_modes, 3,
		   ss_unwind_mode_name(ss_unwind_mode()));
	int n;
	struct ss_unwind_stats us;
	ss_unwind_get_stats(&us);
	n = snprintf(line, sizeof line, "# HELP stallscope_unwind_stacks_total User stacks taken from "
		     "stack copies: kept as whole frame-pointer chains (fp) or unwound by CFI (cfi).\n"
		     "# TYPE stallscope_unwind_stacks_total counter\n"
		     "stallscope_unwind_stacks_total{method=\"fp\"} %llu\n"
		     "stallscope_unwind_stacks_total{method=\"cfi\"} %llu\n",
		     (unsigned long long)us.fp, (unsigned long long)us.cfi);
	append(buf, len, &need, line, n);
	n = snprintf(line, sizeof line, "# HELP stallscope_unwind_truncated_total Stacks unwound by "
		     "CFI that end early, marked truncated, by why: the stack copy ended, no CFI or a "
		     "register unknown, a frame outside code, more frames than kept.\n"
		     "# TYPE stallscope_unwind_truncated_total counter\n"
		     "stallscope_unwind_truncated_total{reason=\"stack_copy\"} %llu\n"
		     "stallscope_unwind_truncated_total{reason=\"cfi\"} %llu\n"
		     "stallscope_unwind_truncated_total{reason=\"invalid_frame\"} %llu\n"
		     "stallscope_unwind_truncated_total{reason=\"depth\"} %llu\n",
		     (unsigned long long)us.trunc_copy, (unsigned long long)us.trunc_cfi,
		     (unsigned long long)us.trunc_invalid, (unsigned long long)us.trunc_depth);
	append(buf, len, &need, line, n);
	n = snprintf(line, sizeof line, "# HELP stallscope_recorder_cpu_seconds CPU time the recorder "
		     "itself used in the last session: stallscope_start and stallscope_stop on the "
		     "calling thread (with their helpers; the metrics file's last version is written "
		     "before stop releases the sampler and the unwinder), the writer and the watchdog "
		     "threads (added as each ends; while the writer's thread takes the watchdog's "
		     "looks (hooks only), both parts are of that thread: its cycles, and its looks, "
		     "captures, sleeps and wake-ups).\n"
		     "# TYPE stallscope_recorder_cpu_seconds gauge\n"
		     "stallscope_recorder_cpu_seconds{part=\"start\"} %.6f\n"
		     "stallscope_recorder_cpu_seconds{part=\"stop\"} %.6f\n"
		     "stallscope_recorder_cpu_seconds{part=\"writer\"} %.6f\n"
		     "stallscope_recorder_cpu_seconds{part=\"watchdog\"} %.6f\n"
		     "# HELP stallscope_recorder_wakeups_total Wake-ups of the recorder's threads, by "
		     "the part they woke for: the writer's cycles, or the watchdog's looks and capture "
		     "steps (on the writer's thread while hooks only).\n"
		     "# TYPE stallscope_recorder_wakeups_total counter\n"
		     "stallscope_recorder_wakeups_total{thread=\"writer\"} %llu\n"
		     "stallscope_recorder_wakeups_total{thread=\"watchdog\"} %llu\n"
		     "# HELP stallscope_stall_captures_total Stall captures the watchdog took (each "
		     "a classification and a backtrace of a poll past a power of two of the threshold).\n"
		     "# TYPE stallscope_stall_captures_total counter\n"
		     "stallscope_stall_captures_total %llu\n",
		     (double)atomic_load(&ss_counters.cpu_start_ns) / 1e9,
		     (double)atomic_load(&ss_counters.cpu_stop_ns) / 1e9,
		     (double)atomic_load(&ss_counters.cpu_writer_ns) / 1e9,
		     (double)atomic_load(&ss_counters.cpu_watchdog_ns) / 1e9,
		     (unsigned long long)atomic_load(&ss_counters.writer_wakeups),
		     (unsigned long long)atomic_load(&ss_counters.watchdog_wakeups),
		     (unsigned long long)atomic_load(&ss_counters.stall_captures));
	append(buf, len, &need, line, n);
	if (buf && len)
		buf[need < len ? need : len - 1] = 0;
	return need;
}

/* The errno of the last refused write, so a lasting problem is logged once. */
static int metrics_failed;

static void metrics_refused(const char *what, const char *path, int err)
{
	atomic_fetch_add(&ss_counters.errors, 1);
	if (err != metrics_failed)
		ss_log("metrics file not written: %s %s: %s", what, path, strerror(err));
	metrics_failed = err;
}

SS_INTERNAL void ss_metrics_write_file(const char *path)
{
	char text[8192], tmp[4200];
	size_t n = stallscope_metrics_text(text, sizeof text);
	if (n >= sizeof text || snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof tmp) {
		metrics_refused("name too long:", path, ENAMETOOLONG);
		return;
	}
	/* O_EXCL | O_NOFOLLOW: a file or link planted at the temporary name is
	 * refused, never truncated or written through. 0640 like the segments. */
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
	if (fd < 0) {
		metrics_refused("cannot create", tmp, errno);
		return;
	}
	ssize_t w = write(fd, text, n);
	int werr = w < 0 ? errno : ENOSPC;
	close(fd);
	if (w != (ssize_t)n) {
		unlink(tmp);
		metrics_refused("cannot write", tmp, werr);
		return;
	}
	if (rename(tmp, path) != 0) {
		int e = errno;
		unlink(tmp);
		metrics_refused("cannot rename to", path, e);
		return;
	}
	if (metrics_failed)
		ss_log("metrics file %s written again", path);
	metrics_failed = 0;
}

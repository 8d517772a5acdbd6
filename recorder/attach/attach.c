/*
 * attach.c - follows a running process from outside (see attach.h): one
 * recorder session in this process, targeted at the other one, plus a loop that
 * keeps the set of followed threads equal to /proc/PID/task.
 */
#include "attach.h"

#include "recorder-private.h"
#include "sampler-private.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SCAN_NS 10000000ull /* how often new and ended threads are looked for */

struct followed {
	int32_t tid;
	uint32_t seen;       /* scan generation that last saw it */
	struct ss_slot *slot;
};

static int read_text(const char *path, char *out, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, out, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	out[n] = 0;
	out[strcspn(out, "\n")] = 0;
	return 0;
}

/* 'Z'/'X' or no /proc entry: the process has ended (a zombie has no threads
 * left to follow). */
static int target_alive(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if (read_text(path, buf, sizeof buf) != 0)
		return 0;
	const char *rp = strrchr(buf, ')');
	return rp && rp[1] == ' ' && rp[2] != 'Z' && rp[2] != 'X';
}

int ss_attach_check(pid_t pid, char *why, size_t len)
{
	if (pid <= 0) {
		snprintf(why, len, "%d is not a process id", (int)pid);
		return -1;
	}
	if (kill(pid, 0) != 0 && errno == ESRCH) {
		snprintf(why, len, "no process %d", (int)pid);
		return -1;
	}
	struct perf_event_attr a;
	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_CPU_CLOCK;
	a.sample_period = 1000000;
	a.disabled = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	int fd = (int)syscall(SYS_perf_event_open, &a, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	int e = errno;
	int paranoid = ss_read_int_file("/proc/sys/kernel/perf_event_paranoid", 2);
	if (e == EACCES || e == EPERM)
		snprintf(why, len, "perf_event_open on process %d refused: %s (perf_event_paranoid %d; "
			 "a process of another user or one that is not dumpable needs CAP_PERFMON "
			 "or root%s)", (int)pid, strerrorname_np(e), paranoid,
			 paranoid > 2 ? "; above 2 no unprivileged perf at all" : "");
	else if (e == ESRCH)
		snprintf(why, len, "no process %d", (int)pid);
	else
		snprintf(why, len, "perf_event_open on process %d failed: %s", (int)pid,
			 strerrorname_np(e));
	return -1;
}

static uint64_t mono_ns(void)
{
	return ss_now();
}

/* One pass over /proc/PID/task: new threads get a lane, vanished ones retire. */
static void scan(pid_t pid, struct followed *f, uint32_t *nf, uint32_t cap, uint32_t gen,
		 uint32_t runtime, uint32_t *next_index, struct ss_attach_result *res)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	uint64_t now = ss_stamp(); /* what the slots carry (clock.h) */
	uint32_t session = atomic_load_explicit(&ss_state, memory_order_acquire);
	if (d) {
		struct dirent *de;
		while ((de = readdir(d)) != NULL) {
			char *end;
			long tid = strtol(de->d_name, &end, 10);
			if (*end || tid <= 0)
				continue;
			uint32_t i = 0;
			for (; i < *nf && f[i].tid != (int32_t)tid; i++)
				;
			if (i < *nf) {
				f[i].seen = gen;
				continue;
			}
			if (*nf == cap || !session)
				continue;
			struct ss_slot *s = ss_attach_foreign(session, (int32_t)tid, runtime,
							      *next_index, now);
			if (!s)
				continue;
			(*next_index)++;
			f[*nf] = (struct followed){ .tid = (int32_t)tid, .seen = gen, .slot = s };
			(*nf)++;
			res->threads++;
		}
		closedir(d);
	}
	for (uint32_t i = 0; i < *nf;) {
		if (f[i].seen == gen) {
			i++;
			continue;
		}
		ss_retire_foreign(f[i].slot, now);
		f[i] = f[--*nf];
	}
}

int ss_attach_run(const struct ss_attach_config *cfg, struct ss_attach_result *res, char *err,
		  size_t errlen)
{
	memset(res, 0, sizeof *res);
	if (ss_attach_check(cfg->pid, err, errlen) != 0)
		return -1;
	char path[64], comm[32] = "";
	snprintf(path, sizeof path, "/proc/%d/comm", (int)cfg->pid);
	if (read_text(path, comm, sizeof comm) != 0 || !comm[0])
		snprintf(comm, sizeof comm, "pid%d", (int)cfg->pid);

	struct stallscope_config rc = cfg->rec;
	rc.cpu_sampling = 1;
	rc.sampler = STALLSCOPE_SAMPLER_PERF; /* the timer fallback works only inside */
	rc.stall_threshold_ms = 0;            /* no polls to watch from outside */
	rc.task_dump_enabled = 0;
	rc.sample_all_threads = 0;
	ss_target_set(cfg->pid);
	if (stallscope_start(&rc) != 0) {
		snprintf(err, errlen, "%s", stallscope_last_error());
		ss_target_set(0);
		return -1;
	}
	uint32_t runtime = ss_intern_string(comm);
	uint32_t cap = rc.max_threads ? rc.max_threads : 256;
	struct followed *f = calloc(cap, sizeof *f);
	if (!f) {
		stallscope_stop();
		ss_target_set(0);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	uint32_t nf = 0, gen = 0, next_index = 0;
	uint64_t t0 = mono_ns();
	uint64_t until = cfg->duration_s > 0 ? t0 + (uint64_t)(cfg->duration_s * 1e9) : UINT64_MAX;
	for (;;) {
		scan(cfg->pid, f, &nf, cap, ++gen, runtime, &next_index, res);
		if (gen == 1 && cfg->started) {
			/* The writer opens each thread's perf events on its next cycle;
			 * wait for that before letting a held program run. */
			ss_writer_kick();
			struct timespec ts = { 0, 30000000 };
			nanosleep(&ts, NULL);
			cfg->started(cfg->pid);
		}
		if (cfg->reap_child) {
			int st;
			pid_t w = waitpid(cfg->pid, &st, WNOHANG);
			if (w == cfg->pid) {
				if (cfg->child_status)
					*cfg->child_status = st;
				res->target_ended = 1;
				break;
			}
		} else if (!target_alive(cfg->pid)) {
			res->target_ended = 1;
			break;
		}
		if ((cfg->stop && *cfg->stop) || mono_ns() >= until)
			break;
		struct timespec ts = { 0, (long)SCAN_NS };
		nanosleep(&ts, NULL);
	}
	uint64_t end = ss_stamp();
	for (uint32_t i = 0; i < nf; i++)
		ss_retire_foreign(f[i].slot, end);
	free(f);
	/* Let the writer take the retirements and the last samples (a cycle is 10 ms,
	 * sooner when kicked), then seal. */
	struct timespec settle = { 0, 30000000 };
	nanosleep(&settle, NULL);

	struct ss_sampler_stats sst;
	ss_sampler_get_stats(&sst);
	res->threads_refused = (uint32_t)sst.threads_refused;
	snprintf(res->status, sizeof res->status, "%s", ss_writer_sampler_status());
	if (cfg->unwind == SS_UNWIND_REQ_DWARF) {
		size_t l = strlen(res->status);
		snprintf(res->status + l, sizeof res->status - l, "; unwinding: DWARF asked for, but "
			 "from outside a process only frame-pointer call chains are walked");
	}
	int stop_rc = stallscope_stop();
	ss_target_set(0);
	if (stop_rc != 0) {
		snprintf(err, errlen, "%s", stallscope_last_error());
		return -1;
	}
	return 0;
}

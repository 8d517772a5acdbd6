/*
 * sampler_percpu.c - perf's own way of following a process: one cpu-clock event
 * (and one context-switches event) per CPU on each thread of the process with
 * inherit set, so every thread created afterwards carries copies of them, and
 * one ring per CPU that all of them write into.
 *
 * Why: events of one thread (pid = tid, cpu = -1, sampler_perf.c) are scheduled
 * out and in at every context switch of that thread, a cpu-clock hrtimer cancelled
 * and armed each time; on a runtime whose workers switch tens of thousands of
 * times a second that cost more than the samples. Inherited copies of the same
 * events in threads of the same process have equivalent contexts, and the kernel
 * switches between two such threads by swapping their contexts, leaving the
 * events (and the hrtimer) running on the CPU.
 *
 * inherit_thread limits the copies to threads (not forked children, which would
 * otherwise write into these rings and be sampled for as long as they live). The
 * rings hold every thread of the process, the recorder's own included: the drain
 * hands on only the threads the writer follows (ss_sampler_thread_add), by a hash
 * of their tids, and merges the CPUs' rings by time, so each thread's records come
 * in its own time order even when it migrates.
 *
 * Used for the process itself only; another process's threads (ss_target_pid), a
 * kernel without inherit_thread, or a refusal (descriptors, mlock budget) leave
 * per-thread events in charge, and ss_sampler_config.per_thread forces them.
 * Runs on the writer thread, like the rest of the sampler.
 *
 * Where the sched_switch program is loaded (sampler_swtp.c) the cpu-clock events
 * go without switch records and, when it writes the off-CPU stacks, no
 * context-switches event is opened: what is left to switch with a thread is
 * its cpu-clock event, and with cpu_wide nothing at all, which is why AUTO
 * then takes ss_percpu_open_wide() below (sampler.c, start_percpu).
 *
 * Cheaper still where permitted (CAP_PERFMON, or perf_event_paranoid <= 0):
 * ss_percpu_open_wide() opens the same two events once per CPU for every process
 * (pid -1), what `perf record -a` does. They live in the CPU's context, which
 * the scheduler never switches, so a switch costs only its two switch records
 * (PERF_RECORD_SWITCH_CPU_WIDE), whichever threads it is between; threads
 * created later, by any means, are covered without a descriptor of their own.
 * The price is paid by the machine: every process's switches write records here
 * and its samples are taken, which the drain drops by pid and counts (foreign);
 * mmap and comm records are not asked for (every process's mmap would build one):
 * new mappings come from proc_maps.c's watch, names from /proc. CPUs offline at
 * open are not covered if they come online later (the status says how many).
 */
#include "sampler-private.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#define MAX_CPUS 4096
#define MAX_SCANS 8        /* passes over /proc/self/task until no thread is new */
#define LOST_READ_NS 500000000ull
#define TRAILER 32         /* sample_id trailer, as in sampler_perf.c */

static long pgsz(void)
{
	static long ps;
	if (!ps)
		ps = sysconf(_SC_PAGESIZE);
	return ps;
}

static uint32_t hash_tid(uint32_t tid)
{
	return (tid * 2654435761u) >> 20; /* 12 bits: pc_hash has 4096 slots */
}

static void hash_rebuild(void)
{
	memset(ss_smp.pc_hash, 0, sizeof ss_smp.pc_hash);
	for (uint32_t i = 0; i < ss_smp.nthreads; i++) {
		const struct ss_sthread *t = &ss_smp.threads[i];
		if (t->kind != SS_ST_PERCPU)
			continue;
		uint32_t h = hash_tid(t->tid);
		while (ss_smp.pc_hash[h])
			h = (h + 1) & 4095;
		ss_smp.pc_hash[h] = (uint16_t)(i + 1);
	}
	ss_smp.pc_hash_dirty = 0;
}

SS_INTERNAL int ss_percpu_follows(uint32_t tid, uint64_t ts)
{
	if (ss_smp.pc_hash_dirty)
		hash_rebuild();
	/* At most 1024 of 4096 slots are used: a probe ends at an empty slot soon. */
	for (uint32_t h = hash_tid(tid), k = 0; k < 4096; h = (h + 1) & 4095, k++) {
		uint16_t v = ss_smp.pc_hash[h];
		if (!v)
			return 0;
		/* A tid reused before the next drain has two entries: either may match. */
		const struct ss_sthread *t = &ss_smp.threads[v - 1];
		if (t->tid == tid && ts >= t->since && (!t->until || ts <= t->until))
			return 1;
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

SS_INTERNAL int ss_percpu_is_cs(uint64_t id)
{
	return ss_smp.pc_ncs &&
	       bsearch(&id, ss_smp.pc_cs_ids, ss_smp.pc_ncs, sizeof id, cmp_u64) != NULL;
}

SS_INTERNAL int ss_percpu_add_fd(int fd)
{
	if (ss_smp.pc_nfds == ss_smp.pc_capfds) {
		uint32_t cap = ss_smp.pc_capfds ? ss_smp.pc_capfds * 2 : 64;
		int *n = realloc(ss_smp.pc_fds, cap * sizeof *n);
		if (!n)
			return -ENOMEM;
		ss_smp.pc_fds = n;
		ss_smp.pc_capfds = cap;
	}
	ss_smp.pc_fds[ss_smp.pc_nfds++] = fd;
	return 0;
}

/* One event of one thread on one CPU, writing into that CPU's ring (the first
 * event opened on a CPU owns the ring). */
static int open_one(struct perf_event_attr *a, uint32_t tid, uint32_t cpu, uint64_t *id,
		    char *why, size_t len)
{
	/* tid UINT32_MAX: pid -1, every process on that CPU */
	int fd = ss_perf_open_on(a, tid, (int)cpu);
	if (fd < 0) {
		int e = errno;
		const char *ev = a->config == PERF_COUNT_SW_CPU_CLOCK ? "cpu-clock" : "context-switches";
		if (tid == UINT32_MAX)
			snprintf(why, len, "perf_event_open(%s, every process, cpu %u): %s "
				 "(perf_event_paranoid %d, needs <= 0 or CAP_PERFMON)", ev, cpu,
				 ss_errno_name(e), ss_smp.paranoid);
		else if (e != ESRCH)
			snprintf(why, len, "perf_event_open(%s, tid %u, cpu %u, inherit): %s", ev,
				 tid, cpu, ss_errno_name(e));
		return -e;
	}
	if (ss_percpu_add_fd(fd) != 0) {
		close(fd);
		snprintf(why, len, "out of memory");
		return -ENOMEM;
	}
	struct ss_sthread *r = &ss_smp.cpus[cpu];
	if (!r->ring) {
		int m = ss_perf_map_ring(r, fd, ss_smp.perf_pages, why, len);
		if (m != 0)
			return m;
		r->fd_clock = fd;
	} else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, r->fd_clock) != 0) {
		int e = errno;
		snprintf(why, len, "PERF_EVENT_IOC_SET_OUTPUT on cpu %u: %s", cpu, ss_errno_name(e));
		return -e;
	}
	if (ioctl(fd, PERF_EVENT_IOC_ID, id) != 0)
		*id = 0;
	return 0;
}

/* The id of a context-switches event, kept so the drain knows its samples
 * (switch-out stacks) from the cpu-clock ones. */
static int cs_id_add(uint64_t id, char *why, size_t len)
{
	uint64_t *n = realloc(ss_smp.pc_cs_ids, (ss_smp.pc_ncs + 1) * sizeof *n);
	if (!n) {
		snprintf(why, len, "out of memory");
		return -ENOMEM;
	}
	ss_smp.pc_cs_ids = n;
	n[ss_smp.pc_ncs++] = id;
	return 0;
}

static int open_thread(uint32_t tid, char *why, size_t len)
{
	struct perf_event_attr a;
	for (uint32_t c = 0; c < ss_smp.ncpu_rings; c++) {
		uint64_t id;
		ss_perf_attr_clock(&a);
		a.inherit = 1;
		a.inherit_thread = 1;
		int r = open_one(&a, tid, c, &id, why, len);
		if (r != 0)
			return r;
		/* The sched_switch program writes the stacks: no context-switches event. */
		if (!ss_smp.offcpu || ss_smp.swtp_stacks)
			continue;
		ss_perf_attr_cs(&a);
		a.inherit = 1;
		a.inherit_thread = 1;
		r = open_one(&a, tid, c, &id, why, len);
		if (r != 0)
			return r;
		/* Inherited copies take the parent's program with them. */
		ss_bpf_attach_offcpu(ss_smp.pc_fds[ss_smp.pc_nfds - 1]);
		r = cs_id_add(id, why, len);
		if (r != 0)
			return r;
	}
	return 0;
}

/* Tids already given events; a thread that appears while we open them was
 * created by one not yet done and is opened in the next pass. */
static int seen(const uint32_t *tids, uint32_t n, uint32_t tid)
{
	for (uint32_t i = 0; i < n; i++)
		if (tids[i] == tid)
			return 1;
	return 0;
}

/* The table of configured CPUs, every entry a ring with no event yet (both
 * kinds of per-CPU events). Returns the CPU count, or -errno with why. */
static long cpus_alloc(char *why, size_t len)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	if (ncpu < 1 || ncpu > MAX_CPUS) {
		snprintf(why, len, "%ld CPUs configured", ncpu);
		return -EINVAL;
	}
	ss_smp.ncpu_rings = (uint32_t)ncpu;
	ss_smp.cpus = calloc((size_t)ncpu, sizeof *ss_smp.cpus);
	if (!ss_smp.cpus) {
		ss_smp.ncpu_rings = 0;
		snprintf(why, len, "out of memory");
		return -ENOMEM;
	}
	for (long c = 0; c < ncpu; c++) {
		ss_smp.cpus[c].cpu_ring = 1;
		ss_smp.cpus[c].fd_clock = ss_smp.cpus[c].fd_cs = -1;
	}
	return ncpu;
}

/* The end of an open of either kind: on failure everything is closed; else
 * the context-switch ids sorted for the drain's lookup, and the events on. */
static int open_done(int rc)
{
	if (rc != 0) {
		ss_percpu_close();
		return rc;
	}
	if (ss_smp.pc_ncs) /* none without off-CPU stacks: qsort must not see NULL */
		qsort(ss_smp.pc_cs_ids, ss_smp.pc_ncs, sizeof *ss_smp.pc_cs_ids, cmp_u64);
	ss_smp.percpu = 1;
	ss_smp.pc_hash_dirty = 1;
	if (ss_smp.enabled)
		ss_percpu_enable(1);
	return 0;
}

SS_INTERNAL int ss_percpu_open(char *why, size_t len)
{
	long ncpu = cpus_alloc(why, len);
	if (ncpu < 0)
		return (int)ncpu;
	uint32_t cap = 256, ntids = 0;
	uint32_t *tids = malloc(cap * sizeof *tids);
	if (!tids) {
		ss_percpu_close();
		snprintf(why, len, "out of memory");
		return -ENOMEM;
	}
	/* A descriptor per thread, CPU and event: keep to a quarter of what the
	 * process may open, the rest belongs to the program. */
	struct rlimit rl = { 1024, 1024 };
	getrlimit(RLIMIT_NOFILE, &rl);
	uint64_t fd_budget = rl.rlim_cur == RLIM_INFINITY ? 1u << 20 : rl.rlim_cur / 4;
	uint64_t per_thread = (uint64_t)ncpu * (ss_smp.offcpu ? 2 : 1);

	int rc = 0, pass, fresh = 1;
	for (pass = 0; pass < MAX_SCANS && fresh && rc == 0; pass++) {
		fresh = 0;
		DIR *d = opendir("/proc/self/task");
		if (!d) {
			rc = -errno;
			snprintf(why, len, "/proc/self/task: %s", ss_errno_name(-rc));
			break;
		}
		struct dirent *de;
		while (rc == 0 && (de = readdir(d)) != NULL) {
			uint32_t tid = (uint32_t)strtoul(de->d_name, NULL, 10);
			if (!tid || seen(tids, ntids, tid))
				continue;
			if ((uint64_t)(ntids + 1) * per_thread > fd_budget) {
				snprintf(why, len, "%u threads x %ld CPUs x %u events exceed a quarter of "
					 "RLIMIT_NOFILE (%llu)", ntids + 1, ncpu, ss_smp.offcpu ? 2 : 1,
					 (unsigned long long)fd_budget * 4);
				rc = -EMFILE;
				break;
			}
			if (ntids == cap) {
				uint32_t *n = realloc(tids, cap * 2 * sizeof *n);
				if (!n) {
					rc = -ENOMEM;
					snprintf(why, len, "out of memory");
					break;
				}
				tids = n;
				cap *= 2;
			}
			int r = open_thread(tid, why, len);
			if (r == -ESRCH)
				continue; /* ended meanwhile */
			rc = r;
			tids[ntids++] = tid;
			fresh = 1;
		}
		closedir(d);
	}
	free(tids);
	if (rc == 0 && fresh) {
		snprintf(why, len, "threads kept appearing over %d passes of /proc/self/task", MAX_SCANS);
		rc = -EAGAIN;
	}
	rc = open_done(rc);
	if (rc != 0)
		return rc;
	snprintf(why, len, "%u threads at start, %u CPUs, %u fds", ntids, ss_smp.ncpu_rings,
		 ss_smp.pc_nfds);
	return 0;
}

/* The filter on the event opened last; a refusal leaves it unfiltered (the
 * drain drops by pid either way) and is said once. */
static void filter_last(int prog, uint32_t *filtered)
{
	if (prog < 0)
		return;
	int r = ss_bpf_attach(ss_smp.pc_fds[ss_smp.pc_nfds - 1], prog);
	if (r == 0)
		(*filtered)++;
}

/* One CPU of the machine-wide set: cpu-clock with CPU-wide switch records, and
 * the switch-out sampler where off-CPU stacks are on, both into the CPU's ring. */
static int open_cpu_wide(uint32_t cpu, int prog, uint32_t *filtered, char *why, size_t len)
{
	struct perf_event_attr a;
	uint64_t id;
	ss_perf_attr_clock(&a);
	a.mmap = a.mmap2 = a.comm = 0;
	int r = open_one(&a, UINT32_MAX, cpu, &id, why, len);
	if (r != 0)
		return r;
	filter_last(prog, filtered);
	if (!ss_smp.offcpu || ss_smp.swtp_stacks)
		return 0;
	ss_perf_attr_cs(&a);
	r = open_one(&a, UINT32_MAX, cpu, &id, why, len);
	if (r != 0)
		return r;
	if (ss_smp.inpoll_prog >= 0) {
		/* The off-CPU filter holds the pid filter. */
		uint32_t before = ss_smp.inpoll_attached;
		ss_bpf_attach_offcpu(ss_smp.pc_fds[ss_smp.pc_nfds - 1]);
		if (ss_smp.inpoll_attached != before)
			(*filtered)++;
		else /* refused here: at least every other process's switch-outs go */
			filter_last(prog, filtered);
	} else {
		filter_last(prog, filtered);
	}
	return cs_id_add(id, why, len);
}

SS_INTERNAL int ss_percpu_open_wide(char *why, size_t len)
{
	long ncpu = cpus_alloc(why, len);
	if (ncpu < 0)
		return (int)ncpu;
	ss_smp.pc_pid = (uint32_t)getpid();
	ss_smp.pc_cpus_off = 0;
	char fwhy[200] = "";
	int prog = -1;
	if (ss_smp.no_bpf_filter)
		snprintf(fwhy, sizeof fwhy, "no BPF filter (asked)");
	else
		prog = ss_bpf_pid_filter(ss_smp.pc_pid, fwhy, sizeof fwhy);
	int rc = 0;
	uint32_t opened = 0, filtered = 0;
	for (uint32_t c = 0; c < ss_smp.ncpu_rings && rc == 0; c++) {
		rc = open_cpu_wide(c, prog, &filtered, why, len);
		if (rc == -ENODEV && !ss_smp.cpus[c].ring) {
			ss_smp.pc_cpus_off++; /* offline now */
			rc = 0;
			continue;
		}
		opened += rc == 0;
	}
	if (rc == 0 && !opened) {
		snprintf(why, len, "no CPU online");
		rc = -ENODEV;
	}
	if (prog >= 0)
		close(prog); /* the events hold it */
	if (rc == 0) {
		ss_smp.cpu_wide = 1;
		ss_smp.pc_filtered = filtered == ss_smp.pc_nfds;
	}
	rc = open_done(rc);
	if (rc != 0)
		return rc;
	char off[64] = "";
	if (ss_smp.pc_cpus_off)
		snprintf(off, sizeof off, ", %u offline (not covered if onlined)", ss_smp.pc_cpus_off);
	char flt[260];
	if (ss_smp.pc_filtered)
		snprintf(flt, sizeof flt, "other processes' samples dropped in the kernel (BPF)");
	else if (prog < 0)
		snprintf(flt, sizeof flt, "other processes' samples taken and dropped here: %s", fwhy);
	else
		snprintf(flt, sizeof flt, "other processes' samples taken and dropped here: "
			 "PERF_EVENT_IOC_SET_BPF refused on %u of %u events",
			 ss_smp.pc_nfds - filtered, ss_smp.pc_nfds);
	snprintf(why, len, "%u CPUs%s, %u fds, %s", opened, off, ss_smp.pc_nfds, flt);
	return 0;
}

SS_INTERNAL void ss_percpu_enable(int on)
{
	unsigned long req = on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE;
	/* On a parent event the ioctl reaches every inherited copy. */
	for (uint32_t i = 0; i < ss_smp.pc_nfds; i++)
		ioctl(ss_smp.pc_fds[i], req, 0);
}

SS_INTERNAL void ss_percpu_close(void)
{
	for (uint32_t i = 0; i < ss_smp.pc_nfds; i++)
		close(ss_smp.pc_fds[i]);
	for (uint32_t c = 0; ss_smp.cpus && c < ss_smp.ncpu_rings; c++)
		ss_perf_unmap(&ss_smp.cpus[c]);
	free(ss_smp.pc_fds);
	free(ss_smp.pc_cs_ids);
	free(ss_smp.cpus);
	ss_smp.pc_fds = NULL;
	ss_smp.pc_cs_ids = NULL;
	ss_smp.cpus = NULL;
	ss_smp.pc_nfds = ss_smp.pc_capfds = ss_smp.pc_ncs = ss_smp.ncpu_rings = 0;
	ss_smp.percpu = 0;
	ss_smp.cpu_wide = 0;
}

SS_INTERNAL void ss_percpu_after_fork(void)
{
	/* The child has none of the rings (VM_DONTCOPY) nor, with inherit_thread,
	 * copies of the events: only the descriptors came along. */
	for (uint32_t i = 0; i < ss_smp.pc_nfds; i++)
		close(ss_smp.pc_fds[i]);
}

/* ---- the merged drain -------------------------------------------------------- */

static _Alignas(8) unsigned char rec_copy[65536];

struct cursor {
	uint64_t tail, head, ts;
	int have;
};
static struct cursor cursors[MAX_CPUS];

static void copy_out(const unsigned char *data, uint64_t size, uint64_t pos, void *dst, size_t n)
{
	uint64_t off = pos % size, first = size - off < n ? size - off : n;
	memcpy(dst, data + off, first);
	if (first < n)
		memcpy((unsigned char *)dst + first, data, n - first);
}

/* The time of the record at cur->tail: a sample's own (id, ip, pid/tid, time), any
 * other record's from its sample_id trailer; 0 when it has none. */
static int peek(const struct ss_sthread *r, struct cursor *cur)
{
	const unsigned char *data = (const unsigned char *)r->ring + pgsz();
	cur->have = 0;
	if (cur->tail >= cur->head)
		return 0;
	struct perf_event_header h;
	copy_out(data, r->data_size, cur->tail, &h, sizeof h);
	if (h.size < sizeof h || h.size > cur->head - cur->tail || (h.size & 7))
		return -1;
	uint64_t ts = 0;
	size_t body = h.size - sizeof h;
	if (h.type == PERF_RECORD_SAMPLE && body >= 32)
		copy_out(data, r->data_size, cur->tail + sizeof h + 24, &ts, 8);
	else if (h.type != PERF_RECORD_SAMPLE && body >= TRAILER)
		copy_out(data, r->data_size, cur->tail + h.size - TRAILER + 8, &ts, 8);
	cur->ts = ts;
	cur->have = 1;
	return 0;
}

SS_INTERNAL void ss_percpu_drain(const struct ss_sample_sink *sink)
{
	if (!ss_smp.percpu)
		return;
	if (ss_smp.pc_hash_dirty)
		hash_rebuild();
	/* Records stamped after this instant wait for the next drain: one of another
	 * CPU stamped before it may not be visible yet, and handing the later one on
	 * first would put a thread that migrated out of its time order. */
	uint64_t cutoff = ss_now();
	uint32_t n = ss_smp.ncpu_rings;
	struct cursor *cur = cursors;
	for (uint32_t c = 0; c < n; c++) {
		struct ss_sthread *r = &ss_smp.cpus[c];
		cur[c].have = 0;
		cur[c].tail = cur[c].head = 0;
		if (!r->ring)
			continue;
		struct perf_event_mmap_page *mp = r->ring;
		cur[c].head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);
		cur[c].tail = mp->data_tail;
		ss_sampler_note_fill(cur[c].head - cur[c].tail, r->data_size);
		if (peek(r, &cur[c]) != 0) {
			cur[c].tail = cur[c].head; /* out of step: skip what is there */
			ss_perf_emit_lost(sink, cutoff, cutoff, 0, SS_SLOSS_KERNEL, 1);
		}
	}
	/* Bounded: each step consumes one record the rings held at the start. */
	for (;;) {
		int best = -1;
		for (uint32_t c = 0; c < n; c++)
			if (cur[c].have && cur[c].ts <= cutoff &&
			    (best < 0 || cur[c].ts < cur[best].ts))
				best = (int)c;
		if (best < 0)
			break;
		struct ss_sthread *r = &ss_smp.cpus[best];
		struct cursor *k = &cur[best];
		const unsigned char *data = (const unsigned char *)r->ring + pgsz();
		struct perf_event_header h;
		copy_out(data, r->data_size, k->tail, &h, sizeof h);
		const struct perf_event_header *rec;
		uint64_t off = k->tail % r->data_size;
		if (off + h.size > r->data_size) {
			copy_out(data, r->data_size, k->tail, rec_copy, h.size);
			rec = (const void *)rec_copy;
		} else {
			rec = (const void *)(data + off);
		}
		ss_perf_record(r, rec, sink);
		k->tail += h.size;
		if (peek(r, k) != 0) {
			k->tail = k->head;
			k->have = 0;
			ss_perf_emit_lost(sink, cutoff, cutoff, 0, SS_SLOSS_KERNEL, 1);
		}
	}
	for (uint32_t c = 0; c < n; c++) {
		struct ss_sthread *r = &ss_smp.cpus[c];
		if (r->ring)
			__atomic_store_n(&((struct perf_event_mmap_page *)r->ring)->data_tail,
					 cur[c].tail, __ATOMIC_RELEASE);
	}

	/* The ring's LOST records come only once there is room again; the parent
	 * events' counters (losses of their inherited copies count on the parent)
	 * say it sooner. Reading them interrupts CPUs: twice a second. */
	uint64_t now = ss_now();
	if (ss_smp.fmt_lost && now - ss_smp.pc_last_lost_read >= LOST_READ_NS) {
		uint64_t lost = 0;
		for (uint32_t i = 0; i < ss_smp.pc_nfds; i++)
			lost += ss_perf_read_lost(ss_smp.pc_fds[i]);
		ss_smp.pc_lost_counter = lost;
		ss_smp.pc_last_lost_read = now;
	}
	/* Records and counters are cumulative counts of the same losses: report
	 * what the larger exceeds what was said. */
	uint64_t total = ss_smp.pc_lost_counter;
	uint64_t rec_lost = 0;
	for (uint32_t c = 0; c < n; c++)
		rec_lost += ss_smp.cpus[c].lost_records;
	if (rec_lost > total)
		total = rec_lost;
	if (total > ss_smp.pc_lost_emitted) {
		ss_perf_emit_lost(sink, ss_smp.pc_last_drain ? ss_smp.pc_last_drain : now, now, 0,
				  SS_SLOSS_KERNEL, total - ss_smp.pc_lost_emitted);
		ss_smp.pc_lost_emitted = total;
	}
	ss_smp.pc_last_drain = now;
}

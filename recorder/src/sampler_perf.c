/*
 * sampler_perf.c - perf_event_open per sampled thread (pid = tid, cpu = -1, so
 * the ring may be mmapped), the fallback of the per-CPU events, and the reader
 * of every perf ring.
 *
 * Per thread: a software cpu-clock event with a fixed period (frequency mode
 * undersamples bursty threads) carrying call chains, PERF_RECORD_SWITCH records
 * (context_switch), MMAP2 and COMM records; and, where kernel samples are
 * permitted, a context-switches event with period 1 whose samples at each
 * switch-out carry the call chain where the thread blocked. The second event
 * writes into the first one's ring (PERF_EVENT_IOC_SET_OUTPUT), so a thread
 * costs one ring of the shared mlock budget and the reader sees one time-ordered
 * stream; PERF_SAMPLE_IDENTIFIER tells the two apart.
 *
 * For CFI unwinding (ss_smp.stack_copy) the cpu-clock samples also carry the user
 * registers and a copy of the top of the user stack (PERF_SAMPLE_REGS_USER,
 * PERF_SAMPLE_STACK_USER); the kernel then walks no user frame pointers unless
 * auto mode keeps its chain as a fallback. The context-switch samples carry
 * a small copy of their own (ss_smp.offcpu_copy, x86-64) with only the registers
 * a frame-pointer walk needs, walked here (ss_perf_cs_walk), or else the kernel's chains.
 *
 * These functions also open and read the process's per-CPU events of
 * sampler_percpu.c: the attributes, the ring mapping and the record decoder are
 * the same, and a CPU's ring is an ss_sthread with cpu_ring set.
 */
#include "sampler-private.h"

#include <errno.h>
#include <linux/perf_event.h>
#if defined(__x86_64__)
#include <asm/perf_regs.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define SAMPLE_TYPE (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | \
		     PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | \
		     PERF_SAMPLE_CALLCHAIN)
#define LOST_READ_NS 500000000ull /* how often the lost counters are read (see the drain) */

/* sample_id trailer of non-sample records for SAMPLE_TYPE with sample_id_all:
 * { u32 pid, tid; u64 time; u32 cpu, res; u64 identifier } */
#define TRAILER 32

static long page_size(void)
{
	static long ps;
	if (!ps)
		ps = sysconf(_SC_PAGESIZE);
	return ps;
}

SS_INTERNAL int ss_perf_open_on(struct perf_event_attr *a, uint32_t tid, int cpu)
{
	return (int)syscall(SYS_perf_event_open, a, (pid_t)tid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

static int perf_open(struct perf_event_attr *a, uint32_t tid)
{
	return ss_perf_open_on(a, tid, -1);
}

static void attr_common(struct perf_event_attr *a)
{
	memset(a, 0, sizeof *a);
	a->size = sizeof *a;
	a->type = PERF_TYPE_SOFTWARE;
	a->sample_type = SAMPLE_TYPE;
	a->disabled = 1;
	a->exclude_hv = 1;
	a->exclude_kernel = !ss_smp.kernel_ok;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->sample_id_all = 1;
	a->sample_max_stack = (uint16_t)ss_smp.max_stack;
	a->read_format = ss_smp.fmt_lost ? PERF_FORMAT_LOST : 0;
}

#if defined(__x86_64__)
/* The general registers, and where each lands in DWARF numbering (unwind.h):
 * samples hold them in the order of their bits in the mask. */
#define REGS_MASK ((1ull << PERF_REG_X86_AX) | (1ull << PERF_REG_X86_BX) | (1ull << PERF_REG_X86_CX) | \
		   (1ull << PERF_REG_X86_DX) | (1ull << PERF_REG_X86_SI) | (1ull << PERF_REG_X86_DI) | \
		   (1ull << PERF_REG_X86_BP) | (1ull << PERF_REG_X86_SP) | (1ull << PERF_REG_X86_IP) | \
		   (0xffull << PERF_REG_X86_R8))
static const uint8_t perf_to_dwarf[SS_UREGS] = { 0, 3, 2, 1, 4, 5, 6, 7, 16, 8, 9, 10, 11, 12, 13, 14, 15 };
/* Switch-out samples: what a frame-pointer walk needs, in the order of the bits. */
#define CS_REGS_MASK ((1ull << PERF_REG_X86_BP) | (1ull << PERF_REG_X86_SP) | (1ull << PERF_REG_X86_IP))
#else
#define REGS_MASK 0ull
#endif

SS_INTERNAL void ss_perf_attr_clock(struct perf_event_attr *a)
{
	attr_common(a);
	a->config = PERF_COUNT_SW_CPU_CLOCK;
	if (ss_smp.stack_copy) {
		a->sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
		a->sample_regs_user = REGS_MASK;
		a->sample_stack_user = ss_smp.stack_copy;
		a->exclude_callchain_user = !ss_smp.user_chain;
	}
	a->sample_period = ss_smp.period_ns;
	/* Not where the sched_switch program writes the switches (sampler_swtp.c). */
	a->context_switch = !ss_swtp_on();
	/* mmap too: the kernel counts only mmap/mmap_data listeners before it builds
	 * any mapping event; mmap2 then picks the record type. */
	a->mmap = 1;
	a->mmap2 = 1;
	a->comm = 1;
}

SS_INTERNAL void ss_perf_attr_cs(struct perf_event_attr *a)
{
	attr_common(a);
	a->config = PERF_COUNT_SW_CONTEXT_SWITCHES;
	a->sample_period = 1;
#if defined(__x86_64__)
	/* The kernel's call-chain walk of the user stack at every switch-out was most
	 * of what sampling cost a runtime that switches tens of thousands of times a
	 * second (~7 us a switch here, where copying 1 KiB of stack costs well under
	 * one): the registers and the top of the stack, walked by the drain. */
	if (ss_smp.offcpu_copy) {
		a->sample_type &= ~(uint64_t)PERF_SAMPLE_CALLCHAIN;
		a->sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
		a->sample_regs_user = CS_REGS_MASK;
		a->sample_stack_user = ss_smp.offcpu_copy;
	}
#endif
	a->exclude_kernel = 0; /* the switch-out happens in the kernel */
}

static int has_cap_ipc_lock(void);

SS_INTERNAL int ss_perf_mlock_unlimited(void)
{
	return geteuid() == 0 || has_cap_ipc_lock();
}

static int has_cap_ipc_lock(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	if (!f)
		return 0;
	char line[256];
	unsigned long long eff = 0;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			break;
	fclose(f);
	return (eff >> 14) & 1; /* CAP_IPC_LOCK */
}

/* Maps the ring, halving it while the mlock budget refuses (EPERM). */
SS_INTERNAL int ss_perf_map_ring(struct ss_sthread *t, int fd, uint32_t want, char *why, size_t len)
{
	uint32_t pages = want;
	for (;;) {
		size_t l = (size_t)(pages + 1) * (size_t)page_size();
		void *p = mmap(NULL, l, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p != MAP_FAILED) {
			if (pages != want) {
				ss_sampler_note("perf rings shrunk from %u to %u data pages: mlock budget "
						"(perf_event_mlock_kb %d per CPU + RLIMIT_MEMLOCK) spent",
						want, pages,
						ss_read_int_file("/proc/sys/kernel/perf_event_mlock_kb", -1));
				if (want == ss_smp.perf_pages)
					ss_smp.perf_pages = pages;
			}
			t->ring = p;
			t->ring_len = l;
			t->data_size = (uint64_t)pages * (uint64_t)page_size();
			return 0;
		}
		int e = errno;
		if (e == EPERM && pages > 1) {
			pages /= 2;
			continue;
		}
		struct rlimit rl = {0, 0};
		getrlimit(RLIMIT_MEMLOCK, &rl);
		snprintf(why, len, "ring mmap of %u+1 pages: %s%s (perf_event_mlock_kb %d per CPU, "
			 "RLIMIT_MEMLOCK %llu KiB)", pages, ss_errno_name(e),
			 e == EPERM ? ", mlock budget spent" : "",
			 ss_read_int_file("/proc/sys/kernel/perf_event_mlock_kb", -1),
			 rl.rlim_cur == RLIM_INFINITY ? ~0ull : (unsigned long long)rl.rlim_cur / 1024);
		return -e;
	}
}

SS_INTERNAL int ss_perf_probe(enum ss_offcpu_mode offcpu, char *why, size_t len)
{
	int mx = ss_read_int_file("/proc/sys/kernel/perf_event_max_stack", 127);
	ss_smp.max_stack = mx > 0 && mx < SS_MAX_FRAMES ? (uint32_t)mx : SS_MAX_FRAMES;
	uint32_t self = (uint32_t)gettid();
	struct perf_event_attr a;
	char kern_note[96] = "";

	/* Kernel frames where permitted: try, and learn from the refusal. */
	ss_smp.kernel_ok = 1;
	ss_smp.fmt_lost = 1;
	ss_perf_attr_clock(&a);
	int fd = perf_open(&a, self);
	if (fd < 0 && errno == EINVAL) { /* before 6.0: no lost counter */
		ss_smp.fmt_lost = 0;
		ss_perf_attr_clock(&a);
		fd = perf_open(&a, self);
	}
	if (fd < 0 && (errno == EACCES || errno == EPERM)) {
		snprintf(kern_note, sizeof kern_note, ", kernel frames refused (%s)",
			 ss_errno_name(errno));
		ss_smp.kernel_ok = 0;
		ss_perf_attr_clock(&a);
		fd = perf_open(&a, self);
	}
	char copy_note[160] = "";
	if (fd < 0 && errno == EINVAL && ss_smp.stack_copy) {
		/* A kernel without user stack sampling (or one that refuses this size):
		 * CPU samples fall back to frame-pointer chains. */
		snprintf(copy_note, sizeof copy_note, ", user stack copies of %u bytes refused (EINVAL): "
			 "frame-pointer chains instead", ss_smp.stack_copy);
		ss_smp.stack_copy = 0;
		ss_perf_attr_clock(&a);
		fd = perf_open(&a, self);
	}
	if (fd < 0) {
		int e = errno;
		snprintf(why, len, "perf_event_open(cpu-clock, tid %u): %s (perf_event_paranoid %d)",
			 self, ss_errno_name(e), ss_smp.paranoid);
		return -e;
	}

	struct ss_sthread probe;
	memset(&probe, 0, sizeof probe);
	int r = ss_perf_map_ring(&probe, fd, ss_smp.perf_pages, why, len);
	close(fd);
	if (r != 0)
		return r;
	munmap(probe.ring, probe.ring_len);

	char off_note[120];
	ss_smp.offcpu = 0;
	if (offcpu == SS_OFFCPU_OFF) {
		snprintf(off_note, sizeof off_note, "off-CPU stacks off (asked)");
	} else if (!ss_smp.kernel_ok) {
		snprintf(off_note, sizeof off_note, "off-CPU stacks unavailable: need kernel samples "
			 "(perf_event_paranoid %d, no CAP_PERFMON)", ss_smp.paranoid);
	} else {
		ss_perf_attr_cs(&a);
		int cs = perf_open(&a, self);
		if (cs < 0 && errno == EINVAL && ss_smp.offcpu_copy) {
			ss_smp.offcpu_copy = 0; /* no user stack copies: the kernel's chains */
			ss_perf_attr_cs(&a);
			cs = perf_open(&a, self);
		}
		if (cs >= 0) {
			close(cs);
			ss_smp.offcpu = 1;
			snprintf(off_note, sizeof off_note, "off-CPU stacks on");
		} else {
			snprintf(off_note, sizeof off_note, "off-CPU stacks refused: context-switches "
				 "event %s", ss_errno_name(errno));
		}
	}

	char budget[120];
	if (ss_perf_mlock_unlimited()) {
		snprintf(budget, sizeof budget, "mlock budget unlimited (CAP_IPC_LOCK)");
	} else {
		struct rlimit rl = {0, 0};
		getrlimit(RLIMIT_MEMLOCK, &rl);
		long kb = (long)ss_read_int_file("/proc/sys/kernel/perf_event_mlock_kb", 516) *
			  sysconf(_SC_NPROCESSORS_ONLN);
		if (rl.rlim_cur != RLIM_INFINITY)
			kb += (long)(rl.rlim_cur / 1024);
		snprintf(budget, sizeof budget, "mlock budget %ld KiB for all of this user's rings, "
			 "~%ld threads", kb,
			 kb / ((long)(ss_smp.perf_pages + 1) * page_size() / 1024));
	}
	char chains[200];
	if (ss_smp.stack_copy)
		snprintf(chains, sizeof chains, "user registers and %u bytes of user stack per sample%s, "
			 "call chains %s%s", ss_smp.stack_copy, copy_note,
			 ss_smp.kernel_ok ? (ss_smp.user_chain ? "kernel+user" : "kernel") :
			 (ss_smp.user_chain ? "user only" : "none"), kern_note);
	else
		snprintf(chains, sizeof chains, "call chains user%s%s%s", ss_smp.kernel_ok ? "+kernel" : " only",
			 kern_note, copy_note);
	snprintf(why, len, "cpu-clock %u Hz (period %llu ns), %s, max %u frames, "
		 "switches on, %s, ring %u+1 pages per thread, %s",
		 ss_smp.hz, (unsigned long long)ss_smp.period_ns, chains, ss_smp.max_stack, off_note,
		 ss_smp.perf_pages, budget);
	return 0;
}

SS_INTERNAL uint64_t ss_perf_read_lost(int fd)
{
	uint64_t v[2];
	if (fd < 0 || !ss_smp.fmt_lost || read(fd, v, sizeof v) != (ssize_t)sizeof v)
		return 0;
	return v[1];
}

SS_INTERNAL void ss_perf_close_fds(struct ss_sthread *t)
{
	if (t->fd_clock >= 0)
		t->lost_counter = ss_perf_read_lost(t->fd_clock) + ss_perf_read_lost(t->fd_cs);
	if (t->fd_cs >= 0)
		close(t->fd_cs);
	if (t->fd_clock >= 0)
		close(t->fd_clock);
	t->fd_cs = t->fd_clock = -1;
}

SS_INTERNAL void ss_perf_unmap(struct ss_sthread *t)
{
	if (t->ring)
		munmap(t->ring, t->ring_len);
	t->ring = NULL;
	t->ring_len = 0;
}

SS_INTERNAL int ss_perf_open(struct ss_sthread *t, char *why, size_t len)
{
	struct perf_event_attr a;
	ss_perf_attr_clock(&a);
	t->fd_clock = perf_open(&a, t->tid);
	if (t->fd_clock < 0) {
		int e = errno;
		snprintf(why, len, "perf_event_open(cpu-clock, tid %u): %s (perf_event_paranoid %d)",
			 t->tid, ss_errno_name(e), ss_smp.paranoid);
		return -e;
	}
	int r = ss_perf_map_ring(t, t->fd_clock, ss_smp.perf_pages, why, len);
	if (r != 0) {
		ss_perf_close_fds(t);
		return r;
	}
	if (ioctl(t->fd_clock, PERF_EVENT_IOC_ID, &t->id_clock) != 0)
		t->id_clock = 0;
	if (ss_smp.offcpu) {
		ss_perf_attr_cs(&a);
		t->fd_cs = perf_open(&a, t->tid);
		if (t->fd_cs >= 0 &&
		    (ioctl(t->fd_cs, PERF_EVENT_IOC_SET_OUTPUT, t->fd_clock) != 0 ||
		     ioctl(t->fd_cs, PERF_EVENT_IOC_ID, &t->id_cs) != 0)) {
			close(t->fd_cs);
			t->fd_cs = -1;
		}
		if (t->fd_cs >= 0)
			ss_bpf_attach_offcpu(t->fd_cs);
		/* A thread without off-CPU stacks still has its CPU samples. */
	}
	if (ss_smp.enabled)
		ss_perf_enable(t, 1);
	return 0;
}

SS_INTERNAL void ss_perf_enable(struct ss_sthread *t, int on)
{
	unsigned long req = on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE;
	if (t->fd_clock >= 0)
		ioctl(t->fd_clock, req, 0);
	if (t->fd_cs >= 0)
		ioctl(t->fd_cs, req, 0);
}

/* ---- ring reader -------------------------------------------------------------- */

static _Alignas(8) unsigned char scratch[65536]; /* a record's size is a u16 */

static uint64_t rd64(const unsigned char *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

static uint32_t rd32(const unsigned char *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static void emit_lost(const struct ss_sample_sink *sink, uint64_t ts, uint64_t ts_end,
		      uint32_t tid, uint32_t reason, uint64_t count)
{
	struct ss_sampler_lost l = { .ts = ts, .ts_end = ts_end < ts ? ts : ts_end, .tid = tid,
				     .reason = reason, .count = count };
	if (sink->lost)
		sink->lost(sink->ctx, &l);
	ss_smp.stats.lost += count;
}

/* A switch-out sample's { u64 abi; u64 bp, sp, ip; } { u64 size; char data[size];
 * u64 dyn_size; }: the pc, the leaf's return address where its CFI finds it, then
 * the return addresses of the frame-pointer chain as far as it stays inside the
 * copy, each frame above the last (the kernel's walk of the live stack, run over
 * the copy). The sched_switch program's stack records have the same layout. */
SS_INTERNAL uint32_t ss_perf_cs_walk(const unsigned char *q, const unsigned char *end, uint64_t *out)
{
	if (end - q < 40 || rd64(q) == PERF_SAMPLE_REGS_ABI_NONE)
		return 0; /* a kernel thread, or no user registers */
	uint64_t fp = rd64(q + 8), sp = rd64(q + 16), pc = rd64(q + 24);
	q += 32;
	uint64_t size = rd64(q), len = 0;
	q += 8;
	const unsigned char *data = q;
	if (size && (uint64_t)(end - q) >= size + 8) {
		uint64_t dyn = rd64(q + size);
		len = dyn < size ? dyn : size;
	}
	uint32_t nf = 0;
	out[nf++] = pc;
	/* A switch-out is mostly in a system call's wrapper, which sets up no frame:
	 * its caller's return address is found by the leaf's CFI, else the chain
	 * below would begin at the caller's caller. */
	uint64_t ra;
	if (len && ss_unwind_leaf(pc, data, len, &fp, &ra))
		out[nf++] = ra;
	uint64_t lo = sp;
	while (nf < SS_MAX_FRAMES) {
		if ((fp & 7) || fp < lo || fp - sp + 16 > len)
			break;
		uint64_t next = rd64(data + (fp - sp)), ret = rd64(data + (fp - sp) + 8);
		if (ret < 4096)
			break; /* not a code address: the end of the chain */
		out[nf++] = ret;
		if (next <= fp)
			break;
		lo = fp + 16;
		fp = next;
	}
	return nf;
}

static void on_sample(struct ss_sthread *t, const unsigned char *p, size_t n,
		      const struct ss_sample_sink *sink)
{
	/* id, ip, pid/tid, time, cpu/res, period, nr, ips[nr] */
	if (n < 7 * 8)
		return;
	uint64_t id = rd64(p);
	uint32_t tid = rd32(p + 20);
	uint64_t time = rd64(p + 24);
	uint32_t cpu = rd32(p + 32);
	uint64_t period = rd64(p + 40);
	uint64_t frames[SS_MAX_FRAMES];
	if (ss_smp.offcpu_copy && ss_perf_is_cs(t, id)) {
		struct ss_sample s = {
			.ts = time, .tid = tid, .cpu = cpu, .kind = SS_SAMPLE_OFFCPU,
			.nframes = ss_perf_cs_walk(p + 48, p + n, frames), .frames = frames,
		};
		if (sink->sample)
			sink->sample(sink->ctx, &s);
		ss_smp.stats.samples++;
		return;
	}
	uint64_t nr = rd64(p + 48);
	if (nr > (n - 56) / 8)
		return; /* truncated: never trust the count */
	const unsigned char *ips = p + 56;

	uint32_t nf = 0, nk = 0;
	/* Kernel part first, then user: two passes so the order holds whatever order
	 * the contexts come in. */
	for (int pass = 0; pass < 2; pass++) {
		uint64_t want = pass == 0 ? PERF_CONTEXT_KERNEL : PERF_CONTEXT_USER;
		uint64_t ctx = PERF_CONTEXT_USER; /* no marker at all: user addresses */
		for (uint64_t i = 0; i < nr && nf < SS_MAX_FRAMES; i++) {
			uint64_t v = rd64(ips + i * 8);
			if (v >= (uint64_t)PERF_CONTEXT_MAX) {
				ctx = v;
				continue;
			}
			if (ctx == want)
				frames[nf++] = v;
		}
		if (pass == 0)
			nk = nf;
	}
	int off = ss_perf_is_cs(t, id);
	/* After the chain: { u64 abi; u64 regs[weight(mask)]; } { u64 size; char
	 * data[size]; u64 dyn_size; } on cpu-clock samples with copies. */
	static struct ss_ucopy uc;
	struct ss_ustack us = { &uc, NULL };
	int have_copy = 0;
	if (!off && ss_smp.stack_copy) {
		const unsigned char *q = ips + nr * 8, *end = p + n;
		uc.valid = 0;
		uc.len = 0;
		if (end - q >= 8) {
			uint64_t abi = rd64(q);
			q += 8;
			if (abi != PERF_SAMPLE_REGS_ABI_NONE && end - q >= 8 * SS_UREGS) {
#if defined(__x86_64__)
				for (int i = 0; i < SS_UREGS; i++)
					uc.regs[perf_to_dwarf[i]] = rd64(q + 8 * i);
				uc.valid = (1u << SS_UREGS) - 1;
#endif
				q += 8 * SS_UREGS;
			}
		}
		if (uc.valid && end - q >= 8) {
			uint64_t size = rd64(q);
			q += 8;
			if (size && (uint64_t)(end - q) >= size + 8) {
				uint64_t dyn = rd64(q + size);
				us.data = q;
				uc.len = (uint32_t)(dyn < size ? dyn : size) & ~7u;
			}
		}
		have_copy = uc.valid != 0;
	}
	struct ss_sample s = {
		.ts = time,
		.tid = tid,
		.cpu = cpu,
		.weight = off ? 0 : period,
		.kind = off ? SS_SAMPLE_OFFCPU : SS_SAMPLE_CPU,
		.nframes = nf,
		.nkernel = nk,
		.frames = frames,
		.ustack = have_copy ? &us : NULL,
	};
	if (sink->sample)
		sink->sample(sink->ctx, &s);
	ss_smp.stats.samples++;
}

SS_INTERNAL int ss_perf_is_cs(const struct ss_sthread *t, uint64_t id)
{
	if (t->cpu_ring)
		return ss_percpu_is_cs(id);
	return t->id_cs != 0 && id == t->id_cs;
}

SS_INTERNAL void ss_perf_record(struct ss_sthread *t, const struct perf_event_header *h,
				const struct ss_sample_sink *sink)
{
	const unsigned char *p = (const unsigned char *)(h + 1);
	size_t n = h->size - sizeof *h;
	const unsigned char *tr = n >= TRAILER ? p + n - TRAILER : NULL;
	uint32_t tr_tid = tr ? rd32(tr + 4) : t->tid;
	uint64_t tr_time = tr ? rd64(tr + 8) : 0;
	uint32_t tr_cpu = tr ? rd32(tr + 16) : UINT32_MAX;

	/* A CPU's ring holds every thread of the process (the recorder's own too),
	 * or of every process (cpu_wide): only the threads the writer follows are
	 * handed on; other processes' records are counted, never written. */
	if (t->cpu_ring) {
		int smp = h->type == PERF_RECORD_SAMPLE;
		int sw = h->type == PERF_RECORD_SWITCH || h->type == PERF_RECORD_SWITCH_CPU_WIDE;
		uint32_t who = smp ? (n >= 32 ? rd32(p + 20) : 0) : tr_tid;
		uint64_t when = smp ? (n >= 32 ? rd64(p + 24) : 0) : tr_time;
		/* The program's records in a CPU's ring are of that CPU's
		 * BPF_OUTPUT event only (id_out): one compare. */
		if (smp && t->id_out && n >= 8 && rd64(p) == t->id_out) {
			ss_swtp_record(p, n, sink); /* of this process, followed ones picked there */
			return;
		}
		if (ss_smp.cpu_wide && (smp || sw)) {
			uint32_t pid = smp ? (n >= 32 ? rd32(p + 16) : 0) : tr ? rd32(tr) : 0;
			if (pid != ss_smp.pc_pid) {
				ss_smp.stats.foreign++;
				return;
			}
		}
		if ((smp || sw || h->type == PERF_RECORD_COMM) && !ss_percpu_follows(who, when))
			return;
	}
	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		on_sample(t, p, n, sink);
		break;
	case PERF_RECORD_SWITCH_CPU_WIDE: /* { u32 next_prev_pid, next_prev_tid; } + trailer */
	case PERF_RECORD_SWITCH: {
		if (!tr)
			break;
		struct ss_switch sw = {
			.ts = tr_time,
			.tid = tr_tid,
			.cpu = tr_cpu,
			.out = (h->misc & PERF_RECORD_MISC_SWITCH_OUT) ? 1 : 0,
			.preempted = (h->misc & PERF_RECORD_MISC_SWITCH_OUT) &&
				     (h->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) ? 1 : 0,
		};
		if (sink->switch_rec)
			sink->switch_rec(sink->ctx, &sw);
		ss_smp.stats.switches++;
		break;
	}
	case PERF_RECORD_LOST:
		/* { u64 id; u64 lost; } + trailer */
		if (n >= 16 + TRAILER) {
			t->lost_records += rd64(p + 8);
			/* A CPU's ring: sampler_percpu.c reports its losses with the counters'. */
			if (!t->cpu_ring && t->lost_records > t->lost_emitted) {
				emit_lost(sink, tr_time, tr_time, tr_tid, SS_SLOSS_KERNEL,
					  t->lost_records - t->lost_emitted);
				t->lost_emitted = t->lost_records;
			}
		}
		break;
	case PERF_RECORD_THROTTLE:
		/* { u64 time; u64 id; u64 stream_id; } + trailer */
		if (n >= 24 && !t->throttled_at) {
			t->throttled_at = rd64(p);
			t->throttled_id = rd64(p + 8);
		}
		break;
	case PERF_RECORD_UNTHROTTLE:
		if (n >= 24 && t->throttled_at) {
			uint64_t end = rd64(p), dt = end > t->throttled_at ? end - t->throttled_at : 0;
			uint64_t cnt = !ss_perf_is_cs(t, t->throttled_id) ? dt / ss_smp.period_ns : 0;
			emit_lost(sink, t->throttled_at, end, t->tid, SS_SLOSS_THROTTLE, cnt ? cnt : 1);
			t->throttled_at = 0;
		}
		break;
	case PERF_RECORD_COMM:
		/* { u32 pid, tid; char comm[]; } + trailer */
		if (tr && n >= 8 + TRAILER && sink->comm) {
			char name[17];
			size_t cl = n - 8 - TRAILER;
			if (cl > 16)
				cl = 16;
			memcpy(name, p + 8, cl);
			name[cl] = 0;
			sink->comm(sink->ctx, rd32(p + 4), name, tr_time);
		}
		break;
	case PERF_RECORD_MMAP2: {
		/* { u32 pid, tid; u64 addr, len, pgoff; u32 maj, min; u64 ino, ino_gen;
		 *   u32 prot, flags; char filename[]; } + trailer */
		if (!tr || n < 64 + TRAILER || !sink->mapping)
			break;
		size_t fl = n - 64 - TRAILER;
		char path[4096];
		if (fl >= sizeof path)
			fl = sizeof path - 1;
		memcpy(path, p + 64, fl);
		path[fl] = 0;
		if (path[0] != '/' || strcmp(path, "//anon") == 0)
			break; /* only file-backed code can be symbolized elsewhere */
		struct ss_mapping m = {
			.ts = tr_time,
			.start = rd64(p + 8),
			.end = rd64(p + 8) + rd64(p + 16),
			.pgoff = rd64(p + 24),
			.prot = rd32(p + 56),
			.path = path,
		};
		if (!(h->misc & PERF_RECORD_MISC_MMAP_BUILD_ID)) {
			uint64_t dev = makedev(rd32(p + 32), rd32(p + 36));
			m.build_id_len = (uint8_t)ss_build_id_lookup(path, dev, rd64(p + 40), m.build_id);
		} else {
			uint8_t bl = p[32];
			m.build_id_len = bl <= 20 ? bl : 20;
			memcpy(m.build_id, p + 36, m.build_id_len);
		}
		sink->mapping(sink->ctx, &m);
		break;
	}
	default:
		break;
	}
}

SS_INTERNAL void ss_perf_emit_lost(const struct ss_sample_sink *sink, uint64_t ts, uint64_t ts_end,
				   uint32_t tid, uint32_t reason, uint64_t count)
{
	emit_lost(sink, ts, ts_end, tid, reason, count);
}

SS_INTERNAL void ss_perf_drain(struct ss_sthread *t, const struct ss_sample_sink *sink)
{
	if (!t->ring)
		return;
	struct perf_event_mmap_page *mp = t->ring;
	const unsigned char *data = (const unsigned char *)t->ring + page_size();
	uint64_t size = t->data_size;
	uint64_t head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = mp->data_tail;
	ss_sampler_note_fill(head - tail, size);

	while (tail < head) {
		uint64_t off = tail % size;
		/* Records are 8-aligned and so are their headers: a header never wraps. */
		const struct perf_event_header *h = (const void *)(data + off);
		uint64_t rs = h->size;
		if (rs < sizeof *h || rs > head - tail || (rs & 7)) {
			tail = head; /* the stream is out of step: skip what is left */
			emit_lost(sink, ss_now(), ss_now(), t->tid, SS_SLOSS_KERNEL, 1);
			break;
		}
		if (off + rs > size) {
			uint64_t first = size - off;
			memcpy(scratch, data + off, first);
			memcpy(scratch + first, data, rs - first);
			h = (const void *)scratch;
		}
		ss_perf_record(t, h, sink);
		tail += rs;
	}
	__atomic_store_n(&mp->data_tail, tail, __ATOMIC_RELEASE);

	/* Reading an event's counters interrupts the CPU the thread runs on (an
	 * IPI, dear in a VM), so they are read twice a second, not at every drain;
	 * closing the descriptors reads them a last time. */
	uint64_t now = ss_now();
	if (t->fd_clock >= 0 && now - t->last_lost_read >= LOST_READ_NS) {
		t->lost_counter = ss_perf_read_lost(t->fd_clock) + ss_perf_read_lost(t->fd_cs);
		t->last_lost_read = now;
	}
	if (t->lost_counter > t->lost_emitted) {
		emit_lost(sink, t->last_drain ? t->last_drain : now, now, t->tid, SS_SLOSS_KERNEL,
			  t->lost_counter - t->lost_emitted);
		t->lost_emitted = t->lost_counter;
		t->last_drain = now;
	}
	if (!t->last_drain)
		t->last_drain = now;

	if (t->closing && t->throttled_at) {
		emit_lost(sink, t->throttled_at, ss_now(), t->tid, SS_SLOSS_THROTTLE, 1);
		t->throttled_at = 0;
	}
}

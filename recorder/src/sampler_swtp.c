/*
 * sampler_swtp.c - the switches of this process's followed threads from a BPF
 * program on the sched_switch raw tracepoint, instead of the per-CPU events'
 * PERF_RECORD_SWITCH records (sampler_percpu.c with context_switch = 0).
 *
 * Why: with switch records on the inherited cpu-clock events, every switch of
 * a thread of ours pays perf's side-band path (two records, sample_id, the
 * output of each); the raw tracepoint is one program run per switch of the
 * machine, which for a switch not ours is a helper call and a compare, and for
 * one of ours one 16-byte record (bench_switch_tp: +0.2-0.5 us a switch against
 * +1.5 for the switch records).
 *
 * The program (hand-assembled, no libbpf, like sampler_bpf.c) runs in the
 * context of prev, the task switched out: a per-CPU map holds the time of the
 * CPU's last switch (when prev was switched in), replaced by now at every
 * switch. For prev of this process whose in-poll cell (sampler_inpoll.c) is not
 * NONE (a followed thread: ALL, IN or OUT), one record { u32 tid, flags; u64
 * in_ts } by bpf_perf_event_output into a BPF_OUTPUT event of the CPU, which
 * writes into that CPU's ring, so the merged drain sees it in time order with
 * the samples. Each on-CPU interval thus arrives whole at its end: the drain
 * (ss_swtp_record) hands on the switch-in at in_ts and the switch-out, the same
 * ss_switch calls the switch records gave (a thread's switches stay in its time
 * order; only its samples inside the interval come before its switch-in).
 * preempted is perf's PERF_RECORD_MISC_SWITCH_OUT_PREEMPT: preempt, or prev
 * still runnable (prev_state 0, a yield). At a switch-out inside a poll (every
 * followed thread's with STALLSCOPE_OFFCPU_STACKS=all) the record also carries
 * the user registers saved at the kernel's entry (bpf_task_pt_regs) and 1 KiB
 * of the user stack, walked as the context-switches event's samples were.
 *
 * Tids are the initial pid namespace's (bpf_get_current_pid_tgid):
 * elsewhere the events' switch records stay in charge. Loading needs CAP_BPF
 * and CAP_PERFMON (root); the BPF_OUTPUT events, one per CPU for every
 * process, CAP_PERFMON. Writer thread only.
 */
#include "sampler-private.h"

#include <errno.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PID_NS_INIT_INO 0xEFFFFFFCu
#define REC_BYTES 16               /* u32 tid, flags; u64 in_ts */
#define F_PREEMPT 1u

/* ---- the program ----------------------------------------------------------------- */

static struct bpf_insn insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm)
{
	struct bpf_insn i;
	memset(&i, 0, sizeof i);
	i.code = code;
	i.dst_reg = dst & 0xf;
	i.src_reg = src & 0xf;
	i.off = off;
	i.imm = imm;
	return i;
}

#define MOV_K(d, k) insn(BPF_ALU64 | BPF_MOV | BPF_K, d, 0, 0, k)
#define MOV_X(d, s) insn(BPF_ALU64 | BPF_MOV | BPF_X, d, s, 0, 0)

/* dst = 0 unless the cell of tid dst (< cells) says followed: r1, r2 clobbered. */
static int cell_check(struct bpf_insn *p, int n, int dst, int map_fd)
{
	p[n++] = MOV_X(1, dst);
	p[n++] = insn(BPF_ALU64 | BPF_AND | BPF_K, 1, 0, 0, SS_INPOLL_CELLS - 1);
	p[n++] = insn(BPF_ALU64 | BPF_LSH | BPF_K, 1, 0, 0, 2);
	p[n++] = insn(BPF_LD | BPF_DW | BPF_IMM, 2, BPF_PSEUDO_MAP_VALUE, 0, map_fd);
	p[n++] = insn(0, 0, 0, 0, 0);
	p[n++] = insn(BPF_ALU64 | BPF_ADD | BPF_X, 2, 1, 0, 0);
	p[n++] = insn(BPF_LDX | BPF_MEM | BPF_W, 1, 2, 0, 0);
	p[n++] = insn(BPF_JMP | BPF_JNE | BPF_K, 1, 0, 1, SS_INPOLL_NONE);
	p[n++] = MOV_K(dst, 0);
	return n;
}

static int load(const struct bpf_insn *p, int n, char *why, size_t len)
{
	static char log[4096];
	union bpf_attr a;
	memset(&a, 0, sizeof a);
	a.prog_type = BPF_PROG_TYPE_RAW_TRACEPOINT;
	a.insns = (uint64_t)(uintptr_t)p;
	a.insn_cnt = (uint32_t)n;
	a.license = (uint64_t)(uintptr_t)"GPL";
	int fd = (int)syscall(SYS_bpf, BPF_PROG_LOAD, &a, sizeof a);
	if (fd < 0 && errno != EPERM && errno != EACCES) {
		log[0] = 0;
		a.log_buf = (uint64_t)(uintptr_t)log;
		a.log_size = sizeof log;
		a.log_level = 1;
		fd = (int)syscall(SYS_bpf, BPF_PROG_LOAD, &a, sizeof a);
		if (fd < 0) {
			int e = errno;
			log[strcspn(log, "\n")] = 0;
			snprintf(why, len, "bpf(PROG_LOAD, raw tracepoint): %s: %s", ss_errno_name(e), log);
			return -e;
		}
		return fd;
	}
	if (fd < 0) {
		int e = errno;
		snprintf(why, len, "bpf(PROG_LOAD, raw tracepoint): %s", ss_errno_name(e));
		return -e;
	}
	return fd;
}

/* The record: { u32 tid; u32 flags; u64 in_ts; } for a switch out of a followed
 * thread of this process, in_ts the CPU's previous switch (when that thread was
 * switched in; 0 = before the program ran there). With a stack, after it what a
 * switch-out sample of the context-switches event carries with CS_REGS_MASK
 * (sampler_perf.c), for the same walk: { u64 abi, bp, sp, ip; } { u64 size;
 * data[size]; u64 dyn_size; }. */
#define STK_COPY SS_OFFCPU_COPY_DEFAULT
#define STK_BYTES (REC_BYTES + 32 + 8 + STK_COPY + 8)
#define F_STACK 2u
/* struct pt_regs of x86-64 (arch/x86/include/asm/ptrace.h) */
#define PT_BP 32
#define PT_IP 128
#define PT_SP 152

/* r0 = the element of the one-element map fd (key 0 at fp - 4); to_exit gets
 * the jump taken when it is missing. */
static int lookup0(struct bpf_insn *p, int n, int fd, int *to_exit)
{
	p[n++] = insn(BPF_ST | BPF_MEM | BPF_W, 10, 0, -4, 0);
	p[n++] = insn(BPF_LD | BPF_DW | BPF_IMM, 1, BPF_PSEUDO_MAP_FD, 0, fd);
	p[n++] = insn(0, 0, 0, 0, 0);
	p[n++] = MOV_X(2, 10);
	p[n++] = insn(BPF_ALU64 | BPF_ADD | BPF_K, 2, 0, 0, -4);
	p[n++] = insn(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_map_lookup_elem);
	*to_exit = n;
	p[n++] = insn(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 0, 0);
	return n;
}

static int build(uint32_t pid, int cells_fd, int last_fd, int out_fd, int stk_fd, int stacks,
		 char *why, size_t len)
{
	struct bpf_insn p[160];
	int n = 0, ex[8], nex = 0;
	p[n++] = MOV_X(6, 1); /* r6 = ctx: u64 args[4] */
	/* The CPU's last switch time becomes now; the one before, kept at fp - 24,
	 * is when prev was switched in. */
	n = lookup0(p, n, last_fd, &ex[nex++]);
	p[n++] = MOV_X(9, 0);
	p[n++] = insn(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_ktime_get_ns);
	p[n++] = insn(BPF_LDX | BPF_MEM | BPF_DW, 1, 9, 0, 0);
	p[n++] = insn(BPF_STX | BPF_MEM | BPF_DW, 9, 0, 0, 0);
	p[n++] = insn(BPF_STX | BPF_MEM | BPF_DW, 10, 1, -24, 0);
	/* prev, the running task: of this process and followed, else nothing */
	p[n++] = insn(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_get_current_pid_tgid);
	p[n++] = MOV_X(1, 0);
	p[n++] = insn(BPF_ALU64 | BPF_RSH | BPF_K, 1, 0, 0, 32);
	ex[nex++] = n;
	p[n++] = insn(BPF_JMP | BPF_JNE | BPF_K, 1, 0, 0, (int32_t)pid);
	p[n++] = insn(BPF_ALU | BPF_MOV | BPF_X, 8, 0, 0, 0); /* w8 = w0: the tid */
	n = cell_check(p, n, 8, cells_fd);
	ex[nex++] = n;
	p[n++] = insn(BPF_JMP | BPF_JEQ | BPF_K, 8, 0, 0, 0);
	/* r7 = flags: preempt, or prev left runnable (prev_state 0, a yield) */
	p[n++] = MOV_K(7, F_PREEMPT);
	p[n++] = insn(BPF_LDX | BPF_MEM | BPF_DW, 3, 6, 0, 0);
	p[n++] = insn(BPF_JMP | BPF_JNE | BPF_K, 3, 0, 4, 0);
	p[n++] = insn(BPF_LDX | BPF_MEM | BPF_DW, 3, 6, 24, 0);
	p[n++] = insn(BPF_ALU | BPF_MOV | BPF_X, 3, 3, 0, 0); /* w3 = w3: unsigned int */
	p[n++] = insn(BPF_JMP | BPF_JEQ | BPF_K, 3, 0, 1, 0);
	p[n++] = MOV_K(7, 0);
	int j_plain = -1, j_plain2 = -1, j_done = -1;
	if (stacks) {
		/* r2 = prev's cell, r1 its value (cell_check): a stack where in a
		 * poll, or the hooks do not describe it (ALL), or its bucket is
		 * shared; every followed thread's with stacks = 2 (OFFCPU_STACKS=all). */
		if (stacks == 1) {
			int j_want = n;
			p[n++] = insn(BPF_JMP | BPF_JGT | BPF_K, 1, 0, 0, SS_INPOLL_OUT);
			p[n++] = insn(BPF_ALU64 | BPF_ADD | BPF_K, 2, 0, 0, SS_INPOLL_CELLS * 4);
			p[n++] = insn(BPF_LDX | BPF_MEM | BPF_W, 1, 2, 0, 0);
			j_plain = n;
			p[n++] = insn(BPF_JMP | BPF_JEQ | BPF_K, 1, 0, 0, 0);
			p[j_want].off = (int16_t)(n - j_want - 1);
		}
		/* The record in the CPU's scratch element, the user registers saved
		 * at the kernel's entry and the top of the user stack. */
		n = lookup0(p, n, stk_fd, &j_plain2);
		p[n++] = insn(BPF_ALU64 | BPF_OR | BPF_K, 7, 0, 0, F_STACK);
		p[n++] = insn(BPF_STX | BPF_MEM | BPF_W, 0, 8, 0, 0);
		p[n++] = insn(BPF_STX | BPF_MEM | BPF_W, 0, 7, 4, 0);
		p[n++] = insn(BPF_LDX | BPF_MEM | BPF_DW, 1, 10, -24, 0);
		p[n++] = insn(BPF_STX | BPF_MEM | BPF_DW, 0, 1, 8, 0);
		p[n++] = MOV_X(8, 0); /* r8 = the record */
		p[n++] = insn(BPF_ST | BPF_MEM | BPF_DW, 8, 0, REC_BYTES, 2); /* PERF_SAMPLE_REGS_ABI_64 */
		p[n++] = insn(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_get_current_task_btf);
		p[n++] = MOV_X(1, 0);
		p[n++] = insn(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_task_pt_regs);
		p[n++] = insn(BPF_LDX | BPF_MEM | BPF_DW, 1, 0, PT_BP, 0);
		p[n++] = insn(BPF_STX | BPF_MEM | BPF_DW, 8, 1, REC_BYTES + 8, 0);
		p[n++] = insn(BPF_LDX | BPF_MEM | BPF_DW, 1, 0, PT_SP, 0);
		p[n++] = insn(BPF_STX | BPF_MEM | BPF_DW, 8, 1, REC_BYTES + 16, 0);
		p[n++] = insn(BPF_LDX | BPF_MEM | BPF_DW, 1, 0, PT_IP, 0);
		p[n++] = insn(BPF_STX | BPF_MEM | BPF_DW, 8, 1, REC_BYTES + 24, 0);
		p[n++] = insn(BPF_ST | BPF_MEM | BPF_DW, 8, 0, REC_BYTES + 32, STK_COPY);
		p[n++] = MOV_X(1, 8);
		p[n++] = insn(BPF_ALU64 | BPF_ADD | BPF_K, 1, 0, 0, REC_BYTES + 40);
		p[n++] = MOV_K(2, STK_COPY);
		p[n++] = insn(BPF_LDX | BPF_MEM | BPF_DW, 3, 8, REC_BYTES + 16, 0);
		p[n++] = insn(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_probe_read_user);
		p[n++] = MOV_K(1, STK_COPY);
		p[n++] = insn(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1, 0);
		p[n++] = MOV_K(1, 0); /* unreadable: the pc alone */
		p[n++] = insn(BPF_STX | BPF_MEM | BPF_DW, 8, 1, REC_BYTES + 40 + STK_COPY, 0);
		p[n++] = MOV_X(1, 6);
		p[n++] = insn(BPF_LD | BPF_DW | BPF_IMM, 2, BPF_PSEUDO_MAP_FD, 0, out_fd);
		p[n++] = insn(0, 0, 0, 0, 0);
		p[n++] = insn(BPF_LD | BPF_DW | BPF_IMM, 3, 0, 0, -1); /* BPF_F_CURRENT_CPU */
		p[n++] = insn(0, 0, 0, 0, 0);
		p[n++] = MOV_X(4, 8);
		p[n++] = MOV_K(5, STK_BYTES);
		p[n++] = insn(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_perf_event_output);
		j_done = n;
		p[n++] = insn(BPF_JMP | BPF_JA, 0, 0, 0, 0);
	}
	int plain = n;
	if (j_plain >= 0)
		p[j_plain].off = (int16_t)(plain - j_plain - 1);
	if (j_plain2 >= 0)
		p[j_plain2].off = (int16_t)(plain - j_plain2 - 1);
	/* the record at fp - 16 */
	p[n++] = insn(BPF_STX | BPF_MEM | BPF_W, 10, 8, -16, 0);
	p[n++] = insn(BPF_STX | BPF_MEM | BPF_W, 10, 7, -12, 0);
	p[n++] = insn(BPF_LDX | BPF_MEM | BPF_DW, 1, 10, -24, 0);
	p[n++] = insn(BPF_STX | BPF_MEM | BPF_DW, 10, 1, -8, 0);
	p[n++] = MOV_X(1, 6);
	p[n++] = insn(BPF_LD | BPF_DW | BPF_IMM, 2, BPF_PSEUDO_MAP_FD, 0, out_fd);
	p[n++] = insn(0, 0, 0, 0, 0);
	p[n++] = insn(BPF_LD | BPF_DW | BPF_IMM, 3, 0, 0, -1);
	p[n++] = insn(0, 0, 0, 0, 0);
	p[n++] = MOV_X(4, 10);
	p[n++] = insn(BPF_ALU64 | BPF_ADD | BPF_K, 4, 0, 0, -16);
	p[n++] = MOV_K(5, REC_BYTES);
	p[n++] = insn(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_perf_event_output);
	int end = n;
	for (int i = 0; i < nex; i++)
		p[ex[i]].off = (int16_t)(end - ex[i] - 1);
	if (j_done >= 0)
		p[j_done].off = (int16_t)(end - j_done - 1);
	p[n++] = MOV_K(0, 0);
	p[n++] = insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
	return load(p, n, why, len);
}

/* ---- state ---------------------------------------------------------------------- */

static int out_map = -1;     /* BPF_MAP_TYPE_PERF_EVENT_ARRAY, by CPU */
static int link_fd = -1;     /* the raw tracepoint's attachment */
static uint64_t *out_ids;    /* the BPF_OUTPUT events' sample ids, sorted */
static uint32_t nout;

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

SS_INTERNAL int ss_swtp_load(int cells_fd, int stacks, char *why, size_t len)
{
#if !defined(__x86_64__)
	stacks = 0; /* struct pt_regs as read here is x86-64's */
#endif
	struct stat st;
	if (stat("/proc/self/ns/pid", &st) != 0 || (uint64_t)st.st_ino != PID_NS_INIT_INO) {
		snprintf(why, len, "not in the initial pid namespace (the program sees its tids)");
		return -EOPNOTSUPP;
	}
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	if (ncpu < 1)
		ncpu = 1;
	union bpf_attr a;
	memset(&a, 0, sizeof a);
	a.map_type = BPF_MAP_TYPE_PERF_EVENT_ARRAY;
	a.key_size = 4;
	a.value_size = 4;
	a.max_entries = (uint32_t)ncpu;
	out_map = (int)syscall(SYS_bpf, BPF_MAP_CREATE, &a, sizeof a);
	memset(&a, 0, sizeof a);
	a.map_type = BPF_MAP_TYPE_PERCPU_ARRAY;
	a.key_size = 4;
	a.value_size = 8;
	a.max_entries = 1;
	int last_map = out_map < 0 ? -1 : (int)syscall(SYS_bpf, BPF_MAP_CREATE, &a, sizeof a);
	if (out_map < 0 || last_map < 0) {
		int e = errno;
		snprintf(why, len, "bpf(MAP_CREATE, perf event array / per-CPU array): %s",
			 ss_errno_name(e));
		if (out_map >= 0)
			close(out_map);
		out_map = -1;
		return -e;
	}
	ss_smp.swtp_stacks = 0;
	int prog = -1;
	if (stacks) {
		a.value_size = STK_BYTES;
		int stk_map = (int)syscall(SYS_bpf, BPF_MAP_CREATE, &a, sizeof a);
		char swhy[300] = "bpf(MAP_CREATE, per-CPU array) refused";
		if (stk_map >= 0)
			prog = build((uint32_t)getpid(), cells_fd, last_map, out_map, stk_map, stacks,
				     swhy, sizeof swhy);
		if (prog >= 0)
			ss_smp.swtp_stacks = stacks;
		else
			ss_sampler_note("off-CPU stacks not from the sched_switch program (%s): from "
					"the context-switches event", swhy);
		if (stk_map >= 0)
			close(stk_map); /* the program holds it */
	}
	if (prog < 0)
		prog = build((uint32_t)getpid(), cells_fd, last_map, out_map, -1, 0, why, len);
	close(last_map);
	if (prog < 0) {
		close(out_map);
		out_map = -1;
	}
	return prog;
}

SS_INTERNAL int ss_swtp_is_out(uint64_t id)
{
	return nout && bsearch(&id, out_ids, nout, sizeof id, cmp_u64) != NULL;
}

SS_INTERNAL int ss_swtp_attach(char *why, size_t len)
{
	struct perf_event_attr a;
	for (uint32_t c = 0; c < ss_smp.ncpu_rings; c++) {
		struct ss_sthread *r = &ss_smp.cpus[c];
		if (!r->ring)
			continue;
		memset(&a, 0, sizeof a);
		a.size = sizeof a;
		a.type = PERF_TYPE_SOFTWARE;
		a.config = PERF_COUNT_SW_BPF_OUTPUT;
		a.sample_period = 1;
		/* id, ip, pid/tid, time as a cpu-clock sample has them (the merge
		 * reads the time there), then the record */
		a.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
				PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_RAW;
		a.disabled = 1;
		a.use_clockid = 1;
		a.clockid = CLOCK_MONOTONIC;
		a.wakeup_events = 1u << 30; /* the writer drains on its own clock */
		/* its records refused by a full ring count with the others' (the drain) */
		a.read_format = ss_smp.fmt_lost ? PERF_FORMAT_LOST : 0;
		int fd = ss_perf_open_on(&a, UINT32_MAX, (int)c);
		if (fd < 0) {
			int e = errno;
			snprintf(why, len, "perf_event_open(bpf-output, cpu %u): %s", c, ss_errno_name(e));
			return -e;
		}
		if (ss_percpu_add_fd(fd) != 0) {
			close(fd);
			snprintf(why, len, "out of memory");
			return -ENOMEM;
		}
		uint64_t id = 0;
		if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, r->fd_clock) != 0 ||
		    ioctl(fd, PERF_EVENT_IOC_ID, &id) != 0) {
			int e = errno;
			snprintf(why, len, "bpf-output event on cpu %u: SET_OUTPUT/ID: %s", c,
				 ss_errno_name(e));
			return -e;
		}
		if (ss_smp.enabled) /* the per-CPU events are on already */
			ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
		uint64_t *ni = realloc(out_ids, (nout + 1) * sizeof *ni);
		if (!ni) {
			snprintf(why, len, "out of memory");
			return -ENOMEM;
		}
		out_ids = ni;
		out_ids[nout++] = id;
		union bpf_attr m;
		memset(&m, 0, sizeof m);
		uint32_t key = c, val = (uint32_t)fd;
		m.map_fd = (uint32_t)out_map;
		m.key = (uint64_t)(uintptr_t)&key;
		m.value = (uint64_t)(uintptr_t)&val;
		if (syscall(SYS_bpf, BPF_MAP_UPDATE_ELEM, &m, sizeof m) != 0) {
			int e = errno;
			snprintf(why, len, "bpf(MAP_UPDATE_ELEM, cpu %u): %s", c, ss_errno_name(e));
			return -e;
		}
	}
	if (nout)
		qsort(out_ids, nout, sizeof *out_ids, cmp_u64);
	union bpf_attr t;
	memset(&t, 0, sizeof t);
	t.raw_tracepoint.name = (uint64_t)(uintptr_t)"sched_switch";
	t.raw_tracepoint.prog_fd = (uint32_t)ss_smp.swtp_prog;
	link_fd = (int)syscall(SYS_bpf, BPF_RAW_TRACEPOINT_OPEN, &t, sizeof t);
	if (link_fd < 0) {
		int e = errno;
		snprintf(why, len, "bpf(RAW_TRACEPOINT_OPEN, sched_switch): %s", ss_errno_name(e));
		return -e;
	}
	return 0;
}

SS_INTERNAL void ss_swtp_close(void)
{
	if (link_fd >= 0)
		close(link_fd);
	if (out_map >= 0)
		close(out_map);
	ss_smp.swtp_stacks = 0;
	if (ss_smp.swtp_prog >= 0)
		close(ss_smp.swtp_prog);
	link_fd = out_map = ss_smp.swtp_prog = -1;
	free(out_ids);
	out_ids = NULL;
	nout = 0;
	ss_smp.swtp = 0;
}

SS_INTERNAL void ss_swtp_record(const unsigned char *p, size_t n, const struct ss_sample_sink *sink)
{
	/* id, ip, pid/tid, time, cpu/res, u32 raw size, the record */
	if (n < 44 + REC_BYTES)
		return;
	uint64_t time, in_ts;
	uint32_t cpu, raw, tid, flags;
	memcpy(&time, p + 24, 8);
	memcpy(&cpu, p + 32, 4);
	memcpy(&raw, p + 40, 4);
	if (raw < REC_BYTES)
		return;
	memcpy(&tid, p + 44, 4);
	memcpy(&flags, p + 48, 4);
	memcpy(&in_ts, p + 52, 8);
	if (!tid || !ss_percpu_follows(tid, time))
		return;
	/* Its switch-in, known only now: the thread's records stay in order, and a
	 * switch-in before it was followed (or before the program ran) is left out. */
	if (in_ts && in_ts <= time && ss_percpu_follows(tid, in_ts)) {
		struct ss_switch sw = { .ts = in_ts, .tid = tid, .cpu = cpu, .out = 0 };
		if (sink->switch_rec)
			sink->switch_rec(sink->ctx, &sw);
		ss_smp.stats.switches++;
	}
	if ((flags & F_STACK) && raw >= STK_BYTES && n >= 44 + (size_t)STK_BYTES) {
		/* Before its switch-out, as the context-switches event's sample came. */
		uint64_t frames[SS_MAX_FRAMES];
		struct ss_sample smp = {
			.ts = time, .tid = tid, .cpu = cpu, .kind = SS_SAMPLE_OFFCPU,
			.nframes = ss_perf_cs_walk(p + 44 + REC_BYTES, p + 44 + STK_BYTES, frames),
			.frames = frames,
		};
		if (sink->sample)
			sink->sample(sink->ctx, &smp);
		ss_smp.stats.samples++;
	}
	struct ss_switch sw = { .ts = time, .tid = tid, .cpu = cpu, .out = 1,
				.preempted = (flags & F_PREEMPT) ? 1 : 0 };
	if (sink->switch_rec)
		sink->switch_rec(sink->ctx, &sw);
	ss_smp.stats.switches++;
}

/*
 * sampler_swtp.c - the switches of the followed threads, and their off-CPU
 * stacks, from a BPF program on the sched_switch raw tracepoint, instead of the
 * per-CPU events' PERF_RECORD_SWITCH records and context-switches samples
 * (sampler_percpu.c then opens the cpu-clock events without switch records and
 * no context-switches event).
 *
 * Why: with switch records, every switch of a thread of ours pays perf's
 * side-band path (two records with their sample_id, an output of each), the
 * events must follow the process's threads (stopped and started at each switch
 * to or from another process or idle), and a parked worker's switches, most of
 * a runtime's, say nothing its lane does not.
 * The raw tracepoint is one program run per switch of the machine: for a switch
 * that concerns no thread we follow, a helper call, an 8-byte read and two
 * compares; where it does, one 16-byte record (bench_switch_tp, bench_sampling).
 *
 * The program (hand-assembled, no libbpf, like sampler_bpf.c) reads the raw
 * tracepoint's arguments (preempt, prev, next, prev_state). prev is the running
 * task (bpf_get_current_pid_tgid); next's tid and tgid are read from its
 * task_struct at the offsets the kernel's BTF gives (sampler_btf.c), and so is
 * prev's state before Linux 5.18, whose tracepoint has no prev_state (the BTF
 * says how many arguments it has). A thread
 * counts where it is of this process and its in-poll cell (sampler_inpoll.c)
 * says a followed thread that is not parked (OUT, IN or ALL) or its bucket is
 * shared (the cell is then another follower's, whose park says nothing of this
 * one); with every switch-out's stack asked for (STALLSCOPE_OFFCPU_STACKS=all)
 * PARKED counts too.
 * So from a worker's park hook to its unpark hook nothing is written for it:
 * the writer says so in META "switches", and the importer leaves the worker's
 * on/off-CPU state unrecorded over each park. Out of prev and into next, one
 * record { u32 out_tid, in_tid, flags, pad } (a tid 0 = none) as it happens, by
 * bpf_perf_event_output into a BPF_OUTPUT event of the CPU, which writes into
 * that CPU's ring: the merged drain sees it in time order with the samples, and
 * a thread on a CPU when the recording stops has its switch-in already. flags:
 * PREEMPT as perf's PERF_RECORD_MISC_SWITCH_OUT_PREEMPT (preempt, or prev left
 * runnable: prev_state 0, a yield); STACK at a blocked switch-out inside a poll
 * (cell IN, ALL, or a shared bucket; every counted switch-out, preempted ones
 * too, with OFFCPU_STACKS=all): a preempted thread was running its code, which
 * the CPU samples show, and in a busy runtime most switch-outs in polls are
 * preemptions. The record then carries the user registers saved at the kernel's
 * entry (bpf_task_pt_regs) and 1 KiB of the user stack from sp, laid out as a
 * context-switches sample's (sampler_perf.c walks it, leaf CFI step included).
 *
 * Tids are the initial pid namespace's (task->pid, bpf_get_current_pid_tgid):
 * elsewhere the events' switch records stay in charge. Loading needs CAP_BPF and
 * CAP_PERFMON (root); the BPF_OUTPUT events, one per CPU for every process,
 * CAP_PERFMON. The program's return value is ignored by the kernel (a raw
 * tracepoint filters no one's events). Writer thread only.
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

#define REC_BYTES 16               /* u32 out_tid, in_tid, flags, pad */
#define F_PREEMPT 1u
#define F_STACK 2u
/* With a stack, after the 16 bytes what a context-switches sample carries with
 * CS_REGS_MASK (sampler_perf.c), for the same walk: { u64 abi, bp, sp, ip; }
 * { u64 size; data[size]; u64 dyn_size; }. */
#define STK_COPY SS_OFFCPU_COPY_DEFAULT
#define STK_BYTES (REC_BYTES + 32 + 8 + STK_COPY + 8)
/* struct pt_regs of x86-64 (arch/x86/include/asm/ptrace.h) */
#define PT_BP 32
#define PT_IP 128
#define PT_SP 152
/* The stack frame: next's { pid, tgid } at -8, the record at -24, the map key
 * at -32, prev's state (read from its task_struct) at -40. */
#define FP_NEXT (-8)
#define FP_REC (-24)
#define FP_KEY (-32)
#define FP_STATE (-40)

_Static_assert(STK_BYTES % 8 == 0, "the stack record stays 8-aligned");

/* ---- the program ----------------------------------------------------------------- */

#define insn ss_bpf_insn
#define MOV_K(d, k) insn(BPF_ALU64 | BPF_MOV | BPF_K, d, 0, 0, k)
#define MOV_X(d, s) insn(BPF_ALU64 | BPF_MOV | BPF_X, d, s, 0, 0)
#define CALL(f) insn(BPF_JMP | BPF_CALL, 0, 0, 0, f)
#define LDX(sz, d, s, o) insn(BPF_LDX | BPF_MEM | (sz), d, s, o, 0)
#define STX(sz, d, s, o) insn(BPF_STX | BPF_MEM | (sz), d, s, o, 0)
#define ST(sz, d, o, k) insn(BPF_ST | BPF_MEM | (sz), d, 0, o, k)
#define JMP_K(op, d, k) insn(BPF_JMP | (op), d, 0, 0, k) /* offset patched later */

struct prog {
	struct bpf_insn p[192];
	int n;
};

static void emit(struct prog *g, struct bpf_insn i)
{
	if (g->n < (int)(sizeof g->p / sizeof g->p[0]))
		g->p[g->n] = i;
	g->n++;
}

/* Points the jump at index j to the next instruction to be emitted. */
static void land(struct prog *g, int j)
{
	if (j < (int)(sizeof g->p / sizeof g->p[0]))
		g->p[j].off = (int16_t)(g->n - j - 1);
}

static void land_all(struct prog *g, const int *j, int n)
{
	for (int i = 0; i < n; i++)
		land(g, j[i]);
}

static void ld_map(struct prog *g, int reg, int src, int fd)
{
	emit(g, insn(BPF_LD | BPF_DW | BPF_IMM, reg, src, 0, fd));
	emit(g, insn(0, 0, 0, 0, 0));
}

/* r2 = &cells.in_poll[tid & (CELLS - 1)] for the tid in reg, r1 = its value. */
static void cell_of(struct prog *g, int reg, int cells_fd)
{
	emit(g, MOV_X(1, reg));
	emit(g, insn(BPF_ALU64 | BPF_AND | BPF_K, 1, 0, 0, SS_INPOLL_CELLS - 1));
	emit(g, insn(BPF_ALU64 | BPF_LSH | BPF_K, 1, 0, 0, 2));
	ld_map(g, 2, BPF_PSEUDO_MAP_VALUE, cells_fd);
	emit(g, insn(BPF_ALU64 | BPF_ADD | BPF_X, 2, 1, 0, 0));
	emit(g, LDX(BPF_W, 1, 2, 0));
}

/* The cell of the thread whose tid is in reg (cell_of: r1 its value, r2 its
 * address), and jumps (their indices added to jumps) taken where the thread's
 * switches are not written: no cell, or (parks 0) PARKED unless the bucket is
 * shared. In a shared bucket the cell is the first follower's: its park says
 * nothing of the others, whose switches must come out (the importer ignores
 * the parked one's inside its parks). */
static void counted(struct prog *g, int reg, int cells_fd, int parks, int *jumps, int *n)
{
	cell_of(g, reg, cells_fd);
	jumps[(*n)++] = g->n;
	emit(g, JMP_K(BPF_JEQ, 1, SS_INPOLL_NONE));
	if (parks)
		return;
	emit(g, MOV_X(3, 2));
	/* shared[b]: 64 KiB past in_poll[b], beyond LDX's 16-bit offset */
	emit(g, insn(BPF_ALU64 | BPF_ADD | BPF_K, 3, 0, 0, SS_INPOLL_CELLS * 4));
	emit(g, LDX(BPF_W, 3, 3, 0));
	int j_shared = g->n;
	emit(g, JMP_K(BPF_JNE, 3, 0));
	jumps[(*n)++] = g->n;
	emit(g, JMP_K(BPF_JEQ, 1, SS_INPOLL_PARKED));
	land(g, j_shared);
}

static void output(struct prog *g, int out_fd, int data_reg, int data_off, int size)
{
	emit(g, MOV_X(1, 6));
	ld_map(g, 2, BPF_PSEUDO_MAP_FD, out_fd);
	emit(g, insn(BPF_ALU | BPF_MOV | BPF_K, 3, 0, 0, -1)); /* w3: BPF_F_CURRENT_CPU */
	emit(g, MOV_X(4, data_reg));
	if (data_off)
		emit(g, insn(BPF_ALU64 | BPF_ADD | BPF_K, 4, 0, 0, data_off));
	emit(g, MOV_K(5, size));
	emit(g, CALL(BPF_FUNC_perf_event_output));
}

/* stacks: 0 none, 1 at blocked switch-outs inside polls, 2 at every counted
 * switch-out.
 * parks: a PARKED cell counts (every switch of a followed thread).
 * tk: the task_struct offsets; prev's state is read at tk->state where that is
 * not -1 (a sched_switch without prev_state, before Linux 5.18), else ctx[3]. */
static int build(struct prog *g, uint32_t pid, const struct ss_btf_task *tk, int cells_fd,
		 int out_fd, int stk_fd, int stacks, int parks)
{
	long pid_off = tk->pid;
	int adjacent = tk->tgid == pid_off + 4;
	g->n = 0;
	emit(g, MOV_X(6, 1)); /* r6 = ctx: u64 args[4] = preempt, prev, next, prev_state */

	/* r8 = next's tid where counted, else 0 */
	emit(g, MOV_K(8, 0));
	emit(g, ST(BPF_DW, 10, FP_NEXT, 0));
	emit(g, MOV_X(1, 10));
	emit(g, insn(BPF_ALU64 | BPF_ADD | BPF_K, 1, 0, 0, FP_NEXT));
	emit(g, MOV_K(2, adjacent ? 8 : 4));
	emit(g, LDX(BPF_DW, 3, 6, 16));
	emit(g, insn(BPF_ALU64 | BPF_ADD | BPF_K, 3, 0, 0, (int32_t)pid_off));
	emit(g, CALL(BPF_FUNC_probe_read_kernel));
	int j_next_done[4], nj = 0;
	if (adjacent) {
		emit(g, LDX(BPF_W, 1, 10, FP_NEXT + 4));
		j_next_done[nj++] = g->n;
		emit(g, JMP_K(BPF_JNE, 1, (int32_t)pid));
	}
	/* (not adjacent: by tid alone; another process's thread in a followed
	 * bucket costs a record the drain drops) */
	emit(g, LDX(BPF_W, 9, 10, FP_NEXT));
	counted(g, 9, cells_fd, parks, j_next_done, &nj);
	emit(g, MOV_X(8, 9));
	land_all(g, j_next_done, nj);

	/* r7 = prev's tid where counted, else 0; r9 = its cell's value */
	emit(g, CALL(BPF_FUNC_get_current_pid_tgid));
	emit(g, MOV_K(7, 0));
	emit(g, MOV_K(9, 0));
	emit(g, MOV_X(1, 0));
	emit(g, insn(BPF_ALU64 | BPF_RSH | BPF_K, 1, 0, 0, 32));
	int j_prev_done[3], np = 0;
	j_prev_done[np++] = g->n;
	emit(g, JMP_K(BPF_JNE, 1, (int32_t)pid));
	emit(g, insn(BPF_ALU | BPF_MOV | BPF_X, 0, 0, 0, 0)); /* w0 = w0: the tid */
	counted(g, 0, cells_fd, parks, j_prev_done, &np);
	emit(g, MOV_X(7, 0));
	emit(g, MOV_X(9, 1));
	land_all(g, j_prev_done, np);

	/* neither: nothing to say */
	emit(g, MOV_X(1, 7));
	emit(g, insn(BPF_ALU64 | BPF_OR | BPF_X, 1, 8, 0, 0));
	int j_none = g->n;
	emit(g, JMP_K(BPF_JEQ, 1, 0));

	if (tk->state >= 0) {
		/* prev->__state (or the low half of an older kernel's long state,
		 * little-endian), what the tracepoint itself read before 5.18 */
		emit(g, MOV_X(1, 10));
		emit(g, insn(BPF_ALU64 | BPF_ADD | BPF_K, 1, 0, 0, FP_STATE));
		emit(g, MOV_K(2, 4));
		emit(g, LDX(BPF_DW, 3, 6, 8));
		emit(g, insn(BPF_ALU64 | BPF_ADD | BPF_K, 3, 0, 0, (int32_t)tk->state));
		emit(g, CALL(BPF_FUNC_probe_read_kernel));
	}
	/* the record's head at fp - 24: out, in, flags (preempted), pad */
	emit(g, STX(BPF_W, 10, 7, FP_REC));
	emit(g, STX(BPF_W, 10, 8, FP_REC + 4));
	emit(g, ST(BPF_W, 10, FP_REC + 12, 0));
	emit(g, MOV_K(1, F_PREEMPT));
	emit(g, LDX(BPF_DW, 2, 6, 0));
	int j_flag = g->n;
	emit(g, JMP_K(BPF_JNE, 2, 0));
	if (tk->state >= 0)
		emit(g, LDX(BPF_W, 2, 10, FP_STATE));
	else
		emit(g, LDX(BPF_DW, 2, 6, 24));
	emit(g, insn(BPF_ALU | BPF_MOV | BPF_X, 2, 2, 0, 0)); /* w2 = w2: unsigned int */
	int j_flag2 = g->n;
	emit(g, JMP_K(BPF_JEQ, 2, 0));
	emit(g, MOV_K(1, 0));
	land(g, j_flag);
	land(g, j_flag2);
	emit(g, STX(BPF_W, 10, 1, FP_REC + 8));

	int j_plain[6], nplain = 0;
	if (stacks) {
		/* A stack only at a switch-out (r7): a blocked one inside a poll,
		 * where the cell (r9) says IN or ALL or the bucket is shared; every
		 * one with stacks 2. */
		j_plain[nplain++] = g->n;
		emit(g, JMP_K(BPF_JEQ, 7, 0));
		int j_want[2], nw = 0;
		if (stacks == 1) {
			/* not at a preemption: where it was is a CPU sample's news */
			emit(g, LDX(BPF_W, 1, 10, FP_REC + 8));
			j_plain[nplain++] = g->n;
			emit(g, JMP_K(BPF_JNE, 1, 0));
			j_want[nw++] = g->n;
			emit(g, JMP_K(BPF_JEQ, 9, SS_INPOLL_IN));
			j_want[nw++] = g->n;
			emit(g, JMP_K(BPF_JEQ, 9, SS_INPOLL_ALL));
			cell_of(g, 7, cells_fd);
			emit(g, insn(BPF_ALU64 | BPF_ADD | BPF_K, 2, 0, 0, SS_INPOLL_CELLS * 4));
			emit(g, LDX(BPF_W, 1, 2, 0));
			j_plain[nplain++] = g->n;
			emit(g, JMP_K(BPF_JEQ, 1, 0));
		}
		land_all(g, j_want, nw);
		/* r8 = the CPU's scratch element (the record is past the stack's 512) */
		emit(g, ST(BPF_W, 10, FP_KEY, 0));
		ld_map(g, 1, BPF_PSEUDO_MAP_FD, stk_fd);
		emit(g, MOV_X(2, 10));
		emit(g, insn(BPF_ALU64 | BPF_ADD | BPF_K, 2, 0, 0, FP_KEY));
		emit(g, CALL(BPF_FUNC_map_lookup_elem));
		j_plain[nplain++] = g->n;
		emit(g, JMP_K(BPF_JEQ, 0, 0));
		emit(g, MOV_X(8, 0));
		emit(g, LDX(BPF_DW, 1, 10, FP_REC));
		emit(g, STX(BPF_DW, 8, 1, 0));
		emit(g, LDX(BPF_DW, 1, 10, FP_REC + 8));
		emit(g, insn(BPF_ALU64 | BPF_OR | BPF_K, 1, 0, 0, F_STACK));
		emit(g, STX(BPF_DW, 8, 1, 8));
		emit(g, ST(BPF_DW, 8, REC_BYTES, PERF_SAMPLE_REGS_ABI_64));
		/* the user registers as the kernel saved them at its entry */
		emit(g, CALL(BPF_FUNC_get_current_task_btf));
		emit(g, MOV_X(1, 0));
		emit(g, CALL(BPF_FUNC_task_pt_regs));
		emit(g, LDX(BPF_DW, 1, 0, PT_BP));
		emit(g, STX(BPF_DW, 8, 1, REC_BYTES + 8));
		emit(g, LDX(BPF_DW, 1, 0, PT_SP));
		emit(g, STX(BPF_DW, 8, 1, REC_BYTES + 16));
		emit(g, LDX(BPF_DW, 1, 0, PT_IP));
		emit(g, STX(BPF_DW, 8, 1, REC_BYTES + 24));
		emit(g, ST(BPF_DW, 8, REC_BYTES + 32, STK_COPY));
		/* the top of the user stack; unreadable: the pc alone (dyn_size 0) */
		emit(g, MOV_X(1, 8));
		emit(g, insn(BPF_ALU64 | BPF_ADD | BPF_K, 1, 0, 0, REC_BYTES + 40));
		emit(g, MOV_K(2, STK_COPY));
		emit(g, LDX(BPF_DW, 3, 8, REC_BYTES + 16));
		emit(g, CALL(BPF_FUNC_probe_read_user));
		emit(g, MOV_K(1, STK_COPY));
		emit(g, insn(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1, 0));
		emit(g, MOV_K(1, 0));
		emit(g, STX(BPF_DW, 8, 1, REC_BYTES + 40 + STK_COPY));
		output(g, out_fd, 8, 0, STK_BYTES);
		emit(g, MOV_K(0, 0));
		emit(g, insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0));
	}
	land_all(g, j_plain, nplain);
	output(g, out_fd, 10, FP_REC, REC_BYTES);
	land(g, j_none);
	emit(g, MOV_K(0, 0));
	emit(g, insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0));
	return g->n <= (int)(sizeof g->p / sizeof g->p[0]) ? 0 : -E2BIG;
}

static int load(const struct prog *g, char *why, size_t len)
{
	return ss_bpf_load(BPF_PROG_TYPE_RAW_TRACEPOINT, g->p, g->n, why, len);
}

/* ---- state ---------------------------------------------------------------------- */

static int out_map = -1;     /* BPF_MAP_TYPE_PERF_EVENT_ARRAY, by CPU */
static int link_fd = -1;     /* the raw tracepoint's attachment */

static int map_create(uint32_t type, uint32_t value_size, uint32_t entries)
{
	union bpf_attr a;
	memset(&a, 0, sizeof a);
	a.map_type = type;
	a.key_size = 4;
	a.value_size = value_size;
	a.max_entries = entries;
	return (int)syscall(SYS_bpf, BPF_MAP_CREATE, &a, sizeof a);
}

SS_INTERNAL int ss_swtp_load(int cells_fd, int stacks, int parks, char *why, size_t len)
{
#if !defined(__x86_64__)
	stacks = 0; /* struct pt_regs as read here is x86-64's */
#endif
	struct stat st;
	if (stat("/proc/self/ns/pid", &st) != 0 || (uint64_t)st.st_ino != SS_PID_NS_INIT_INO) {
		snprintf(why, len, "not in the initial pid namespace (the program sees its tids)");
		return -EOPNOTSUPP;
	}
	struct ss_btf_task tk;
	int r = ss_btf_task(&tk, why, len);
	if (r != 0)
		return r;
	/* Before Linux 5.18 sched_switch has no prev_state (ctx[3]), and the
	 * kernel refuses to attach a program that reads past the tracepoint's
	 * arguments (EINVAL, nothing more said): prev's state from its task. */
	int nargs = ss_btf_sched_switch_args();
	if (nargs >= 0 && nargs < 4) {
		if (tk.state < 0) {
			snprintf(why, len, "sched_switch has %d arguments, no prev_state (Linux 5.18 "
				 "added it), and task_struct no state in the BTF", nargs);
			return -EOPNOTSUPP;
		}
		ss_sampler_note("sched_switch without prev_state (before Linux 5.18): the "
				"program reads the state from task_struct");
	} else {
		tk.state = -1;
	}
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	out_map = map_create(BPF_MAP_TYPE_PERF_EVENT_ARRAY, 4, ncpu > 0 ? (uint32_t)ncpu : 1);
	if (out_map < 0) {
		int e = errno;
		snprintf(why, len, "bpf(MAP_CREATE, perf event array): %s", ss_errno_name(e));
		return -e;
	}
	static struct prog g;
	uint32_t pid = (uint32_t)getpid();
	int prog = -1;
	ss_smp.swtp_stacks = 0;
	if (stacks) {
		char swhy[300] = "bpf(MAP_CREATE, per-CPU array) refused";
		int stk_map = map_create(BPF_MAP_TYPE_PERCPU_ARRAY, STK_BYTES, 1);
		if (stk_map >= 0 && build(&g, pid, &tk, cells_fd, out_map, stk_map, stacks, parks) == 0)
			prog = load(&g, swhy, sizeof swhy);
		if (prog >= 0)
			ss_smp.swtp_stacks = stacks;
		else
			ss_sampler_note("off-CPU stacks not from the sched_switch program (%s): from "
					"the context-switches event", swhy);
		if (stk_map >= 0)
			close(stk_map); /* the program holds it */
	}
	if (prog < 0 && build(&g, pid, &tk, cells_fd, out_map, -1, 0, parks) == 0)
		prog = load(&g, why, len);
	if (prog < 0) {
		close(out_map);
		out_map = -1;
		return prog;
	}
	ss_smp.swtp_skips_parks = !parks;
	return prog;
}

SS_INTERNAL int ss_swtp_attach(char *why, size_t len)
{
	struct perf_event_attr a;
	for (uint32_t c = 0; c < ss_smp.ncpu_rings; c++) {
		struct ss_sthread *r = &ss_smp.cpus[c];
		if (!r->ring)
			continue; /* offline at open: nothing of ours runs there */
		memset(&a, 0, sizeof a);
		a.size = sizeof a;
		a.type = PERF_TYPE_SOFTWARE;
		a.config = PERF_COUNT_SW_BPF_OUTPUT;
		a.sample_period = 1;
		/* id, ip, pid/tid, time, cpu as a cpu-clock sample has them (the merge
		 * reads the time there), then the record */
		a.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
				PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_RAW;
		a.disabled = 1;
		a.use_clockid = 1;
		a.clockid = CLOCK_MONOTONIC;
		/* losses to a full ring count with the others' (the drain reads them) */
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
		r->id_out = id;
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
	if (ss_smp.swtp_prog >= 0)
		close(ss_smp.swtp_prog);
	link_fd = out_map = ss_smp.swtp_prog = -1;
	for (uint32_t c = 0; ss_smp.cpus && c < ss_smp.ncpu_rings; c++)
		ss_smp.cpus[c].id_out = 0;
	ss_smp.swtp_stacks = ss_smp.swtp_skips_parks = 0;
}

static void put_switch(const struct ss_sample_sink *sink, uint64_t ts, uint32_t tid, uint32_t cpu,
		       int out, int preempted)
{
	struct ss_switch sw = { .ts = ts, .tid = tid, .cpu = cpu, .out = (uint8_t)out,
				.preempted = (uint8_t)preempted };
	if (sink->switch_rec)
		sink->switch_rec(sink->ctx, &sw);
	ss_smp.stats.switches++;
}

SS_INTERNAL void ss_swtp_record(const unsigned char *p, size_t n, const struct ss_sample_sink *sink)
{
	/* id, ip, pid/tid, time, cpu/res, u32 raw size, the record */
	if (n < 44 + REC_BYTES)
		return;
	uint64_t time;
	uint32_t cpu, raw, out_tid, in_tid, flags;
	memcpy(&time, p + 24, 8);
	memcpy(&cpu, p + 32, 4);
	memcpy(&raw, p + 40, 4);
	if (raw < REC_BYTES || raw > n - 44)
		return;
	memcpy(&out_tid, p + 44, 4);
	memcpy(&in_tid, p + 48, 4);
	memcpy(&flags, p + 52, 4);
	if (out_tid && ss_percpu_follows(out_tid, time)) {
		if ((flags & F_STACK) && raw >= STK_BYTES) {
			/* Before its switch-out, as the context-switches event's sample came. */
			uint64_t frames[SS_MAX_FRAMES];
			struct ss_sample smp = {
				.ts = time, .tid = out_tid, .cpu = cpu, .kind = SS_SAMPLE_OFFCPU,
				.nframes = ss_perf_cs_walk(p + 44 + REC_BYTES, p + 44 + STK_BYTES, frames),
				.frames = frames,
			};
			if (sink->sample)
				sink->sample(sink->ctx, &smp);
			ss_smp.stats.samples++;
		}
		put_switch(sink, time, out_tid, cpu, 1, (flags & F_PREEMPT) != 0);
	}
	if (in_tid && ss_percpu_follows(in_tid, time))
		put_switch(sink, time, in_tid, cpu, 0, 0);
}

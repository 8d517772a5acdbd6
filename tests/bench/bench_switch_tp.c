/*
 * bench_switch_tp.c - the floor of a sched_switch tracepoint as the source of
 * switches and off-CPU stacks (issue 17), against the events the sampler opens
 * today, in CPU per switch.
 *
 * bench_sampling's (f) futex pair: two threads of this process pinned to CPU 0
 * hand a futex back and forth, each hand-over a switch between them; the
 * process's CPU (user + system, the kernel's work at each switch included, the
 * drain of the rings too) divided by the switches. Configurations rotated round
 * by round (A B C, B C A, ...), medians:
 *
 *   none;
 *   per thread: sampler_perf.c's events on each player (pid = tid), the
 *     context-switches event's program dropping every sample (parked);
 *   inherited: today's default for the process itself (sampler_percpu.c): per
 *     CPU, pid = this process, inherited: cpu-clock with call chains, switch
 *     records, a context-switches event (period 1, regs + 1 KiB of stack) whose
 *     BPF program drops every sample (a parked worker under the in-poll
 *     filter), or keeps this process's (a worker inside a poll);
 *   wide: today's STALLSCOPE_SAMPLER=cpu: the same per CPU for every process
 *     (pid -1), CPU-wide switch records, the pid filter on cpu-clock, the
 *     context-switches event dropping (parked) or keeping this process's;
 *   tp: wide cpu-clock with the pid filter and no switch records, plus
 *     sched:sched_switch per CPU for every process with a BPF program
 *     (BPF_PROG_TYPE_TRACEPOINT): returning 0 always (the bare tracepoint);
 *     keeping switches out of this process (tgid) or into a thread of a map
 *     (next_pid's cell), TID|TIME|CPU|RAW; the same with regs + 1 KiB of
 *     stack on every kept switch (the kernel runs every program attached to
 *     sched_switch for every perf event on it and ANDs their results, so a
 *     second event with another filter, stacks only inside polls, cannot be
 *     had); the same RAW event beside today's wide context-switches event
 *     dropping every stack;
 *   tp+output: the tracepoint's program returns 0 and writes records of its
 *     own (bpf_perf_event_output into a BPF_OUTPUT event per CPU): switches
 *     of ours as 32 bytes; + the user call chain (bpf_get_stack) at switch-outs
 *     of ours; and with both players' cells saying parked, where the program
 *     drops the switches of parked threads (what the hooks already tell).
 *
 * The tracepoint's id comes from tracefs (/sys/kernel/tracing or
 * /sys/kernel/debug/tracing); where neither is mounted, a child in a mount
 * namespace of its own mounts tracefs there and reads it (nothing is mounted
 * for anyone else). Needs root (CAP_PERFMON + CAP_BPF); prints SKIP otherwise.
 *
 * Usage: bench_switch_tp [ROUNDS [TRIPS]] (5, 20000). Figures only: exits 0
 * whatever they are (1 when something fails to run).
 */
#include <asm/perf_regs.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/futex.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"

#define MAX_CPUS 64
#define CELLS 1024u /* the map's u32 cells, indexed by tid & (CELLS - 1) */
#define CELL_FOLLOWED 1
#define CELL_PARKED 2   /* a followed thread the hooks say is parked */

/* sched_switch's raw record (its tracefs format on 6.x): ctx of the program. */
#define TP_PREV_PID 24
#define TP_NEXT_PID 56

enum conf {
	C_NONE,
	C_THREAD_DROP,
	C_INH_DROP,
	C_INH_KEEP,
	C_WIDE_DROP,
	C_WIDE_KEEP,
	C_CLOCK_ONLY,
	C_TP_ZERO,
	C_TP_OURS,
	C_TP_OURS_STK,
	C_OUT_SWITCH,
	C_OUT_STACK,
	C_TP_CS_DROP,
	C_OUT_PARKED,
	NCONF
};

static const char *names[NCONF] = {
	"no events",
	"per thread (SAMPLER=thread), stacks dropped",
	"inherited (today's default), stacks dropped",
	"inherited (today's default), stacks kept",
	"wide (SAMPLER=cpu), stacks dropped",
	"wide (SAMPLER=cpu), stacks kept",
	"wide cpu-clock alone (pid filter)",
	"tp: sched_switch, program returns 0",
	"tp: sched_switch keeping ours (RAW)",
	"tp: keeping ours, RAW + regs + 1 KiB stack",
	"tp+output: ours as 32-byte records",
	"tp+output: + user stack at our switch-outs",
	"tp: ours (RAW) + wide cs event, stacks dropped",
	"tp+output: parked threads' switches dropped",
};

/* ---- BPF, hand-assembled as sampler_bpf.c does ---- */

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

static int bpf_load(enum bpf_prog_type type, const struct bpf_insn *p, int n)
{
	static char log[8192];
	union bpf_attr a;
	memset(&a, 0, sizeof a);
	a.prog_type = type;
	a.insns = (uint64_t)(uintptr_t)p;
	a.insn_cnt = (uint32_t)n;
	a.license = (uint64_t)(uintptr_t)"GPL";
	a.log_buf = (uint64_t)(uintptr_t)log;
	a.log_size = sizeof log;
	a.log_level = 1;
	int fd = (int)syscall(SYS_bpf, BPF_PROG_LOAD, &a, sizeof a);
	if (fd < 0)
		fprintf(stderr, "bench_switch_tp: BPF_PROG_LOAD: %s\n%s\n", strerror(errno), log);
	return fd;
}

#define MOV_K(d, k) insn(BPF_ALU64 | BPF_MOV | BPF_K, d, 0, 0, k)
#define EXIT() insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)

/* r0 = 0; exit */
static int prog_zero(enum bpf_prog_type type)
{
	struct bpf_insn p[] = { MOV_K(0, 0), EXIT() };
	return bpf_load(type, p, 2);
}

/* Keeps the running task's samples when its tgid is pid (the initial pid
 * namespace's numbers: this bench runs there). */
static int prog_tgid(enum bpf_prog_type type, uint32_t pid)
{
	struct bpf_insn p[] = {
		insn(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_get_current_pid_tgid),
		insn(BPF_ALU64 | BPF_RSH | BPF_K, 0, 0, 0, 32),
		insn(BPF_JMP | BPF_JNE | BPF_K, 0, 0, 2, (int32_t)pid),
		MOV_K(0, 1), EXIT(),
		MOV_K(0, 0), EXIT(),
	};
	return bpf_load(type, p, (int)(sizeof p / sizeof p[0]));
}

/* sched_switch: keeps a switch out of a thread of pid (the running task is
 * prev), or into a thread whose cell (next_pid & (CELLS - 1)) is non-zero. */
static int prog_switch(uint32_t pid, int map_fd)
{
	struct bpf_insn p[] = {
		insn(BPF_ALU64 | BPF_MOV | BPF_X, 6, 1, 0, 0), /* r6 = ctx */
		insn(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_get_current_pid_tgid),
		insn(BPF_ALU64 | BPF_RSH | BPF_K, 0, 0, 0, 32),
		insn(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 10, (int32_t)pid), /* -> keep */
		insn(BPF_LDX | BPF_MEM | BPF_W, 1, 6, TP_NEXT_PID, 0),
		insn(BPF_ALU64 | BPF_AND | BPF_K, 1, 0, 0, (int32_t)(CELLS - 1)),
		insn(BPF_ALU64 | BPF_LSH | BPF_K, 1, 0, 0, 2),
		insn(BPF_LD | BPF_DW | BPF_IMM, 2, BPF_PSEUDO_MAP_VALUE, 0, map_fd),
		insn(0, 0, 0, 0, 0),
		insn(BPF_ALU64 | BPF_ADD | BPF_X, 2, 1, 0, 0),
		insn(BPF_LDX | BPF_MEM | BPF_W, 0, 2, 0, 0),
		insn(BPF_JMP | BPF_JNE | BPF_K, 0, 0, 2, 0), /* -> keep */
		MOV_K(0, 0), EXIT(),
		MOV_K(0, 1), EXIT(),
	};
	return bpf_load(BPF_PROG_TYPE_TRACEPOINT, p, (int)(sizeof p / sizeof p[0]));
}

static long ncpu;

/* The per-CPU BPF_OUTPUT events (a BPF_MAP_TYPE_PERF_EVENT_ARRAY by CPU) and
 * a per-CPU scratch element the program builds its record in. */
static int out_map = -1, scratch_map = -1;

#define OUT_HEAD 32         /* u64 time; u32 prev_tid, next_tid; u64 prev_state; u32 out, nr */
#define OUT_STACK 1016      /* 127 frames: perf_event_max_stack */

/* r0 = the cell of the tid at ctx (r6) + field: cells[tid & (CELLS - 1)]. */
static int load_cell(struct bpf_insn *p, int n, int16_t field, int cells_fd)
{
	p[n++] = insn(BPF_LDX | BPF_MEM | BPF_W, 1, 6, field, 0);
	p[n++] = insn(BPF_ALU64 | BPF_AND | BPF_K, 1, 0, 0, (int32_t)(CELLS - 1));
	p[n++] = insn(BPF_ALU64 | BPF_LSH | BPF_K, 1, 0, 0, 2);
	p[n++] = insn(BPF_LD | BPF_DW | BPF_IMM, 2, BPF_PSEUDO_MAP_VALUE, 0, cells_fd);
	p[n++] = insn(0, 0, 0, 0, 0);
	p[n++] = insn(BPF_ALU64 | BPF_ADD | BPF_X, 2, 1, 0, 0);
	p[n++] = insn(BPF_LDX | BPF_MEM | BPF_W, 0, 2, 0, 0);
	return n;
}

/* sched_switch, returning 0 always (the tracepoint event's own samples are not
 * wanted): for a switch out of a thread of pid that is not parked (its cell)
 * or into a followed thread (cell FOLLOWED, not PARKED), writes a 32-byte
 * record by bpf_perf_event_output;
 * with stacks, a switch out of ours also carries the user call chain
 * (bpf_get_stack, frame pointers, as PERF_SAMPLE_CALLCHAIN). */
static int prog_output(uint32_t pid, int cells_fd, int stacks)
{
	struct bpf_insn p[64];
	int n = 0;
	p[n++] = insn(BPF_ALU64 | BPF_MOV | BPF_X, 6, 1, 0, 0); /* r6 = ctx */
	p[n++] = insn(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_get_current_pid_tgid);
	p[n++] = insn(BPF_ALU64 | BPF_RSH | BPF_K, 0, 0, 0, 32);
	p[n++] = MOV_K(8, 1); /* r8 = 1: out of ours */
	int j_into = n;
	p[n++] = insn(BPF_JMP | BPF_JNE | BPF_K, 0, 0, 0, (int32_t)pid);
	/* out of ours: kept unless the thread is parked */
	n = load_cell(p, n, TP_PREV_PID, cells_fd);
	int j_ours = n;
	p[n++] = insn(BPF_JMP | BPF_JNE | BPF_K, 0, 0, 0, CELL_PARKED);
	p[j_into].off = (int16_t)(n - j_into - 1);
	/* into a followed thread that is not parked */
	p[n++] = MOV_K(8, 0);
	n = load_cell(p, n, TP_NEXT_PID, cells_fd);
	int j_drop1 = n;
	p[n++] = insn(BPF_JMP | BPF_JNE | BPF_K, 0, 0, 0, CELL_FOLLOWED);
	int emit = n;
	p[j_ours].off = (int16_t)(emit - j_ours - 1);
	/* r7 = the scratch element: key 0 at fp - 4 */
	p[n++] = insn(BPF_ST | BPF_MEM | BPF_W, 10, 0, -4, 0);
	p[n++] = insn(BPF_LD | BPF_DW | BPF_IMM, 1, BPF_PSEUDO_MAP_FD, 0, scratch_map);
	p[n++] = insn(0, 0, 0, 0, 0);
	p[n++] = insn(BPF_ALU64 | BPF_MOV | BPF_X, 2, 10, 0, 0);
	p[n++] = insn(BPF_ALU64 | BPF_ADD | BPF_K, 2, 0, 0, -4);
	p[n++] = insn(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_map_lookup_elem);
	int j_drop2 = n;
	p[n++] = insn(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 0, 0);
	p[n++] = insn(BPF_ALU64 | BPF_MOV | BPF_X, 7, 0, 0, 0);
	p[n++] = insn(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_ktime_get_ns);
	p[n++] = insn(BPF_STX | BPF_MEM | BPF_DW, 7, 0, 0, 0);
	p[n++] = insn(BPF_LDX | BPF_MEM | BPF_W, 1, 6, TP_PREV_PID, 0);
	p[n++] = insn(BPF_STX | BPF_MEM | BPF_W, 7, 1, 8, 0);
	p[n++] = insn(BPF_LDX | BPF_MEM | BPF_W, 1, 6, TP_NEXT_PID, 0);
	p[n++] = insn(BPF_STX | BPF_MEM | BPF_W, 7, 1, 12, 0);
	p[n++] = insn(BPF_LDX | BPF_MEM | BPF_DW, 1, 6, 32, 0); /* prev_state */
	p[n++] = insn(BPF_STX | BPF_MEM | BPF_DW, 7, 1, 16, 0);
	p[n++] = insn(BPF_STX | BPF_MEM | BPF_W, 7, 8, 24, 0);
	p[n++] = insn(BPF_ST | BPF_MEM | BPF_W, 7, 0, 28, 0);
	p[n++] = MOV_K(9, OUT_HEAD); /* r9 = bytes to send */
	int j_send = -1;
	if (stacks) {
		j_send = n;
		p[n++] = insn(BPF_JMP | BPF_JEQ | BPF_K, 8, 0, 0, 0); /* into ours: no stack */
		p[n++] = insn(BPF_ALU64 | BPF_MOV | BPF_X, 1, 6, 0, 0);
		p[n++] = insn(BPF_ALU64 | BPF_MOV | BPF_X, 2, 7, 0, 0);
		p[n++] = insn(BPF_ALU64 | BPF_ADD | BPF_K, 2, 0, 0, OUT_HEAD);
		p[n++] = MOV_K(3, OUT_STACK);
		p[n++] = MOV_K(4, 1 << 8); /* BPF_F_USER_STACK */
		p[n++] = insn(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_get_stack);
		p[n++] = insn(BPF_JMP | BPF_JSLT | BPF_K, 0, 0, 3, 0);
		p[n++] = insn(BPF_JMP | BPF_JGT | BPF_K, 0, 0, 2, OUT_STACK);
		p[n++] = insn(BPF_STX | BPF_MEM | BPF_W, 7, 0, 28, 0);
		p[n++] = insn(BPF_ALU64 | BPF_ADD | BPF_X, 9, 0, 0, 0);
	}
	int send = n;
	if (j_send >= 0)
		p[j_send].off = (int16_t)(send - j_send - 1);
	p[n++] = insn(BPF_ALU64 | BPF_MOV | BPF_X, 1, 6, 0, 0);
	p[n++] = insn(BPF_LD | BPF_DW | BPF_IMM, 2, BPF_PSEUDO_MAP_FD, 0, out_map);
	p[n++] = insn(0, 0, 0, 0, 0);
	p[n++] = insn(BPF_LD | BPF_DW | BPF_IMM, 3, 0, 0, -1); /* BPF_F_CURRENT_CPU */
	p[n++] = insn(0, 0, 0, 0, 0);
	p[n++] = insn(BPF_ALU64 | BPF_MOV | BPF_X, 4, 7, 0, 0);
	p[n++] = insn(BPF_ALU64 | BPF_MOV | BPF_X, 5, 9, 0, 0);
	p[n++] = insn(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_perf_event_output);
	int drop = n;
	p[j_drop1].off = (int16_t)(drop - j_drop1 - 1);
	p[j_drop2].off = (int16_t)(drop - j_drop2 - 1);
	p[n++] = MOV_K(0, 0);
	p[n++] = EXIT();
	return bpf_load(BPF_PROG_TYPE_TRACEPOINT, p, n);
}

static int maps_out_open(void)
{
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
	a.value_size = OUT_HEAD + OUT_STACK;
	a.max_entries = 1;
	scratch_map = (int)syscall(SYS_bpf, BPF_MAP_CREATE, &a, sizeof a);
	return out_map < 0 || scratch_map < 0 ? -1 : 0;
}

static int map_put(int map, uint32_t key, uint32_t value)
{
	union bpf_attr a;
	memset(&a, 0, sizeof a);
	a.map_fd = (uint32_t)map;
	a.key = (uint64_t)(uintptr_t)&key;
	a.value = (uint64_t)(uintptr_t)&value;
	return (int)syscall(SYS_bpf, BPF_MAP_UPDATE_ELEM, &a, sizeof a);
}

static int map_fd = -1;
static _Atomic uint32_t *cells;

static int map_open(void)
{
	union bpf_attr a;
	memset(&a, 0, sizeof a);
	a.map_type = BPF_MAP_TYPE_ARRAY;
	a.key_size = 4;
	a.value_size = CELLS * 4;
	a.max_entries = 1;
	a.map_flags = BPF_F_MMAPABLE;
	map_fd = (int)syscall(SYS_bpf, BPF_MAP_CREATE, &a, sizeof a);
	if (map_fd < 0)
		return -1;
	void *m = mmap(NULL, CELLS * 4, PROT_READ | PROT_WRITE, MAP_SHARED, map_fd, 0);
	if (m == MAP_FAILED)
		return -1;
	cells = m;
	return 0;
}

/* ---- the tracepoint's id ---- */

static long read_id(const char *root)
{
	char path[256], buf[32];
	snprintf(path, sizeof path, "%s/events/sched/sched_switch/id", root);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	return strtol(buf, NULL, 10);
}

static long tp_id(void)
{
	long id = read_id("/sys/kernel/tracing");
	if (id < 0)
		id = read_id("/sys/kernel/debug/tracing");
	if (id >= 0)
		return id;
	int pfd[2];
	if (pipe(pfd) != 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		long v = -1;
		if (unshare(CLONE_NEWNS) == 0 && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0 &&
		    mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, NULL) == 0)
			v = read_id("/sys/kernel/tracing");
		if (write(pfd[1], &v, sizeof v) != sizeof v)
			_exit(1);
		_exit(0);
	}
	close(pfd[1]);
	if (pid < 0 || read(pfd[0], &id, sizeof id) != sizeof id)
		id = -1;
	close(pfd[0]);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	return id;
}

/* ---- the events ---- */

static size_t ring_len;
static long tpid;
static int p_zero_pe, p_tgid_pe, p_zero_tp, p_switch_tp, p_out, p_out_stk;

static void attr_base(struct perf_event_attr *a, uint32_t type, uint64_t config)
{
	memset(a, 0, sizeof *a);
	a->size = sizeof *a;
	a->type = type;
	a->config = config;
	a->sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	a->disabled = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->sample_id_all = 1;
	a->exclude_hv = 1;
}

static void stack_copy(struct perf_event_attr *a)
{
	a->sample_type |= PERF_SAMPLE_IP | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
	a->sample_regs_user = (1ull << PERF_REG_X86_BP) | (1ull << PERF_REG_X86_SP) |
			      (1ull << PERF_REG_X86_IP);
	a->sample_stack_user = 1024;
}

static pthread_barrier_t ready, go;
static uint32_t tids[2]; /* the players' */

struct evs {
	int fds[8 * MAX_CPUS], nfds;
	uint64_t out_ids[MAX_CPUS]; /* the BPF_OUTPUT events' sample ids */
	int nout;
	void *rings[MAX_CPUS];
	int nrings;
};

static int ev_open(struct evs *e, struct perf_event_attr *a, pid_t pid, int cpu, int ring_of,
		   int prog)
{
	int fd = (int)syscall(SYS_perf_event_open, a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "bench_switch_tp: perf_event_open: %s\n", strerror(errno));
		return -1;
	}
	e->fds[e->nfds++] = fd;
	if (ring_of < 0) {
		void *r = mmap(NULL, ring_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (r == MAP_FAILED)
			return -1;
		e->rings[e->nrings++] = r;
	} else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, ring_of) != 0) {
		fprintf(stderr, "bench_switch_tp: SET_OUTPUT: %s\n", strerror(errno));
		return -1;
	}
	if (prog >= 0 && ioctl(fd, PERF_EVENT_IOC_SET_BPF, prog) != 0) {
		fprintf(stderr, "bench_switch_tp: SET_BPF: %s\n", strerror(errno));
		return -1;
	}
	return fd;
}

static int open_conf(int conf, struct evs *e)
{
	memset(e, 0, sizeof *e);
	if (conf == C_NONE || conf == C_THREAD_DROP)
		return 0; /* the players' own events are opened once they run */
	int inh = conf == C_INH_DROP || conf == C_INH_KEEP;
	int wide = conf == C_WIDE_DROP || conf == C_WIDE_KEEP;
	int keep = conf == C_INH_KEEP || conf == C_WIDE_KEEP;
	int out = conf == C_OUT_SWITCH || conf == C_OUT_STACK || conf == C_OUT_PARKED;
	pid_t pid = inh ? 0 : -1;
	for (int c = 0; c < ncpu; c++) {
		struct perf_event_attr a;
		attr_base(&a, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK);
		a.sample_period = 1001001;
		a.sample_type |= PERF_SAMPLE_IP | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_CPU;
		a.inherit = a.inherit_thread = (unsigned)inh;
		a.context_switch = (unsigned)(inh || wide);
		int ring = ev_open(e, &a, pid, c, -1, inh ? -1 : p_tgid_pe);
		if (ring < 0)
			return -1;
		if (conf == C_CLOCK_ONLY)
			continue;
		if (inh || wide || conf == C_TP_CS_DROP) {
			attr_base(&a, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES);
			a.sample_period = 1;
			a.inherit = a.inherit_thread = (unsigned)inh;
			stack_copy(&a);
			if (ev_open(e, &a, pid, c, ring, keep ? p_tgid_pe : p_zero_pe) < 0)
				return -1;
			if (conf != C_TP_CS_DROP)
				continue;
		}
		if (out) {
			/* The program's records: a BPF_OUTPUT event per CPU into the
			 * CPU's ring, its fd in the array at the CPU's index. */
			attr_base(&a, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_BPF_OUTPUT);
			a.sample_period = 1;
			a.wakeup_events = 1u << 30;
			a.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_RAW;
			int ofd = ev_open(e, &a, -1, c, ring, -1);
			if (ofd < 0 || map_put(out_map, (uint32_t)c, (uint32_t)ofd) != 0 ||
			    ioctl(ofd, PERF_EVENT_IOC_ID, &e->out_ids[e->nout++]) != 0)
				return -1;
		}
		/* One program per tracepoint event, and the kernel runs every
		 * program attached to sched_switch for every event on it: the
		 * first CPU's event carries it. */
		attr_base(&a, PERF_TYPE_TRACEPOINT, (uint64_t)tpid);
		a.sample_period = out ? 1ull << 62 : 1;
		a.sample_type |= PERF_SAMPLE_IP | PERF_SAMPLE_CPU | PERF_SAMPLE_RAW;
		if (conf == C_TP_OURS_STK)
			stack_copy(&a);
		int prog = c ? -1 : conf == C_TP_ZERO ? p_zero_tp : conf == C_OUT_SWITCH || conf == C_OUT_PARKED ? p_out :
			   conf == C_OUT_STACK ? p_out_stk : p_switch_tp;
		if (ev_open(e, &a, -1, c, ring, prog) < 0)
			return -1;
	}
	return 0;
}

/* sampler_perf.c's events of one thread (pid = tid, cpu = -1), for each
 * player: cpu-clock with call chains and switch records, a context-switches
 * event writing into its ring whose program drops every sample (parked). */
static int open_threads(struct evs *e)
{
	for (int k = 0; k < 2; k++) {
		struct perf_event_attr a;
		attr_base(&a, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK);
		a.sample_period = 1001001;
		a.sample_type |= PERF_SAMPLE_IP | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_CPU;
		a.context_switch = 1;
		int ring = ev_open(e, &a, (pid_t)tids[k], -1, -1, -1);
		if (ring < 0)
			return -1;
		attr_base(&a, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES);
		a.sample_period = 1;
		stack_copy(&a);
		if (ev_open(e, &a, (pid_t)tids[k], -1, ring, p_zero_pe) < 0)
			return -1;
	}
	for (int k = 0; k < e->nfds; k++)
		ioctl(e->fds[k], PERF_EVENT_IOC_ENABLE, 0);
	return 0;
}

static void close_conf(struct evs *e)
{
	for (int i = 0; i < e->nrings; i++)
		munmap(e->rings[i], ring_len);
	for (int i = 0; i < e->nfds; i++)
		close(e->fds[i]);
}

/* Frees the rings' space, counting the samples (recs[0]) and switch records
 * (recs[1]) of this process's threads and those of others (recs[2]); every
 * sample here has IDENTIFIER and IP before its pid, but the BPF program's
 * records (only ever ours). */
static void drain(struct evs *e, uint64_t recs[3])
{
	long pg = sysconf(_SC_PAGESIZE);
	uint64_t size = ring_len - (uint64_t)pg;
	uint32_t me = (uint32_t)getpid();
	for (int c = 0; c < e->nrings; c++) {
		struct perf_event_mmap_page *mp = e->rings[c];
		const unsigned char *data = (const unsigned char *)e->rings[c] + pg;
		uint64_t head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE), tail = mp->data_tail;
		while (tail < head) {
			struct perf_event_header h;
			uint64_t off = tail % size;
			memcpy(&h, data + off, sizeof h);
			if (h.size < sizeof h)
				break;
			uint32_t pid = 0;
			uint64_t id = 0;
			if (h.type == PERF_RECORD_SAMPLE)
				memcpy(&id, data + (off + sizeof h) % size, 8);
			int is_out = 0;
			for (int k = 0; k < e->nout; k++)
				is_out |= e->out_ids[k] == id;
			if (is_out) {
				/* The program's record: u32 size, then prev_tid at 8. */
				memcpy(&pid, data + (off + sizeof h + 8 + 4 + 8) % size, 4);
				recs[0]++;
				tail += h.size;
				continue;
			}
			uint64_t at = h.type == PERF_RECORD_SAMPLE ? 16 :
				      h.type == PERF_RECORD_SWITCH_CPU_WIDE ? 8 :
				      h.type == PERF_RECORD_SWITCH ? 0 : UINT64_MAX;
			if (at != UINT64_MAX && at)
				memcpy(&pid, data + (off + sizeof h + at) % size, 4);
			if (at == 0 || pid == me)
				recs[h.type != PERF_RECORD_SAMPLE]++;
			else if (at != UINT64_MAX)
				recs[2]++;
			tail += h.size;
		}
		__atomic_store_n(&mp->data_tail, head, __ATOMIC_RELEASE);
	}
}

/* ---- the futex pair ---- */

static _Atomic int turn;
static int trips;
static uint32_t cell_value; /* what the players' cells say while they play */

static void *player(void *arg)
{
	int me = (int)(intptr_t)arg;
	cpu_set_t cs;
	CPU_ZERO(&cs);
	CPU_SET(0, &cs);
	pthread_setaffinity_np(pthread_self(), sizeof cs, &cs);
	tids[me] = (uint32_t)gettid();
	atomic_store(&cells[tids[me] & (CELLS - 1)], cell_value);
	pthread_barrier_wait(&ready);
	pthread_barrier_wait(&go);
	for (int i = 0; i < trips; i++) {
		while (atomic_load(&turn) != me)
			syscall(SYS_futex, &turn, FUTEX_WAIT_PRIVATE, !me, NULL, NULL, 0);
		atomic_store(&turn, !me);
		syscall(SYS_futex, &turn, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	}
	atomic_store(&cells[gettid() & (CELLS - 1)], 0);
	return NULL;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 5;
	trips = argc > 2 ? atoi(argv[2]) : 20000;
	if (rounds < 1 || rounds > 50 || trips < 100) {
		fprintf(stderr, "usage: bench_switch_tp [ROUNDS (1..50) [TRIPS (>= 100)]]\n");
		return 1;
	}
	ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	if (ncpu > MAX_CPUS)
		ncpu = MAX_CPUS;
	ring_len = (size_t)(1024 + 1) * (size_t)sysconf(_SC_PAGESIZE);
	tpid = tp_id();
	if (tpid < 0) {
		printf("SKIP: no sched:sched_switch id (tracefs not mounted and not mountable)\n");
		return 0;
	}
	if (map_open() != 0) {
		printf("SKIP: BPF array map refused: %s\n", strerror(errno));
		return 0;
	}
	uint32_t me = (uint32_t)getpid();
	p_zero_pe = prog_zero(BPF_PROG_TYPE_PERF_EVENT);
	p_tgid_pe = prog_tgid(BPF_PROG_TYPE_PERF_EVENT, me);
	p_zero_tp = prog_zero(BPF_PROG_TYPE_TRACEPOINT);
	p_switch_tp = prog_switch(me, map_fd);
	if (maps_out_open() != 0) {
		printf("SKIP: BPF perf-event-array or per-CPU map refused: %s\n", strerror(errno));
		return 0;
	}
	p_out = prog_output(me, map_fd, 0);
	p_out_stk = prog_output(me, map_fd, 1);
	if (p_zero_pe < 0 || p_tgid_pe < 0 || p_zero_tp < 0 || p_switch_tp < 0 || p_out < 0 ||
	    p_out_stk < 0) {
		printf("SKIP: BPF programs refused\n");
		return 0;
	}
	double us[NCONF][50], mine[NCONF][50], others[NCONF][50];
	char load[128] = "?";
	FILE *lf = fopen("/proc/loadavg", "r");
	if (lf) {
		if (fgets(load, sizeof load, lf))
			load[strcspn(load, "\n")] = 0;
		fclose(lf);
	}
	printf("bench_switch_tp: 2 threads on CPU 0 hand a futex back and forth %d times, the "
	       "process's CPU per switch, %d rounds, order rotated, sched_switch id %ld "
	       "(load average at start: %s)\n", trips, rounds, tpid, load);
	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < NCONF; i++) {
			int conf = (i + r) % NCONF;
			struct evs e;
			if (open_conf(conf, &e) != 0) {
				printf("  FAILED to open %s\n", names[conf]);
				close_conf(&e);
				return 1;
			}
			for (int k = 0; k < e.nfds; k++)
				ioctl(e.fds[k], PERF_EVENT_IOC_ENABLE, 0);
			uint64_t recs[3] = { 0, 0, 0 };
			atomic_store(&turn, 0);
			pthread_t th[2];
			uint64_t c0 = ns_of_clock(CLOCK_PROCESS_CPUTIME_ID), w0 = now_ns();
			cell_value = conf == C_OUT_PARKED ? CELL_PARKED : CELL_FOLLOWED;
			pthread_barrier_init(&ready, NULL, 3);
			pthread_barrier_init(&go, NULL, 3);
			for (int k = 0; k < 2; k++)
				pthread_create(&th[k], NULL, player, (void *)(intptr_t)k);
			pthread_barrier_wait(&ready);
			if (conf == C_THREAD_DROP && open_threads(&e) != 0) {
				printf("  FAILED to open %s\n", names[conf]);
				return 1;
			}
			pthread_barrier_wait(&go);
			for (int done = 0; !done;) {
				struct timespec ts = { 0, 10000000L };
				nanosleep(&ts, NULL);
				drain(&e, recs);
				done = pthread_tryjoin_np(th[0], NULL) == 0;
			}
			pthread_join(th[1], NULL);
			drain(&e, recs);
			pthread_barrier_destroy(&ready);
			pthread_barrier_destroy(&go);
			uint64_t c1 = ns_of_clock(CLOCK_PROCESS_CPUTIME_ID);
			double wall = (double)(now_ns() - w0) / 1e9;
			close_conf(&e);
			us[conf][r] = (double)(c1 - c0) / 1e3 / (2.0 * trips);
			mine[conf][r] = (double)(recs[0] + recs[1]) / (2.0 * trips);
			others[conf][r] = (double)recs[2] / wall;
		}
	}
	double base = median(us[0], rounds);
	double inh = median(us[C_INH_DROP], rounds) - base;
	for (int c = 0; c < NCONF; c++) {
		double m = median(us[c], rounds);
		printf("  %-46s %6.2f us CPU per switch (%+5.2f", names[c], m, m - base);
		if (c && inh > 0)
			printf(", %.2f of inherited's", (m - base) / inh);
		printf("), our records %.2f a switch, others' %.0f a second\n",
		       median(mine[c], rounds), median(others[c], rounds));
	}
	return 0;
}

/*
 * sampler_bpf.c - filters in the kernel for the sampler's perf events, BPF
 * programs run at each overflow before the kernel builds the sample (call chain,
 * registers, stack copy), assembled here, no libbpf. Two of them:
 *
 *   pid filter, for the per-CPU events of every process (sampler_percpu.c's
 *   cpu_wide): keeps only this process's samples. Without it another process's
 *   cpu-clock sample still costs its call chain (and a stack copy at each of its
 *   switch-outs with off-CPU stacks on), ring space, and the writer's time to
 *   read and drop it; with it, what others leave in our rings is their switch
 *   records (side-band records, which no program sees).
 *
 *   off-CPU filter, for every context-switches event (switch-out samples): the
 *   pid filter, then keeps a switch-out only where the thread is inside a poll
 *   by the in-poll cells the hooks write (sampler_inpoll.c; where the
 *   sched_switch program of sampler_swtp.c takes the stacks, no context-switches
 *   event is opened and this filter is not loaded): a parked worker's
 *   switch-outs, most of a runtime's, say nothing its lane does not, and their
 *   1 KiB stack copies were a third of full recording's cost.
 *
 * Both read the tgid and tid of the running task as seen from this process's pid
 * namespace (bpf_get_ns_current_pid_tgid: a task of another namespace fails the
 * call and is dropped; in the initial namespace, bpf_get_current_pid_tgid,
 * without the lookup). Loading needs CAP_BPF or CAP_SYS_ADMIN (root); where it
 * is refused the events run unfiltered as before. Used by the writer thread
 * only, at open.
 */
#include "sampler-private.h"

#include <errno.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

SS_INTERNAL struct bpf_insn ss_bpf_insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm)
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

SS_INTERNAL int ss_bpf_load(uint32_t type, const struct bpf_insn *p, int n, char *why, size_t len)
{
	static char log[8192];
	union bpf_attr a;
	memset(&a, 0, sizeof a);
	a.prog_type = type;
	a.insns = (uint64_t)(uintptr_t)p;
	a.insn_cnt = (uint32_t)n;
	a.license = (uint64_t)(uintptr_t)"GPL";
	log[0] = 0;
	int fd = (int)syscall(SYS_bpf, BPF_PROG_LOAD, &a, sizeof a);
	if (fd < 0 && errno != EPERM && errno != EACCES) {
		/* Again with the verifier's log, for the status line. */
		a.log_buf = (uint64_t)(uintptr_t)log;
		a.log_size = sizeof log;
		a.log_level = 1;
		fd = (int)syscall(SYS_bpf, BPF_PROG_LOAD, &a, sizeof a);
	}
	if (fd >= 0)
		return fd;
	int e = errno;
	/* the verifier's last words say what it refused */
	size_t l = strlen(log);
	while (l && log[l - 1] == '\n')
		log[--l] = 0;
	const char *last = strrchr(log, '\n');
	snprintf(why, len, "bpf(PROG_LOAD%s): %s%s%s", type == BPF_PROG_TYPE_RAW_TRACEPOINT ?
		 ", raw tracepoint" : "", ss_errno_name(e), log[0] ? ": " : "", last ? last + 1 : log);
	return -e;
}

#define insn ss_bpf_insn

static int load(const struct bpf_insn *p, int n, char *why, size_t len)
{
	return ss_bpf_load(BPF_PROG_TYPE_PERF_EVENT, p, n, why, len);
}

/* The program's head, shared by both filters: r1..r4 set up and the call that
 * leaves { u32 pid (the thread), tgid } of the running task, as this pid
 * namespace numbers them, at fp - 8; then "if r0 != 0 goto drop", whose offset
 * the caller patches (*drop_at). Returns the count of instructions or -errno. */
static int head(struct bpf_insn *p, int *drop_at, char *why, size_t len)
{
	struct stat st;
	if (stat("/proc/self/ns/pid", &st) != 0) {
		int e = errno;
		snprintf(why, len, "/proc/self/ns/pid: %s", ss_errno_name(e));
		return -e;
	}
	uint64_t dev = (uint64_t)st.st_dev, ino = (uint64_t)st.st_ino;
	int n = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (ino == SS_PID_NS_INIT_INO) {
		/* The initial namespace (most programs): the plain helper, which skips
		 * the namespace lookup at every overflow. Its u64 (tgid << 32 | pid),
		 * stored little-endian, is the same { pid, tgid } at fp - 8. */
		p[n++] = insn(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_get_current_pid_tgid);
		p[n++] = insn(BPF_STX | BPF_MEM | BPF_DW, 10, 0, -8, 0);
		p[n++] = insn(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0);
		*drop_at = n;
		p[n++] = insn(BPF_JMP | BPF_JNE | BPF_K, 0, 0, 0, 0);
		return n;
	}
#endif
	/* r1 = dev, r2 = ino (64-bit immediates take two instructions each) */
	p[n++] = insn(BPF_LD | BPF_DW | BPF_IMM, 1, 0, 0, (int32_t)(uint32_t)dev);
	p[n++] = insn(0, 0, 0, 0, (int32_t)(uint32_t)(dev >> 32));
	p[n++] = insn(BPF_LD | BPF_DW | BPF_IMM, 2, 0, 0, (int32_t)(uint32_t)ino);
	p[n++] = insn(0, 0, 0, 0, (int32_t)(uint32_t)(ino >> 32));
	/* r3 = fp - 8 (a struct bpf_pidns_info { u32 pid, tgid; }), r4 = 8 */
	p[n++] = insn(BPF_ALU64 | BPF_MOV | BPF_X, 3, 10, 0, 0);
	p[n++] = insn(BPF_ALU64 | BPF_ADD | BPF_K, 3, 0, 0, -8);
	p[n++] = insn(BPF_ALU64 | BPF_MOV | BPF_K, 4, 0, 0, 8);
	p[n++] = insn(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_get_ns_current_pid_tgid);
	*drop_at = n;
	p[n++] = insn(BPF_JMP | BPF_JNE | BPF_K, 0, 0, 0, 0);
	return n;
}

SS_INTERNAL int ss_bpf_offcpu_filter(uint32_t pid, int map_fd, uint32_t cells, char *why,
				     size_t len)
{
	struct bpf_insn p[32];
	int drop_at, n = head(p, &drop_at, why, len);
	if (n < 0)
		return n;
	int to_drop[3], nd = 0, to_keep[2], nk = 0;
	to_drop[nd++] = drop_at;
	/* r0 = tgid; if r0 != pid goto drop */
	p[n++] = insn(BPF_LDX | BPF_MEM | BPF_W, 0, 10, -4, 0);
	to_drop[nd++] = n;
	p[n++] = insn(BPF_JMP | BPF_JNE | BPF_K, 0, 0, 0, (int32_t)pid);
	/* r1 = (tid & (cells - 1)) * 4 */
	p[n++] = insn(BPF_LDX | BPF_MEM | BPF_W, 1, 10, -8, 0);
	p[n++] = insn(BPF_ALU64 | BPF_AND | BPF_K, 1, 0, 0, (int32_t)(cells - 1));
	p[n++] = insn(BPF_ALU64 | BPF_LSH | BPF_K, 1, 0, 0, 2);
	/* r2 = &value[0] of the map's one element (BPF_PSEUDO_MAP_VALUE), += r1 */
	p[n++] = insn(BPF_LD | BPF_DW | BPF_IMM, 2, BPF_PSEUDO_MAP_VALUE, 0, map_fd);
	p[n++] = insn(0, 0, 0, 0, 0);
	p[n++] = insn(BPF_ALU64 | BPF_ADD | BPF_X, 2, 1, 0, 0);
	/* IN or ALL (r0 - IN < 2, unsigned: not NONE, OUT or PARKED), or a bucket
	 * shared by two followed threads: keep */
	_Static_assert(SS_INPOLL_ALL == SS_INPOLL_IN + 1, "IN and ALL are one range");
	p[n++] = insn(BPF_LDX | BPF_MEM | BPF_W, 0, 2, 0, 0);
	p[n++] = insn(BPF_ALU64 | BPF_SUB | BPF_K, 0, 0, 0, SS_INPOLL_IN);
	to_keep[nk++] = n;
	p[n++] = insn(BPF_JMP | BPF_JLT | BPF_K, 0, 0, 0, 2);
	p[n++] = insn(BPF_ALU64 | BPF_ADD | BPF_K, 2, 0, 0, (int32_t)(cells * 4));
	p[n++] = insn(BPF_LDX | BPF_MEM | BPF_W, 0, 2, 0, 0);
	to_keep[nk++] = n;
	p[n++] = insn(BPF_JMP | BPF_JNE | BPF_K, 0, 0, 0, 0);
	int drop = n;
	p[n++] = insn(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0);
	p[n++] = insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
	int keep = n;
	p[n++] = insn(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 1);
	p[n++] = insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
	for (int i = 0; i < nd; i++)
		p[to_drop[i]].off = (int16_t)(drop - to_drop[i] - 1);
	for (int i = 0; i < nk; i++)
		p[to_keep[i]].off = (int16_t)(keep - to_keep[i] - 1);
	return load(p, n, why, len);
}

SS_INTERNAL int ss_bpf_pid_filter(uint32_t pid, char *why, size_t len)
{
	struct bpf_insn p[16];
	int drop_at, n = head(p, &drop_at, why, len);
	if (n < 0)
		return n;
	/* r0 = *(u32 *)(fp - 4): the tgid; if r0 != pid goto drop */
	p[n++] = insn(BPF_LDX | BPF_MEM | BPF_W, 0, 10, -4, 0);
	p[n++] = insn(BPF_JMP | BPF_JNE | BPF_K, 0, 0, 2, (int32_t)pid);
	/* keep: r0 = 1; exit */
	p[n++] = insn(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 1);
	p[n++] = insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
	/* drop: r0 = 0; exit */
	int drop = n;
	p[n++] = insn(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0);
	p[n++] = insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
	p[drop_at].off = (int16_t)(drop - drop_at - 1);
	return load(p, n, why, len);
}

SS_INTERNAL int ss_bpf_attach(int perf_fd, int prog_fd)
{
	return ioctl(perf_fd, PERF_EVENT_IOC_SET_BPF, prog_fd) == 0 ? 0 : -errno;
}

SS_INTERNAL void ss_bpf_attach_offcpu(int perf_fd)
{
	if (ss_smp.inpoll_prog < 0)
		return;
	int r = ss_bpf_attach(perf_fd, ss_smp.inpoll_prog);
	if (r == 0) {
		ss_smp.inpoll_attached++;
	} else if (ss_smp.inpoll_refused++ == 0) {
		ss_sampler_note("off-CPU in-poll filter refused by a context-switches event "
				"(PERF_EVENT_IOC_SET_BPF: %s): its switch-outs all keep their stacks",
				ss_errno_name(-r));
	}
}

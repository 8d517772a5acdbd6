/*
 * sampler_bpf.c - a filter in the kernel for the per-CPU events of every process
 * (sampler_percpu.c's cpu_wide): a BPF program run at each overflow of those
 * events, before the kernel builds the sample, that keeps only this process's.
 * Without it another process's cpu-clock sample still costs its call chain (and a
 * stack copy at each of its switch-outs with off-CPU stacks on), ring space, and
 * the writer's time to read and drop it; with it, what others leave in our rings
 * is their switch records (side-band records, which no program sees).
 *
 * Fifteen instructions, assembled here, no libbpf: the tgid of the running task as
 * seen from this process's pid namespace (bpf_get_ns_current_pid_tgid: a task of
 * another namespace fails the call and is dropped too), compared with getpid().
 * Loading needs CAP_BPF or CAP_SYS_ADMIN (root, which the cpu_wide events need
 * anyway as a rule); where it is refused the events run unfiltered and the drain
 * still drops by pid. Used by the writer thread only, at open.
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

SS_INTERNAL int ss_bpf_pid_filter(uint32_t pid, char *why, size_t len)
{
	struct stat st;
	if (stat("/proc/self/ns/pid", &st) != 0) {
		int e = errno;
		snprintf(why, len, "/proc/self/ns/pid: %s", ss_errno_name(e));
		return -e;
	}
	uint64_t dev = (uint64_t)st.st_dev, ino = (uint64_t)st.st_ino;
	struct bpf_insn p[16];
	int n = 0;
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
	/* if r0 != 0 goto drop */
	p[n++] = insn(BPF_JMP | BPF_JNE | BPF_K, 0, 0, 4, 0);
	/* r0 = *(u32 *)(fp - 4): the tgid; if r0 != pid goto drop */
	p[n++] = insn(BPF_LDX | BPF_MEM | BPF_W, 0, 10, -4, 0);
	p[n++] = insn(BPF_JMP | BPF_JNE | BPF_K, 0, 0, 2, (int32_t)pid);
	/* keep: r0 = 1; exit */
	p[n++] = insn(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 1);
	p[n++] = insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
	/* drop: r0 = 0; exit */
	p[n++] = insn(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0);
	p[n++] = insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);

	static char log[4096];
	union bpf_attr a;
	memset(&a, 0, sizeof a);
	a.prog_type = BPF_PROG_TYPE_PERF_EVENT;
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
	{
		int e = errno;
		log[strcspn(log, "\n")] = 0;
		snprintf(why, len, "bpf(PROG_LOAD): %s%s%s", ss_errno_name(e), log[0] ? ": " : "", log);
		return -e;
	}
}

SS_INTERNAL int ss_bpf_attach(int perf_fd, int prog_fd)
{
	return ioctl(perf_fd, PERF_EVENT_IOC_SET_BPF, prog_fd) == 0 ? 0 : -errno;
}

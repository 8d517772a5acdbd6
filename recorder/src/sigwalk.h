/*
 * sigwalk.h - what every in-process stack capture shares: claiming a free
 * real-time signal without displacing a host's handler, pulling pc/sp/fp out of
 * an interrupted context, and a frame-pointer walk that cannot fault. Used by the
 * sampler's timer fallback (sampler_timer.c), the stall watchdog's captures of
 * running workers (stall_capture.c) and stallscope_task_pending() (task_dump.c).
 */
#ifndef STALLSCOPE_SIGWALK_H
#define STALLSCOPE_SIGWALK_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <ucontext.h>

#include "recorder-private.h"

/* One word of the stack, read where the bounds checks below allow it: through an
 * instruction the sanitizers do not see, because the walk is inlined into
 * instrumented callers (its no_sanitize attribute does not follow it there) and
 * a frame-pointer register of code built without frame pointers may point at a
 * redzone beside a local array. */
static inline uint64_t ss_stack_word(uint64_t addr)
{
	uint64_t v;
#if defined(__x86_64__)
	__asm__ volatile("movq (%1), %0" : "=r"(v) : "r"(addr) : "memory");
#elif defined(__aarch64__)
	__asm__ volatile("ldr %0, [%1]" : "=r"(v) : "r"(addr) : "memory");
#else
	v = *(const volatile uint64_t *)(uintptr_t)addr;
#endif
	return v;
}

/* Walks frame pointers: out[0] = pc, then one return address per frame, at most
 * max entries. Every load is from [max(lo, sp), hi), 8-aligned, and frame
 * addresses must strictly increase, so a garbage frame pointer ends the walk
 * instead of being dereferenced. lo = 0 (bounds unknown) or sp outside [lo, hi)
 * (an alternate stack) gives the pc alone. Async-signal-safe. */
/* Inline: in stallscope_task_pending() a call would be a good part of the
 * hook's cost. Not instrumented: a frame slot may sit next to an ASan redzone, and the bounds
 * checks below are what make these loads safe. */
__attribute__((no_sanitize("address", "undefined"), always_inline))
static inline uint32_t ss_fp_walk(uint64_t pc, uint64_t sp, uint64_t fp, uint64_t lo,
				  uint64_t hi, uint64_t *out, uint32_t max)
{
	uint32_t n = 0;
	if (!max)
		return 0;
	out[n++] = pc;
	if (!lo || sp < lo || sp >= hi)
		return n;
	lo = sp;
	while (n < max) {
		if ((fp & 7) || fp < lo || fp > hi || hi - fp < 16)
			break;
		uint64_t next = ss_stack_word(fp), ret = ss_stack_word(fp + 8);
		if (ret < 4096)
			break; /* not a code address: the end of the chain */
		out[n++] = ret;
		if (next <= fp)
			break;
		lo = fp + 16;
		fp = next;
	}
	return n;
}

/* pc, sp and frame pointer of an interrupted context; all 0 on an architecture we
 * do not know. */
static inline void ss_uc_regs(const ucontext_t *uc, uint64_t *pc, uint64_t *sp, uint64_t *fp)
{
#if defined(__x86_64__)
	*pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	*sp = (uint64_t)uc->uc_mcontext.gregs[REG_RSP];
	*fp = (uint64_t)uc->uc_mcontext.gregs[REG_RBP];
#elif defined(__aarch64__)
	*pc = uc->uc_mcontext.pc;
	*sp = uc->uc_mcontext.sp;
	*fp = uc->uc_mcontext.regs[29];
#else
	(void)uc;
	*pc = *sp = *fp = 0;
#endif
}

/* Installs handler (SA_SIGINFO | SA_RESTART | SA_ONSTACK, every signal masked
 * while it runs) on the highest real-time signal whose disposition is still
 * SIG_DFL, so a host's handler is never replaced. Returns the signal, or 0 with
 * why filled; *old receives the disposition to put back. */
SS_INTERNAL int ss_rtsig_claim(void (*handler)(int, siginfo_t *, void *), struct sigaction *old,
			       char *why, size_t len);
/* Gives the signal back: SIG_IGN first, which discards instances still pending in
 * any thread, and only then the old disposition (for an unclaimed real-time
 * signal, terminate). */
SS_INTERNAL void ss_rtsig_release(int sig, const struct sigaction *old);

/* The CPU-time clock of thread tid of this process (the kernel's
 * MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED), as glibc's pthread_getcpuclockid
 * builds it): we hold tids, not pthread_t, for threads other than our own. */
static inline clockid_t ss_thread_cpuclock(uint32_t tid)
{
	return (clockid_t)((~tid << 3) | 2u /* SCHED */ | 4u /* PERTHREAD */);
}

#endif /* STALLSCOPE_SIGWALK_H */

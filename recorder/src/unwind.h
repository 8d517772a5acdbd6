/*
 * unwind.h - user stacks from a copy of the registers and of the top of the
 * stack, for code built without frame pointers. Writer thread only (the signal
 * handlers and the watchdog only take copies: ss_ucopy_take() below).
 *
 *   fp     frame-pointer chains as before: the kernel's (perf), the in-process
 *          walk (timer fallback, running stall captures), the frame-record scan
 *          of stack memory (blocked stall captures). No copies are taken.
 *   dwarf  every user stack is unwound by CFI (.eh_frame, and .debug_frame where
 *          the file carries it) with libdw's frame unwinder, on the registers
 *          and the stack copy that came with the sample (libdw itself steps by
 *          the frame pointer through code that has no CFI at all).
 *   auto   a frame-pointer chain is kept where it is whole: walked inside the
 *          copy, it ends at the outermost frame (a zero frame pointer, as
 *          clone() and _start leave it) and the sampled function has set up its
 *          frame (the CFI at the sampled pc computes the frame address from the
 *          frame pointer). Any other stack is unwound by CFI as in dwarf; where
 *          CFI cannot get past a frame of a blocked thread (whose registers are
 *          unknown but sp and pc), the frame records in its stack memory are
 *          followed from there.
 *
 * A frame the unwinder cannot get past (no CFI and no frame pointer, the copy
 * ends, a register it needs is unknown, a return address outside executable
 * code, a stack address that does not grow, more than the frames asked for)
 * ends the stack there: the result is marked SS_STACK_F_TRUNCATED, never padded
 * with a guessed frame. Only this file and unwind_libdw.c know libdw; without it
 * (a build without libdw, another architecture) dwarf and auto fall back to fp
 * and the status says why.
 */
#ifndef STALLSCOPE_UNWIND_H
#define STALLSCOPE_UNWIND_H

#include <stdint.h>
#include <stddef.h>
#include <ucontext.h>

#include "recorder-private.h"

/* Registers in DWARF numbering. x86-64: 0 rax, 1 rdx, 2 rcx, 3 rbx, 4 rsi, 5 rdi,
 * 6 rbp, 7 rsp, 8..15 r8..r15, 16 the return address column (rip). */
#define SS_UREGS 17
#define SS_UREG_FP 6
#define SS_UREG_SP 7
#define SS_UREG_PC 16

/* Stack copies: default, and the limits perf_event_open takes (a multiple of 8,
 * below 64 KiB). */
#define SS_COPY_DEFAULT 8192u
#define SS_COPY_MIN 1024u
#define SS_COPY_MAX 65528u

/* A register set and the bytes of the stack from regs[SP] up, as a sample, a
 * signal handler or /proc delivered them. The bytes follow the struct where it
 * is stored (data points at them). */
struct ss_ucopy {
	uint64_t regs[SS_UREGS];
	uint32_t valid;      /* bit i: regs[i] is known */
	uint32_t len;        /* bytes copied from regs[SP] */
};

struct ss_ustack {
	const struct ss_ucopy *uc;
	const uint8_t *data; /* uc->len bytes: the stack at uc->regs[SP] */
};

enum ss_unwind_mode { SS_UNWIND_AUTO = 0, SS_UNWIND_FP = 1, SS_UNWIND_DWARF = 2 };

/* Copies the interrupted context's registers and the stack above its sp, within
 * [lo, hi), into uc and the len bytes after it (at most max). Async-signal-safe;
 * the copy loop is not instrumented (a frame may sit next to a sanitizer's
 * redzone; the bounds are what make the loads safe). Without bounds, or with sp
 * outside them, only the registers are kept. */
SS_INTERNAL void ss_ucopy_take(struct ss_ucopy *uc, uint8_t *data, uint32_t max,
				const ucontext_t *ctx, uint64_t lo, uint64_t hi);

/* Chooses the mode from what was asked for (enum ss_unwind_mode) and what works
 * here, and prepares it; never fails the session. status gets one line: the mode,
 * what it does, and why another was refused. Writer thread. */
SS_INTERNAL void ss_unwind_start(int asked, uint32_t copy_bytes, char *status, size_t len);
SS_INTERNAL void ss_unwind_stop(void);
/* The mode in use (FP after a refusal), and the bytes of stack to copy per
 * stack: 0 in fp mode. Readable from any thread once started. */
SS_INTERNAL enum ss_unwind_mode ss_unwind_mode(void);
SS_INTERNAL uint32_t ss_unwind_copy_bytes(void);
SS_INTERNAL const char *ss_unwind_mode_name(enum ss_unwind_mode m);
/* The choice in a few words, for the log (the status line has it all). */
SS_INTERNAL const char *ss_unwind_brief(void);

/* The user frames of us into out (pc first, then return addresses), at most max.
 * blocked: the thread sat in a system call and only sp and pc are known (a blocked
 * stall capture). *flags receives SS_STACK_F_*. Writer thread. */
SS_INTERNAL uint32_t ss_unwind_user(const struct ss_ustack *us, int blocked, uint64_t *out,
				    uint32_t max, uint32_t *flags);
/* One CFI step out of the leaf of a stack walked by frame pointers elsewhere (a
 * switch-out sample's copy, data: len bytes from its sp): when the function at pc has
 * no frame set up (a system call's wrapper in libc), the frame-pointer chain
 * starts at its caller's frame and would skip the caller. 1 with *ra the leaf's
 * return address (in code) and *fp the caller's frame pointer (updated where the
 * leaf saved it), 0 to walk as before: the frame is set up, the CFI is unknown, the
 * slot is outside the copy, no libdw, fp mode, or another process (the session's
 * CFI is this process's). Writer thread. */
SS_INTERNAL int ss_unwind_leaf(uint64_t pc, const uint8_t *data, uint64_t len, uint64_t *fp,
			       uint64_t *ra);
/* The process mapped new code (a dlopen): modules are reported again before the
 * next unwind. */
SS_INTERNAL void ss_unwind_mappings_changed(void);

/* Why stacks ended early, and how they were taken. Totals over the process's
 * life (the metrics); readable from any thread. */
struct ss_unwind_stats {
	uint64_t fp;              /* stacks kept as whole frame-pointer chains (auto) */
	uint64_t cfi;             /* stacks unwound by CFI */
	uint64_t truncated;       /* of all stacks unwound here, ended early: */
	uint64_t trunc_copy;      /*   the stack copy ended */
	uint64_t trunc_cfi;       /*   no CFI / unwinding failed (a register unknown) */
	uint64_t trunc_invalid;   /*   a frame outside code or a stack that did not grow */
	uint64_t trunc_depth;     /*   more frames than kept */
};
SS_INTERNAL void ss_unwind_get_stats(struct ss_unwind_stats *st);

/* ---- unwind_libdw.c (only with libdw) ----------------------------------------- */

enum ss_dw_end { SS_DW_WHOLE = 0, SS_DW_COPY, SS_DW_CFI, SS_DW_INVALID, SS_DW_DEPTH };

/* Opens the libdw session on this process's modules: 0, or -1 with why. */
SS_INTERNAL int ss_dw_open(char *why, size_t len);
SS_INTERNAL void ss_dw_close(void);
SS_INTERNAL void ss_dw_refresh(void);
/* libdw's version string, for the status line. */
SS_INTERNAL const char *ss_dw_version(void);
/* CFI unwind of us into out; returns frames, *end says why it stopped, *last_sp the
 * stack pointer of the last frame (0 unknown). */
SS_INTERNAL uint32_t ss_dw_unwind(const struct ss_ustack *us, uint64_t *out, uint32_t max,
				  enum ss_dw_end *end, uint64_t *last_sp);
/* 1 when the CFI at pc computes the frame address from the frame pointer (the
 * function has set up its frame there), 0 when not or unknown. */
SS_INTERNAL int ss_dw_pc_uses_fp(uint64_t pc);
/* Where the CFI at pc finds the caller when the frame is computed from the stack
 * pointer (a function that sets up no frame, or one not yet set up): CFA = sp +
 * cfa_off, the return address at CFA + ra_off, the caller's frame pointer at CFA
 * + fp_off when fp_saved, else unchanged. 1 with *leaf filled, 0 when the frame
 * is computed otherwise or the CFI is unknown. */
struct ss_dw_leaf {
	int32_t cfa_off, ra_off, fp_off;
	int32_t fp_saved;
};
SS_INTERNAL int ss_dw_leaf_rule(uint64_t pc, struct ss_dw_leaf *leaf);

/* ---- unwind.c, for unwind_libdw.c -------------------------------------------- */

/* 1 when addr lies in an executable mapping of the process (as of the last
 * refresh of the table from /proc/self/maps). */
SS_INTERNAL int ss_unwind_is_code(uint64_t addr);
/* Reads the table again; at most every 50 ms unless forced. */
SS_INTERNAL void ss_unwind_refresh_code(int force);

#endif /* STALLSCOPE_UNWIND_H */

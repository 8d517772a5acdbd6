/*
 * stacks.h - the stacks of a stored trace as the analysis reads them: a
 * callsite as frames leaf first, which of them is "the code responsible" (the
 * first frame of the program's own code), and the system call a kernel stack
 * was blocked in.
 *
 * Own code, walking from the leaf:
 *   - not the system's or the recorder's libraries (libc, the dynamic loader,
 *     libpthread, libm, libstdc++, libgcc_s, libstallscope and its shim), not
 *     the kernel, not the vDSO, not an address in no mapping, and not the
 *     runtime of a language that links it into the executable (Rust's std::,
 *     core::, alloc::, tokio::runtime::);
 *   - not a shared helper: a function that is called from two or more different
 *     functions in the trace's stacks (cpu_spin, memcpy-like code) stands for
 *     its caller, which says more;
 * and when every own frame is a shared helper, the first of them. A stack
 * with no frame of the program's own (one that stops inside libc, as frame
 * pointer walks through libraries built without them do) has none.
 *
 * Reads through its own prepared statements; not thread-safe.
 */
#ifndef STALLSCOPE_ANALYSIS_STACKS_H
#define STALLSCOPE_ANALYSIS_STACKS_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SS_STACK_MAX 512

struct ss_stack_frame {
	const char *function;  /* NULL when unknown (valid while the cache lives) */
	const char *file;
	const char *mapping;
	int64_t line, frame_id, rel_pc;
	bool system;           /* a system or recorder library, the kernel, the vDSO, a PLT stub */
	bool kernel;
};

struct ss_callstacks;

struct ss_callstacks *ss_callstacks_new(sqlite3 *db);
void ss_callstacks_free(struct ss_callstacks *c);

/* The frames of a callsite, leaf first; returns how many (at most max). */
size_t ss_callstacks_get(struct ss_callstacks *c, int64_t callsite_id, struct ss_stack_frame *out, size_t max);

/* Index of the own-code frame (see above), or -1 when there is none. */
int ss_callstacks_own(struct ss_callstacks *c, const struct ss_stack_frame *f, size_t n);

/* The own-code frame of a callsite's stack (cached per callsite), NULL for
 * none; scratch holds max frames for the walk. Valid until the next call. */
const struct ss_stack_frame *ss_callstacks_own_frame(struct ss_callstacks *c, int64_t callsite_id,
						 struct ss_stack_frame *scratch, size_t max);

/* The system call a stack with kernel frames was in ("read", from
 * __x64_sys_read / __arm64_sys_read / ksys_read), or NULL. Static storage of
 * the cache; valid until the next call. */
const char *ss_callstacks_syscall(struct ss_callstacks *c, const struct ss_stack_frame *f, size_t n);

/* The function's name, or mapping+0xoffset when unknown. */
void ss_callstacks_frame_name(const struct ss_stack_frame *f, char *buf, size_t len);

/* "f <- g <- h" of the first max frames, unknown functions as mapping+0xoff. */
void ss_callstacks_text(const struct ss_stack_frame *f, size_t n, size_t max, char *buf, size_t len);

#endif /* STALLSCOPE_ANALYSIS_STACKS_H */

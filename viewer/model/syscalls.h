/*
 * syscalls.h - system call names by number, per architecture, generated at
 * build time from the kernel's headers (gen_syscalls.py): the store keeps
 * 'read' next to 0 so that SQL over stall captures reads as people talk.
 */
#ifndef STALLSCOPE_SYSCALLS_H
#define STALLSCOPE_SYSCALLS_H

#include <stdbool.h>
#include <stdint.h>

/* The name of system call nr on arch ("x86_64", "aarch64", the other users of
 * the generic table); NULL when unknown. */
const char *ss_syscall_name(const char *arch, int64_t nr);

/* Whether name is a system call's name on any architecture known here (for
 * naming the call a libc wrapper frame makes: "read" from __libc_read). */
bool ss_syscall_known(const char *name);

/* The architecture of this build, as a recording names it. */
#if defined(__x86_64__)
#define SS_HOST_ARCH "x86_64"
#elif defined(__aarch64__)
#define SS_HOST_ARCH "aarch64"
#elif defined(__riscv) && __riscv_xlen == 64
#define SS_HOST_ARCH "riscv64"
#else
#define SS_HOST_ARCH NULL
#endif

#endif /* STALLSCOPE_SYSCALLS_H */

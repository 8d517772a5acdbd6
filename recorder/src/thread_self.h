/*
 * thread_self.h - the calling thread as the recorder knows it across sessions
 * (thread_self.c). A leaf: includes nothing of the recorder.
 */
#ifndef STALLSCOPE_THREAD_SELF_H
#define STALLSCOPE_THREAD_SELF_H

#include <stdint.h>

#define SS_INTERNAL __attribute__((visibility("hidden")))

/* The worker identity of the thread, kept across sessions so a thread that became
 * a worker before recording started is still drawn as one. */
extern SS_INTERNAL __thread uint32_t ss_tls_worker_runtime __attribute__((tls_model("initial-exec")));
extern SS_INTERNAL __thread uint32_t ss_tls_worker_index __attribute__((tls_model("initial-exec")));
/* The thread's stack bounds, found by a control call (pthread_getattr_np), for the
 * sampler's timer fallback: its frame walk never reads outside them. */
extern SS_INTERNAL __thread uint64_t ss_tls_stack_lo __attribute__((tls_model("initial-exec")));
extern SS_INTERNAL __thread uint64_t ss_tls_stack_hi __attribute__((tls_model("initial-exec")));

/* Control call: learn the calling thread's stack bounds once. */
SS_INTERNAL void ss_learn_stack_bounds(void);

#endif /* STALLSCOPE_THREAD_SELF_H */

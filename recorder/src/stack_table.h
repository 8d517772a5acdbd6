/*
 * stack_table.h - per-segment interning of call stacks (writer thread only).
 */
#ifndef STALLSCOPE_STACK_TABLE_H
#define STALLSCOPE_STACK_TABLE_H

#include <stdint.h>

/* The id of this stack (never 0 on success); *is_new when the caller must write
 * its definition now. The same frames with other flags (SS_STACK_F_*) are another
 * stack. Returns 0 when out of memory. */
SS_INTERNAL uint32_t ss_stacks_intern(const uint64_t *frames, uint32_t n, uint32_t nkernel,
				      uint32_t flags, int *is_new);
/* The segment no longer holds the definitions: write them again when next used. */
SS_INTERNAL void ss_stacks_forget(void);
SS_INTERNAL void ss_stacks_free(void);

#endif

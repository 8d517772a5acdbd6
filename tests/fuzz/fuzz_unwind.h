/*
 * fuzz_unwind.h - what fuzz_unwind.c and its frame-pointer-less helper share.
 */
#ifndef STALLSCOPE_FUZZ_UNWIND_H
#define STALLSCOPE_FUZZ_UNWIND_H

#include <ucontext.h>

/* getcontext() at the end of a chain of three calls built without frame
 * pointers, then snap(uc) while those frames are still on the stack. */
int fuzz_unwind_capture_nofp(ucontext_t *uc, void (*snap)(ucontext_t *));

#endif

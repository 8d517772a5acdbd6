/*
 * fuzz_unwind_nofp.c - the code whose stack fuzz_unwind.c captures as a base
 * state: built without frame pointers (tests/fuzz/meson.build), a chain of known
 * depth that ends in getcontext(), so the captured registers are a real state of
 * code that only CFI can unwind; snap() copies the stack while those frames live.
 */
#include <stdint.h>
#include <ucontext.h>

#include "fuzz_unwind.h"

#define NOIPA __attribute__((noipa))

static NOIPA int leaf(ucontext_t *uc, void (*snap)(ucontext_t *), volatile uint64_t *spill)
{
	spill[0] = (uint64_t)(uintptr_t)uc;
	int r = getcontext(uc);
	snap(uc);
	return r;
}

static NOIPA int mid2(ucontext_t *uc, void (*snap)(ucontext_t *))
{
	volatile uint64_t spill[40];
	int r = leaf(uc, snap, spill);
	return r + (int)(spill[0] & 1);
}

static NOIPA int mid1(ucontext_t *uc, void (*snap)(ucontext_t *))
{
	int r = mid2(uc, snap);
	return r * 3 + 1;
}

NOIPA int fuzz_unwind_capture_nofp(ucontext_t *uc, void (*snap)(ucontext_t *))
{
	int r = mid1(uc, snap);
	return r * 5 + 2;
}

/*
 * fuzz_unwind.c - libFuzzer target for the recorder's unwinder (recorder/src/
 * unwind.c and unwind_libdw.c): corrupt stack copies and registers never crash
 * it, and what it returns holds up: no more frames than asked for, and every
 * caller frame inside executable code (a stack the unwinder cannot follow ends,
 * it never continues with a guess).
 *
 * An input edits one of three real states captured once at start: a chain built
 * without frame pointers (fuzz_unwind_nofp.c, CFI only), a chain of this file's
 * frame-pointer code (auto's whole-chain path), and the first with only sp and
 * pc known (a blocked thread, auto's frame-record scan). The state is a struct
 * ss_ucopy followed by its 8 KiB stack copy; the input is
 *
 *   u8 base (bits 0-1: which, bit 2: treat as blocked), then records of
 *   u8 op, u16 offset (little-endian), u8 n:
 *     op 0  n bytes that follow overwrite the state at offset
 *     op 1  the 8-byte word at offset (aligned down) grows by (int8_t)n * 8
 *     op 2  the copy length becomes offset (at most the copy's size)
 *     op 3  the valid-register mask becomes offset
 *
 * so both raw corruption and near-miss pointers (a frame pointer one word off, a
 * return address moved into another function) are a few bytes away.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_target.h"
#include "fuzz_unwind.h"
#include "unwind.h"

#define COPY 8192
#define MAX_FRAMES 127

struct state {
	struct ss_ucopy uc;
	uint8_t data[COPY];
};
_Static_assert(offsetof(struct state, data) == sizeof(struct ss_ucopy), "the copy follows the registers");

static struct state bases[3];
static int nbases;
static uint64_t stack_lo, stack_hi;

static void snap(ucontext_t *uc)
{
	if (nbases < 2) {
		ss_ucopy_take(&bases[nbases].uc, bases[nbases].data, COPY, uc, stack_lo, stack_hi);
		nbases++;
	}
}

static __attribute__((noinline)) int fp_leaf(ucontext_t *uc)
{
	int r = getcontext(uc);
	snap(uc);
	return r;
}

static __attribute__((noinline)) int fp_mid(ucontext_t *uc)
{
	int r = fp_leaf(uc);
	return r * 7 + 3;
}

static void init(void)
{
	pthread_attr_t a;
	void *addr;
	size_t size;
	if (pthread_getattr_np(pthread_self(), &a) == 0) {
		if (pthread_attr_getstack(&a, &addr, &size) == 0) {
			stack_lo = (uint64_t)(uintptr_t)addr;
			stack_hi = stack_lo + size;
		}
		pthread_attr_destroy(&a);
	}
	char status[512];
	ss_unwind_start(SS_UNWIND_AUTO, COPY, status, sizeof status);
	if (ss_unwind_mode() != SS_UNWIND_AUTO)
		fprintf(stderr, "fuzz_unwind: no CFI unwinder here (%s): only the fallback is fuzzed\n",
			status);
	static ucontext_t uc;
	fuzz_unwind_capture_nofp(&uc, snap);
	fp_mid(&uc);
	bases[2] = bases[0];
	bases[2].uc.valid = (1u << SS_UREG_PC) | (1u << SS_UREG_SP);
	if (nbases != 2 || !bases[0].uc.len || !bases[1].uc.len) {
		fprintf(stderr, "fuzz_unwind: the base states were not captured\n");
		abort();
	}
	/* Mutations are worth something only near states that unwind: leaf, mid2,
	 * mid1, fuzz_unwind_capture_nofp, init and on up to main. */
	for (int b = 0; b < 2 && ss_unwind_mode() == SS_UNWIND_AUTO; b++) {
		struct ss_ustack us = { &bases[b].uc, bases[b].data };
		uint64_t out[MAX_FRAMES];
		uint32_t flags, nf = ss_unwind_user(&us, 0, out, MAX_FRAMES, &flags);
		if (nf < 5) {
			fprintf(stderr, "fuzz_unwind: base state %d unwinds to %u frames only\n", b, nf);
			abort();
		}
	}
}

static uint64_t rd_word(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof v);
	return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	static int ready;
	if (!ready) {
		init();
		ready = 1;
	}
	static struct state st;
	int which = n ? (d[0] & 3) % 3 : 0, blocked = which == 2 || (n && (d[0] & 4));
	st = bases[which];
	uint8_t *raw = (uint8_t *)&st;
	const size_t size = sizeof st;
	for (size_t i = 1; i + 4 <= n;) {
		uint8_t op = d[i], k = d[i + 3];
		size_t off = (size_t)(d[i + 1] | d[i + 2] << 8);
		i += 4;
		switch (op & 3) {
		case 0: {
			size_t len = k < n - i ? k : n - i;
			off %= size;
			if (len > size - off)
				len = size - off;
			memcpy(raw + off, d + i, len);
			i += len;
			break;
		}
		case 1: {
			off = (off % (size - 7)) & ~(size_t)7;
			uint64_t w = rd_word(raw + off) + (uint64_t)((int64_t)(int8_t)k * 8);
			memcpy(raw + off, &w, sizeof w);
			break;
		}
		case 2:
			st.uc.len = (uint32_t)(off % (COPY + 1));
			break;
		default:
			st.uc.valid = (uint32_t)off;
			break;
		}
	}
	/* The unwinder's contract: uc.len bytes of copy exist (a producer bounds it). */
	if (st.uc.len > COPY)
		st.uc.len = COPY;
	struct ss_ustack us = { &st.uc, st.data };
	uint64_t out[MAX_FRAMES + 1];
	uint32_t flags;
	uint32_t nf = ss_unwind_user(&us, blocked, out, MAX_FRAMES, &flags);
	if (nf > MAX_FRAMES)
		abort();
	for (uint32_t f = 1; f < nf; f++)
		if (!ss_unwind_is_code(out[f] - 1)) {
			fprintf(stderr, "fuzz_unwind: frame %u of %u at %#llx is outside code\n", f, nf,
				(unsigned long long)out[f]);
			abort();
		}
	return 0;
}

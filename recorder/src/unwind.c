/*
 * unwind.c - the unwinding policy (unwind.h): which mode runs, the frame-pointer
 * chain checked inside a stack copy (auto), the frame-record scan that continues
 * a blocked thread's stack where CFI stops (auto), the table of executable
 * mappings every frame is checked against, and the counters. The CFI work itself
 * is unwind_libdw.c's.
 */
#include "unwind.h"
#include "log.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_CODE 4096            /* executable mappings tracked */
#define REFRESH_NS 50000000ull   /* code table re-read at most this often unasked */

static struct {
	int started;
	int have_dw;
	/* libdw's session is opened at the first unwind (ensure_dw), not at start:
	 * opening it reports every module of the process, about a millisecond here,
	 * that a session which never unwinds a stack need not pay. */
	int dw_pending;
	char *status;         /* the caller's status line, corrected if that open fails */
	size_t status_len;
	uint64_t *code_lo, *code_hi;
	uint32_t ncode;
	uint64_t code_read_at;
	int maps_dirty;
} U;

static _Atomic int published_mode = SS_UNWIND_FP;
static char brief[320]; /* the log line's version of the status (writer start only) */
static _Atomic uint32_t published_copy;
static struct {
	_Atomic uint64_t fp, cfi, truncated, copy, cfi_fail, invalid, depth;
} S;

const char *ss_unwind_brief(void)
{
	return brief;
}

const char *ss_unwind_mode_name(enum ss_unwind_mode m)
{
	switch (m) {
	case SS_UNWIND_AUTO: return "auto";
	case SS_UNWIND_FP: return "fp";
	case SS_UNWIND_DWARF: return "dwarf";
	}
	return "?";
}

enum ss_unwind_mode ss_unwind_mode(void)
{
	return (enum ss_unwind_mode)atomic_load_explicit(&published_mode, memory_order_relaxed);
}

uint32_t ss_unwind_copy_bytes(void)
{
	return atomic_load_explicit(&published_copy, memory_order_relaxed);
}

void ss_unwind_get_stats(struct ss_unwind_stats *st)
{
	st->fp = atomic_load_explicit(&S.fp, memory_order_relaxed);
	st->cfi = atomic_load_explicit(&S.cfi, memory_order_relaxed);
	st->truncated = atomic_load_explicit(&S.truncated, memory_order_relaxed);
	st->trunc_copy = atomic_load_explicit(&S.copy, memory_order_relaxed);
	st->trunc_cfi = atomic_load_explicit(&S.cfi_fail, memory_order_relaxed);
	st->trunc_invalid = atomic_load_explicit(&S.invalid, memory_order_relaxed);
	st->trunc_depth = atomic_load_explicit(&S.depth, memory_order_relaxed);
}

static inline void count(_Atomic uint64_t *c)
{
	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

/* ---- copies (signal handlers, the watchdog) --------------------------------- */

__attribute__((no_sanitize("address", "undefined")))
void ss_ucopy_take(struct ss_ucopy *uc, uint8_t *data, uint32_t max, const ucontext_t *ctx,
		   uint64_t lo, uint64_t hi)
{
	uc->len = 0;
#if defined(__x86_64__)
	const greg_t *g = ctx->uc_mcontext.gregs;
	static const int from[SS_UREGS] = {
		REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI, REG_RBP, REG_RSP,
		REG_R8, REG_R9, REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15, REG_RIP,
	};
	for (int i = 0; i < SS_UREGS; i++)
		uc->regs[i] = (uint64_t)g[from[i]];
	uc->valid = (1u << SS_UREGS) - 1;
#else
	(void)ctx;
	memset(uc->regs, 0, sizeof uc->regs);
	uc->valid = 0;
	return;
#endif
	uint64_t sp = uc->regs[SS_UREG_SP];
	if (!lo || sp < lo || sp >= hi || (sp & 7) || ((uintptr_t)data & 7))
		return;
	uint64_t n = hi - sp < max ? hi - sp : max;
	n &= ~(uint64_t)7;
	/* Word by word through volatile loads: no library call inside a handler, and
	 * nothing the compiler may widen past the bounds. */
	const volatile uint64_t *src = (const volatile uint64_t *)(uintptr_t)sp;
	uint64_t *dst = (uint64_t *)(void *)data;
	for (uint64_t i = 0; i < n / 8; i++)
		dst[i] = src[i];
	uc->len = (uint32_t)n;
}

/* ---- executable mappings ---------------------------------------------------- */

static void read_code(void)
{
	FILE *f = fopen("/proc/self/maps", "re");
	U.code_read_at = ss_now();
	if (!f)
		return;
	uint32_t n = 0;
	char line[512];
	while (fgets(line, sizeof line, f) && n < MAX_CODE) {
		unsigned long long lo, hi;
		char perms[8];
		if (sscanf(line, "%llx-%llx %7s", &lo, &hi, perms) != 3 || strlen(perms) < 3 ||
		    perms[2] != 'x')
			continue;
		/* /proc lists mappings in address order: the table stays sorted. */
		U.code_lo[n] = lo;
		U.code_hi[n] = hi;
		n++;
	}
	fclose(f);
	U.ncode = n;
}

int ss_unwind_is_code(uint64_t addr)
{
	uint32_t lo = 0, hi = U.ncode;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (U.code_lo[mid] <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && addr < U.code_hi[lo - 1];
}

void ss_unwind_refresh_code(int force)
{
	if (!U.code_lo || (!force && ss_now() - U.code_read_at < REFRESH_NS))
		return;
	read_code();
#ifdef STALLSCOPE_HAVE_LIBDW
	if (U.have_dw)
		ss_dw_refresh();
#endif
}

void ss_unwind_mappings_changed(void)
{
	U.maps_dirty = 1;
}

/* ---- start / stop ----------------------------------------------------------- */

void ss_unwind_start(int asked, uint32_t copy_bytes, char *status, size_t len)
{
	if (U.started)
		ss_unwind_stop();
	memset(&U, 0, sizeof U);
	U.started = 1;
	uint32_t copy = copy_bytes ? copy_bytes : SS_COPY_DEFAULT;
	if (copy < SS_COPY_MIN)
		copy = SS_COPY_MIN;
	if (copy > SS_COPY_MAX)
		copy = SS_COPY_MAX;
	copy &= ~7u;
	enum ss_unwind_mode mode = asked == SS_UNWIND_DWARF ? SS_UNWIND_DWARF
				 : asked == SS_UNWIND_FP ? SS_UNWIND_FP : SS_UNWIND_AUTO;
	char why[256] = "";
	if (mode == SS_UNWIND_FP) {
		snprintf(status, len, "fp: frame-pointer chains (as asked): the kernel's for perf "
			 "samples, an in-process walk for timer samples and running stall captures, "
			 "the frame records in stack memory for blocked ones");
		snprintf(brief, sizeof brief, "fp (frame-pointer chains, as asked)");
		goto done;
	}
	/* The libdw session and the code table are this process's: another one's
	 * stack copies (record -p, a static program recorded from outside) would be
	 * unwound against the wrong modules and end at their first frame. */
	if (ss_target_pid())
		snprintf(why, sizeof why, "process %d is recorded from outside (its modules are not "
			 "this process's); the kernel's frame-pointer chains", (int)ss_target_pid());
#if !defined(__x86_64__)
	else
		snprintf(why, sizeof why, "CFI unwinding is implemented for x86-64 only");
#elif !defined(STALLSCOPE_HAVE_LIBDW)
	else
		snprintf(why, sizeof why, "this libstallscope was built without libdw");
#else
	else {
		U.dw_pending = 1;
		U.status = status;
		U.status_len = len;
	}
#endif
	if (!U.dw_pending) {
		snprintf(status, len, "fp: %s asked for, CFI refused: %s; frame-pointer chains instead",
			 ss_unwind_mode_name(mode), why);
		snprintf(brief, sizeof brief, "fp (%s asked for, CFI refused: %.200s)", ss_unwind_mode_name(mode),
			 why);
		free(U.code_lo);
		free(U.code_hi);
		U.code_lo = U.code_hi = NULL;
		mode = SS_UNWIND_FP;
		goto done;
	}
#ifdef STALLSCOPE_HAVE_LIBDW
	snprintf(brief, sizeof brief, mode == SS_UNWIND_DWARF
		 ? "dwarf (CFI by libdw %s on %u-byte stack copies)"
		 : "auto (frame pointers where whole, else CFI by libdw %s on %u-byte stack copies)",
		 ss_dw_version(), copy);
	if (mode == SS_UNWIND_DWARF)
		snprintf(status, len, "dwarf: every user stack unwound by CFI (.eh_frame, .debug_frame) "
			 "with libdw %s on the registers and a %u-byte copy of the stack taken with "
			 "each sample and stall capture; task dumps and off-CPU stacks keep "
			 "frame-pointer chains (off-CPU ones after one CFI step out of their leaf)", ss_dw_version(), copy);
	else
		snprintf(status, len, "auto: frame-pointer chains where they are whole (ending in a "
			 "zero frame pointer, the sampled function's frame set up), CFI (.eh_frame, "
			 ".debug_frame) with libdw %s where they are not, on the registers and a "
			 "%u-byte copy of the stack taken with each sample and stall capture; task "
			 "dumps and off-CPU stacks keep frame-pointer chains (off-CPU ones after one "
			 "CFI step out of their leaf)", ss_dw_version(), copy);
#endif
done:
	atomic_store_explicit(&published_copy, mode == SS_UNWIND_FP ? 0u : copy, memory_order_relaxed);
	atomic_store_explicit(&published_mode, (int)mode, memory_order_relaxed);
}

/* The libdw session, opened on first use (writer thread). A refusal then turns
 * the session's unwinding into frame-pointer chains from here on, says so in
 * the log, and corrects the status line later segments' META carry. */
static void ensure_dw(void)
{
	if (!U.dw_pending)
		return;
	U.dw_pending = 0;
#ifdef STALLSCOPE_HAVE_LIBDW
	char why[256] = "";
	U.code_lo = malloc(sizeof *U.code_lo * MAX_CODE);
	U.code_hi = malloc(sizeof *U.code_hi * MAX_CODE);
	if (!U.code_lo || !U.code_hi)
		snprintf(why, sizeof why, "out of memory");
	else if (read_code(), ss_dw_open(why, sizeof why) == 0)
		U.have_dw = 1;
	if (U.have_dw)
		return;
	enum ss_unwind_mode asked = ss_unwind_mode();
	ss_log("stacks: CFI refused at the first unwind: %s; frame-pointer chains from now on", why);
	if (U.status)
		snprintf(U.status, U.status_len, "fp: %s asked for, CFI refused at the first unwind: "
			 "%s; frame-pointer chains instead", ss_unwind_mode_name(asked), why);
	free(U.code_lo);
	free(U.code_hi);
	U.code_lo = U.code_hi = NULL;
	atomic_store_explicit(&published_copy, 0u, memory_order_relaxed);
	atomic_store_explicit(&published_mode, SS_UNWIND_FP, memory_order_relaxed);
#endif
}

void ss_unwind_stop(void)
{
	if (!U.started)
		return;
#ifdef STALLSCOPE_HAVE_LIBDW
	if (U.have_dw)
		ss_dw_close();
#endif
	free(U.code_lo);
	free(U.code_hi);
	memset(&U, 0, sizeof U);
	atomic_store_explicit(&published_copy, 0u, memory_order_relaxed);
	atomic_store_explicit(&published_mode, SS_UNWIND_FP, memory_order_relaxed);
}

/* ---- the stacks ------------------------------------------------------------- */

static uint64_t word(const struct ss_ustack *us, uint64_t addr)
{
	uint64_t w;
	memcpy(&w, us->data + (addr - us->uc->regs[SS_UREG_SP]), sizeof w);
	return w;
}

/* The frame-pointer chain inside the copy. *whole: it ended at a zero frame
 * pointer with every return address in code. */
static uint32_t fp_in_copy(const struct ss_ustack *us, uint64_t *out, uint32_t max, int *whole)
{
	const struct ss_ucopy *uc = us->uc;
	uint64_t lo = uc->regs[SS_UREG_SP], end = lo + uc->len, fp = uc->regs[SS_UREG_FP];
	uint32_t n = 0;
	*whole = 0;
	out[n++] = uc->regs[SS_UREG_PC];
	while (n < max) {
		if ((fp & 7) || fp < lo || fp > end || end - fp < 16)
			break;
		uint64_t next = word(us, fp), ret = word(us, fp + 8);
		if (!ss_unwind_is_code(ret - 1))
			break;
		out[n++] = ret;
		if (next == 0) {
			*whole = 1;
			break;
		}
		if (next <= fp)
			break;
		lo = fp + 16;
		fp = next;
	}
	return n;
}

/* A blocked thread's stack past the frame CFI could not unwind (its frame
 * pointer is unknown): the first chain of frame records at or above sp in the
 * copy whose every return address is code, two links at least. Appends to out
 * from n; *whole as in fp_in_copy. */
static uint32_t scan_records(const struct ss_ustack *us, uint64_t sp, uint64_t *out, uint32_t n,
			     uint32_t max, int *whole)
{
	const struct ss_ucopy *uc = us->uc;
	uint64_t base = uc->regs[SS_UREG_SP], end = base + uc->len;
	*whole = 0;
	if (sp < base || sp >= end || (sp & 7))
		return n;
	for (uint64_t a = sp; end - a >= 16 && n < max; a += 8) {
		uint64_t next = word(us, a), ret = word(us, a + 8);
		/* (Comparisons written so that no sum can wrap around.) */
		if ((next & 7) || (next && (next <= a || next >= end || end - next < 16)) ||
		    !ss_unwind_is_code(ret - 1))
			continue;
		uint64_t tmp[64];
		uint32_t k = 0;
		int ended = 0;
		for (uint64_t fp = a; k < 64;) {
			uint64_t nx = word(us, fp), r = word(us, fp + 8);
			if (!ss_unwind_is_code(r - 1))
				break;
			tmp[k++] = r;
			if (nx == 0) {
				ended = 1;
				break;
			}
			if (nx <= fp || (nx & 7) || nx >= end || end - nx < 16)
				break;
			fp = nx;
		}
		if (k < 2 && !ended)
			continue;
		for (uint32_t i = 0; i < k && n < max; i++)
			out[n++] = tmp[i];
		*whole = ended;
		return n;
	}
	return n;
}

/* The code table is re-read after a dlopen, or (at most every REFRESH_NS) when a
 * stack's pc is in no mapping it knows. */
static void code_for(uint64_t pc)
{
	if (U.maps_dirty || !ss_unwind_is_code(pc)) {
		ss_unwind_refresh_code(U.maps_dirty);
		U.maps_dirty = 0;
	}
}

int ss_unwind_leaf(uint64_t pc, const uint8_t *data, uint64_t len, uint64_t *fp, uint64_t *ra)
{
	if (ss_unwind_mode() == SS_UNWIND_FP || ss_target_pid())
		return 0;
	ensure_dw();
#ifdef STALLSCOPE_HAVE_LIBDW
	if (!U.have_dw)
		return 0;
	code_for(pc);
	struct ss_dw_leaf r;
	if (!ss_unwind_is_code(pc) || !ss_dw_leaf_rule(pc, &r))
		return 0;
	/* Offsets from sp, where the copy begins (each a few KiB at most). */
	int64_t ra_at = (int64_t)r.cfa_off + r.ra_off, fp_at = (int64_t)r.cfa_off + r.fp_off;
	if (ra_at < 0 || (uint64_t)ra_at + 8 > len || (ra_at & 7))
		return 0;
	uint64_t ret;
	memcpy(&ret, data + ra_at, 8);
	if (!ss_unwind_is_code(ret - 1))
		return 0;
	if (r.fp_saved) {
		if (fp_at < 0 || (uint64_t)fp_at + 8 > len || (fp_at & 7))
			return 0;
		memcpy(fp, data + fp_at, 8);
	}
	*ra = ret;
	return 1;
#else
	(void)pc, (void)data, (void)len, (void)fp, (void)ra;
	return 0;
#endif
}

uint32_t ss_unwind_user(const struct ss_ustack *us, int blocked, uint64_t *out, uint32_t max,
			uint32_t *flags)
{
	*flags = SS_STACK_F_TRUNCATED;
	const struct ss_ucopy *uc = us->uc;
	if (!max || !(uc->valid & (1u << SS_UREG_PC)))
		return 0;
	/* A copy that would end past the top of the address space is no copy (every
	 * bound below is sp + len). */
	if (uc->len && uc->regs[SS_UREG_SP] > UINT64_MAX - uc->len) {
		out[0] = uc->regs[SS_UREG_PC];
		return 1;
	}
	ensure_dw();
	enum ss_unwind_mode mode = ss_unwind_mode();
	code_for(uc->regs[SS_UREG_PC]);
#ifdef STALLSCOPE_HAVE_LIBDW
	if (U.have_dw && mode != SS_UNWIND_FP) {
		uint32_t need = (1u << SS_UREG_PC) | (1u << SS_UREG_SP) | (1u << SS_UREG_FP);
		if (mode == SS_UNWIND_AUTO && !blocked && (uc->valid & need) == need) {
			int whole;
			uint32_t n = fp_in_copy(us, out, max, &whole);
			if (whole && n >= 2 && ss_dw_pc_uses_fp(uc->regs[SS_UREG_PC])) {
				*flags = 0;
				count(&S.fp);
				return n;
			}
		}
		enum ss_dw_end end;
		uint64_t last_sp = 0;
		uint32_t n = ss_dw_unwind(us, out, max, &end, &last_sp);
		if (n > 0 && end == SS_DW_CFI && blocked && mode == SS_UNWIND_AUTO && last_sp) {
			int whole;
			uint32_t m = scan_records(us, last_sp, out, n, max, &whole);
			if (m > n && whole)
				end = SS_DW_WHOLE;
			n = m;
		}
		count(&S.cfi);
		*flags = SS_STACK_F_CFI;
		if (end != SS_DW_WHOLE) {
			*flags |= SS_STACK_F_TRUNCATED;
			count(&S.truncated);
			count(end == SS_DW_COPY ? &S.copy : end == SS_DW_DEPTH ? &S.depth
			      : end == SS_DW_INVALID ? &S.invalid : &S.cfi_fail);
		}
		return n;
	}
#else
	(void)blocked;
	(void)scan_records;
	(void)fp_in_copy;
	(void)mode;
	(void)count;
#endif
	out[0] = uc->regs[SS_UREG_PC];
	return 1;
}

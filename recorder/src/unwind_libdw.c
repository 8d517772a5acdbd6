/*
 * unwind_libdw.c - CFI unwinding with libdw's frame unwinder on stack copies
 * (unwind.h). Built only with libdw; writer thread only.
 *
 * One Dwfl session for the whole recording, attached to this process with our
 * own thread callbacks (as perf's libdw unwinder does, but kept instead of made
 * per sample): modules are reported once from /proc/self/maps and again when new
 * code is mapped, so the ELF files are opened and their CFI parsed once, and a
 * sample costs the frame steps alone. The state being unwound is whatever
 * ss_dw_unwind() was handed: its registers, and memory only from its stack copy.
 * Reading the live stack beyond the copy would mix a later state of the thread
 * into an earlier one, so a read outside the copy fails and ends the stack.
 *
 * No separate debug files are searched (find_debuginfo refuses): unwinding needs
 * .eh_frame, which is in the loaded file, and must never open large debug files
 * or ask a debuginfod server inside the host program.
 */
#include "unwind.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <stdio.h>
#include <errno.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FP_CACHE 4096 /* sampled pcs' CFI rows remembered (rules_at), direct-mapped */

/* What the CFI row at one pc says, in the two forms the callers ask about. */
struct rules {
	uint64_t pc;
	int8_t uses_fp;    /* CFA = rbp + 16 */
	int8_t sp_based;   /* CFA = rsp + cfa_off, return address at CFA + ra_off */
	int8_t fp_saved;   /* rbp saved at CFA + fp_off (else unchanged) */
	int16_t cfa_off, ra_off, fp_off;
};

static struct {
	Dwfl *dwfl;
	pid_t pid;
	/* The architecture's backend comes from this ELF, held for the session: the
	 * one libdw would borrow from a module dies with the module when a refresh
	 * drops it (a dlclose). */
	int exe_fd;
	Elf *exe_elf;
	/* the unwind in progress */
	const struct ss_ustack *cur;
	uint64_t *out;
	uint32_t n, max;
	uint64_t last_sp;
	uint64_t last_lookup;     /* where the last frame's CFI is looked up */
	enum ss_dw_end end;
	int read_past_copy;
	struct rules fp_cache[FP_CACHE];
} W;

static int no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
			char **debuginfo_file_name)
{
	(void)mod, (void)userdata, (void)modname, (void)base, (void)file_name;
	(void)debuglink_file, (void)debuglink_crc, (void)debuginfo_file_name;
	return -1;
}

static char *no_path;
static const Dwfl_Callbacks proc_callbacks = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = no_debuginfo,
	.debuginfo_path = &no_path,
};

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_arg)
{
	(void)dwfl, (void)arg;
	if (*thread_arg)
		return 0;
	*thread_arg = &W;
	return W.pid;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_arg)
{
	(void)dwfl, (void)tid, (void)arg;
	*thread_arg = &W;
	return true;
}

static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	(void)dwfl, (void)arg;
	const struct ss_ucopy *uc = W.cur->uc;
	uint64_t sp = uc->regs[SS_UREG_SP];
	if (addr >= sp && uc->len >= 8 && addr - sp <= uc->len - 8) {
		memcpy(result, W.cur->data + (addr - sp), sizeof *result);
		return true;
	}
	/* Just past the copy: the stack is deeper than what was copied. */
	if (addr >= sp && addr - sp < uc->len + (1u << 20))
		W.read_past_copy = 1;
	return false;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	(void)arg;
	const struct ss_ucopy *uc = W.cur->uc;
	for (unsigned i = 0; i < SS_UREGS; i++) {
		/* A register not set stays undefined: CFI that needs it fails instead
		 * of computing from a made-up value. */
		if ((uc->valid & (1u << i)) && !dwfl_thread_state_registers(thread, (int)i, 1, &uc->regs[i]))
			return false;
	}
	dwfl_thread_state_register_pc(thread, uc->regs[SS_UREG_PC]);
	return true;
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

const char *ss_dw_version(void)
{
	const char *v = dwfl_version(NULL);
	return v ? v : "?";
}

static int report(void)
{
	dwfl_report_begin(W.dwfl);
	int r = dwfl_linux_proc_report(W.dwfl, W.pid);
	dwfl_report_end(W.dwfl, NULL, NULL);
	return r;
}

int ss_dw_open(char *why, size_t len)
{
	memset(&W, 0, sizeof W);
	W.exe_fd = -1;
	W.pid = getpid();
	W.dwfl = dwfl_begin(&proc_callbacks);
	if (!W.dwfl) {
		snprintf(why, len, "libdw: %s", dwfl_errmsg(-1));
		return -1;
	}
	int r = report();
	if (r != 0) {
		snprintf(why, len, "libdw: reporting /proc/self/maps: %s",
			 r > 0 ? strerror(r) : dwfl_errmsg(-1));
		ss_dw_close();
		return -1;
	}
	elf_version(EV_CURRENT);
	W.exe_fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	W.exe_elf = W.exe_fd >= 0 ? elf_begin(W.exe_fd, ELF_C_READ_MMAP, NULL) : NULL;
	if (!W.exe_elf) {
		snprintf(why, len, "libdw: cannot read /proc/self/exe: %s",
			 W.exe_fd < 0 ? strerror(errno) : elf_errmsg(-1));
		ss_dw_close();
		return -1;
	}
	if (!dwfl_attach_state(W.dwfl, W.exe_elf, W.pid, &thread_callbacks, NULL)) {
		snprintf(why, len, "libdw: dwfl_attach_state: %s", dwfl_errmsg(-1));
		ss_dw_close();
		return -1;
	}
	return 0;
}

void ss_dw_close(void)
{
	if (W.dwfl)
		dwfl_end(W.dwfl);
	if (W.exe_elf)
		elf_end(W.exe_elf);
	if (W.exe_fd > 0)
		close(W.exe_fd);
	memset(&W, 0, sizeof W);
}

void ss_dw_refresh(void)
{
	if (!W.dwfl)
		return;
	report();
	memset(W.fp_cache, 0, sizeof W.fp_cache);
}

static int frame_cb(Dwfl_Frame *f, void *arg)
{
	(void)arg;
	Dwarf_Addr pc;
	bool activation;
	if (!dwfl_frame_pc(f, &pc, &activation)) {
		W.end = SS_DW_CFI;
		return DWARF_CB_ABORT;
	}
	Dwarf_Word sp = 0;
	int have_sp = dwfl_frame_reg(f, SS_UREG_SP, &sp) == 0;
	if (W.n > 0) {
		/* A caller frame is believed only inside code, on a stack that grew. */
		if (!ss_unwind_is_code(activation ? pc : pc - 1) || !have_sp || sp <= W.last_sp) {
			W.end = SS_DW_INVALID;
			return DWARF_CB_ABORT;
		}
		/* The interrupted pc below a signal frame is no return address: +1, so a
		 * reader that looks up "return address - 1" lands on it. */
		if (activation)
			pc++;
	}
	if (W.n == W.max) {
		W.end = SS_DW_DEPTH;
		return DWARF_CB_ABORT;
	}
	W.out[W.n++] = pc;
	W.last_sp = have_sp ? sp : 0;
	W.last_lookup = W.n == 1 ? pc : pc - 1; /* (an activation pc was made +1 above) */
	return DWARF_CB_OK;
}

/* The CFI row of pc (caller frees), NULL when there is none. */
static Dwarf_Frame *cfi_row(uint64_t pc)
{
	Dwfl_Module *m = W.dwfl ? dwfl_addrmodule(W.dwfl, pc) : NULL;
	Dwarf_Addr bias = 0;
	Dwarf_CFI *cfi = m ? dwfl_module_eh_cfi(m, &bias) : NULL;
	if (!cfi && m)
		cfi = dwfl_module_dwarf_cfi(m, &bias);
	Dwarf_Frame *frame = NULL;
	if (!cfi || dwarf_cfi_addrframe(cfi, pc - bias, &frame) != 0)
		return NULL;
	return frame;
}

/* Whether the CFI at pc says the return address is undefined: the outermost
 * frame (_start, clone), where a stack properly ends. */
static int ra_undefined(uint64_t pc)
{
	Dwarf_Frame *frame = cfi_row(pc);
	if (!frame)
		return 0;
	Dwarf_Op mem[3], *ops = NULL;
	size_t nops = 1;
	int r = dwarf_frame_register(frame, SS_UREG_PC, mem, &ops, &nops) == 0 && nops == 0 && ops == mem;
	free(frame);
	return r;
}

uint32_t ss_dw_unwind(const struct ss_ustack *us, uint64_t *out, uint32_t max,
		      enum ss_dw_end *end, uint64_t *last_sp)
{
	W.cur = us;
	W.out = out;
	W.n = 0;
	W.max = max;
	W.last_sp = 0;
	W.end = SS_DW_WHOLE;
	W.read_past_copy = 0;
	int rc = W.dwfl ? dwfl_getthread_frames(W.dwfl, W.pid, frame_cb, NULL) : -1;
	/* libdw also ends "normally" when it cannot read the return address (it
	 * takes that for undefined): only a last frame whose CFI says so is the
	 * outermost one. */
	if (rc == -1 || (rc == 0 && (W.read_past_copy || !W.n || !ra_undefined(W.last_lookup))))
		W.end = W.read_past_copy ? SS_DW_COPY : SS_DW_CFI;
	if (W.n == 0) {
		/* Not even the first frame: keep the pc, the stack ends there. */
		out[W.n++] = us->uc->regs[SS_UREG_PC];
		if (W.end == SS_DW_WHOLE)
			W.end = SS_DW_CFI;
	}
	*end = W.end;
	*last_sp = W.last_sp;
	W.cur = NULL;
	return W.n;
}

/* A register kept in memory at CFA + *off: DW_OP_call_frame_cfa, then nothing
 * or DW_OP_plus_uconst (libdw's form for offset(N), N negative as unsigned). */
static int at_cfa(const Dwarf_Op *ops, size_t nops, int16_t *off)
{
	if (nops < 1 || nops > 2 || ops[0].atom != DW_OP_call_frame_cfa)
		return 0;
	int64_t v = nops == 2 ? (int64_t)ops[1].number : 0;
	if (nops == 2 && ops[1].atom != DW_OP_plus_uconst)
		return 0;
	if (v < -4096 || v > 4096)
		return 0;
	*off = (int16_t)v;
	return 1;
}

static const struct rules *rules_at(uint64_t pc)
{
	uint32_t h = (uint32_t)((pc * 0x9e3779b97f4a7c15ull) >> 52) & (FP_CACHE - 1);
	struct rules *r = &W.fp_cache[h];
	if (r->pc == pc && pc)
		return r;
	memset(r, 0, sizeof *r);
	r->pc = pc;
	Dwarf_Frame *frame = cfi_row(pc);
	if (!frame)
		return r;
	Dwarf_Op *ops = NULL;
	size_t nops = 0;
	/* CFA = rbp + 16: the frame record is at rbp. libdw gives a register +
	 * offset rule as one DW_OP_bregx (register, offset). */
	if (dwarf_frame_cfa(frame, &ops, &nops) == 0 && nops == 1) {
		int bregx = ops[0].atom == DW_OP_bregx;
		uint64_t reg = bregx ? ops[0].number : (uint64_t)(ops[0].atom - DW_OP_breg0);
		int64_t off = bregx ? (int64_t)ops[0].number2 : (int64_t)ops[0].number;
		int breg = bregx || (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31);
		if (breg && reg == SS_UREG_FP && off == 16)
			r->uses_fp = 1;
		Dwarf_Op mem[3], *rops = NULL;
		size_t rn = 0;
		if (breg && reg == SS_UREG_SP && off > 0 && off <= 4096 &&
		    dwarf_frame_register(frame, SS_UREG_PC, mem, &rops, &rn) == 0 &&
		    at_cfa(rops, rn, &r->ra_off)) {
			r->cfa_off = (int16_t)off;
			rops = NULL;
			rn = 0;
			if (dwarf_frame_register(frame, SS_UREG_FP, mem, &rops, &rn) == 0) {
				if (rn == 0 && rops == NULL)
					r->sp_based = 1; /* same value: the caller's frame pointer */
				else if (at_cfa(rops, rn, &r->fp_off))
					r->sp_based = r->fp_saved = 1;
			}
		}
	}
	free(frame);
	return r;
}

int ss_dw_pc_uses_fp(uint64_t pc)
{
	return rules_at(pc)->uses_fp;
}

int ss_dw_leaf_rule(uint64_t pc, struct ss_dw_leaf *leaf)
{
	const struct rules *r = rules_at(pc);
	if (!r->sp_based)
		return 0;
	leaf->cfa_off = r->cfa_off;
	leaf->ra_off = r->ra_off;
	leaf->fp_saved = r->fp_saved;
	leaf->fp_off = r->fp_off;
	return 1;
}

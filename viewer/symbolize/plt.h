/*
 * plt.h - names for the linker's PLT stubs of an x86-64 ELF file, which no
 * symbol names: `puts@plt`, as perf's dso__synthesize_plt_symbols and objdump
 * call them. A CPU sample or an unwound frame in a call through the PLT has its
 * leaf there.
 *
 * What is named (ELF virtual addresses):
 *   .plt      lazy stubs: the JUMP_SLOT/IRELATIVE relocations of .rela.plt (or
 *             .rel.plt), in GOT order, name entries 1..n; entry 0, the lazy
 *             resolver, is ".plt" (perf's name). A .plt exactly n entries long
 *             has no resolver (entries 0..n-1). With .plt.sec the whole .plt is
 *             ".plt" (it only runs on a first, lazy call), as perf does.
 *   .plt.sec  (IBT) entries 0..n-1 by the same relocations.
 *   .plt.got  each entry's `jmp *disp(%rip)` (after an endbr64 and a bnd
 *             prefix, when there) gives a GOT slot; the .rela.dyn relocation
 *             of that slot gives the name.
 * Names are the dynamic symbol's, without any "@VERSION". An IRELATIVE
 * relocation (a call to an IFUNC inside its own library, e.g. libc's memchr) has
 * no symbol: its stub is named by the function symbol at its addend (the
 * resolver; of several, the one perf's choose_best_symbol() picks), as perf
 * does; a stub with neither is "offset_0xOFF@plt" (OFF: its file offset).
 * Entry sizes come from sh_entsize (8 or 16, else by sh_addralign: 8, or 16).
 *
 * Other machines, and files whose PLT data is not there (separate debug info:
 * SHT_NOBITS), have no entries. The file is untrusted: every index is checked
 * by libelf or here, at most SS_PLT_MAX entries are kept and names are cut at
 * SS_PLT_NAME bytes.
 */
#ifndef STALLSCOPE_PLT_H
#define STALLSCOPE_PLT_H

#include <gelf.h>
#include <stddef.h>
#include <stdint.h>

#define SS_PLT_MAX (1u << 16)
#define SS_PLT_NAME 512

struct ss_plt_entry {
	uint64_t lo, hi;   /* [lo, hi) ELF virtual addresses */
	uint32_t name;     /* offset in names: the symbol's name, without "@plt" */
	uint32_t plain;    /* 1: name is the whole name (".plt", "offset_...@plt") */
};

struct ss_plt {
	struct ss_plt_entry *v; /* sorted by lo, disjoint */
	size_t n;
	char *names;
	size_t names_len, names_cap;
};

/* Reads the PLT stubs of e into p, which is overwritten (free it first if it
 * holds an earlier read). Returns 0, or -1 when memory ran out (then p holds
 * what was read). */
int ss_plt_read(Elf *e, struct ss_plt *p);

/* The stub holding vaddr, or NULL. */
const struct ss_plt_entry *ss_plt_find(const struct ss_plt *p, uint64_t vaddr);

/* The entry's name as people read it, into out (at most len bytes): "puts@plt",
 * ".plt". */
void ss_plt_name(const struct ss_plt *p, const struct ss_plt_entry *e, char *out, size_t len);

void ss_plt_free(struct ss_plt *p);

#endif /* STALLSCOPE_PLT_H */

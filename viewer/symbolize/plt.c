/*
 * plt.c - see plt.h. Sections are found by name (the linker's names are what
 * perf, objdump and gdb rely on too); every relocation and symbol is read
 * through gelf_get*(), which checks the index against the section's data, and
 * every section's data through elf_getdata(), which checks it against the file.
 */
#include "plt.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The relocation tables hold at most this many entries worth reading (a
 * hostile sh_size must not make us sort gigabytes). */
#define MAX_RELOCS (1u << 20)

struct rel {
	uint64_t got;    /* r_offset: the GOT slot */
	uint64_t sym;    /* symbol index, 0 when none */
	uint64_t ifunc;  /* an IRELATIVE's addend (its resolver), else 0 */
};

/* A function symbol by value, for naming IRELATIVE stubs. */
struct fsym {
	uint64_t value;
	const char *name;
	uint64_t size;
	unsigned char bind;
};

struct sec {
	Elf_Scn *scn;
	GElf_Shdr sh;
};

struct ctx {
	Elf *e;
	struct ss_plt *p;
	Elf_Data *syms;
	size_t strndx;
	struct fsym *fs;   /* function symbols sorted by value, read when an IRELATIVE needs them */
	size_t n_fs;
	bool fs_read, oom;
};

static int cmp_rel(const void *a, const void *b)
{
	const struct rel *x = a, *y = b;
	return x->got < y->got ? -1 : x->got > y->got;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct ss_plt_entry *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static bool find_sec(Elf *e, size_t shstrndx, const char *name, struct sec *out)
{
	for (Elf_Scn *s = elf_nextscn(e, NULL); s; s = elf_nextscn(e, s)) {
		GElf_Shdr sh;
		const char *n = gelf_getshdr(s, &sh) ? elf_strptr(e, shstrndx, sh.sh_name) : NULL;
		if (n && strcmp(n, name) == 0) {
			out->scn = s;
			out->sh = sh;
			return true;
		}
	}
	return false;
}

/* Code that is in the file (not SHT_NOBITS, as in separate debug info). */
static bool code_sec(Elf *e, size_t shstrndx, const char *name, struct sec *out)
{
	return find_sec(e, shstrndx, name, out) && out->sh.sh_type == SHT_PROGBITS && out->sh.sh_size &&
	       out->sh.sh_addr + out->sh.sh_size > out->sh.sh_addr;
}

static uint64_t entry_size(const GElf_Shdr *sh)
{
	if (sh->sh_entsize == 8 || sh->sh_entsize == 16)
		return sh->sh_entsize;
	return sh->sh_addralign == 8 ? 8 : 16;
}

/* The relocations of section r, those with a symbol only when with_sym; sorted
 * by GOT slot. Returns the count (*out malloc'd, NULL when none). */
static size_t read_rels(struct ctx *c, const struct sec *r, bool with_sym, struct rel **out)
{
	*out = NULL;
	if (r->sh.sh_type != SHT_RELA && r->sh.sh_type != SHT_REL)
		return 0;
	Elf_Data *d = elf_getdata(r->scn, NULL);
	if (!d || !d->d_buf)
		return 0;
	size_t each = gelf_fsize(c->e, r->sh.sh_type == SHT_RELA ? ELF_T_RELA : ELF_T_REL, 1, EV_CURRENT);
	size_t n = each ? d->d_size / each : 0;
	if (n > MAX_RELOCS)
		n = MAX_RELOCS;
	struct rel *v = n ? malloc(n * sizeof *v) : NULL;
	if (n && !v) {
		c->oom = true;
		return 0;
	}
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		GElf_Rela ra;
		GElf_Rel rl;
		uint64_t off, info, addend = 0;
		if (r->sh.sh_type == SHT_RELA) {
			if (!gelf_getrela(d, (int)i, &ra))
				break;
			off = ra.r_offset, info = ra.r_info, addend = (uint64_t)ra.r_addend;
		} else {
			if (!gelf_getrel(d, (int)i, &rl))
				break;
			off = rl.r_offset, info = rl.r_info;
		}
		if (with_sym && !GELF_R_SYM(info))
			continue;
		bool irel = GELF_R_TYPE(info) == R_X86_64_IRELATIVE && !GELF_R_SYM(info);
		v[k++] = (struct rel){ off, GELF_R_SYM(info), irel ? addend : 0 };
	}
	if (k)
		qsort(v, k, sizeof *v, cmp_rel);
	*out = v;
	return k;
}

/* v, with room for element n (of size each): capacity doubles, full when n is
 * 0 or a power of two from 64 on. NULL when memory ran out (v is kept). */
static void *grown(struct ctx *c, void *v, size_t n, size_t each)
{
	if (n && (n < 64 || (n & (n - 1))))
		return v;
	void *nv = realloc(v, (n ? n * 2 : 64) * each);
	if (!nv)
		c->oom = true;
	return nv;
}

static uint32_t put_name(struct ctx *c, const char *s, size_t len)
{
	struct ss_plt *p = c->p;
	if (len > SS_PLT_NAME - 1)
		len = SS_PLT_NAME - 1;
	if (p->names_len + len + 1 > p->names_cap) {
		size_t nc = p->names_cap ? p->names_cap * 2 : 4096;
		while (nc < p->names_len + len + 1)
			nc *= 2;
		char *nn = realloc(p->names, nc);
		if (!nn) {
			c->oom = true;
			return UINT32_MAX;
		}
		p->names = nn;
		p->names_cap = nc;
	}
	uint32_t at = (uint32_t)p->names_len;
	memcpy(p->names + at, s, len);
	p->names[at + len] = 0;
	p->names_len += len + 1;
	return at;
}

static int cmp_fsym(const void *a, const void *b)
{
	const struct fsym *x = a, *y = b;
	return x->value < y->value ? -1 : x->value > y->value;
}

/* The function symbols of one symbol table (.dynsym, .symtab) into c->fs. */
static void read_fsyms(struct ctx *c, size_t shstrndx, const char *name)
{
	struct sec t;
	if (!find_sec(c->e, shstrndx, name, &t) || (t.sh.sh_type != SHT_DYNSYM && t.sh.sh_type != SHT_SYMTAB))
		return;
	Elf_Data *d = elf_getdata(t.scn, NULL);
	size_t each = gelf_fsize(c->e, ELF_T_SYM, 1, EV_CURRENT);
	size_t n = d && each ? d->d_size / each : 0;
	for (size_t i = 1; i < n && c->n_fs < MAX_RELOCS && !c->oom; i++) {
		GElf_Sym y;
		if (!gelf_getsym(d, (int)i, &y))
			break;
		int type = GELF_ST_TYPE(y.st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || !y.st_value)
			continue;
		const char *yn = elf_strptr(c->e, t.sh.sh_link, y.st_name);
		if (!yn || !yn[0])
			continue;
		struct fsym *nf = grown(c, c->fs, c->n_fs, sizeof *nf);
		if (!nf)
			return;
		c->fs = nf;
		c->fs[c->n_fs++] = (struct fsym){ y.st_value, yn, y.st_size, GELF_ST_BIND(y.st_info) };
	}
}

static size_t underscores(const char *s)
{
	size_t n = 0;
	while (s[n] == '_')
		n++;
	return n;
}

/* Whether a names the function better than b, by perf's choose_best_symbol():
 * a size, not weak, global, fewer leading underscores, the longer name. */
static bool better(const struct fsym *a, const struct fsym *b)
{
	if ((a->size != 0) != (b->size != 0))
		return a->size != 0;
	if ((a->bind == STB_WEAK) != (b->bind == STB_WEAK))
		return a->bind != STB_WEAK;
	if ((a->bind == STB_GLOBAL) != (b->bind == STB_GLOBAL))
		return a->bind == STB_GLOBAL;
	if (underscores(a->name) != underscores(b->name))
		return underscores(a->name) < underscores(b->name);
	return strlen(a->name) > strlen(b->name);
}

/* The name of the IFUNC whose resolver is at value (an IRELATIVE's addend), as
 * perf's get_ifunc_name() finds it; NULL when no function symbol is there. */
static const char *ifunc_name(struct ctx *c, uint64_t value)
{
	size_t shstrndx;
	if (!c->fs_read && elf_getshdrstrndx(c->e, &shstrndx) == 0) {
		c->fs_read = true;
		read_fsyms(c, shstrndx, ".dynsym");
		read_fsyms(c, shstrndx, ".symtab");
		if (c->n_fs)
			qsort(c->fs, c->n_fs, sizeof *c->fs, cmp_fsym);
	}
	struct fsym key = { .value = value };
	const struct fsym *f = c->n_fs ? bsearch(&key, c->fs, c->n_fs, sizeof *c->fs, cmp_fsym) : NULL;
	if (!f)
		return NULL;
	while (f > c->fs && f[-1].value == value)
		f--;
	const struct fsym *best = f;
	for (; f < c->fs + c->n_fs && f->value == value; f++)
		if (better(f, best))
			best = f;
	return best->name;
}

/* One stub at [lo, lo + size): named by symbol index sym of the dynamic
 * symbols, or an IRELATIVE's by its resolver (ifunc); else by its file offset,
 * as perf does. */
static void add(struct ctx *c, const struct sec *in, uint64_t lo, uint64_t size, uint64_t sym, uint64_t ifunc,
		const char *plain)
{
	struct ss_plt *p = c->p;
	if (c->oom || p->n >= SS_PLT_MAX)
		return;
	char buf[64];
	const char *name = plain;
	size_t len = 0;
	uint32_t is_plain = 1;
	if (!name) {
		GElf_Sym s;
		const char *n = NULL;
		if (sym && c->syms && sym <= INT32_MAX && gelf_getsym(c->syms, (int)sym, &s))
			n = elf_strptr(c->e, c->strndx, s.st_name);
		else if (!sym && ifunc)
			n = ifunc_name(c, ifunc);
		if (n && n[0]) {
			name = n;
			len = strcspn(n, "@"); /* a version, when a tool wrote one into the name */
			is_plain = 0;
		} else {
			snprintf(buf, sizeof buf, "offset_%#llx@plt",
				 (unsigned long long)(in->sh.sh_offset + (lo - in->sh.sh_addr)));
			name = buf;
		}
	}
	if (is_plain)
		len = strlen(name);
	if (!len)
		return;
	struct ss_plt_entry *nv = grown(c, p->v, p->n, sizeof *nv);
	if (!nv)
		return;
	p->v = nv;
	uint32_t at = put_name(c, name, len);
	if (at == UINT32_MAX)
		return;
	p->v[p->n++] = (struct ss_plt_entry){ lo, lo + size, at, is_plain };
}

/* Entries of size es from `from` to the end of section s, named by rels in order. */
static void add_slots(struct ctx *c, const struct sec *s, uint64_t from, uint64_t es, const struct rel *rels,
		      size_t n)
{
	uint64_t end = s->sh.sh_addr + s->sh.sh_size;
	for (size_t i = 0; i < n && from < end && end - from >= es; i++, from += es)
		add(c, s, from, es, rels[i].sym, rels[i].ifunc, NULL);
}

/* The GOT slot a .plt.got entry jumps through: [endbr64] [bnd] jmp *disp32(%rip). */
static bool got_slot(const uint8_t *b, size_t len, uint64_t vaddr, uint64_t *slot)
{
	size_t i = 0;
	if (len >= 4 && b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && b[3] == 0xfa)
		i = 4;
	if (i < len && b[i] == 0xf2)
		i++;
	if (len < i + 6 || b[i] != 0xff || b[i + 1] != 0x25)
		return false;
	int32_t disp;
	memcpy(&disp, b + i + 2, 4);
	*slot = vaddr + i + 6 + (uint64_t)(int64_t)disp;
	return true;
}

static void read_plt_got(struct ctx *c, size_t shstrndx)
{
	struct sec g, rd;
	if (!code_sec(c->e, shstrndx, ".plt.got", &g))
		return;
	Elf_Data *d = elf_getdata(g.scn, NULL);
	if (!d || !d->d_buf)
		return;
	struct rel *rels = NULL;
	size_t nr = find_sec(c->e, shstrndx, ".rela.dyn", &rd) ? read_rels(c, &rd, true, &rels) : 0;
	uint64_t es = entry_size(&g.sh);
	size_t have = d->d_size < g.sh.sh_size ? d->d_size : (size_t)g.sh.sh_size;
	for (size_t at = 0; at + es <= have && c->p->n < SS_PLT_MAX && !c->oom; at += es) {
		uint64_t slot, sym = 0;
		if (!got_slot((const uint8_t *)d->d_buf + at, (size_t)es, g.sh.sh_addr + at, &slot))
			continue;
		struct rel key = { slot, 0, 0 };
		const struct rel *r = nr ? bsearch(&key, rels, nr, sizeof *rels, cmp_rel) : NULL;
		if (r)
			sym = r->sym;
		add(c, &g, g.sh.sh_addr + at, es, sym, 0, NULL);
	}
	free(rels);
}

/* The symbols and names relocation section r refers to (sh_link). */
static void use_symbols(struct ctx *c, const struct sec *r)
{
	Elf_Scn *ss = r->sh.sh_link ? elf_getscn(c->e, r->sh.sh_link) : NULL;
	GElf_Shdr sh;
	if (!ss || !gelf_getshdr(ss, &sh) || (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB) ||
	    !elf_getscn(c->e, sh.sh_link))
		return;
	c->syms = elf_getdata(ss, NULL);
	c->strndx = sh.sh_link;
}

int ss_plt_read(Elf *e, struct ss_plt *p)
{
	memset(p, 0, sizeof *p);
	GElf_Ehdr eh;
	size_t shstrndx;
	if (!e || elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh) || eh.e_machine != EM_X86_64 ||
	    elf_getshdrstrndx(e, &shstrndx) != 0)
		return 0;
	struct ctx c = { .e = e, .p = p };
	struct sec plt, sec, relplt;
	bool have_plt = code_sec(e, shstrndx, ".plt", &plt);
	bool have_sec = code_sec(e, shstrndx, ".plt.sec", &sec);
	bool have_rel = find_sec(e, shstrndx, ".rela.plt", &relplt) || find_sec(e, shstrndx, ".rel.plt", &relplt);
	struct rel *rels = NULL;
	size_t nr = 0;
	if (have_rel) {
		use_symbols(&c, &relplt);
		/* IRELATIVE relocations (no symbol) hold PLT slots too: all count. */
		nr = read_rels(&c, &relplt, false, &rels);
	}
	if (have_sec) {
		if (have_plt)
			add(&c, &plt, plt.sh.sh_addr, plt.sh.sh_size, 0, 0, ".plt");
		add_slots(&c, &sec, sec.sh.sh_addr, entry_size(&sec.sh), rels, nr);
	} else if (have_plt) {
		uint64_t es = entry_size(&plt.sh), from = plt.sh.sh_addr;
		/* A lazy PLT starts with the resolver, one entry long; a .plt with
		 * exactly one entry per relocation has none. */
		if (nr * es != plt.sh.sh_size) {
			add(&c, &plt, from, es < plt.sh.sh_size ? es : plt.sh.sh_size, 0, 0, ".plt");
			from += es;
		}
		add_slots(&c, &plt, from, es, rels, nr);
	}
	free(rels);
	/* .plt.got names come from .rela.dyn, whose symbols are the same dynamic ones. */
	struct sec rd;
	if (!c.syms && find_sec(e, shstrndx, ".rela.dyn", &rd))
		use_symbols(&c, &rd);
	read_plt_got(&c, shstrndx);
	free(c.fs);
	if (p->n)
		qsort(p->v, p->n, sizeof *p->v, cmp_entry);
	/* Sections of a hostile file can overlap: an entry ends where the next
	 * begins (of two at the same start, one is kept), so an address has one. */
	size_t k = 0;
	for (size_t i = 0; i < p->n; i++) {
		if (k && p->v[k - 1].hi > p->v[i].lo)
			p->v[k - 1].hi = p->v[i].lo;
		if (k && p->v[k - 1].lo == p->v[k - 1].hi)
			k--;
		p->v[k++] = p->v[i];
	}
	p->n = k;
	return c.oom ? -1 : 0;
}

static int cmp_holds(const void *key, const void *entry)
{
	uint64_t a = *(const uint64_t *)key;
	const struct ss_plt_entry *e = entry;
	return a < e->lo ? -1 : a >= e->hi;
}

const struct ss_plt_entry *ss_plt_find(const struct ss_plt *p, uint64_t vaddr)
{
	return p->n ? bsearch(&vaddr, p->v, p->n, sizeof *p->v, cmp_holds) : NULL;
}

void ss_plt_name(const struct ss_plt *p, const struct ss_plt_entry *e, char *out, size_t len)
{
	snprintf(out, len, "%s%s", p->names + e->name, e->plain ? "" : "@plt");
}

void ss_plt_free(struct ss_plt *p)
{
	free(p->v);
	free(p->names);
	memset(p, 0, sizeof *p);
}

/*
 * symbolize.c - see symbolize.h. One Dwfl session per mapping, opened on first
 * use and kept for the whole import (the expensive part, reading DWARF, then
 * happens once per file); addresses are translated from the process to the ELF
 * file's virtual addresses through the PT_LOAD segment that maps the recorded
 * file offset, which is right for PIE, non-PIE and shared objects alike.
 *
 * Files are found by our own callbacks, not libdw's standard ones: those ask a
 * debuginfod server by themselves when DEBUGINFOD_URLS is set, with no time
 * limit of ours. Here the local places come first (the recorded path, the debug
 * directories by build id, .gnu_debuglink next to the file), and debuginfod is
 * asked last (debuginfod.c).
 */
#include "symbolize.h"
#include "debuginfod.h"
#include "demangle.h"
#include "plt.h"

#include <dwarf.h>
#include <errno.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>


struct sym_map {
	char *path;            /* with the build id, what the cache is keyed on */
	uint8_t build_id[64];
	size_t build_id_len;
	uint64_t pgoff;
	Dwfl *dwfl;
	Dwfl_Module *mod;
	int64_t load_adjust;  /* ELF vaddr = addr - start + pgoff + load_adjust */
	struct ss_plt plt;    /* the file's PLT stubs, read on first use */
	GElf_Addr plt_bias;   /* the module's bias, taken with them */
	bool plt_read;
	char note[SS_SYM_TEXT + 128];
};

struct ksym {
	uint64_t addr;
	char *name;
};

struct ss_symbolizer {
	char **dirs;
	size_t n_dirs;
	char *debuginfo_path;     /* for libdwfl's build-id search */
	Dwfl_Callbacks cb;
	struct sym_map *maps;
	size_t n_maps, cap_maps;
	struct ksym *ksyms;
	size_t n_ksyms;
	char *ksym_names;         /* every name of ksyms, NUL-terminated, one after another */
	bool ksyms_loaded;
	struct ss_dc *dc;         /* debuginfod, NULL when DEBUGINFOD_URLS is unset */
};

void ss_sym_hex(const uint8_t *id, size_t len, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < len; i++) {
		out[2 * i] = digits[id[i] >> 4];
		out[2 * i + 1] = digits[id[i] & 15];
	}
	out[2 * len] = 0;
}

bool ss_sym_boot_id_matches(const char *boot_id)
{
	char buf[64] = { 0 };
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
	if (!f)
		return false;
	bool ok = fgets(buf, sizeof buf, f) != NULL;
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
	return ok && boot_id && boot_id[0] && strcmp(buf, boot_id) == 0;
}

void ss_sym_readable(struct ss_sym_frame *f)
{
	char buf[SS_SYM_NAME];
	if (f->mangled[0] || !ss_demangle(f->function, buf, sizeof buf))
		return;
	snprintf(f->mangled, sizeof f->mangled, "%s", f->function);
	snprintf(f->function, sizeof f->function, "%s", buf);
}

/* ---- finding files -------------------------------------------------------------- */

static int refuse_find_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			   char **file_name, Elf **elfp)
{
	(void)mod, (void)userdata, (void)modname, (void)base, (void)file_name, (void)elfp;
	return -1; /* every module is reported with its file (dwfl_report_elf) */
}

static bool build_id_matches_raw(const char *path, const uint8_t *id, size_t len);

/* Separate debug info of a module whose file has none: by build id in the debug
 * directories, by .gnu_debuglink beside the file and in them, then debuginfod. */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			  const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
			  char **debuginfo_file_name)
{
	int fd = dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file,
					      debuglink_crc, debuginfo_file_name);
	if (fd >= 0)
		return fd;
	struct ss_symbolizer *s = userdata ? *userdata : NULL;
	const unsigned char *id = NULL;
	GElf_Addr vaddr;
	int idlen = dwfl_module_build_id(mod, &id, &vaddr);
	if (debuglink_file && file_name && s) {
		char dir[4096], cand[8192];
		snprintf(dir, sizeof dir, "%s", file_name);
		char *slash = strrchr(dir, '/');
		if (slash)
			*slash = 0;
		else
			snprintf(dir, sizeof dir, ".");
		for (size_t k = 0; k < s->n_dirs + 2; k++) {
			if (k == 0)
				snprintf(cand, sizeof cand, "%s/%s", dir, debuglink_file);
			else if (k == 1)
				snprintf(cand, sizeof cand, "%s/.debug/%s", dir, debuglink_file);
			else if (s->dirs[k - 2])
				snprintf(cand, sizeof cand, "%s%s/%s", s->dirs[k - 2], dir, debuglink_file);
			else
				continue;
			/* The link names a file; only the one built with this binary counts. */
			if (strcmp(cand, file_name) == 0 || access(cand, R_OK) != 0 ||
			    (idlen > 0 && !build_id_matches_raw(cand, id, (size_t)idlen)))
				continue;
			fd = open(cand, O_RDONLY | O_CLOEXEC);
			if (fd >= 0) {
				*debuginfo_file_name = strdup(cand);
				return fd;
			}
		}
	}
	const char *why;
	const char *path = s && idlen > 0 ? ss_dc_fetch(s->dc, id, (size_t)idlen, false, &why) : NULL;
	if (path && (fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
		*debuginfo_file_name = strdup(path);
		return fd;
	}
	errno = 0;
	return -1;
}

struct ss_symbolizer *ss_sym_new(const char *const *debug_dirs, size_t n_dirs)
{
	elf_version(EV_CURRENT);
	struct ss_symbolizer *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	s->dirs = calloc(n_dirs + 1, sizeof *s->dirs);
	size_t plen = 32;
	for (size_t i = 0; i < n_dirs; i++) {
		s->dirs[s->n_dirs++] = strdup(debug_dirs[i]);
		plen += strlen(debug_dirs[i]) + 1;
	}
	s->dirs[s->n_dirs++] = strdup("/usr/lib/debug");
	/* ":.debug:DIRS" - the file's own dir, its .debug subdir, then ours. */
	s->debuginfo_path = malloc(plen + 32);
	if (s->debuginfo_path) {
		strcpy(s->debuginfo_path, ":.debug");
		for (size_t i = 0; i < s->n_dirs; i++) {
			strcat(s->debuginfo_path, ":");
			strcat(s->debuginfo_path, s->dirs[i] ? s->dirs[i] : "");
		}
	}
	s->cb.find_elf = refuse_find_elf;
	s->cb.find_debuginfo = find_debuginfo;
	s->dc = ss_dc_new();
	s->cb.section_address = dwfl_offline_section_address;
	s->cb.debuginfo_path = &s->debuginfo_path;
	return s;
}

void ss_sym_free(struct ss_symbolizer *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_maps; i++) {
		if (s->maps[i].dwfl)
			dwfl_end(s->maps[i].dwfl);
		ss_plt_free(&s->maps[i].plt);
		free(s->maps[i].path);
	}
	free(s->maps);
	for (size_t i = 0; i < s->n_dirs; i++)
		free(s->dirs[i]);
	free(s->dirs);
	free(s->ksyms);
	free(s->ksym_names);
	free(s->debuginfo_path);
	ss_dc_free(s->dc);
	free(s);
}

/* Build id of an ELF file; returns its length (0 when none or unreadable). */
static size_t file_build_id(const char *path, uint8_t *out, size_t max)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	size_t n = 0;
	if (e) {
		const void *id;
		ssize_t len = dwelf_elf_gnu_build_id(e, &id);
		if (len > 0 && (size_t)len <= max) {
			memcpy(out, id, (size_t)len);
			n = (size_t)len;
		}
		elf_end(e);
	}
	close(fd);
	return n;
}

static bool build_id_matches_raw(const char *path, const uint8_t *want, size_t len)
{
	uint8_t id[64];
	size_t n = file_build_id(path, id, sizeof id);
	return n && n == len && memcmp(id, want, n) == 0;
}

static bool build_id_matches(const char *path, const struct ss_sym_mapping *m)
{
	return build_id_matches_raw(path, m->build_id, m->build_id_len);
}

/* A file that holds the mapping's code or its debug info, by build id, from the
 * debug directories: DIR/.build-id/xx/rest.debug, DIR/xx/rest.debug,
 * DIR/NAME.debug, DIR/NAME. */
static bool find_by_build_id(struct ss_symbolizer *s, const struct ss_sym_mapping *m, char *out, size_t len)
{
	if (!m->build_id_len)
		return false;
	char hex[129];
	ss_sym_hex(m->build_id, m->build_id_len > 64 ? 64 : m->build_id_len, hex);
	const char *base = m->path ? strrchr(m->path, '/') : NULL;
	base = base ? base + 1 : (m->path ? m->path : "");
	for (size_t i = 0; i < s->n_dirs; i++) {
		const char *d = s->dirs[i];
		if (!d)
			continue;
		for (int k = 0; k < 4; k++) {
			switch (k) {
			case 0:
				snprintf(out, len, "%s/.build-id/%.2s/%s.debug", d, hex, hex + 2);
				break;
			case 1:
				snprintf(out, len, "%s/%.2s/%s.debug", d, hex, hex + 2);
				break;
			case 2:
				snprintf(out, len, "%s/%s.debug", d, base);
				break;
			default:
				snprintf(out, len, "%s/%s", d, base);
				break;
			}
			if (access(out, R_OK) == 0 && build_id_matches(out, m))
				return true;
		}
	}
	return false;
}

/* The vDSO of this machine's kernel as a file (a memfd holding the image the
 * kernel mapped into this process) when its build id is the recorded one, else
 * -1 with why. It is not a file anywhere, but the same kernel maps the same
 * image into every process. */
static int vdso_file(const struct ss_sym_mapping *m, char *why, size_t len)
{
	const unsigned char *base = (const unsigned char *)getauxval(AT_SYSINFO_EHDR);
	if (!m->build_id_len) {
		snprintf(why, len, "[vdso]: no build id recorded");
		return -1;
	}
	if (!base) {
		snprintf(why, len, "[vdso]: this process has none");
		return -1;
	}
	/* The image ends with its section headers (or its last loaded byte). */
	GElf_Ehdr eh;
	Elf *e = elf_memory((char *)(uintptr_t)base, 4096);
	size_t size = 0;
	if (e && gelf_getehdr(e, &eh)) {
		size = (size_t)(eh.e_shoff + (uint64_t)eh.e_shnum * eh.e_shentsize);
		for (size_t i = 0; i < eh.e_phnum; i++) {
			GElf_Phdr ph;
			if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD && ph.p_offset + ph.p_filesz > size)
				size = (size_t)(ph.p_offset + ph.p_filesz);
		}
	}
	if (e)
		elf_end(e);
	if (!size || size > (64u << 20)) {
		snprintf(why, len, "[vdso]: unreadable image");
		return -1;
	}
	const void *id = NULL;
	e = elf_memory((char *)(uintptr_t)base, size);
	ssize_t idlen = e ? dwelf_elf_gnu_build_id(e, &id) : -1;
	bool same = idlen > 0 && (size_t)idlen == m->build_id_len && memcmp(id, m->build_id, (size_t)idlen) == 0;
	if (e)
		elf_end(e);
	if (!same) {
		snprintf(why, len, "[vdso]: recorded under another kernel (build id differs)");
		return -1;
	}
	int fd = memfd_create("vdso", MFD_CLOEXEC);
	if (fd < 0 || write(fd, base, size) != (ssize_t)size || lseek(fd, 0, SEEK_SET) != 0) {
		snprintf(why, len, "[vdso]: memfd: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static int64_t load_adjust(Dwfl_Module *mod, uint64_t pgoff)
{
	GElf_Addr bias;
	Elf *e = dwfl_module_getelf(mod, &bias);
	size_t n;
	if (!e || elf_getphdrnum(e, &n) != 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (pgoff >= (ph.p_offset & ~(ph.p_align ? ph.p_align - 1 : 0)) &&
		    pgoff < ph.p_offset + ph.p_filesz)
			return (int64_t)(ph.p_vaddr - ph.p_offset) + (int64_t)bias;
	}
	return (int64_t)bias;
}

/* One session per file (path, build id, mapped offset): the same library in
 * several recordings, or mapped again, is opened once. */
static struct sym_map *open_map(struct ss_symbolizer *s, const struct ss_sym_mapping *m)
{
	const char *path = m->path ? m->path : "";
	size_t blen = m->build_id_len > 64 ? 64 : m->build_id_len;
	for (size_t i = 0; i < s->n_maps; i++)
		if (s->maps[i].pgoff == m->pgoff && s->maps[i].build_id_len == blen &&
		    (!blen || memcmp(s->maps[i].build_id, m->build_id, blen) == 0) &&
		    strcmp(s->maps[i].path, path) == 0)
			return &s->maps[i];
	if (s->n_maps == s->cap_maps) {
		size_t nc = s->cap_maps ? s->cap_maps * 2 : 16;
		struct sym_map *nm = realloc(s->maps, nc * sizeof *nm);
		if (!nm)
			return NULL;
		s->maps = nm;
		s->cap_maps = nc;
	}
	struct sym_map *sm = &s->maps[s->n_maps];
	memset(sm, 0, sizeof *sm);
	if (!(sm->path = strdup(path)))
		return NULL;
	s->n_maps++;
	if (blen)
		memcpy(sm->build_id, m->build_id, blen);
	sm->build_id_len = blen;
	sm->pgoff = m->pgoff;
	char found[4096];
	const char *use = NULL;
	int use_fd = -1;
	bool exists = m->path && m->path[0] == '/' && access(m->path, R_OK) == 0;
	if (m->path && strcmp(m->path, "[vdso]") == 0) {
		use_fd = vdso_file(m, sm->note, sizeof sm->note);
		if (use_fd < 0)
			return sm;
		use = "[vdso]";
	} else if (exists && (build_id_matches(m->path, m) || !m->build_id_len)) {
		use = m->path;
		if (!m->build_id_len)
			snprintf(sm->note, sizeof sm->note, "no build id recorded: %.200s used unchecked", m->path);
	} else if (find_by_build_id(s, m, found, sizeof found)) {
		use = found;
	} else {
		/* Last, the debuginfod servers: the binary, else its debug info (which
		 * holds the symbols and the same addresses). */
		const char *why = "", *why2 = "";
		use = ss_dc_fetch(s->dc, m->build_id, m->build_id_len, true, &why);
		if (!use)
			use = ss_dc_fetch(s->dc, m->build_id, m->build_id_len, false, &why2);
		if (use && !build_id_matches(use, m))
			use = NULL, why2 = "debuginfod: the file it sent has another build id";
		if (!use) {
			snprintf(sm->note, sizeof sm->note, "%s: %.160s%s%.80s",
				 exists ? "build-id mismatch" : "file not found", m->path ? m->path : "?",
				 why2[0] ? "; " : why[0] ? "; " : "", why2[0] ? why2 : why);
			return sm;
		}
	}
	sm->dwfl = dwfl_begin(&s->cb);
	if (!sm->dwfl) {
		snprintf(sm->note, sizeof sm->note, "libdw: %s", dwfl_errmsg(-1));
		if (use_fd >= 0)
			close(use_fd);
		return sm;
	}
	dwfl_report_begin(sm->dwfl);
	/* libdw owns use_fd from here (closed with the session). */
	sm->mod = dwfl_report_elf(sm->dwfl, m->path ? m->path : use, use, use_fd, 0, false);
	dwfl_report_end(sm->dwfl, NULL, NULL);
	if (!sm->mod) {
		snprintf(sm->note, sizeof sm->note, "libdw: %.120s: %.100s", use, dwfl_errmsg(-1));
		return sm;
	}
	/* The find_debuginfo callback gets this back as its userdata. */
	void **ud = NULL;
	dwfl_module_info(sm->mod, &ud, NULL, NULL, NULL, NULL, NULL, NULL);
	if (ud)
		*ud = s;
	sm->load_adjust = load_adjust(sm->mod, m->pgoff);
	return sm;
}

static void copy_n(char *dst, size_t n, const char *src)
{
	snprintf(dst, n, "%.*s", (int)(n - 1), src ? src : "");
}
#define copy(dst, src) copy_n((dst), sizeof(dst), (src))

/* A function's name: its linkage (mangled) name demangled when it has one, so
 * C++ methods and Rust paths come out whole, else the DWARF name. */
static void die_name(Dwarf_Die *d, struct ss_sym_frame *f)
{
	Dwarf_Attribute a;
	const char *link = dwarf_formstring(dwarf_attr_integrate(d, DW_AT_linkage_name, &a));
	if (!link)
		link = dwarf_formstring(dwarf_attr_integrate(d, DW_AT_MIPS_linkage_name, &a));
	if (link && ss_demangle(link, f->function, sizeof f->function)) {
		copy(f->mangled, link);
		return;
	}
	copy(f->function, dwarf_diename(d));
	ss_sym_readable(f);
}

static bool is_function_scope(Dwarf_Die *d)
{
	int tag = dwarf_tag(d);
	return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine;
}

/* Function names and positions from DWARF. dwarf_getscopes() finds the
 * innermost function-like DIE at the address; dwarf_getscopes_die() then gives
 * its physical containers, i.e. the functions it was inlined into, up to the
 * subprogram that holds the code. */
static bool from_dwarf(Dwfl_Module *mod, GElf_Addr vaddr, struct ss_sym_result *out)
{
	Dwarf_Addr bias;
	Dwarf_Die *cu = dwfl_module_addrdie(mod, vaddr, &bias);
	if (!cu)
		return false;
	Dwarf_Die *scopes = NULL;
	int n = dwarf_getscopes(cu, vaddr - bias, &scopes);
	int first = -1;
	for (int i = 0; i < n && first < 0; i++)
		if (is_function_scope(&scopes[i]))
			first = i;
	if (first < 0) {
		free(scopes);
		return false;
	}
	Dwarf_Die *chain = NULL;
	int m = dwarf_getscopes_die(&scopes[first], &chain);
	if (m <= 0) {
		free(chain);
		chain = NULL;
		m = 0;
	}
	/* Innermost first: the function-like DIEs up to and including a subprogram. */
	Dwarf_Die fns[SS_SYM_MAX_INLINE];
	int k = 0;
	if (m == 0)
		fns[k++] = scopes[first];
	for (int i = 0; i < m && k < SS_SYM_MAX_INLINE; i++) {
		if (!is_function_scope(&chain[i]))
			continue;
		fns[k++] = chain[i];
		if (dwarf_tag(&chain[i]) == DW_TAG_subprogram)
			break;
	}
	free(chain);
	free(scopes);
	Dwarf_Files *files = NULL;
	size_t nfiles = 0;
	dwarf_getsrcfiles(cu, &files, &nfiles);
	out->n = (size_t)k;
	for (int j = 0; j < k; j++) {
		/* out->f[0] is the outermost: reverse the order. */
		struct ss_sym_frame *f = &out->f[k - 1 - j];
		die_name(&fns[j], f);
		if (j == 0) {
			Dwfl_Line *line = dwfl_module_getsrc(mod, vaddr);
			int ln = 0;
			const char *src = line ? dwfl_lineinfo(line, NULL, &ln, NULL, NULL, NULL) : NULL;
			copy(f->file, src);
			f->line = ln;
		} else {
			/* The position in this function is where the inner one was inlined. */
			Dwarf_Attribute a;
			Dwarf_Word cf = 0, cl = 0;
			if (dwarf_formudata(dwarf_attr(&fns[j - 1], DW_AT_call_file, &a), &cf) == 0 && files &&
			    cf < nfiles)
				copy(f->file, dwarf_filesrc(files, cf, NULL, NULL));
			if (dwarf_formudata(dwarf_attr(&fns[j - 1], DW_AT_call_line, &a), &cl) == 0)
				f->line = (int)cl;
		}
	}
	return true;
}

/* A PLT stub (plt.h): code the linker made, which neither DWARF nor a symbol
 * names; "puts@plt" as perf says, the mangled form kept for C++ and Rust. */
static bool from_plt(struct sym_map *sm, GElf_Addr vaddr, struct ss_sym_result *out)
{
	if (!sm->plt_read) {
		sm->plt_read = true;
		ss_plt_read(dwfl_module_getelf(sm->mod, &sm->plt_bias), &sm->plt);
	}
	if (!sm->plt.n)
		return false;
	const struct ss_plt_entry *e = ss_plt_find(&sm->plt, vaddr - sm->plt_bias);
	if (!e)
		return false;
	struct ss_sym_frame *f = &out->f[0];
	const char *sym = sm->plt.names + e->name;
	char dem[SS_SYM_NAME];
	if (!e->plain && ss_demangle(sym, dem, sizeof dem)) {
		snprintf(f->function, sizeof f->function, "%.*s@plt", (int)(sizeof f->function - 5), dem);
		snprintf(f->mangled, sizeof f->mangled, "%s@plt", sym);
	} else {
		ss_plt_name(&sm->plt, e, f->function, sizeof f->function);
	}
	if (!out->note[0])
		copy(out->note, "PLT stub: made by the linker, no symbol or debug info");
	return true;
}

void ss_sym_user(struct ss_symbolizer *s, int64_t key, const struct ss_sym_mapping *m, uint64_t addr,
		 struct ss_sym_result *out)
{
	memset(out, 0, sizeof *out);
	out->n = 1;
	(void)key;
	struct sym_map *sm = open_map(s, m);
	if (!sm) {
		copy(out->note, "out of memory");
		return;
	}
	copy(out->note, sm->note);
	if (!sm->mod)
		return;
	GElf_Addr vaddr = (GElf_Addr)((int64_t)(addr - m->start + m->pgoff) + sm->load_adjust);
	if (from_plt(sm, vaddr, out) || from_dwarf(sm->mod, vaddr, out))
		return;
	GElf_Off off;
	GElf_Sym sym;
	const char *name = dwfl_module_addrinfo(sm->mod, vaddr, &off, &sym, NULL, NULL, NULL);
	copy(out->f[0].function, name);
	ss_sym_readable(&out->f[0]);
	if (!out->note[0])
		copy(out->note, name ? "no debug info" : "no symbol");
}

static int cmp_ksym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static bool ks_space(char c)
{
	return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r';
}

static int ks_hex(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* One line "ADDR TYPE NAME [MODULE]": a code symbol's address and the offset
 * of its name (at most 255 bytes, as "%llx %c %255s" read it) in the names;
 * false for any other line. */
static bool ks_line(const char *p, const char *end, uint64_t *addr, const char **name, size_t *len)
{
	while (p < end && ks_space(*p))
		p++;
	if (end - p > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X') && ks_hex(p[2]) >= 0)
		p += 2;
	uint64_t a = 0;
	const char *digits = p;
	for (; p < end && ks_hex(*p) >= 0; p++)
		a = a << 4 | (uint64_t)ks_hex(*p);
	if (p == digits || a == 0)
		return false;
	while (p < end && ks_space(*p))
		p++;
	if (p == end || (*p != 't' && *p != 'T' && *p != 'w' && *p != 'W'))
		return false;
	p++;
	while (p < end && ks_space(*p))
		p++;
	const char *n = p;
	while (p < end && !ks_space(*p) && p - n < 255)
		p++;
	if (p == n)
		return false;
	*addr = a;
	*name = n;
	*len = (size_t)(p - n);
	return true;
}

/* /proc/kallsyms is 5 MB of text (120k code symbols) generated as it is read:
 * read in 64 KiB pieces, not stdio's 4 KiB (each read() walks the kernel's
 * table to where the last one stopped), and parsed here, the names copied
 * into one block: a third of what fgets, sscanf and a strdup per symbol took
 * (85 ms on this VM), at the start of an import where the inserting thread
 * waits for the first rows. The symbols, their order and names are what that
 * gave (a name cut at 255 bytes). */
static void load_kallsyms(struct ss_symbolizer *s)
{
	s->ksyms_loaded = true;
	int fd = open("/proc/kallsyms", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	enum { PIECE = 64 << 10, LINE = 1024 };
	char *buf = malloc(PIECE + LINE);
	size_t have = 0, cap = 0, nlen = 0, ncap = 0;
	uint32_t *offs = NULL; /* names' offsets until the names stop moving */
	bool oom = !buf;
	for (ssize_t got = 1; !oom && got > 0;) {
		got = read(fd, buf + have, PIECE);
		if (got < 0 && errno == EINTR) {
			got = 1;
			continue;
		}
		if (got > 0)
			have += (size_t)got;
		char *p = buf, *end = buf + have;
		for (;;) {
			char *nl = memchr(p, '\n', (size_t)(end - p));
			if (!nl && got > 0 && end - p < LINE)
				break; /* the rest of the line comes with the next read */
			char *le = nl ? nl : end;
			uint64_t a;
			const char *name;
			size_t len;
			if (ks_line(p, le, &a, &name, &len)) {
				if (s->n_ksyms == cap) {
					cap = cap ? cap * 2 : 4096;
					struct ksym *nk = realloc(s->ksyms, cap * sizeof *nk);
					uint32_t *no = realloc(offs, cap * sizeof *no);
					if (nk)
						s->ksyms = nk;
					if (no)
						offs = no;
					if (!nk || !no) {
						oom = true;
						break;
					}
				}
				if (nlen + len + 1 > ncap) {
					size_t nc = ncap ? ncap * 2 : 1 << 20;
					char *nn = nc <= UINT32_MAX ? realloc(s->ksym_names, nc) : NULL;
					if (!nn) {
						oom = true;
						break;
					}
					s->ksym_names = nn;
					ncap = nc;
				}
				memcpy(s->ksym_names + nlen, name, len);
				s->ksym_names[nlen + len] = 0;
				s->ksyms[s->n_ksyms] = (struct ksym){ a, NULL };
				offs[s->n_ksyms++] = (uint32_t)nlen;
				nlen += len + 1;
			}
			if (!nl) {
				p = end;
				break;
			}
			p = nl + 1;
		}
		have = (size_t)(end - p);
		memmove(buf, p, have);
	}
	close(fd);
	free(buf);
	for (size_t i = 0; i < s->n_ksyms; i++)
		s->ksyms[i].name = s->ksym_names + offs[i];
	free(offs);
	/* Nearly always in address order already; a stable sort otherwise, as
	 * glibc's qsort sorted them (its merge sort keeps equal addresses in file
	 * order, and the lookup takes the last). */
	bool sorted = true;
	for (size_t i = 1; i < s->n_ksyms && sorted; i++)
		sorted = s->ksyms[i - 1].addr <= s->ksyms[i].addr;
	if (!sorted)
		qsort(s->ksyms, s->n_ksyms, sizeof *s->ksyms, cmp_ksym);
}

void ss_sym_kernel(struct ss_symbolizer *s, uint64_t addr, struct ss_sym_result *out)
{
	memset(out, 0, sizeof *out);
	out->n = 1;
	if (!s->ksyms_loaded)
		load_kallsyms(s);
	size_t lo = 0, hi = s->n_ksyms;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->ksyms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0) {
		copy(out->f[0].function, "[kernel]");
		copy(out->note, s->n_ksyms ? "below the first kernel symbol" : "kallsyms unreadable or hidden");
		return;
	}
	copy(out->f[0].function, s->ksyms[lo - 1].name);
}

bool ss_sym_debuginfod_available(void)
{
	return ss_dc_available();
}

const char *ss_sym_debuginfod_summary(const struct ss_symbolizer *s)
{
	return ss_dc_summary(s->dc);
}

/*
 * proc_maps.c - the process's executable mappings with each file's GNU build id,
 * so an importer on another machine can find the exact binaries and debug files.
 *
 * Build ids are read with plain pread()s of the ELF header, program headers and
 * PT_NOTE segments (section headers' SHT_NOTE as a fallback for files whose notes
 * are not in a loaded segment). Every offset and size comes from the file, so
 * every one is bounded before use: a truncated or hostile file yields "no build
 * id", never a crash or a huge allocation. Results are cached by (device, inode,
 * path) because the writer asks at every segment start.
 */
#include "sampler-private.h"

#include <elf.h>
#include <link.h>
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define MAX_PHNUM 512
#define MAX_SHNUM 4096
#define MAX_NOTES 65536

/* ---- build id ------------------------------------------------------------------- */

static int pread_full(int fd, void *buf, size_t n, uint64_t off)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = pread(fd, (char *)buf + got, n - got, (off_t)(off + got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

static uint32_t rd32e(const unsigned char *p, int swap)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return swap ? __builtin_bswap32(v) : v;
}

/* Scans one note area for NT_GNU_BUILD_ID owned by "GNU". */
static uint32_t scan_notes(const unsigned char *b, size_t n, int swap, uint8_t out[20])
{
	size_t off = 0;
	while (n - off >= 12) {
		uint32_t namesz = rd32e(b + off, swap), descsz = rd32e(b + off + 4, swap);
		uint32_t type = rd32e(b + off + 8, swap);
		off += 12;
		/* Notes are 4-aligned in practice even in 8-aligned segments (gcc/ld). */
		size_t nal = ((size_t)namesz + 3) & ~(size_t)3;
		size_t dal = ((size_t)descsz + 3) & ~(size_t)3;
		if (nal > n - off)
			return 0;
		const unsigned char *name = b + off;
		off += nal;
		if (dal > n - off)
			return 0;
		if (type == NT_GNU_BUILD_ID && namesz == 4 && memcmp(name, "GNU", 4) == 0 &&
		    descsz > 0) {
			uint32_t l = descsz > 20 ? 20 : descsz;
			memcpy(out, b + off, l);
			return l;
		}
		off += dal;
	}
	return 0;
}

static uint32_t scan_area(int fd, uint64_t off, uint64_t size, int swap, uint8_t out[20])
{
	if (size < 12 || size > MAX_NOTES)
		return 0;
	unsigned char *b = malloc(size);
	if (!b)
		return 0;
	uint32_t l = pread_full(fd, b, size, off) == 0 ? scan_notes(b, size, swap, out) : 0;
	free(b);
	return l;
}

/* Program and section headers, 32 or 64 bit, normalized to these. */
struct hdrs {
	uint64_t phoff, shoff;
	uint32_t phnum, shnum, phentsize, shentsize;
	int is64, swap;
};

static uint64_t rdw(const unsigned char *p, int is64, int swap)
{
	if (!is64)
		return rd32e(p, swap);
	uint64_t v;
	memcpy(&v, p, 8);
	return swap ? __builtin_bswap64(v) : v;
}

static uint16_t rd16e(const unsigned char *p, int swap)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return swap ? __builtin_bswap16(v) : v;
}

static uint32_t build_id_of_fd(int fd, uint8_t out[20])
{
	unsigned char eh[sizeof(Elf64_Ehdr)];
	if (pread_full(fd, eh, sizeof(Elf32_Ehdr), 0) != 0 || memcmp(eh, ELFMAG, SELFMAG) != 0)
		return 0;
	struct hdrs h;
	h.is64 = eh[EI_CLASS] == ELFCLASS64;
	if (!h.is64 && eh[EI_CLASS] != ELFCLASS32)
		return 0;
	if (h.is64 && pread_full(fd, eh, sizeof(Elf64_Ehdr), 0) != 0)
		return 0;
	int little = 1;
	little = *(unsigned char *)&little;
	h.swap = (eh[EI_DATA] == ELFDATA2LSB) != little;
	if (h.is64) {
		h.phoff = rdw(eh + offsetof(Elf64_Ehdr, e_phoff), 1, h.swap);
		h.shoff = rdw(eh + offsetof(Elf64_Ehdr, e_shoff), 1, h.swap);
		h.phentsize = rd16e(eh + offsetof(Elf64_Ehdr, e_phentsize), h.swap);
		h.phnum = rd16e(eh + offsetof(Elf64_Ehdr, e_phnum), h.swap);
		h.shentsize = rd16e(eh + offsetof(Elf64_Ehdr, e_shentsize), h.swap);
		h.shnum = rd16e(eh + offsetof(Elf64_Ehdr, e_shnum), h.swap);
	} else {
		h.phoff = rdw(eh + offsetof(Elf32_Ehdr, e_phoff), 0, h.swap);
		h.shoff = rdw(eh + offsetof(Elf32_Ehdr, e_shoff), 0, h.swap);
		h.phentsize = rd16e(eh + offsetof(Elf32_Ehdr, e_phentsize), h.swap);
		h.phnum = rd16e(eh + offsetof(Elf32_Ehdr, e_phnum), h.swap);
		h.shentsize = rd16e(eh + offsetof(Elf32_Ehdr, e_shentsize), h.swap);
		h.shnum = rd16e(eh + offsetof(Elf32_Ehdr, e_shnum), h.swap);
	}
	size_t phsz = h.is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);
	size_t shsz = h.is64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr);
	unsigned char ent[sizeof(Elf64_Shdr)];

	if (h.phentsize >= phsz && h.phnum <= MAX_PHNUM) {
		for (uint32_t i = 0; i < h.phnum; i++) {
			if (pread_full(fd, ent, phsz, h.phoff + (uint64_t)i * h.phentsize) != 0)
				break;
			uint32_t type = rd32e(ent, h.swap);
			if (type != PT_NOTE)
				continue;
			uint64_t off = h.is64 ? rdw(ent + offsetof(Elf64_Phdr, p_offset), 1, h.swap)
					      : rdw(ent + offsetof(Elf32_Phdr, p_offset), 0, h.swap);
			uint64_t sz = h.is64 ? rdw(ent + offsetof(Elf64_Phdr, p_filesz), 1, h.swap)
					     : rdw(ent + offsetof(Elf32_Phdr, p_filesz), 0, h.swap);
			uint32_t l = scan_area(fd, off, sz, h.swap, out);
			if (l)
				return l;
		}
	}
	if (h.shentsize >= shsz && h.shnum <= MAX_SHNUM) {
		for (uint32_t i = 0; i < h.shnum; i++) {
			if (pread_full(fd, ent, shsz, h.shoff + (uint64_t)i * h.shentsize) != 0)
				break;
			uint32_t type = rd32e(ent + offsetof(Elf64_Shdr, sh_type), h.swap);
			if (type != SHT_NOTE)
				continue;
			uint64_t off = h.is64 ? rdw(ent + offsetof(Elf64_Shdr, sh_offset), 1, h.swap)
					      : rdw(ent + offsetof(Elf32_Shdr, sh_offset), 0, h.swap);
			uint64_t sz = h.is64 ? rdw(ent + offsetof(Elf64_Shdr, sh_size), 1, h.swap)
					     : rdw(ent + offsetof(Elf32_Shdr, sh_size), 0, h.swap);
			uint32_t l = scan_area(fd, off, sz, h.swap, out);
			if (l)
				return l;
		}
	}
	return 0;
}

/* ---- cache ---------------------------------------------------------------------- */

#define CACHE_SIZE 256

struct bid_entry {
	uint64_t dev, ino;
	char *path;
	uint8_t len;
	uint8_t id[20];
};

static struct bid_entry cache[CACHE_SIZE];
static uint32_t cache_next; /* round-robin replacement once full */

SS_INTERNAL void ss_build_id_cache_clear(void)
{
	for (uint32_t i = 0; i < CACHE_SIZE; i++) {
		free(cache[i].path);
		cache[i].path = NULL;
	}
	cache_next = 0;
}

SS_INTERNAL uint32_t ss_build_id_lookup(const char *path, uint64_t dev, uint64_t ino,
					uint8_t out[20])
{
	/* A deleted file's path may name a different file now. */
	if (strstr(path, " (deleted)"))
		return 0;
	if (!ino) {
		struct stat st;
		if (stat(path, &st) != 0)
			return 0;
		dev = st.st_dev;
		ino = st.st_ino;
	}
	for (uint32_t i = 0; i < CACHE_SIZE; i++) {
		struct bid_entry *e = &cache[i];
		if (e->path && e->ino == ino && e->dev == dev && strcmp(e->path, path) == 0) {
			memcpy(out, e->id, e->len);
			return e->len;
		}
	}
	uint32_t len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd >= 0) {
		struct stat st;
		/* Only a regular file is worth reading, and only the one that is mapped. */
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_ino == ino)
			len = build_id_of_fd(fd, out);
		close(fd);
	}
	struct bid_entry *e = &cache[cache_next];
	cache_next = (cache_next + 1) % CACHE_SIZE;
	free(e->path);
	e->path = strdup(path);
	e->dev = dev;
	e->ino = ino;
	e->len = (uint8_t)len;
	memcpy(e->id, out, len);
	return len;
}

/* The build id of the vDSO the kernel mapped into this process, read from that
 * mapping (the kernel's own image: complete and trusted), so an importer can tell
 * whether its kernel's vDSO is the same one. */
static uint32_t vdso_build_id(uint8_t out[20])
{
	const unsigned char *base = (const unsigned char *)getauxval(AT_SYSINFO_EHDR);
	if (!base || memcmp(base, ELFMAG, SELFMAG) != 0 || base[EI_CLASS] != ELFCLASS64)
		return 0;
	Elf64_Ehdr eh;
	memcpy(&eh, base, sizeof eh);
	if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum > 64)
		return 0;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;
		memcpy(&ph, base + eh.e_phoff + i * sizeof ph, sizeof ph);
		if (ph.p_type != PT_NOTE || ph.p_filesz > MAX_NOTES)
			continue;
		uint32_t l = scan_notes(base + ph.p_offset, ph.p_filesz, 0, out);
		if (l)
			return l;
	}
	return 0;
}

/* ---- build ids of loaded objects, from memory ----------------------------------- */

/* The objects the loader mapped into this process carry their build id in a
 * PT_NOTE inside a readable PT_LOAD segment: read there, it costs no system
 * call, where opening and reading each file cost ~40 us a mapping on this VM
 * (half of the first segment's set-up). It is also the id of the code that is
 * mapped, whatever has since happened to the path. Mappings outside every
 * object (mmap'd by the program itself) are still read from their file. */
#define MEM_BIDS 256

struct mem_bid {
	uint64_t lo, hi; /* the object's PT_LOAD span, page-rounded */
	uint8_t len;
	uint8_t id[20];
};

struct mem_bids {
	struct mem_bid v[MEM_BIDS];
	uint32_t n;
};

static int collect_bid(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct mem_bids *b = arg;
	if (b->n == MEM_BIDS)
		return 1;
	uint64_t lo = UINT64_MAX, hi = 0;
	struct mem_bid e = {0};
	for (int pass = 0; pass < 2; pass++) {
		for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
			const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
			if (pass == 0 && ph->p_type == PT_LOAD) {
				uint64_t a = info->dlpi_addr + ph->p_vaddr;
				if (a < lo)
					lo = a;
				if (a + ph->p_memsz > hi)
					hi = a + ph->p_memsz;
			}
			if (pass == 1 && ph->p_type == PT_NOTE && !e.len && ph->p_filesz >= 12 &&
			    ph->p_filesz <= MAX_NOTES) {
				/* Read only where a readable PT_LOAD maps it from the file. */
				int mapped = 0;
				for (ElfW(Half) j = 0; j < info->dlpi_phnum && !mapped; j++) {
					const ElfW(Phdr) *l = &info->dlpi_phdr[j];
					mapped = l->p_type == PT_LOAD && (l->p_flags & PF_R) &&
						 ph->p_vaddr >= l->p_vaddr &&
						 ph->p_vaddr + ph->p_filesz <= l->p_vaddr + l->p_filesz;
				}
				if (mapped)
					e.len = (uint8_t)scan_notes((const unsigned char *)(uintptr_t)
								    (info->dlpi_addr + ph->p_vaddr),
								    ph->p_filesz, 0, e.id);
			}
		}
	}
	if (e.len && hi > lo) {
		e.lo = lo & ~(uint64_t)4095;
		e.hi = (hi + 4095) & ~(uint64_t)4095;
		b->v[b->n++] = e;
	}
	return 0;
}

/* The build id of the loaded object that holds [start, end), 0 when none does. */
static uint32_t mem_build_id(const struct mem_bids *b, uint64_t start, uint64_t end, uint8_t out[20])
{
	for (uint32_t i = 0; b && i < b->n; i++) {
		if (b->v[i].lo <= start && end <= b->v[i].hi) {
			memcpy(out, b->v[i].id, b->v[i].len);
			return b->v[i].len;
		}
	}
	return 0;
}

/* ---- /proc/self/maps ------------------------------------------------------------ */

static void maps_emit_at(const struct ss_sample_sink *sink, uint64_t ts);

SS_INTERNAL void ss_proc_maps_emit(const struct ss_sample_sink *sink)
{
	maps_emit_at(sink, 0);
}

static int first_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs)
		*(unsigned long long *)arg = info->dlpi_adds * 1000003ull + info->dlpi_subs;
	return 1; /* the counters are the same in every entry: one is enough */
}

/* dlopen() and dlclose() of this process (the loader's counters changed since the
 * last call): the executable mappings again, stamped now, so code loaded later is
 * symbolized whatever the sampler (perf's MMAP2 records cover only the threads it
 * follows; the timer fallback has none). Writer thread, once per cycle: one
 * dl_iterate_phdr step. */
SS_INTERNAL void ss_proc_maps_watch(const struct ss_sample_sink *sink)
{
	static unsigned long long last;
	if (ss_target_pid())
		return; /* another process: its MMAP2 records are all there is */
	unsigned long long now = 0;
	dl_iterate_phdr(first_object, &now);
	if (!last) {
		last = now; /* the segment's own snapshot covers the present */
		return;
	}
	if (now != last) {
		last = now;
		maps_emit_at(sink, ss_now());
	}
}

static void maps_emit_at(const struct ss_sample_sink *sink, uint64_t ts)
{
	char mpath[64];
	FILE *f = ss_target_proc_path(mpath, sizeof mpath, "maps") == 0 ? fopen(mpath, "re") : NULL;
	if (!f)
		return;
	/* procfs says 1 KiB blocks, and stdio would read the list in that many
	 * system calls (8-10 for a small program): 32 KiB takes it in one or two. */
	char *iobuf = malloc(32768);
	if (iobuf)
		setvbuf(f, iobuf, _IOFBF, 32768);
	/* Our own process: the loaded objects' ids from memory (another's are read
	 * from its files). */
	struct mem_bids *mb = NULL;
	if (!ss_target_pid() && (mb = malloc(sizeof *mb)) != NULL) {
		mb->n = 0;
		dl_iterate_phdr(collect_bid, mb);
	}
	char *line = NULL;
	size_t cap = 0;
	while (getline(&line, &cap, f) > 0) {
		unsigned long long start, end, pgoff, ino;
		unsigned int maj, mnr;
		char perms[8];
		int pathpos = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &pgoff,
			   &maj, &mnr, &ino, &pathpos) < 7 || !pathpos)
			continue;
		if (strlen(perms) < 4 || perms[2] != 'x')
			continue;
		char *path = line + pathpos;
		path[strcspn(path, "\n")] = 0;
		/* File-backed code, plus the vDSO, whose frames show up in samples too. */
		int vdso = strcmp(path, "[vdso]") == 0;
		if (path[0] != '/' && !vdso)
			continue;
		struct ss_mapping m = {
			.ts = ts,
			.start = start,
			.end = end,
			.pgoff = pgoff,
			.prot = (perms[0] == 'r' ? 1u : 0u) | (perms[1] == 'w' ? 2u : 0u) | 4u,
			.path = path,
		};
		m.build_id_len = vdso ? (uint8_t)vdso_build_id(m.build_id)
				      : (uint8_t)mem_build_id(mb, start, end, m.build_id);
		if (!vdso && !m.build_id_len)
			m.build_id_len = (uint8_t)ss_build_id_lookup(path, makedev(maj, mnr), ino,
								     m.build_id);
		sink->mapping(sink->ctx, &m);
	}
	free(mb);
	free(line);
	fclose(f);
	free(iobuf);
}

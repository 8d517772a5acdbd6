/*
 * record_program.c - what CMD is before it runs: the file execvp would pick,
 * whether the loader will honour LD_PRELOAD for it (a dynamic ELF with an
 * interpreter, not set-id for us), and where our preload shim is.
 */
#include "record-private.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int find_in_path(const char *cmd, char *out, size_t len)
{
	if (strchr(cmd, '/')) {
		if (snprintf(out, len, "%s", cmd) >= (int)len)
			return errno = ENAMETOOLONG, -1;
		return access(out, X_OK) == 0 ? 0 : -1;
	}
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	int err = ENOENT;
	while (*path) {
		size_t n = strcspn(path, ":");
		int w = snprintf(out, len, "%.*s%s%s", (int)n, path, n ? "/" : "./", cmd);
		path += n + (path[n] == ':');
		if (w < 0 || (size_t)w >= len)
			continue;
		struct stat st;
		if (stat(out, &st) == 0 && S_ISREG(st.st_mode)) {
			if (access(out, X_OK) == 0)
				return 0;
			err = EACCES;
		}
	}
	errno = err;
	return -1;
}

/* Reads the ELF program headers: dynamic when one is PT_INTERP. */
static enum ss_prog_kind elf_kind(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return SS_PROG_UNKNOWN;
	Elf64_Ehdr eh;
	enum ss_prog_kind k = SS_PROG_UNKNOWN;
	if (pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh && !memcmp(eh.e_ident, ELFMAG, SELFMAG) &&
	    eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_phentsize == sizeof(Elf64_Phdr) &&
	    eh.e_phnum > 0 && eh.e_phnum < 4096) {
		k = SS_PROG_STATIC;
		for (unsigned i = 0; i < eh.e_phnum; i++) {
			Elf64_Phdr ph;
			if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + (uint64_t)i * sizeof ph)) !=
			    (ssize_t)sizeof ph)
				break;
			if (ph.p_type == PT_INTERP) {
				k = SS_PROG_DYNAMIC;
				break;
			}
		}
	}
	close(fd);
	return k;
}

int ss_prog_inspect(const char *cmd, struct ss_prog_info *out)
{
	memset(out, 0, sizeof *out);
	if (find_in_path(cmd, out->path, sizeof out->path) != 0)
		return -1;
	const char *elf = out->path;
	char head[4096];
	int fd = open(out->path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, head, sizeof head - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n > 2 && head[0] == '#' && head[1] == '!') {
		head[n] = 0;
		char *p = head + 2;
		p += strspn(p, " \t");
		size_t l = strcspn(p, " \t\n");
		snprintf(out->interp, sizeof out->interp, "%.*s", (int)l, p);
		elf = out->interp;
	}
	out->kind = elf_kind(elf);
	struct stat st;
	if (stat(elf, &st) == 0 && geteuid() != 0 &&
	    (((st.st_mode & S_ISUID) && st.st_uid != geteuid()) ||
	     ((st.st_mode & S_ISGID) && st.st_gid != getegid())))
		out->setuid = 1;
	return 0;
}

int ss_preload_find(char *out, size_t len, char *tried, size_t tried_len)
{
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	const char *cands[3];
	char rel[4096 + 256];
	size_t nc = 0;
	if (n > 0) {
		exe[n] = 0;
		snprintf(rel, sizeof rel, "%s/%s", dirname(exe), SS_PRELOAD_INSTALL_REL);
		cands[nc++] = rel;
	}
	cands[nc++] = SS_PRELOAD_BUILD_PATH;
	cands[nc++] = SS_PRELOAD_INSTALL_ABS;
	tried[0] = 0;
	for (size_t i = 0; i < nc; i++) {
		if (access(cands[i], R_OK) == 0) {
			char *rp = realpath(cands[i], NULL);
			snprintf(out, len, "%s", rp ? rp : cands[i]);
			free(rp);
			return 0;
		}
		size_t tl = strlen(tried);
		snprintf(tried + tl, tried_len - tl, "%s%s", tl ? ", " : "", cands[i]);
	}
	return -1;
}

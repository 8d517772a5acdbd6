/*
 * fuzz_plt.c - libFuzzer target for the symbolizer's PLT reader
 * (viewer/symbolize/plt.c): the ELF file a segment's build id leads to, or that
 * a debuginfod server sent, is outside data. Each input is opened as an ELF
 * image in memory and its PLT stubs read: it never reads outside the input, and
 * what it gives holds up: at most SS_PLT_MAX entries, sorted and disjoint, each non-empty
 * with a name inside the names, and each found again at its first and last byte.
 *
 * Seeds: the plt_prog builds of tests/import (every PLT layout the linker
 * makes), passed by the fuzz-smoke-plt test from the build directory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_target.h"
#include "plt.h"

static void fail(const char *what, size_t i)
{
	fprintf(stderr, "fuzz_plt: entry %zu: %s\n", i, what);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	elf_version(EV_CURRENT);
	char *copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	Elf *e = elf_memory(copy, size);
	struct ss_plt p;
	ss_plt_read(e, &p);
	if (p.n > SS_PLT_MAX)
		fail("too many", p.n);
	char name[64];
	for (size_t i = 0; i < p.n; i++) {
		const struct ss_plt_entry *x = &p.v[i];
		if (x->hi <= x->lo)
			fail("empty", i);
		if (i && p.v[i - 1].hi > x->lo)
			fail("out of order or overlapping", i);
		if (x->name >= p.names_len || !memchr(p.names + x->name, 0, p.names_len - x->name))
			fail("name outside the names", i);
		const struct ss_plt_entry *a = ss_plt_find(&p, x->lo), *b = ss_plt_find(&p, x->hi - 1);
		if (a != x || b != x)
			fail("not found at its own bytes", i);
		ss_plt_name(&p, x, name, sizeof name);
		if (!name[0])
			fail("no name", i);
	}
	ss_plt_free(&p);
	if (e)
		elf_end(e);
	free(copy);
	return 0;
}

/*
 * symtab.h - segment-embedded symbol tables (SYMBOL records, FORMAT.md "Symbol
 * records"): finding and decoding the one a sealed segment may carry, for the
 * importer, and encoding records, for `stallscope symbolize`.
 *
 * Input is untrusted: the block is used only when its header and payload CRCs
 * match and every record is in bounds; memory is the table itself (at most one
 * block, <= SS_MAX_BLOCK_PAYLOAD).
 */
#ifndef STALLSCOPE_SYMTAB_H
#define STALLSCOPE_SYMTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hmap.h"
#include "symbolize.h"

struct ss_symtab_entry {
	char *function, *file, *mangled; /* mangled NULL when the record has none */
	uint32_t line;
};

struct ss_symtab {
	struct ss_hmap index;  /* (address, inline depth) -> entry index */
	struct ss_hmap levels; /* (address, 0) -> number of inline levels */
	struct ss_symtab_entry *v;
	size_t n, cap;
};

/* Reads bytes [off, off + n) of the segment; returns 0, or -1 when they are not
 * all there. */
typedef int (*ss_symtab_read_fn)(void *ctx, uint64_t off, void *buf, size_t n);

/* Finds the symbol block of a segment whose blocks start at first_block and
 * loads it into t (cleared first). Returns the number of entries (0: none). */
size_t ss_symtab_load(struct ss_symtab *t, ss_symtab_read_fn rd, void *ctx, uint64_t first_block);
/* Fills out from the table; false when the address is not in it. */
bool ss_symtab_lookup(const struct ss_symtab *t, uint64_t address, struct ss_sym_result *out);
void ss_symtab_clear(struct ss_symtab *t);
/* One entry: address's frame at inline depth (0 = the function the code was
 * compiled into); function, file and mangled are copied (NULL: unknown; mangled
 * "" or NULL: the name was not mangled). A later entry
 * for the same address and depth replaces the earlier. Returns 0 or -1
 * (memory). For tables that come from elsewhere than a segment's symbol block
 * (dial9's SymbolTableEntry events). */
int ss_symtab_add(struct ss_symtab *t, uint64_t addr, uint64_t depth, uint64_t line, const char *function,
		  const char *file, const char *mangled);

/* Appends one SYMBOL record to buf (grown as needed); returns 0 or -1 (memory).
 * mangled may be NULL or "" (the name was not mangled). */
int ss_symtab_put(uint8_t **buf, size_t *len, size_t *cap, uint64_t address, uint64_t depth,
		  uint64_t line, const char *function, const char *file, const char *mangled);

#endif /* STALLSCOPE_SYMTAB_H */

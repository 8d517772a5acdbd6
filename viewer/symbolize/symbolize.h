/*
 * symbolize.h - code addresses to function names, inline chains and source
 * file:line, with libdw (elfutils). The folder: symbolize.c (this header),
 * debuginfod.c (files from debuginfod servers), demangle.c (readable names),
 * symtab.c (the symbol tables `stallscope symbolize` embeds in segments); the
 * importer and the CLI depend on it, it depends on libdw, libelf and, when
 * built with them, libiberty and libdebuginfod.
 *
 * User addresses are looked up in the file a mapping names, used only when its
 * GNU build id matches the recorded one (a mismatching file is never used
 * silently: the result's note says so), then in --debug-dir directories and
 * /usr/lib/debug/.build-id/ by build id. Kernel addresses are looked up in
 * /proc/kallsyms, which the caller allows only when the trace was taken on this
 * boot of this machine. Everything is cached per mapping, so the cost is per
 * distinct address, not per sample.
 *
 * When DEBUGINFOD_URLS is set, what is not found locally (the binary, or the
 * debug info of a stripped one) is asked of those debuginfod servers by build id
 * (libdebuginfod, which keeps what it fetched in its cache: DEBUGINFOD_CACHE_PATH
 * or ~/.cache/debuginfod_client). Each build id is asked once per symbolizer, a
 * request gets at most SS_SYM_DEBUGINFOD_REQUEST_S seconds (DEBUGINFOD_MAXTIME
 * when that is shorter) and all of them together SS_SYM_DEBUGINFOD_BUDGET_S;
 * past that the notes say so and symbolizing goes on with what is local. Names are demangled (demangle.h); the mangled name
 * is kept beside the readable one.
 */
#ifndef STALLSCOPE_SYMBOLIZE_H
#define STALLSCOPE_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SS_SYM_MAX_INLINE 8
#define SS_SYM_TEXT 256
#define SS_SYM_NAME 1024            /* demangled C++ names run long */
#define SS_SYM_DEBUGINFOD_REQUEST_S 10
#define SS_SYM_DEBUGINFOD_BUDGET_S 60

struct ss_sym_frame {
	char function[SS_SYM_NAME]; /* as people read it (demangled); "" when unknown */
	char mangled[SS_SYM_NAME];  /* the mangled name when function was demangled, else "" */
	char file[SS_SYM_TEXT];     /* "" when unknown */
	int line;                   /* 0 when unknown */
};

/* f[0] is the function the code was compiled into; f[i + 1] was inlined into
 * f[i]; f[n - 1] is the innermost, where the address is. file:line of f[i] is
 * the position within f[i] (for i < n - 1, the call site of the inlined f[i + 1]). */
struct ss_sym_result {
	size_t n;                   /* >= 1 */
	struct ss_sym_frame f[SS_SYM_MAX_INLINE];
	char note[SS_SYM_TEXT];     /* why something is missing; "" when all found */
};

struct ss_sym_mapping {
	const char *path;
	const uint8_t *build_id;
	size_t build_id_len;
	uint64_t start, end, pgoff;
};

struct ss_symbolizer;

struct ss_symbolizer *ss_sym_new(const char *const *debug_dirs, size_t n_dirs);
void ss_sym_free(struct ss_symbolizer *s);

/* Symbolizes addr (an address of the recorded process, already adjusted: return
 * addresses minus 1) inside mapping m. Sessions are cached by (path, build id,
 * offset); key is unused (kept for callers that identify mappings by id).
 * Always fills out (with a note when nothing was found). */
void ss_sym_user(struct ss_symbolizer *s, int64_t key, const struct ss_sym_mapping *m, uint64_t addr,
		 struct ss_sym_result *out);
/* Kernel address via /proc/kallsyms (symbol name only). */
void ss_sym_kernel(struct ss_symbolizer *s, uint64_t addr, struct ss_sym_result *out);

/* Puts f's function in readable form when it is a mangled name, keeping the
 * mangled one in f->mangled (for names that come from a segment's symbol table
 * written before demangling, or from any other source). */
void ss_sym_readable(struct ss_sym_frame *f);

/* Whether this build can ask debuginfod servers (libdebuginfod was found). */
bool ss_sym_debuginfod_available(void);

/* What debuginfod did for this symbolizer ("" when it was never asked): files
 * fetched, build ids not found, and why asking stopped if it did. */
const char *ss_sym_debuginfod_summary(const struct ss_symbolizer *s);

/* Whether boot_id is the boot id of the running system. */
bool ss_sym_boot_id_matches(const char *boot_id);

/* Lowercase hex of a build id into out (2 * len + 1 bytes). */
void ss_sym_hex(const uint8_t *id, size_t len, char *out);

#endif /* STALLSCOPE_SYMBOLIZE_H */

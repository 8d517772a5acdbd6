/*
 * cmd_symbolize.c - `stallscope symbolize DIR`: on the machine where a recording
 * was made, adds to every sealed segment a symbol table for every address its
 * stacks reference (function names, inline chains, file:line; kernel symbols
 * when the boot id matches), so that the segments import with names on another
 * machine. See FORMAT.md "Symbol records".
 *
 * A segment is rewritten crash-safely by schema/'s ss_segment_insert_block: its
 * intact blocks, the new SYMBOL block and a re-sealed footer go to a temporary
 * file in the same directory (PATH.symbolize-PID.K, the segment's mode), which is
 * synced and renamed over the original; an interrupted run leaves either the old
 * or the new file, never a mix. Segments that are unsealed, damaged or already
 * symbolized are left alone.
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "hmap.h"
#include "segment_reader.h"
#include "segment_write.h"
#include "symbolize.h"
#include "symtab.h"

void cmd_symbolize_help(FILE *out)
{
	fputs("usage: stallscope symbolize [options] DIR|SEGMENT...\n"
	      "\n"
	      "Run on the machine where the recording was made: adds a symbol table\n"
	      "(function names, inline chains, source file:line, kernel symbols) for every\n"
	      "address the segments' stacks reference to each sealed segment, so that\n"
	      "`stallscope import` can name frames where the binaries are not at hand.\n"
	      "Files are rewritten crash-safely (new file, then rename). Unsealed,\n"
	      "damaged and already symbolized segments are skipped. C++ and Rust names\n"
	      "are demangled (the mangled name is kept too); with DEBUGINFOD_URLS set,\n"
	      "debug info missing here is asked of those debuginfod servers.\n"
	      "\n"
	      "options:\n"
	      "  --debug-dir DIR      also look for debug info here (repeatable)\n"
	      "  -q, --quiet          print nothing but errors\n"
	      "  -h, --help           this text\n", out);
}

struct map {
	uint64_t start, end, pgoff;
	char *path;
	uint8_t bid[64];
	size_t bid_len;
};

struct seg_scan {
	struct map *maps;
	size_t n_maps, cap;
	struct ss_hmap addrs;     /* (address, kernel) -> mapping index + 1 (0 = none) */
	uint64_t footer_off;
	bool has_symbols;
};

static const struct map *find_map(const struct seg_scan *s, uint64_t a)
{
	/* The latest mapping containing a wins, as in the importer. */
	for (size_t i = s->n_maps; i-- > 0;)
		if (a >= s->maps[i].start && a < s->maps[i].end)
			return &s->maps[i];
	return NULL;
}

static int scan(const char *path, struct seg_scan *s, char *why, size_t wl)
{
	struct ss_reader *r;
	char err[256];
	if (ss_reader_open_file(&r, path, NULL, NULL, err, sizeof err) != 0) {
		snprintf(why, wl, "%s", err);
		return -1;
	}
	struct ss_block_info b;
	struct ss_record rec;
	while (ss_reader_next_block(r, &b)) {
		if (b.kind == SS_BLOCK_FOOTER)
			s->footer_off = b.offset;
		while (ss_reader_next_record(r, &rec)) {
			if (rec.type == SS_REC_SYMBOL) {
				s->has_symbols = true;
			} else if (rec.type == SS_REC_MAPPING) {
				if (s->n_maps == s->cap) {
					s->cap = s->cap ? 2 * s->cap : 16;
					s->maps = realloc(s->maps, s->cap * sizeof *s->maps);
					if (!s->maps)
						abort();
				}
				struct map *m = &s->maps[s->n_maps++];
				memset(m, 0, sizeof *m);
				m->start = rec.u.mapping.start;
				m->end = rec.u.mapping.end;
				m->pgoff = rec.u.mapping.pgoff;
				m->path = strndup(rec.u.mapping.path, rec.u.mapping.path_len);
				m->bid_len = rec.u.mapping.build_id_len > 64 ? 64 : rec.u.mapping.build_id_len;
				if (m->bid_len)
					memcpy(m->bid, rec.u.mapping.build_id, m->bid_len);
			} else if (rec.type == SS_REC_STACK) {
				uint64_t pcs[SS_MAX_STACK_FRAMES];
				size_t n = ss_stack_frames(&rec, pcs, SS_MAX_STACK_FRAMES);
				for (size_t i = 0; i < n; i++) {
					bool kernel = i < rec.u.stack.nkernel;
					uint64_t pc = ss_stack_lookup_pc(pcs, i, rec.u.stack.nkernel);
					const struct map *m = kernel ? NULL : find_map(s, pc);
					uint64_t v;
					if (!ss_hmap_get(&s->addrs, pc, kernel, &v))
						ss_hmap_put(&s->addrs, pc, kernel, m ? (uint64_t)(m - s->maps) + 1 : 0);
				}
			}
		}
	}
	const struct ss_reader_stats *st = ss_reader_stats(r);
	const struct ss_damage *d = ss_reader_damage(r);
	int rc = 0;
	if (d->kind != SS_DAMAGE_NONE) {
		snprintf(why, wl, "damaged at offset %llu: %s", (unsigned long long)d->offset, d->reason);
		rc = -1;
	} else if (!st->sealed || !s->footer_off) {
		snprintf(why, wl, "not sealed");
		rc = -1;
	}
	ss_reader_close(r);
	return rc;
}

struct emit {
	struct ss_symbolizer *sym;
	struct seg_scan *scan;
	bool kernel_ok;
	uint8_t *buf;
	size_t len, cap;
	uint64_t addrs, named;
};

static void emit_cb(void *ctx, uint64_t pc, uint64_t kernel, uint64_t mapi)
{
	struct emit *e = ctx;
	struct ss_sym_result res;
	memset(&res, 0, sizeof res);
	e->addrs++;
	if (kernel) {
		if (!e->kernel_ok)
			return;
		ss_sym_kernel(e->sym, pc, &res);
		if (strcmp(res.f[0].function, "[kernel]") == 0)
			return;
	} else {
		if (!mapi)
			return;
		const struct map *m = &e->scan->maps[mapi - 1];
		struct ss_sym_mapping sm = { m->path, m->bid, m->bid_len, m->start, m->end, m->pgoff };
		ss_sym_user(e->sym, (int64_t)mapi, &sm, pc, &res);
	}
	if (!res.f[0].function[0] || e->len > SS_MAX_BLOCK_PAYLOAD - 8192)
		return;
	e->named++;
	for (size_t i = 0; i < res.n && i < SS_SYM_MAX_INLINE; i++)
		if (ss_symtab_put(&e->buf, &e->len, &e->cap, pc, i, (uint64_t)(res.f[i].line > 0 ? res.f[i].line : 0),
				  res.f[i].function, res.f[i].file, res.f[i].mangled) != 0)
			abort();
}

static int symbolize_file(const char *path, struct ss_symbolizer *sym, bool quiet)
{
	struct seg_scan s = { 0 };
	char why[512] = "";
	int rc = 0;
	if (scan(path, &s, why, sizeof why) != 0) {
		fprintf(stderr, "stallscope symbolize: %s: %s; skipped\n", path, why);
		rc = 1;
	} else if (s.has_symbols) {
		if (!quiet)
			printf("%s: already symbolized\n", path);
	} else {
		struct ss_reader *r;
		char err[256];
		bool kernel_ok = false;
		if (ss_reader_open_file(&r, path, NULL, NULL, err, sizeof err) == 0) {
			kernel_ok = ss_sym_boot_id_matches(ss_reader_header(r)->boot_id);
			ss_reader_close(r);
		}
		struct emit e = { .sym = sym, .scan = &s, .kernel_ok = kernel_ok };
		ss_hmap_foreach(&s.addrs, emit_cb, &e);
		if (e.len == 0) {
			if (!quiet)
				printf("%s: %llu addresses, none resolvable here; unchanged\n", path,
				       (unsigned long long)e.addrs);
		} else if (ss_segment_insert_block(path, s.footer_off, e.buf, e.len, "symbolize", why,
						   sizeof why) != 0) {
			fprintf(stderr, "stallscope symbolize: %s: %s\n", path, why);
			rc = 2;
		} else if (!quiet) {
			printf("%s: %llu of %llu addresses named (%zu bytes of symbols)%s\n", path,
			       (unsigned long long)e.named, (unsigned long long)e.addrs, e.len,
			       kernel_ok ? "" : "; kernel frames skipped: recorded on another boot");
		}
		free(e.buf);
	}
	for (size_t i = 0; i < s.n_maps; i++)
		free(s.maps[i].path);
	free(s.maps);
	ss_hmap_free(&s.addrs);
	return rc;
}

static bool sealed_name(const char *n)
{
	size_t l = strlen(n);
	return l > 4 && strcmp(n + l - 4, ".bin") == 0;
}

int cmd_symbolize(int argc, char **argv)
{
	const char **dirs = calloc((size_t)argc, sizeof *dirs);
	size_t nd = 0;
	bool quiet = false;
	int rc = SS_EXIT_OK, nfiles = 0;
	struct ss_symbolizer *sym = NULL;
	if (!dirs)
		return SS_EXIT_USAGE;
	int i = 1;
	for (; i < argc; i++) {
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			cmd_symbolize_help(stdout);
			goto out;
		} else if (strcmp(argv[i], "--debug-dir") == 0 && i + 1 < argc) {
			dirs[nd++] = argv[++i];
		} else if (strcmp(argv[i], "-q") == 0 || strcmp(argv[i], "--quiet") == 0) {
			quiet = true;
		} else if (argv[i][0] == '-') {
			fprintf(stderr, "stallscope symbolize: unknown option '%s'\n", argv[i]);
			rc = SS_EXIT_USAGE;
			goto out;
		} else {
			break;
		}
	}
	if (i >= argc) {
		fprintf(stderr, "stallscope symbolize: no directory or segment given; see --help\n");
		rc = SS_EXIT_USAGE;
		goto out;
	}
	sym = ss_sym_new(dirs, nd);
	for (; i < argc; i++) {
		DIR *d = opendir(argv[i]);
		if (!d) {
			int r = symbolize_file(argv[i], sym, quiet);
			rc = r > rc ? r : rc;
			nfiles++;
			continue;
		}
		struct dirent *e;
		while ((e = readdir(d))) {
			if (!sealed_name(e->d_name))
				continue;
			char p[4096];
			snprintf(p, sizeof p, "%s/%s", argv[i], e->d_name);
			int r = symbolize_file(p, sym, quiet);
			rc = r > rc ? r : rc;
			nfiles++;
		}
		closedir(d);
	}
	if (nfiles == 0) {
		fprintf(stderr, "stallscope symbolize: no sealed segment found\n");
		rc = SS_EXIT_USAGE;
	}
	if (!quiet && sym && ss_sym_debuginfod_summary(sym)[0])
		printf("%s\n", ss_sym_debuginfod_summary(sym));
out:
	if (sym)
		ss_sym_free(sym);
	free(dirs);
	return rc;
}

/*
 * test_names.c - names as people read them, and debug info from elsewhere.
 *
 *   test_names demangle NAMES_C NAMES_CXX|none STALLSCOPE_CLI
 *     the demangler on C++, Rust legacy and Rust v0 names (and on names that are
 *     not mangled); then stacks through the importer: names_c's symbols are
 *     mangled asm labels with no debug info (named from the symbol table),
 *     names_cxx is C++ with debug info (named from DWARF linkage names): every
 *     frame's function is demangled and frames.mangled keeps the original; after
 *     `stallscope symbolize` and with the binary moved away, the segment's own
 *     table gives the same two columns.
 *
 *   test_names debuginfod NAMES_CXX DEBUGINFOD
 *     a round trip on loopback: `debuginfod -F DIR` serves a copy of names_cxx,
 *     a segment names it at a path that does not exist here, and the import with
 *     DEBUGINFOD_URLS pointing at the server names every frame; the file is then
 *     in DEBUGINFOD_CACHE_PATH and a second import with the server gone still
 *     names them. Without DEBUGINFOD_URLS the import works as before (frames
 *     unnamed, "file not found"); against a server that accepts and never
 *     answers it ends within its time limit (DEBUGINFOD_MAXTIME=2) and says why.
 *     SKIP (77) when debuginfod is missing or does not come up.
 *
 *   test_names plt OBJDUMP CLI PROG...
 *     each PROG (plt_prog.c linked with lazy and immediate binding, with IBT's
 *     .plt.sec, without PIE; plt_prog_cxx.cpp): every PLT stub objdump names
 *     (.plt, .plt.sec, .plt.got) has that name from the symbolizer
 *     ("clock_gettime@plt"; C++ names demangled as objdump -C does, with the
 *     mangled one kept: "operator new(unsigned long)@plt", "_Znwm@plt"; an
 *     IRELATIVE's stub, "*ABS*+0x...@plt" to objdump, by its IFUNC, as perf
 *     names it: "plt_ifunc@plt"), the
 *     lazy resolver at the start of .plt is ".plt"; a stack through
 *     stallscope_poll_begin@plt, clock_gettime@plt and .plt imports with those
 *     names, and so does it after `stallscope symbolize` with the binary moved
 *     away; the report's analysis takes none of them for the program's own
 *     code. SKIP (77) without objdump.
 *
 *   test_names kallsyms
 *     every code symbol of this machine's kernel in /proc/kallsyms, looked up
 *     at its address and halfway to the next, has the name that reading the
 *     file line by line with sscanf("%llx %c %255s"), sorted stably by
 *     address, gives (the last of those at the address): the importer's own
 *     parser of the file names kernel frames as that one did. Symbols of
 *     modules and BPF programs (a "[module]" after the name) come and go
 *     between two reads of the file (the sampler's tests load BPF programs),
 *     so they are read but not looked up. SKIP (77) when the addresses are
 *     hidden.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <elfutils/libdwelf.h>

#include "demangle.h"
#include "import.h"
#include "symbolize.h"
#include "segment_builder.h"
#include "soft_check.h"
#include "stacks.h"

extern char **environ;

static char tmp[256];

static char *in_tmp(const char *name)
{
	char *p;
	if (asprintf(&p, "%s/%s", tmp, name) < 0)
		exit(1);
	return p;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- the demangler ---------------------------------------------------------- */

static void test_demangler(void)
{
	static const char *const cases[][2] = {
		{ "_ZN12stallscope_c4Demo6methodEi", "stallscope_c::Demo::method(int)" },
		{ "_ZNSt6vectorIiSaIiEE9push_backERKi",
		  "std::vector<int, std::allocator<int> >::push_back(int const&)" },
		{ "_ZN10rust_crate6module15legacy_function17h0123456789abcdefE",
		  "rust_crate::module::legacy_function" },
		{ "_RNvNtCs1234_10rust_crate6module11v0_function", "rust_crate::module::v0_function" },
		{ "_RINvNtCs1234_10rust_crate6module7genericNtB4_5ThingEB2_",
		  "rust_crate::module::generic::<rust_crate::Thing>" },
	};
	char out[1024];
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		out[0] = 0;
		bool ok = ss_demangle(cases[i][0], out, sizeof out);
		CHECK(ok && strcmp(out, cases[i][1]) == 0, "%s -> '%s', want '%s'", cases[i][0], out, cases[i][1]);
	}
	static const char *const plain[] = { "main", "worker_main", "_start", "__clone3", "_R", "" };
	for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++)
		CHECK(!ss_demangle(plain[i], out, sizeof out), "'%s' taken for mangled", plain[i]);
	printf("demangler: C++, Rust legacy and Rust v0 names; plain names left alone\n");
}

/* ---- segments with one stack ------------------------------------------------ */

struct prog_stack {
	char path[PATH_MAX]; /* realpath's size */
	unsigned long long lo, hi, off, pc[3];
	uint8_t bid[64];
	size_t bid_len;
};

static size_t build_id_of(const char *path, uint8_t *out)
{
	int fd = open(path, O_RDONLY);
	Elf *e = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	const void *id = NULL;
	ssize_t n = e ? dwelf_elf_gnu_build_id(e, &id) : -1;
	if (n > 0 && n <= 64)
		memcpy(out, id, (size_t)n);
	if (e)
		elf_end(e);
	if (fd >= 0)
		close(fd);
	return n > 0 && n <= 64 ? (size_t)n : 0;
}

static int run_prog(const char *prog, struct prog_stack *s)
{
	char cmd[3100];
	snprintf(cmd, sizeof cmd, "'%s'", prog);
	FILE *p = popen(cmd, "r");
	int got = p ? fscanf(p, "%2999s %llx %llx %llx %llx %llx %llx", s->path, &s->lo, &s->hi, &s->off,
			     &s->pc[0], &s->pc[1], &s->pc[2]) : 0;
	if (p)
		pclose(p);
	s->bid_len = build_id_of(prog, s->bid);
	return got == 7 && s->bid_len ? 0 : -1;
}

/* A sealed segment: the program's mapping (named map_path), its stack, and one
 * CPU sample of a thread with no THREAD_DEF. */
static void write_segment(const char *file, const struct prog_stack *s, const char *map_path)
{
	struct sb_header h = { .session_id = 4242, .pid = 1, .exe = map_path, .hostname = "elsewhere",
			       .boot_id = "another-boot", .start_ts = 1000 };
	struct sb b;
	sb_init(&b, &h);
	sb_begin_block(&b);
	sb_mapping(&b, s->lo, s->hi, s->off, s->bid, s->bid_len, map_path);
	uint64_t pcs[3] = { s->pc[0], s->pc[1], s->pc[2] };
	sb_stack(&b, 1, pcs, 3);
	sb_cpu_sample(&b, 0, 77, 4000, 1);
	sb_end_block(&b, false);
	sb_footer(&b, SS_SEALED_WRITER, 0);
	FILE *f = fopen(file, "wb");
	if (!f || fwrite(b.buf, 1, b.len, f) != b.len || fclose(f) != 0) {
		fprintf(stderr, "cannot write %s\n", file);
		exit(1);
	}
	sb_free(&b);
}

static int import_dir(const char *db, const char *dir, bool no_symbols)
{
	unlink(db);
	const char *paths[1] = { dir };
	struct ss_import_options o = { .db_path = db, .quiet = true, .no_symbols = no_symbols };
	struct ss_import_result res;
	return ss_import_paths(&o, paths, 1, &res);
}

/* "function|mangled|note" of the sample's frame at depth, "" when none. */
static char *frame_at(const char *db, int depth)
{
	sqlite3 *d;
	char *out = NULL;
	if (sqlite3_open_v2(db, &d, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
		return strdup("");
	char sql[600];
	/* From the sample's leaf callsite up to its parents: the frame row at depth. */
	snprintf(sql, sizeof sql, "WITH RECURSIVE up(id, k) AS (SELECT callsite_id, 0 FROM samples UNION ALL"
		 " SELECT c.parent_id, up.k + 1 FROM callsites c JOIN up ON c.id = up.id"
		 " WHERE c.parent_id IS NOT NULL)"
		 " SELECT coalesce(f.function, '') || '|' || coalesce(f.mangled, '') || '|' ||"
		 " coalesce(f.symbol_note, '') FROM up JOIN callsites c ON c.id = up.id"
		 " JOIN frames f ON f.id = c.frame_id WHERE up.k = %d", depth);
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(d, sql, -1, &s, NULL) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW &&
	    sqlite3_column_text(s, 0))
		out = strdup((const char *)sqlite3_column_text(s, 0));
	else
		fprintf(stderr, "frame_at: %s\n", sqlite3_errmsg(d));
	sqlite3_finalize(s);
	sqlite3_close(d);
	return out ? out : strdup("");
}

/* want[i] = "function|mangled" expected at depth i (mangled "" = NULL). */
static void check_names(const char *db, const char *const want[3], const char *what)
{
	for (int i = 0; i < 3; i++) {
		char *row = frame_at(db, i);
		CHECK(strncmp(row, want[i], strlen(want[i])) == 0 && row[strlen(want[i])] == '|',
		      "%s: depth %d is '%s', want '%s|...'", what, i, row, want[i]);
		free(row);
	}
}

/* Stack s of program prog imported where it was recorded, then symbolized
 * with the binary at hand and imported without it: the frames are want[]. */
static void check_stack(const char *prog, const struct prog_stack *sp, const char *cli, const char *const want[3],
			const char *what)
{
	struct prog_stack s = *sp;
	/* Where it was recorded. */
	char dir_name[64], db_name[64];
	snprintf(dir_name, sizeof dir_name, "%s-here", what);
	snprintf(db_name, sizeof db_name, "%.50s-here.db", what);
	char *dir = in_tmp(dir_name), *db = in_tmp(db_name), *seg = NULL;
	mkdir(dir, 0755);
	if (asprintf(&seg, "%s/n.0.bin", dir) < 0)
		exit(1);
	write_segment(seg, &s, s.path);
	CHECK(import_dir(db, dir, false) == SS_IMPORT_OK, "%s: import", what);
	check_names(db, want, what);
	/* Elsewhere: symbolized with the binary at hand, imported without it. */
	char copy_name[64], gone_name[64];
	snprintf(copy_name, sizeof copy_name, "%s-copy", what);
	snprintf(gone_name, sizeof gone_name, "%s-moved-away", what);
	char *copy = in_tmp(copy_name), *gone = in_tmp(gone_name), *dir2 = NULL, *seg2 = NULL, *db2 = NULL;
	if (asprintf(&dir2, "%s-table", dir) < 0 || asprintf(&seg2, "%s/n.0.bin", dir2) < 0 ||
	    asprintf(&db2, "%s-table.db", dir) < 0)
		exit(1);
	mkdir(dir2, 0755);
	char cmd[9000];
	snprintf(cmd, sizeof cmd, "cp '%s' '%s' && '%s' symbolize -q '%s'", prog, copy, cli, dir2);
	write_segment(seg2, &s, copy);
	CHECK(system(cmd) == 0, "%s: %s", what, cmd);
	CHECK(rename(copy, gone) == 0, "%s: moving the binary away", what);
	CHECK(import_dir(db2, dir2, false) == SS_IMPORT_OK, "%s: import of the symbolized segment", what);
	char tw[64];
	snprintf(tw, sizeof tw, "%s, symbol table", what);
	check_names(db2, want, tw);
	printf("names (%s): %s <- %s <- %s; the same from the segment's symbol table\n", what, want[0], want[1],
	       want[2]);
	free(dir), free(db), free(seg), free(copy), free(gone), free(dir2), free(seg2), free(db2);
}

static void test_program(const char *prog, const char *cli, const char *const want[3], const char *what)
{
	struct prog_stack s;
	memset(&s, 0, sizeof s);
	CHECK(run_prog(prog, &s) == 0, "%s: no output or no build id", prog);
	if (!failures)
		check_stack(prog, &s, cli, want, what);
}

static int demangle_main(const char *names_c, const char *names_cxx, const char *cli)
{
	if (!ss_demangle_available()) {
		printf("SKIP: this build has no demangler (libiberty-dev was not found; meson -Ddemangle)\n");
		return 77;
	}
	test_demangler();
	static const char *const c_want[3] = {
		"rust_crate::module::v0_function|_RNvNtCs1234_10rust_crate6module11v0_function",
		"rust_crate::module::legacy_function|_ZN10rust_crate6module15legacy_function17h0123456789abcdefE",
		"stallscope_c::Demo::method(int)|_ZN12stallscope_c4Demo6methodEi",
	};
	test_program(names_c, cli, c_want, "symbol table names");
	if (strcmp(names_cxx, "none") != 0) {
		static const char *const cxx_want[3] = {
			"stallscope_demo::Box<int>::twice(int)|_ZN15stallscope_demo3BoxIiE5twiceEi",
			"stallscope_demo::compute(int)|_ZN15stallscope_demo7computeEi",
			"main|",
		};
		test_program(names_cxx, cli, cxx_want, "DWARF names");
	} else {
		printf("names (DWARF): not run: this build has no C++ compiler\n");
	}
	return failures ? 1 : 0;
}

/* ---- PLT stubs ------------------------------------------------------------------ */

struct stub {
	unsigned long long at;  /* ELF virtual address */
	char name[512];
};

/* objdump's labels in the PLT sections (its own synthesized names, BFD's code,
 * not ours), demangled with -C: every "NAME@plt" entry, and the start of .plt
 * in *plt0. */
static size_t objdump_stubs(const char *objdump, const char *prog, bool demangle, struct stub *v, size_t max,
			    unsigned long long *plt0)
{
	char cmd[3200], line[1024], sec[64] = "";
	snprintf(cmd, sizeof cmd, "'%s' -d %s -j .plt -j .plt.sec -j .plt.got '%s'", objdump, demangle ? "-C" : "",
		 prog);
	FILE *p = popen(cmd, "r");
	size_t n = 0;
	*plt0 = 0;
	while (p && fgets(line, sizeof line, p)) {
		unsigned long long at;
		int used = 0;
		if (sscanf(line, "Disassembly of section %63[^:]:", sec) == 1)
			continue;
		/* "ADDR <NAME>:" - a C++ name can hold '<' and '>' itself. */
		char *end = strstr(line, ">:\n");
		if (sscanf(line, "%llx <%n", &at, &used) != 1 || !used || !end)
			continue;
		*end = 0;
		const char *name = line + used;
		if (strcmp(sec, ".plt") == 0 && !*plt0)
			*plt0 = at;
		size_t len = strlen(name);
		if (len > 4 && strcmp(name + len - 4, "@plt") == 0 && n < max) {
			v[n].at = at;
			snprintf(v[n++].name, sizeof v[0].name, "%s", name);
		}
	}
	if (p)
		pclose(p);
	return n;
}

/* The mapping the kernel makes of prog's code (its executable PT_LOAD), at a
 * PIE's usual base. */
static bool code_mapping(const char *prog, struct prog_stack *s, unsigned long long *base)
{
	int fd = open(prog, O_RDONLY);
	Elf *e = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	GElf_Ehdr eh;
	size_t n = 0;
	bool ok = false;
	if (e && gelf_getehdr(e, &eh) && elf_getphdrnum(e, &n) == 0) {
		*base = eh.e_type == ET_DYN ? 0x555555554000ull : 0;
		for (size_t i = 0; i < n && !ok; i++) {
			GElf_Phdr ph;
			if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
				continue;
			s->lo = *base + (ph.p_vaddr & ~0xfffull);
			s->hi = (*base + ph.p_vaddr + ph.p_memsz + 0xfff) & ~0xfffull;
			s->off = ph.p_offset & ~0xfffull;
			ok = true;
		}
	}
	if (e)
		elf_end(e);
	if (fd >= 0)
		close(fd);
	return ok;
}

/* Every PLT stub objdump names has that name from the symbolizer (its first
 * and a middle byte), the lazy resolver is ".plt"; then a stack through
 * stallscope_poll_begin@plt, clock_gettime@plt and .plt imports with those
 * names, here and from the segment's symbol table. */
static void test_plt_program(const char *objdump, const char *rel_prog, const char *cli)
{
	struct prog_stack s;
	memset(&s, 0, sizeof s);
	/* As a mapping names it. */
	CHECK(realpath(rel_prog, s.path), "realpath %s", rel_prog);
	const char *prog = s.path, *what = strrchr(prog, '/') ? strrchr(prog, '/') + 1 : prog;
	s.bid_len = build_id_of(prog, s.bid);
	unsigned long long base = 0, plt0 = 0, plt0_c = 0;
	static struct stub v[512], vc[512];
	size_t n = objdump_stubs(objdump, prog, false, v, 512, &plt0);
	size_t nc = objdump_stubs(objdump, prog, true, vc, 512, &plt0_c);
	CHECK(code_mapping(prog, &s, &base) && s.bid_len, "%s: no code mapping or build id", what);
	CHECK(n >= 2 && plt0 && nc == n, "%s: objdump shows %zu PLT stubs (%zu with -C), .plt at %#llx", what, n,
	      nc, plt0);
	if (failures)
		return;
	struct ss_symbolizer *sym = ss_sym_new(NULL, 0);
	struct ss_sym_mapping m = { prog, s.bid, s.bid_len, s.lo, s.hi, s.off };
	struct ss_sym_result r;
	unsigned long long poll = 0, clock = 0;
	size_t mangled = 0, ifuncs = 0;
	for (size_t i = 0; i < n; i++) {
		/* Demangled as objdump -C does, the mangled name kept when it differs. */
		/* objdump names an IRELATIVE's stub by its addend, perf (and we) by
		 * the function there: plt_prog's IFUNC. */
		if (strncmp(v[i].name, "*ABS*+", 6) == 0)
			snprintf(v[i].name, sizeof v[i].name, "%s", "plt_ifunc@plt");
		if (strncmp(vc[i].name, "*ABS*+", 6) == 0)
			snprintf(vc[i].name, sizeof vc[i].name, "%s", "plt_ifunc@plt");
		ifuncs += strcmp(v[i].name, "plt_ifunc@plt") == 0;
		bool dem = ss_demangle_available() && strcmp(v[i].name, vc[i].name) != 0;
		const char *want_m = dem ? v[i].name : "";
		if (!dem)
			snprintf(vc[i].name, sizeof vc[i].name, "%s", v[i].name);
		mangled += want_m[0] != 0;
		for (unsigned k = 0; k < 2; k++) {
			ss_sym_user(sym, 1, &m, base + v[i].at + 5 * k, &r);
			CHECK(strcmp(r.f[0].function, vc[i].name) == 0 && strcmp(r.f[0].mangled, want_m) == 0,
			      "%s: %#llx+%u is '%s' ('%s', %s), objdump says '%s' ('%s')", what, v[i].at, 5 * k,
			      r.f[0].function, r.f[0].mangled, r.note, vc[i].name, want_m);
		}
		if (strcmp(v[i].name, "stallscope_poll_begin@plt") == 0)
			poll = base + v[i].at;
		if (strcmp(v[i].name, "clock_gettime@plt") == 0)
			clock = base + v[i].at;
	}
	ss_sym_user(sym, 1, &m, base + plt0 + 8, &r);
	CHECK(strcmp(r.f[0].function, ".plt") == 0, "%s: the lazy resolver is '%s'", what, r.f[0].function);
	ss_sym_free(sym);
	CHECK(poll && clock, "%s: objdump names no stallscope_poll_begin@plt or clock_gettime@plt", what);
	CHECK(ifuncs == 1 || strcmp(what, "plt_cxx") == 0, "%s: %zu IRELATIVE stubs, plt_prog.c makes one", what,
	      ifuncs);
	if (failures)
		return;
	printf("PLT (%s): the %zu stubs objdump names have those names (%zu demangled, %zu IFUNC), .plt is the "
	       "resolver\n", what, n, mangled, ifuncs);
	s.pc[0] = poll + 4;
	s.pc[1] = clock + 6;
	s.pc[2] = base + plt0 + 9;
	static const char *const want[3] = { "stallscope_poll_begin@plt|", "clock_gettime@plt|", ".plt|" };
	check_stack(prog, &s, cli, want, what);
	/* The report's code responsible is never a stub: the way into a library. */
	char db_name[64];
	snprintf(db_name, sizeof db_name, "%.50s-here.db", what);
	char *db = in_tmp(db_name);
	sqlite3 *d = NULL;
	sqlite3_stmt *st = NULL;
	struct ss_callstacks *cs = NULL;
	struct ss_stack_frame f[8];
	size_t nf = 0;
	if (sqlite3_open_v2(db, &d, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK && (cs = ss_callstacks_new(d)) &&
	    sqlite3_prepare_v2(d, "SELECT callsite_id FROM samples", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		nf = ss_callstacks_get(cs, sqlite3_column_int64(st, 0), f, 8);
	CHECK(nf == 3, "%s: the sample's stack has %zu frames", what, nf);
	for (size_t i = 0; i < nf; i++)
		CHECK(f[i].system, "%s: frame %zu (%s) is taken for the program's own code", what, i,
		      f[i].function ? f[i].function : "?");
	CHECK(nf != 3 || ss_callstacks_own(cs, f, nf) < 0, "%s: a stack of PLT stubs has own code", what);
	sqlite3_finalize(st);
	ss_callstacks_free(cs);
	sqlite3_close(d);
	free(db);
}

static int plt_main(int argc, char **argv)
{
	const char *objdump = argv[2], *cli = argv[3];
	if (access(objdump, X_OK) != 0) {
		printf("SKIP: no objdump (binutils), whose PLT names the test compares with\n");
		return 77;
	}
	for (int i = 4; i < argc; i++)
		test_plt_program(objdump, argv[i], cli);
	return failures ? 1 : 0;
}

/* ---- debuginfod on loopback --------------------------------------------------- */

static int free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof a;
	int port = -1;
	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &al) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/* A server that accepts connections (the kernel does, from the backlog) and
 * never answers. */
static int black_hole(int *port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof a;
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 16) != 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &al) != 0)
		return -1;
	*port = ntohs(a.sin_port);
	return fd;
}

static pid_t start_server(const char *debuginfod, const char *dir, int port, const char *log)
{
	char p[16], *db = in_tmp("debuginfod.sqlite");
	snprintf(p, sizeof p, "%d", port);
	char *argv[] = { (char *)debuginfod, (char *)"-F", (char *)dir, (char *)"-p", p, (char *)"-d", db,
			 (char *)"-t", (char *)"0", (char *)"-v", NULL };
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	pid_t pid;
	int rc = posix_spawn(&pid, debuginfod, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	free(db);
	return rc == 0 ? pid : -1;
}

/* Whether the server serves build id hex within limit_s (plain HTTP/1.0 GET on
 * loopback: the scan of the directory takes a moment after the start). */
static int server_has(int port, const char *hex, double limit_s)
{
	double end = now_s() + limit_s;
	while (now_s() < end) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		struct timeval tv = { 2, 0 };
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
		char req[256], resp[64] = "";
		snprintf(req, sizeof req, "GET /buildid/%s/executable HTTP/1.0\r\n\r\n", hex);
		if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
		    write(fd, req, strlen(req)) == (ssize_t)strlen(req) && read(fd, resp, sizeof resp - 1) > 0 &&
		    strstr(resp, " 200")) {
			close(fd);
			return 1;
		}
		if (fd >= 0)
			close(fd);
		struct timespec ts = { 0, 200000000L };
		nanosleep(&ts, NULL);
	}
	return 0;
}

static void stop_server(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGTERM);
	for (int i = 0; i < 50; i++) {
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return;
		struct timespec ts = { 0, 100000000L };
		nanosleep(&ts, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static int debuginfod_main(const char *names_cxx, const char *debuginfod)
{
	if (!ss_sym_debuginfod_available()) {
		printf("SKIP: this build cannot ask debuginfod (libdebuginfod-dev was not found; meson -Ddebuginfod)\n");
		return 77;
	}
	if (strcmp(names_cxx, "none") == 0 || access(debuginfod, X_OK) != 0) {
		printf("SKIP: %s\n", strcmp(names_cxx, "none") == 0 ? "no C++ test program in this build"
								       : "no debuginfod program (Debian package debuginfod)");
		return 77;
	}
	struct prog_stack s;
	memset(&s, 0, sizeof s);
	if (run_prog(names_cxx, &s) != 0) {
		fprintf(stderr, "FAIL: %s gave no stack\n", names_cxx);
		return 1;
	}
	char hex[129];
	for (size_t i = 0; i < s.bid_len; i++)
		snprintf(hex + 2 * i, 3, "%02x", s.bid[i]);
	/* The program as a machine elsewhere has it: at a path that does not exist here. */
	char *served = in_tmp("served"), *cache = in_tmp("cache"), *dir = in_tmp("seg"), *seg = in_tmp("seg/n.0.bin");
	char *db = in_tmp("d.db"), *log = in_tmp("debuginfod.log"), cmd[2000];
	mkdir(served, 0755);
	mkdir(dir, 0755);
	snprintf(cmd, sizeof cmd, "cp '%s' '%s/names_cxx'", names_cxx, served);
	if (system(cmd) != 0)
		return 1;
	write_segment(seg, &s, "/nonexistent/elsewhere/names_cxx");
	static const char *const want[3] = {
		"stallscope_demo::Box<int>::twice(int)|_ZN15stallscope_demo3BoxIiE5twiceEi",
		"stallscope_demo::compute(int)|_ZN15stallscope_demo7computeEi",
		"main|",
	};

	/* 1. No DEBUGINFOD_URLS: as before. */
	unsetenv("DEBUGINFOD_URLS");
	setenv("DEBUGINFOD_CACHE_PATH", cache, 1);
	CHECK(import_dir(db, dir, false) == SS_IMPORT_OK, "import without debuginfod");
	char *row = frame_at(db, 0);
	CHECK(strncmp(row, "||file not found", 16) == 0, "without debuginfod: '%s'", row);
	free(row);

	/* 2. The round trip. */
	pid_t pid = -1;
	int port = -1;
	for (int attempt = 0; attempt < 3 && pid < 0; attempt++) {
		port = free_port();
		pid = port > 0 ? start_server(debuginfod, served, port, log) : -1;
		if (pid > 0 && !server_has(port, hex, 30)) {
			stop_server(pid);
			pid = -1;
		}
	}
	if (pid < 0) {
		snprintf(cmd, sizeof cmd, "tail -5 '%s' >&2", log);
		if (system(cmd) != 0)
			fprintf(stderr, "(no log)\n");
		printf("SKIP: debuginfod -F did not come up on loopback within 30 s (log above)\n");
		return 77;
	}
	char url[64];
	snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
	setenv("DEBUGINFOD_URLS", url, 1);
	double t0 = now_s();
	CHECK(import_dir(db, dir, false) == SS_IMPORT_OK, "import with debuginfod");
	printf("debuginfod: import with the server took %.2f s\n", now_s() - t0);
	check_names(db, want, "via debuginfod");
	stop_server(pid);
	snprintf(cmd, sizeof cmd, "test -n \"$(find '%s' -type f -size +1k | head -1)\"", cache);
	CHECK(system(cmd) == 0, "nothing in the cache %s", cache);
	/* 3. The server is gone: libdebuginfod's cache answers. */
	CHECK(import_dir(db, dir, false) == SS_IMPORT_OK, "import from the cache");
	check_names(db, want, "from the debuginfod cache");

	/* 4. A server that never answers: the import still ends, within the limit. */
	int bport = 0, bfd = black_hole(&bport);
	CHECK(bfd >= 0, "no loopback listener");
	snprintf(url, sizeof url, "http://127.0.0.1:%d", bport);
	setenv("DEBUGINFOD_URLS", url, 1);
	setenv("DEBUGINFOD_MAXTIME", "2", 1);
	char *cache2 = in_tmp("cache2");
	setenv("DEBUGINFOD_CACHE_PATH", cache2, 1);
	t0 = now_s();
	CHECK(import_dir(db, dir, false) == SS_IMPORT_OK, "import against a silent server");
	double took = now_s() - t0;
	row = frame_at(db, 0);
	printf("debuginfod: a silent server: import ended after %.2f s; frame: %s\n", took, row);
	CHECK(took < 15, "a silent server held the import %.1f s", took);
	CHECK(strncmp(row, "||file not found", 16) == 0 && strstr(row, "debuginfod"),
	      "silent server: the note says nothing of debuginfod: '%s'", row);
	free(row);
	if (bfd >= 0)
		close(bfd);
	unsetenv("DEBUGINFOD_URLS");
	unsetenv("DEBUGINFOD_MAXTIME");
	free(served), free(cache), free(cache2), free(dir), free(seg), free(db), free(log);
	printf("debuginfod: round trip on loopback, cached, time-limited, not required\n");
	return failures ? 1 : 0;
}

struct ref_ksym {
	unsigned long long addr;
	char name[256];
	bool module; /* of a module or a BPF program: may change meanwhile */
};

static int cmp_ref_ksym(const void *a, const void *b)
{
	const struct ref_ksym *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int kallsyms_main(void)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	if (!f) {
		printf("SKIP: /proc/kallsyms: %s\n", strerror(errno));
		return 77;
	}
	struct ref_ksym *v = NULL;
	size_t n = 0, cap = 0;
	char line[512];
	while (fgets(line, sizeof line, f)) {
		struct ref_ksym k;
		char type;
		if (sscanf(line, "%llx %c %255s", &k.addr, &type, k.name) != 3 || k.addr == 0)
			continue;
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		k.module = strchr(line, '[') != NULL;
		if (n == cap) {
			cap = cap ? cap * 2 : 4096;
			v = realloc(v, cap * sizeof *v);
			if (!v)
				return 1;
		}
		v[n++] = k;
	}
	fclose(f);
	if (n == 0) {
		printf("SKIP: /proc/kallsyms shows no addresses (kptr_restrict)\n");
		free(v);
		return 77;
	}
	/* glibc's qsort of the entries: a merge sort, stable for equal addresses */
	struct ref_ksym *tmpv = malloc(n * sizeof *tmpv);
	for (size_t w = 1; tmpv && w < n; w *= 2) {
		for (size_t lo = 0; lo < n; lo += 2 * w) {
			size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n, a = lo, b = mid, o = lo;
			while (a < mid || b < hi)
				tmpv[o++] = b >= hi || (a < mid && cmp_ref_ksym(&v[a], &v[b]) <= 0) ? v[a++] : v[b++];
		}
		memcpy(v, tmpv, n * sizeof *v);
	}
	free(tmpv);
	struct ss_symbolizer *s = ss_sym_new(NULL, 0);
	struct ss_sym_result *r = malloc(sizeof *r);
	size_t bad = 0;
	size_t looked = 0;
	for (size_t i = 0; s && r && i < n; i++) {
		if (v[i].module || (i + 1 < n && v[i + 1].addr == v[i].addr))
			continue; /* the last at an address names it */
		/* at the symbol, and halfway to the next one of the kernel's */
		bool next = i + 1 < n && !v[i + 1].module;
		unsigned long long at[2] = { v[i].addr, next ? v[i].addr + (v[i + 1].addr - v[i].addr) / 2 : v[i].addr };
		looked++;
		for (int k = 0; k < 2; k++) {
			ss_sym_kernel(s, at[k], r);
			if (strcmp(r->f[0].function, v[i].name) != 0 && bad++ < 5)
				fprintf(stderr, "FAIL kallsyms: %llx is '%s', the file says '%s'\n", at[k],
					r->f[0].function, v[i].name);
		}
	}
	if (s && r && v[0].addr > 1) {
		ss_sym_kernel(s, v[0].addr - 1, r);
		CHECK(strcmp(r->f[0].function, "[kernel]") == 0, "kallsyms: below the first symbol: '%s'", r->f[0].function);
	}
	CHECK(s && r && bad == 0, "kallsyms: %zu lookups in %zu symbols named otherwise", bad, looked);
	CHECK(looked > n / 2, "kallsyms: %zu of %zu symbols are the kernel's", looked, n);
	printf("kallsyms: %zu code symbols of the kernel named as the file says\n", looked);
	free(r);
	ss_sym_free(s);
	free(v);
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	elf_version(EV_CURRENT);
	snprintf(tmp, sizeof tmp, "/tmp/test_names.XXXXXX");
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 1;
	}
	/* No test of ours asks a real server. */
	unsetenv("DEBUGINFOD_URLS");
	int rc;
	if (argc == 5 && strcmp(argv[1], "demangle") == 0) {
		rc = demangle_main(argv[2], argv[3], argv[4]);
	} else if (argc == 4 && strcmp(argv[1], "debuginfod") == 0) {
		rc = debuginfod_main(argv[2], argv[3]);
	} else if (argc >= 5 && strcmp(argv[1], "plt") == 0) {
		rc = plt_main(argc, argv);
	} else if (argc == 2 && strcmp(argv[1], "kallsyms") == 0) {
		rc = kallsyms_main();
	} else {
		fprintf(stderr, "usage: test_names demangle NAMES_C NAMES_CXX|none CLI | debuginfod NAMES_CXX DEBUGINFOD"
			" | kallsyms | plt OBJDUMP CLI PROG...\n");
		return 2;
	}
	if (rc == 0) {
		char cmd[300];
		snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
		if (system(cmd) != 0)
			return 1;
	} else if (rc == 1) {
		fprintf(stderr, "%d checks failed; files left in %s\n", failures, tmp);
	}
	return rc;
}

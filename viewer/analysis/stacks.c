/*
 * stacks.c - see stacks.h. Frames are read once each and kept (a trace has
 * thousands of distinct frames, its stacks millions of references to them);
 * which functions are shared helpers is worked out once, from every caller
 * edge in the callsite tree, the first time own code is asked for.
 */
#include "stacks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hmap.h"
#include "read_queries.h"
#include "syscalls.h"

struct cached_frame {
	struct ss_stack_frame f;
	char *function, *file, *mapping;
};

struct helper {
	uint64_t hash;
	uint64_t first_caller; /* hash of the first caller seen */
	int callers;           /* distinct callers, counted up to 2 */
};

struct ss_callstacks {
	sqlite3 *db;
	sqlite3_stmt *callsite, *frame;
	struct ss_hmap frame_index; /* frame id -> index in frames */
	/* callsite id -> parent and frame (a = id; val = index in nodes) */
	struct ss_hmap node_index;
	struct { int64_t parent, frame, own_frame; bool own_known; } *nodes;
	size_t n_nodes, cap_nodes;
	struct cached_frame *frames;
	size_t n_frames, cap_frames;
	bool helpers_known;
	struct ss_hmap helper_index; /* function hash -> index in helpers */
	struct helper *helpers;
	size_t n_helpers, cap_helpers;
	char syscall[64];
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h ? h : 1;
}

/* The part of a path after its last slash. */
static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

static bool starts(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The libraries of the system and of the recorder: their frames are how the
 * program's code reached the kernel or the recorder, not what it was doing. */
static bool system_mapping(const char *path)
{
	static const char *const libs[] = {
		"libc.so", "libc-", "ld-linux", "ld-musl", "ld64.so", "libpthread", "libm.so", "libm-",
		"libdl", "librt", "libstdc++", "libc++", "libgcc_s", "libunwind", "libstallscope",
		"libresolv", "libcrypt.so",
	};
	if (!path || !*path || path[0] == '[')
		return true; /* [kernel], [vdso], [unknown], [vsyscall], no mapping */
	const char *b = base_name(path);
	for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++)
		if (starts(b, libs[i]))
			return true;
	return false;
}

/* Runtime and standard-library frames of languages whose runtime lives in the
 * program's own executable (Rust's std and Tokio's scheduler). */
static bool runtime_function(const char *fn)
{
	static const char *const prefixes[] = {
		"std::", "core::", "alloc::", "tokio::runtime::", "<tokio::runtime::", "<core::", "<alloc::",
		"<std::", "__rust_", "rust_begin_unwind",
	};
	for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
		if (starts(fn, prefixes[i]))
			return true;
	return false;
}

/* PLT stubs ("puts@plt", ".plt" the lazy resolver): code the linker made for a
 * call into a library, so the way there, never what the program was doing. */
static bool plt_stub(const char *fn)
{
	size_t n = strlen(fn);
	return strcmp(fn, ".plt") == 0 || (n > 4 && strcmp(fn + n - 4, "@plt") == 0);
}

struct ss_callstacks *ss_callstacks_new(sqlite3 *db)
{
	struct ss_callstacks *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->db = db;
	c->callsite = ss_read_prepare(db, SS_Q_CALLSITE);
	c->frame = ss_read_prepare(db, SS_Q_FRAME);
	if (!c->callsite || !c->frame) {
		ss_callstacks_free(c);
		return NULL;
	}
	return c;
}

void ss_callstacks_free(struct ss_callstacks *c)
{
	if (!c)
		return;
	sqlite3_finalize(c->callsite);
	sqlite3_finalize(c->frame);
	for (size_t i = 0; i < c->n_frames; i++) {
		free(c->frames[i].function);
		free(c->frames[i].file);
		free(c->frames[i].mapping);
	}
	free(c->frames);
	ss_hmap_free(&c->frame_index);
	free(c->nodes);
	ss_hmap_free(&c->node_index);
	ss_hmap_free(&c->helper_index);
	free(c->helpers);
	free(c);
}

static char *col_dup(sqlite3_stmt *st, int i)
{
	const unsigned char *t = sqlite3_column_text(st, i);
	return t && *t ? strdup((const char *)t) : NULL;
}

/* The cached frame of this id, read on first use; NULL when out of memory. */
static const struct ss_stack_frame *frame_of(struct ss_callstacks *c, int64_t id)
{
	uint64_t v;
	if (ss_hmap_get(&c->frame_index, (uint64_t)id, 0, &v))
		return &c->frames[v].f;
	if (c->n_frames == c->cap_frames) {
		size_t cap = c->cap_frames ? c->cap_frames * 2 : 256;
		struct cached_frame *n = realloc(c->frames, cap * sizeof *n);
		if (!n)
			return NULL;
		c->frames = n;
		c->cap_frames = cap;
	}
	struct cached_frame *cf = &c->frames[c->n_frames];
	memset(cf, 0, sizeof *cf);
	sqlite3_reset(c->frame);
	sqlite3_bind_int64(c->frame, 1, id);
	if (sqlite3_step(c->frame) == SQLITE_ROW) {
		cf->function = col_dup(c->frame, 0);
		cf->file = col_dup(c->frame, 1);
		cf->f.line = sqlite3_column_int64(c->frame, 2);
		cf->mapping = col_dup(c->frame, 3);
		cf->f.rel_pc = sqlite3_column_int64(c->frame, 4);
	}
	sqlite3_reset(c->frame);
	cf->f.function = cf->function;
	cf->f.file = cf->file;
	cf->f.mapping = cf->mapping;
	cf->f.frame_id = id;
	cf->f.kernel = cf->mapping && !strcmp(cf->mapping, "[kernel]");
	cf->f.system = system_mapping(cf->mapping) ||
		       (cf->function && (runtime_function(cf->function) || plt_stub(cf->function)));
	if (ss_hmap_put(&c->frame_index, (uint64_t)id, 0, c->n_frames) != 0) {
		free(cf->function);
		free(cf->file);
		free(cf->mapping);
		return NULL;
	}
	/* The pointers into cf stay valid: the strings are heap copies, and f is
	 * copied out by ss_callstacks_get before the array can move. */
	return &c->frames[c->n_frames++].f;
}

/* The cached node of a callsite, read on first use; -1 when there is none. */
static int64_t node_of(struct ss_callstacks *c, int64_t id)
{
	uint64_t v;
	if (ss_hmap_get(&c->node_index, (uint64_t)id, 0, &v))
		return (int64_t)v;
	sqlite3_reset(c->callsite);
	sqlite3_bind_int64(c->callsite, 1, id);
	if (sqlite3_step(c->callsite) != SQLITE_ROW) {
		sqlite3_reset(c->callsite);
		return -1;
	}
	int64_t parent = sqlite3_column_type(c->callsite, 0) == SQLITE_NULL ? 0 : sqlite3_column_int64(c->callsite, 0);
	int64_t frame = sqlite3_column_int64(c->callsite, 1);
	sqlite3_reset(c->callsite);
	if (c->n_nodes == c->cap_nodes) {
		size_t cap = c->cap_nodes ? c->cap_nodes * 2 : 1024;
		void *n = realloc(c->nodes, cap * sizeof *c->nodes);
		if (!n)
			return -1;
		c->nodes = n;
		c->cap_nodes = cap;
	}
	if (ss_hmap_put(&c->node_index, (uint64_t)id, 0, c->n_nodes) != 0)
		return -1;
	c->nodes[c->n_nodes].parent = parent;
	c->nodes[c->n_nodes].frame = frame;
	c->nodes[c->n_nodes].own_known = false;
	return (int64_t)c->n_nodes++;
}

size_t ss_callstacks_get(struct ss_callstacks *c, int64_t callsite_id, struct ss_stack_frame *out, size_t max)
{
	size_t n = 0;
	/* A damaged database may hold a cycle: at most max steps. */
	while (callsite_id > 0 && n < max) {
		int64_t node = node_of(c, callsite_id);
		if (node < 0)
			break;
		int64_t parent = c->nodes[node].parent, frame = c->nodes[node].frame;
		const struct ss_stack_frame *f = frame_of(c, frame);
		if (!f)
			break;
		out[n++] = *f;
		callsite_id = parent;
	}
	return n;
}

static struct helper *helper_of(struct ss_callstacks *c, uint64_t h, bool add)
{
	uint64_t v;
	if (ss_hmap_get(&c->helper_index, h, 0, &v))
		return &c->helpers[v];
	if (!add)
		return NULL;
	if (c->n_helpers == c->cap_helpers) {
		size_t cap = c->cap_helpers ? c->cap_helpers * 2 : 256;
		struct helper *n = realloc(c->helpers, cap * sizeof *n);
		if (!n)
			return NULL;
		c->helpers = n;
		c->cap_helpers = cap;
	}
	if (ss_hmap_put(&c->helper_index, h, 0, c->n_helpers) != 0)
		return NULL;
	c->helpers[c->n_helpers] = (struct helper){ .hash = h };
	return &c->helpers[c->n_helpers++];
}

/* Every (function, its caller) pair of the callsite tree, once. */
static void learn_helpers(struct ss_callstacks *c)
{
	c->helpers_known = true;
	sqlite3_stmt *st = ss_read_prepare(c->db, SS_Q_CALLER_EDGES);
	if (!st)
		return;
	while (sqlite3_step(st) == SQLITE_ROW) {
		const struct ss_stack_frame *callee = frame_of(c, sqlite3_column_int64(st, 0));
		if (!callee || callee->system || !callee->function)
			continue;
		const char *callee_fn = callee->function;
		const struct ss_stack_frame *caller = frame_of(c, sqlite3_column_int64(st, 1));
		/* frame_of may have moved the cache: callee_fn is a heap string and
		 * stays valid. */
		if (!caller || !caller->function)
			continue;
		uint64_t ch = hash_str(callee_fn), rh = hash_str(caller->function);
		if (ch == rh)
			continue; /* recursion */
		struct helper *h = helper_of(c, ch, true);
		if (!h)
			break;
		if (h->callers == 0) {
			h->first_caller = rh;
			h->callers = 1;
		} else if (h->callers == 1 && h->first_caller != rh) {
			h->callers = 2;
		}
	}
	sqlite3_finalize(st);
}

static bool shared_helper(struct ss_callstacks *c, const struct ss_stack_frame *f)
{
	if (!f->function)
		return false;
	if (!c->helpers_known)
		learn_helpers(c);
	const struct helper *h = helper_of(c, hash_str(f->function), false);
	return h && h->callers >= 2;
}

int ss_callstacks_own(struct ss_callstacks *c, const struct ss_stack_frame *f, size_t n)
{
	int first_own = -1;
	for (size_t i = 0; i < n; i++) {
		if (f[i].system)
			continue;
		if (first_own < 0)
			first_own = (int)i;
		if (!shared_helper(c, &f[i]))
			return (int)i;
	}
	return first_own;
}

const struct ss_stack_frame *ss_callstacks_own_frame(struct ss_callstacks *c, int64_t callsite_id,
						 struct ss_stack_frame *scratch, size_t max)
{
	int64_t node = callsite_id > 0 ? node_of(c, callsite_id) : -1;
	if (node < 0)
		return NULL;
	if (!c->nodes[node].own_known) {
		size_t n = ss_callstacks_get(c, callsite_id, scratch, max);
		int own = ss_callstacks_own(c, scratch, n);
		/* node_of may have moved the array: index it again. */
		c->nodes[node].own_frame = own < 0 ? 0 : scratch[own].frame_id;
		c->nodes[node].own_known = true;
	}
	return c->nodes[node].own_frame ? frame_of(c, c->nodes[node].own_frame) : NULL;
}

/* "read" from "__x64_sys_read", "__arm64_sys_read", "ksys_read", "__se_sys_read". */
static const char *kernel_syscall(const char *fn)
{
	static const char *const prefixes[] = { "__x64_sys_", "__arm64_sys_", "__ia32_sys_", "__se_sys_",
						"__do_sys_", "ksys_", "__sys_" };
	for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
		if (starts(fn, prefixes[i]) && fn[strlen(prefixes[i])])
			return fn + strlen(prefixes[i]);
	return NULL;
}

/* "read" from libc's "__libc_read", "__GI___poll", "epoll_wait", "__read_nocancel". */
static bool libc_syscall(const char *fn, char *out, size_t len)
{
	while (*fn == '_')
		fn++;
	if (starts(fn, "libc_"))
		fn += 5;
	if (starts(fn, "GI_"))
		fn += 3;
	while (*fn == '_')
		fn++;
	snprintf(out, len, "%s", fn);
	char *nc = strstr(out, "_nocancel");
	if (nc)
		*nc = 0;
	size_t l = strlen(out);
	if (l > 2 && !strcmp(out + l - 2, "64") && !ss_syscall_known(out))
		out[l - 2] = 0; /* pread64 is pread64, fstat64 is fstat */
	return ss_syscall_known(out);
}

const char *ss_callstacks_syscall(struct ss_callstacks *c, const struct ss_stack_frame *f, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *s = f[i].kernel && f[i].function ? kernel_syscall(f[i].function) : NULL;
		if (s) {
			snprintf(c->syscall, sizeof c->syscall, "%s", s);
			return c->syscall;
		}
	}
	/* No kernel frames (user stacks only): the libc wrapper nearest to the
	 * leaf, among the leaf's system frames. */
	for (size_t i = 0; i < n && f[i].system && !f[i].kernel; i++)
		if (f[i].function && libc_syscall(f[i].function, c->syscall, sizeof c->syscall))
			return c->syscall;
	return NULL;
}

void ss_callstacks_frame_name(const struct ss_stack_frame *f, char *buf, size_t len)
{
	if (f->function)
		snprintf(buf, len, "%s", f->function);
	else
		snprintf(buf, len, "%s+0x%llx", f->mapping ? base_name(f->mapping) : "?",
			 (unsigned long long)f->rel_pc);
}

void ss_callstacks_text(const struct ss_stack_frame *f, size_t n, size_t max, char *buf, size_t len)
{
	size_t used = 0;
	if (len)
		buf[0] = 0;
	for (size_t i = 0; i < n && i < max && used + 1 < len; i++) {
		char name[256];
		ss_callstacks_frame_name(&f[i], name, sizeof name);
		int w = snprintf(buf + used, len - used, "%s%s", i ? " <- " : "", name);
		if (w < 0)
			break;
		used += (size_t)w < len - used ? (size_t)w : len - used - 1;
	}
}

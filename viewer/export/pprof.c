/*
 * pprof.c - a gzipped perftools.profiles.Profile (profile.proto, compiled by
 * protoc-c), which go tool pprof, Pyroscope and the OpenTelemetry profiles
 * converter read. One Sample per distinct stack and thread, with two values:
 * [samples, count] and [cpu, nanoseconds] (off-CPU: [switches, count] and
 * [off_cpu, nanoseconds]), and labels naming the worker and the thread. A
 * Location is one code address: the frames the symbolizer found at it (an
 * address in inlined code has several, innermost first) are its Lines.
 * Mappings are the recordings' executable mappings, the executable first;
 * time_nanos and duration_nanos give the exported window in wall-clock time.
 *
 * Memory grows with the distinct stacks, functions and addresses, not with
 * the samples (aggregated by export.c in one pass); the message is packed
 * straight into zlib, never whole in memory.
 */
#include "export.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "hmap.h"
#include "profile.pb-c.h"
#include "read_queries.h"
#include "stacks.h"

typedef Perftools__Profiles__Function pb_function;
typedef Perftools__Profiles__Location pb_location;
typedef Perftools__Profiles__Line pb_line;
typedef Perftools__Profiles__Mapping pb_mapping;
typedef Perftools__Profiles__Sample pb_sample;
typedef Perftools__Profiles__Label pb_label;
typedef Perftools__Profiles__ValueType pb_value_type;

bool ss_export_have_pprof(void)
{
	return true;
}

/* A growable array of elements of size sz. */
struct vec {
	void *v;
	size_t n, cap;
};

static void *vec_push(struct vec *a, size_t sz)
{
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 64;
		void *nv = realloc(a->v, cap * sz);
		if (!nv)
			return NULL;
		a->v = nv;
		a->cap = cap;
	}
	void *e = (char *)a->v + a->n++ * sz;
	memset(e, 0, sz);
	return e;
}

struct frame_info {
	int64_t mapping_id, inline_depth;
};

struct map_info {
	int64_t id, start, offset;
	bool kernel;
};

/* A location before packing: its lines are lines.v[first .. first + n). */
struct loc {
	uint64_t mapping_id, address;
	size_t first, n;
};

/* Labels of a thread: string indexes of its worker and thread names (0: none). */
struct thread_labels {
	int64_t worker, thread;
};

struct pp {
	sqlite3 *db;
	const struct ss_export_opts *o;
	struct ss_callstacks *cs;
	struct ss_stack_frame *frames;
	sqlite3_stmt *frame_q;
	struct vec strings;       /* char * */
	struct ss_hmap string_of; /* two hashes -> index */
	struct vec functions;     /* pb_function */
	struct ss_hmap function_of; /* (name, file) -> index */
	struct vec locs;          /* struct loc */
	struct vec lines;         /* pb_line */
	struct ss_hmap loc_of;    /* (first frame id, frames) -> index */
	struct vec frame_infos;   /* struct frame_info */
	struct ss_hmap frame_of;  /* frame id -> index */
	struct vec maps;          /* pb_mapping, and map_info beside it */
	struct vec map_infos;
	struct ss_hmap map_of;    /* mapping id -> index */
	struct vec thread_labels; /* struct thread_labels */
	struct ss_hmap thread_of; /* thread id -> index */
	bool failed, oom;
	char *err;
	size_t errlen;
};

static void fail_db(struct pp *p, const char *what)
{
	if (!p->failed)
		ss_export_db_error(p->db, what, p->err, p->errlen);
	p->failed = true;
}

static void fail_oom(struct pp *p)
{
	if (!p->failed)
		snprintf(p->err, p->errlen, "pprof: out of memory");
	p->failed = p->oom = true;
}

static uint64_t fnv(const char *s, uint64_t h)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* The string table index of s (added when new). */
static int64_t str(struct pp *p, const char *s)
{
	if (!s)
		s = "";
	uint64_t h1 = fnv(s, 1469598103934665603ull), h2 = fnv(s, 0x9e3779b97f4a7c15ull), v;
	if (ss_hmap_get(&p->string_of, h1, h2, &v))
		return (int64_t)v;
	char **e = vec_push(&p->strings, sizeof *e);
	if (!e || !(*e = strdup(s))) {
		if (e)
			p->strings.n--;
		fail_oom(p);
		return 0;
	}
	if (ss_hmap_put(&p->string_of, h1, h2, p->strings.n - 1) != 0) {
		fail_oom(p);
		return 0;
	}
	return (int64_t)(p->strings.n - 1);
}

static const struct frame_info *frame_info(struct pp *p, int64_t frame_id)
{
	static const struct frame_info none = { 0, 0 };
	uint64_t v;
	if (ss_hmap_get(&p->frame_of, (uint64_t)frame_id, 0, &v))
		return &((struct frame_info *)p->frame_infos.v)[v];
	struct frame_info *f = vec_push(&p->frame_infos, sizeof *f);
	if (!f || ss_hmap_put(&p->frame_of, (uint64_t)frame_id, 0, p->frame_infos.n - 1) != 0) {
		fail_oom(p);
		return &none;
	}
	sqlite3_reset(p->frame_q);
	sqlite3_bind_int64(p->frame_q, 1, frame_id);
	int rc = sqlite3_step(p->frame_q);
	if (rc == SQLITE_ROW) {
		f->mapping_id = sqlite3_column_int64(p->frame_q, 0);
		f->inline_depth = sqlite3_column_int64(p->frame_q, 1);
	} else if (rc != SQLITE_DONE) {
		fail_db(p, "frames");
	}
	sqlite3_reset(p->frame_q);
	return f;
}

static uint64_t function_id(struct pp *p, const struct ss_stack_frame *f)
{
	char name[512];
	ss_callstacks_frame_name(f, name, sizeof name);
	int64_t n = str(p, name), file = str(p, f->file);
	uint64_t v;
	if (ss_hmap_get(&p->function_of, (uint64_t)n, (uint64_t)file, &v))
		return v + 1;
	pb_function *fn = vec_push(&p->functions, sizeof *fn);
	if (!fn || ss_hmap_put(&p->function_of, (uint64_t)n, (uint64_t)file, p->functions.n - 1) != 0) {
		fail_oom(p);
		return 0;
	}
	perftools__profiles__function__init(fn);
	fn->id = p->functions.n;
	fn->name = n;
	fn->system_name = n;
	fn->filename = file;
	return fn->id;
}

/* The mapping (index in maps) of a mapping id, or -1 when not in scope. */
static int64_t map_index(struct pp *p, int64_t mapping_id)
{
	uint64_t v;
	return ss_hmap_get(&p->map_of, (uint64_t)mapping_id, 0, &v) ? (int64_t)v : -1;
}

/* The location of frames[i .. i + n) (one address), added when new. */
static uint64_t location_id(struct pp *p, const struct ss_stack_frame *frames, size_t i, size_t n, int64_t mapping_id)
{
	uint64_t v;
	if (ss_hmap_get(&p->loc_of, (uint64_t)frames[i].frame_id, n, &v))
		return v + 1;
	struct loc *l = vec_push(&p->locs, sizeof *l);
	if (!l || ss_hmap_put(&p->loc_of, (uint64_t)frames[i].frame_id, n, p->locs.n - 1) != 0) {
		fail_oom(p);
		return 0;
	}
	size_t id = p->locs.n;
	int64_t mi = map_index(p, mapping_id);
	if (mi >= 0) {
		const struct map_info *m = &((struct map_info *)p->map_infos.v)[mi];
		pb_mapping *pm = &((pb_mapping *)p->maps.v)[mi];
		l->mapping_id = (uint64_t)m->id;
		/* Kernel frames hold the address itself (a negative number, as
		 * the schema stores 64-bit addresses); the truncation marker's -1
		 * has none. */
		uint64_t rel = (uint64_t)frames[i].rel_pc;
		l->address = m->kernel ? rel : frames[i].rel_pc < 0 ? 0 : (uint64_t)m->start + rel - (uint64_t)m->offset;
		if (frames[i].function)
			pm->has_functions = true;
		if (frames[i].file)
			pm->has_filenames = true;
		if (frames[i].line > 0)
			pm->has_line_numbers = true;
		if (n > 1)
			pm->has_inline_frames = true;
	}
	l->first = p->lines.n;
	l->n = n;
	for (size_t k = i; k < i + n; k++) {
		uint64_t fid = function_id(p, &frames[k]);
		pb_line *ln = vec_push(&p->lines, sizeof *ln);
		if (!ln) {
			fail_oom(p);
			return 0;
		}
		perftools__profiles__line__init(ln);
		ln->function_id = fid;
		ln->line = frames[k].line > 0 ? frames[k].line : 0;
	}
	return id;
}

/* The sample's location ids, leaf first, appended to ids. */
static void sample_locations(struct pp *p, int64_t callsite, struct vec *ids)
{
	size_t n = callsite ? ss_callstacks_get(p->cs, callsite, p->frames, SS_STACK_MAX) : 0;
	if (!n) {
		/* No stack: one location of its own, so the sample still shows. */
		struct ss_stack_frame none = { .function = "[no stack]", .frame_id = 0, .rel_pc = -1 };
		uint64_t *e = vec_push(ids, sizeof *e);
		if (!e)
			fail_oom(p);
		else
			*e = location_id(p, &none, 0, 1, 0);
		return;
	}
	for (size_t i = 0; i < n && !p->failed;) {
		const struct frame_info *fi = frame_info(p, p->frames[i].frame_id);
		int64_t mapping = fi->mapping_id, depth = fi->inline_depth;
		size_t j = i + 1;
		/* Frames of one address: the same mapping and offset, each
		 * inlined one level less deep than the one before it. */
		while (j < n && p->frames[j].rel_pc == p->frames[i].rel_pc) {
			const struct frame_info *fj = frame_info(p, p->frames[j].frame_id);
			if (fj->mapping_id != mapping || fj->inline_depth >= depth)
				break;
			depth = fj->inline_depth;
			j++;
		}
		uint64_t *e = vec_push(ids, sizeof *e);
		if (!e) {
			fail_oom(p);
			return;
		}
		*e = location_id(p, p->frames, i, j - i, mapping);
		i = j;
	}
}

static void load_mappings(struct pp *p)
{
	sqlite3_stmt *st = ss_read_prepare(p->db, SS_Q_EXPORT_MAPPINGS);
	if (!st) {
		fail_db(p, "mappings");
		return;
	}
	ss_export_bind(st, p->o, 0);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);
		if (id <= 0 || map_index(p, id) >= 0)
			continue;
		pb_mapping *m = vec_push(&p->maps, sizeof *m);
		struct map_info *mi = vec_push(&p->map_infos, sizeof *mi);
		if (!m || !mi || ss_hmap_put(&p->map_of, (uint64_t)id, 0, p->maps.n - 1) != 0) {
			fail_oom(p);
			break;
		}
		const char *path = (const char *)sqlite3_column_text(st, 1);
		perftools__profiles__mapping__init(m);
		m->id = (uint64_t)id;
		m->memory_start = (uint64_t)sqlite3_column_int64(st, 3);
		m->memory_limit = (uint64_t)sqlite3_column_int64(st, 4);
		m->file_offset = (uint64_t)sqlite3_column_int64(st, 5);
		m->filename = str(p, path);
		m->build_id = str(p, (const char *)sqlite3_column_text(st, 2));
		*mi = (struct map_info){ .id = id, .start = sqlite3_column_int64(st, 3),
					 .offset = sqlite3_column_int64(st, 5),
					 .kernel = path && !strcmp(path, "[kernel]") };
	}
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		fail_db(p, "mappings");
	sqlite3_finalize(st);
}

static void load_threads(struct pp *p)
{
	sqlite3_stmt *st = ss_read_prepare(p->db, SS_Q_EXPORT_THREADS);
	if (!st) {
		fail_db(p, "threads");
		return;
	}
	ss_export_bind(st, p->o, 0);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);
		uint64_t v;
		if (ss_hmap_get(&p->thread_of, (uint64_t)id, 0, &v))
			continue;
		struct thread_labels *t = vec_push(&p->thread_labels, sizeof *t);
		if (!t || ss_hmap_put(&p->thread_of, (uint64_t)id, 0, p->thread_labels.n - 1) != 0) {
			fail_oom(p);
			break;
		}
		const char *name = (const char *)sqlite3_column_text(st, 3);
		int64_t tn = name && *name ? str(p, name) : 0;
		int64_t wn = 0;
		if (sqlite3_column_type(st, 4) != SQLITE_NULL) {
			const char *rt = (const char *)sqlite3_column_text(st, 5);
			char w[160];
			snprintf(w, sizeof w, "%.100s#%lld", rt ? rt : "?", (long long)sqlite3_column_int64(st, 6));
			wn = str(p, w);
		}
		t->worker = wn;
		t->thread = tn;
	}
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		fail_db(p, "threads");
	sqlite3_finalize(st);
}

/* Wall-clock start and length of the exported window. */
static void time_range(struct pp *p, int64_t *time_nanos, int64_t *duration)
{
	const struct ss_scope *s = &p->o->scope;
	int64_t start = s->from > s->origin ? s->from : s->origin;
	int64_t end = s->to < s->end ? s->to : s->end;
	*duration = end > start && !__builtin_sub_overflow(end, start, duration) ? *duration : 0;
	*time_nanos = 0;
	sqlite3_stmt *st = ss_read_prepare(p->db, SS_Q_SUM_RECORDINGS);
	if (!st)
		return;
	ss_scope_bind(st, s);
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (sqlite3_column_type(st, 4) == SQLITE_NULL)
			continue;
		double off = sqlite3_column_double(st, 4);
		int64_t t;
		if (off > -9e18 && off < 9e18 && !__builtin_add_overflow(start, (int64_t)off, &t) && t > 0)
			*time_nanos = t;
		break;
	}
	sqlite3_finalize(st);
}

/* ---- packing into gzip ---------------------------------------------------------- */

struct gz_buffer {
	ProtobufCBuffer base;
	z_stream z;
	FILE *out;
	unsigned char buf[1 << 16];
	bool failed;
};

static void gz_drain(struct gz_buffer *g, int flush)
{
	do {
		g->z.next_out = g->buf;
		g->z.avail_out = sizeof g->buf;
		if (deflate(&g->z, flush) == Z_STREAM_ERROR)
			g->failed = true;
		size_t n = sizeof g->buf - g->z.avail_out;
		if (n && fwrite(g->buf, 1, n, g->out) != n)
			g->failed = true;
	} while (g->z.avail_out == 0 && !g->failed);
}

static void gz_append(ProtobufCBuffer *b, size_t len, const uint8_t *data)
{
	struct gz_buffer *g = (struct gz_buffer *)b;
	while (len && !g->failed) {
		uInt part = len > (1u << 30) ? 1u << 30 : (uInt)len;
		g->z.next_in = (Bytef *)(uintptr_t)data;
		g->z.avail_in = part;
		gz_drain(g, Z_NO_FLUSH);
		data += part;
		len -= part;
	}
}

static int pack(Perftools__Profiles__Profile *prof, FILE *out, char *err, size_t errlen)
{
	struct gz_buffer *g = calloc(1, sizeof *g);
	if (!g) {
		snprintf(err, errlen, "pprof: out of memory");
		return -1;
	}
	g->base.append = gz_append;
	g->out = out;
	/* 15 + 16: a gzip header and trailer around the deflate stream. */
	if (deflateInit2(&g->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		free(g);
		snprintf(err, errlen, "pprof: zlib could not start");
		return -1;
	}
	perftools__profiles__profile__pack_to_buffer(prof, &g->base);
	g->z.avail_in = 0;
	if (!g->failed)
		gz_drain(g, Z_FINISH);
	deflateEnd(&g->z);
	bool failed = g->failed;
	free(g);
	if (failed) {
		snprintf(err, errlen, "writing the profile failed");
		return -1;
	}
	return 0;
}

/* ---- the profile ------------------------------------------------------------------ */

static void pp_free(struct pp *p)
{
	for (size_t i = 0; i < p->strings.n; i++)
		free(((char **)p->strings.v)[i]);
	free(p->strings.v);
	free(p->functions.v);
	free(p->locs.v);
	free(p->lines.v);
	free(p->frame_infos.v);
	free(p->maps.v);
	free(p->map_infos.v);
	free(p->thread_labels.v);
	ss_hmap_free(&p->string_of);
	ss_hmap_free(&p->function_of);
	ss_hmap_free(&p->loc_of);
	ss_hmap_free(&p->frame_of);
	ss_hmap_free(&p->map_of);
	ss_hmap_free(&p->thread_of);
	sqlite3_finalize(p->frame_q);
	free(p->frames);
	ss_callstacks_free(p->cs);
}

/* Pointer arrays over the element arrays, as protobuf-c's messages take
 * them; NULL when out of memory. */
static void **pointers(void *elems, size_t n, size_t sz)
{
	void **v = malloc((n ? n : 1) * sizeof *v);
	for (size_t i = 0; v && i < n; i++)
		v[i] = (char *)elems + i * sz;
	return v;
}

struct packed {
	pb_sample *samples;
	pb_label *labels;
	int64_t *values;
	void **sample_ptrs, **label_ptrs, **loc_ptrs, **line_ptrs, **fn_ptrs, **map_ptrs;
	pb_location *locs;
	uint64_t *loc_ids;
};

static void packed_free(struct packed *k)
{
	free(k->samples);
	free(k->labels);
	free(k->values);
	free(k->sample_ptrs);
	free(k->label_ptrs);
	free(k->loc_ptrs);
	free(k->line_ptrs);
	free(k->fn_ptrs);
	free(k->map_ptrs);
	free(k->locs);
	free(k->loc_ids);
}

int ss_export_pprof(sqlite3 *db, const struct ss_export_opts *o, FILE *out, struct ss_export_stats *st,
		    char *err, size_t errlen)
{
	memset(st, 0, sizeof *st);
	struct ss_export_agg agg;
	if (ss_export_aggregate(db, o, &agg, err, errlen) != 0)
		return -1;
	struct pp p = { .db = db, .o = o, .err = err, .errlen = errlen };
	struct packed k = { 0 };
	struct vec ids = { 0 };      /* every sample's location ids, one after another */
	size_t *id_first = calloc(agg.n, sizeof *id_first), *id_n = calloc(agg.n, sizeof *id_n);
	int rc = -1;
	p.cs = ss_callstacks_new(db);
	p.frames = malloc(SS_STACK_MAX * sizeof *p.frames);
	p.frame_q = ss_read_prepare(db, SS_Q_EXPORT_FRAME);
	if (!p.cs || !p.frames || !p.frame_q || !id_first || !id_n) {
		if (!p.cs || !p.frame_q)
			fail_db(&p, "stacks");
		else
			fail_oom(&p);
		goto out;
	}
	str(&p, ""); /* string_table[0] is "" */
	int64_t s_count = str(&p, o->offcpu ? "switches" : "samples"), s_unit = str(&p, "count");
	int64_t s_ns = str(&p, o->offcpu ? "off_cpu" : "cpu"), s_nanos = str(&p, "nanoseconds");
	int64_t s_worker = str(&p, "worker"), s_thread = str(&p, "thread");
	load_mappings(&p);
	load_threads(&p);
	for (size_t i = 0; i < agg.n && !p.failed; i++) {
		id_first[i] = ids.n;
		sample_locations(&p, agg.rows[i].callsite_id, &ids);
		id_n[i] = ids.n - id_first[i];
	}
	char note[600];
	snprintf(note, sizeof note, "stallscope export of %.500s", o->source ? o->source : "?");
	int64_t comment = str(&p, note);
	if (p.failed)
		goto out;

	/* Everything is known: lay the messages out. */
	size_t n = agg.n;
	k.samples = calloc(n, sizeof *k.samples);
	k.labels = calloc(2 * n, sizeof *k.labels);
	k.label_ptrs = calloc(n ? 2 * n : 1, sizeof *k.label_ptrs);
	k.values = calloc(2 * n, sizeof *k.values);
	k.locs = calloc(p.locs.n ? p.locs.n : 1, sizeof *k.locs);
	k.loc_ids = malloc((ids.n ? ids.n : 1) * sizeof *k.loc_ids);
	k.sample_ptrs = pointers(k.samples, n, sizeof *k.samples);
	k.loc_ptrs = pointers(k.locs, p.locs.n, sizeof *k.locs);
	k.line_ptrs = pointers(p.lines.v, p.lines.n, sizeof(pb_line));
	k.fn_ptrs = pointers(p.functions.v, p.functions.n, sizeof(pb_function));
	k.map_ptrs = pointers(p.maps.v, p.maps.n, sizeof(pb_mapping));
	if (!k.samples || !k.labels || !k.label_ptrs || !k.values || !k.locs || !k.loc_ids || !k.sample_ptrs ||
	    !k.loc_ptrs || !k.line_ptrs || !k.fn_ptrs || !k.map_ptrs) {
		fail_oom(&p);
		goto out;
	}
	if (ids.n)
		memcpy(k.loc_ids, ids.v, ids.n * sizeof *k.loc_ids);
	for (size_t i = 0; i < p.locs.n; i++) {
		const struct loc *l = &((struct loc *)p.locs.v)[i];
		perftools__profiles__location__init(&k.locs[i]);
		k.locs[i].id = i + 1;
		k.locs[i].mapping_id = l->mapping_id;
		k.locs[i].address = l->address;
		k.locs[i].n_line = l->n;
		k.locs[i].line = (pb_line **)&k.line_ptrs[l->first];
	}
	size_t n_labels = 0;
	uint64_t total_ns = 0;
	for (size_t i = 0; i < n; i++) {
		const struct ss_export_agg_row *r = &agg.rows[i];
		pb_sample *s = &k.samples[i];
		perftools__profiles__sample__init(s);
		s->n_location_id = id_n[i];
		s->location_id = &k.loc_ids[id_first[i]];
		s->n_value = 2;
		s->value = &k.values[2 * i];
		s->value[0] = r->samples > INT64_MAX ? INT64_MAX : (int64_t)r->samples;
		s->value[1] = r->ns > INT64_MAX ? INT64_MAX : (int64_t)r->ns;
		total_ns = total_ns > UINT64_MAX - r->ns ? UINT64_MAX : total_ns + r->ns;
		uint64_t t;
		s->label = (pb_label **)&k.label_ptrs[n_labels];
		if (ss_hmap_get(&p.thread_of, (uint64_t)r->thread_id, 0, &t)) {
			const struct thread_labels *tl = &((struct thread_labels *)p.thread_labels.v)[t];
			const int64_t keys[2] = { s_worker, s_thread }, vals[2] = { tl->worker, tl->thread };
			for (int j = 0; j < 2; j++) {
				if (!vals[j])
					continue;
				pb_label *lb = &k.labels[n_labels];
				perftools__profiles__label__init(lb);
				lb->key = keys[j];
				lb->str = vals[j];
				k.label_ptrs[n_labels++] = lb;
				s->n_label++;
			}
		}
	}
	pb_value_type types[2], period_type;
	void *type_ptrs[2] = { &types[0], &types[1] };
	perftools__profiles__value_type__init(&types[0]);
	perftools__profiles__value_type__init(&types[1]);
	perftools__profiles__value_type__init(&period_type);
	types[0].type = s_count;
	types[0].unit = s_unit;
	types[1].type = s_ns;
	types[1].unit = s_nanos;
	period_type = o->offcpu ? types[0] : types[1];

	Perftools__Profiles__Profile prof;
	perftools__profiles__profile__init(&prof);
	prof.n_sample_type = 2;
	prof.sample_type = (pb_value_type **)type_ptrs;
	prof.n_sample = n;
	prof.sample = (pb_sample **)k.sample_ptrs;
	prof.n_mapping = p.maps.n;
	prof.mapping = (pb_mapping **)k.map_ptrs;
	prof.n_location = p.locs.n;
	prof.location = (pb_location **)k.loc_ptrs;
	prof.n_function = p.functions.n;
	prof.function = (pb_function **)k.fn_ptrs;
	prof.n_string_table = p.strings.n;
	prof.string_table = p.strings.v;
	time_range(&p, &prof.time_nanos, &prof.duration_nanos);
	prof.period_type = &period_type;
	/* The CPU time one sample stands for: the sampler's fixed period. */
	prof.period = o->offcpu ? 1 : agg.samples ? (int64_t)(agg.samples_ns / agg.samples) : 0;
	prof.n_comment = 1;
	prof.comment = &comment;
	prof.default_sample_type = s_ns;
	if (pack(&prof, out, err, errlen) != 0) {
		p.failed = true;
		goto out;
	}
	st->samples = agg.samples;
	st->stacks = n;
	st->value = total_ns;
	rc = 0;
out:
	packed_free(&k);
	free(ids.v);
	free(id_first);
	free(id_n);
	pp_free(&p);
	ss_export_agg_free(&agg);
	return rc;
}

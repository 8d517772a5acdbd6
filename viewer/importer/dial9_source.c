/*
 * dial9_source.c - see dial9_source.h. Schemas are classified once each (by
 * name, and fields by name, so that versions which add, drop or make optional
 * a field still map); the source's own strings (runtime names, span fields as
 * JSON) live above the reader's ids, and locations and stacks are defined to
 * the model the first time an event refers to them.
 */
#include "dial9_source.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "d9_reader.h"
#include "d9_tables.h"
#include "hmap.h"
#include "model.h"
#include "segment_format.h"
#include "symtab.h"

#define OWN_STRINGS (1ull << 32)  /* the source's strings: ids from here up */
#define SPAN_LOCATIONS (1ull << 40) /* locations of span declarations: + schema index */
#define LANE_BLOCKING 254u
#define LANE_OTHER 255u
#define LANES 256u
#define MAX_GAPS 65536u
#define RELEASE_EVERY 4096u
/* dial9's default CPU sampling frequency, for when the trace has too few
 * samples to measure the period. */
#define DEFAULT_PERIOD_NS (1000000000ull / 99)

enum kind {
	K_OTHER, K_POLL_START, K_POLL_END, K_PARK, K_UNPARK, K_QUEUE, K_SPAWN, K_TERMINATE, K_WAKE, K_CPU,
	K_DUMP, K_META, K_CLOCK, K_SYMBOL, K_SPAN_ENTER, K_SPAN_EXIT, K_SPAN_CLOSE,
};

/* The roles of fields, looked up by name. */
enum role {
	R_WORKER, R_LQ, R_TASK, R_LOC, R_CPU_TIME, R_TID, R_SCHED, R_GLOBAL, R_WAKER, R_SOURCE, R_NAME, R_STACK,
	R_CPU, R_SPAN, R_PARENT, R_SPAN_NAME, R_REALTIME, R_ENTRIES, R_ADDR, R_SYM, R_DEPTH, R_FILE, R_LINE,
	R_COUNT
};

/* What the source decided about one schema of the file (d9_schema.user). */
struct kind_info {
	enum kind k;
	int f[R_COUNT];
	int first_user;          /* spans: the first of the user's fields */
	size_t prefix;           /* spans: length of "SpanEnter:" or "SpanExit:" */
	uint64_t location;       /* spans: the declaration's location id once defined, 0 none */
	bool location_tried;
	uint64_t kept;           /* K_OTHER: events kept in other_events */
};

struct lane {
	bool used, polls;        /* has events; has polls or parks (a worker lane) */
	uint64_t tid;            /* from its parks */
	uint64_t runtime;        /* own string id of its runtime's name */
	/* the main pass: the last poll begun on it, and the local depth last given */
	bool in_poll;
	uint64_t poll_task, poll_ts;
	bool lq_known;
	uint64_t lq;
};

struct meta {
	char *key, *value;
};

struct src {
	struct ss_model *m;
	struct d9_reader *r;
	struct d9_strings own;
	struct kind_info *infos;     /* by schema index */
	size_t n_infos;
	struct lane lanes[LANES];
	uint16_t *batch_lane;        /* lane + 1 of each stream, 0: none seen */
	size_t n_batch_lane;
	struct d9_map tid_lane;      /* tid -> lane + 1 */
	struct d9_map tid_name;      /* tid -> string id of its thread name */
	struct d9_map tid_last;      /* tid -> last on-CPU sample time + 1 (scan) */
	struct d9_map tid_named;     /* tid -> name given to the model (main pass) */
	struct d9_map defined_loc, defined_stack;
	uint64_t *gaps;
	size_t n_gaps;
	uint64_t period;
	struct ss_symtab symtab;
	uint64_t shadow_addr;        /* the last address given an entry one byte back too */
	bool shadow;
	struct meta *meta;
	size_t n_meta;
	bool have_anchor;
	uint64_t anchor_mono, anchor_real;
	struct d9_buf json;
	struct ss_dial9_run *out;
	void (*progress)(void *ctx, uint64_t bytes, uint64_t events);
	void *pctx;
	uint64_t bytes_reported, events_reported, since_release;
	bool failed;
};

/* ---- identity ------------------------------------------------------------------ */

static uint64_t fnv(const void *p, size_t n, uint64_t h)
{
	return ss_hash_bytes(p, n, h);
}

static bool ends_with(const char *s, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);
	return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

void ss_dial9_identify(const char *path, struct ss_dial9_id *id)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	if (slash) {
		char given[PATH_MAX];
		snprintf(given, sizeof given, "%.*s", (int)(slash - path) ? (int)(slash - path) : 1, path);
		if (!realpath(given, dir))
			snprintf(dir, sizeof dir, "%s", given);
	} else if (!realpath(".", dir)) {
		snprintf(dir, sizeof dir, ".");
	}
	size_t n = strlen(base);
	id->sealed = !ends_with(base, n, ".active");
	if (!id->sealed)
		n -= 7;
	if (ends_with(base, n, ".gz"))
		n -= 3;
	id->seq = 0;
	size_t prefix = n;
	if (ends_with(base, n, ".bin")) {
		size_t e = n - 4, d = e;
		while (d > 0 && base[d - 1] >= '0' && base[d - 1] <= '9')
			d--;
		if (d < e && d > 1 && base[d - 1] == '.' && e - d <= 18) {
			for (size_t i = d; i < e; i++)
				id->seq = id->seq * 10 + (uint64_t)(base[i] - '0');
			prefix = d - 1;
		}
	}
	uint64_t h = fnv("dial9", 6, SS_HASH_SEED);
	h = fnv(dir, strlen(dir) + 1, h);
	id->session_id = fnv(base, prefix, h);
}

/* ---- strings, locations, stacks --------------------------------------------------- */

static const char *string_of(void *ctx, uint64_t id, size_t *len)
{
	struct src *s = ctx;
	if (id >= OWN_STRINGS)
		return d9_strings_get(&s->own, (uint32_t)(id - OWN_STRINGS), len);
	return d9_string(s->r, (uint32_t)id, len);
}

static uint64_t own_string(struct src *s, const char *p, size_t n)
{
	uint32_t id = d9_strings_intern(&s->own, (const uint8_t *)p, n);
	return id ? OWN_STRINGS + id : 0;
}

static void fail(struct src *s)
{
	s->failed = true;
}

/* "file:line:col" (dial9's spawn locations) to a location of the model. */
static uint64_t location(struct src *s, uint64_t sid)
{
	if (!sid || d9_map_get(&s->defined_loc, sid))
		return sid;
	size_t n;
	const char *t = string_of(s, sid, &n);
	if (!t)
		return 0;
	/* From the right: the column, then the line (or only a line). */
	size_t end = n;
	uint64_t num[2] = { 0, 0 };
	int k = 0;
	while (k < 2) {
		size_t j = end;
		while (j > 0 && t[j - 1] >= '0' && t[j - 1] <= '9')
			j--;
		if (j == end || j == 0 || t[j - 1] != ':' || end - j > 9)
			break;
		for (size_t i = j; i < end; i++)
			num[k] = num[k] * 10 + (uint64_t)(t[i] - '0');
		k++;
		end = j - 1;
	}
	size_t file_len = k ? end : n;
	uint64_t line = k == 2 ? num[1] : num[0];
	if (ss_model_location(s->m, sid, t, file_len, line, NULL, 0) != 0 || d9_map_put(&s->defined_loc, sid, 1) != 0)
		fail(s);
	return sid;
}

/* The declaration of a tracing span, from its schema name
 * "SpanEnter:target::name:file:line". */
static uint64_t span_location(struct src *s, const struct d9_schema *sc, size_t prefix)
{
	const char *t = sc->name + prefix;
	size_t n = sc->name_len - prefix;
	size_t k = n;
	while (k > 0 && t[k - 1] >= '0' && t[k - 1] <= '9')
		k--;
	if (k == n || k < 2 || t[k - 1] != ':')
		return 0;
	uint64_t line = 0;
	for (size_t i = k; i < n && i < k + 9; i++)
		line = line * 10 + (uint64_t)(t[i] - '0');
	size_t file_end = k - 1, f = file_end;
	while (f > 0 && t[f - 1] != ':')
		f--;
	if (f < 2 || t[f - 2] == ':')
		return 0; /* the last ':' before the file belongs to a "::" */
	uint64_t id = SPAN_LOCATIONS + sc->index;
	if (ss_model_location(s->m, id, t + f, file_end - f, line, t, f - 1) != 0)
		fail(s);
	return id;
}

static bool is_kernel(uint64_t a)
{
	return a >= 0xffff800000000000ull;
}

/* A stack of the file, defined to the model on first use. */
static uint64_t stack(struct src *s, const struct d9_value *v)
{
	uint32_t id = d9_value_stack(s->r, v);
	if (!id || d9_map_get(&s->defined_stack, id))
		return id;
	size_t n;
	const uint64_t *a = d9_stack(s->r, id, &n);
	uint64_t pcs[512];
	size_t k = 0, nkernel = 0;
	bool user = false;
	for (size_t i = 0; a && i < n && k < sizeof pcs / sizeof pcs[0]; i++) {
		if (a[i] >= 0xfffffffffffff000ull || a[i] == 0)
			continue; /* perf's context markers, and padding */
		if (is_kernel(a[i]) && !user)
			nkernel++;
		else
			user = true;
		pcs[k++] = a[i];
	}
	if (ss_model_stack(s->m, id, pcs, k, nkernel, false) != 0 || d9_map_put(&s->defined_stack, id, 1) != 0)
		fail(s);
	return id;
}

/* ---- values ------------------------------------------------------------------------ */

static bool u_of(const struct d9_event *e, int f, uint64_t *out)
{
	if (f < 0)
		return false;
	const struct d9_value *v = &e->v[f];
	switch (v->type) {
	case D9_VARINT:
	case D9_U8:
	case D9_U16:
	case D9_U32:
	case D9_BOOL:
		*out = v->u;
		return true;
	case D9_I64:
		if (v->i < 0)
			return false;
		*out = (uint64_t)v->i;
		return true;
	default:
		return false;
	}
}

static uint64_t u_or(const struct d9_event *e, int f, uint64_t dflt)
{
	uint64_t v;
	return u_of(e, f, &v) ? v : dflt;
}

/* A string field as an id of string_of (0: absent or unresolved). */
static uint64_t str_of(struct src *s, const struct d9_event *e, int f)
{
	if (f < 0)
		return 0;
	const struct d9_value *v = &e->v[f];
	if (v->type == D9_POOLED_STRING)
		return v->u;
	if (v->type == D9_STRING)
		return own_string(s, (const char *)v->p, v->len);
	return 0;
}

static uint32_t lane_of(uint64_t worker)
{
	if (worker < LANE_BLOCKING)
		return (uint32_t)worker;
	return worker == LANE_BLOCKING ? LANE_BLOCKING : LANE_OTHER;
}

/* ---- schemas ------------------------------------------------------------------------ */

static const struct {
	const char *name;
	enum kind k;
} kinds[] = {
	{ "PollStartEvent", K_POLL_START }, { "PollEndEvent", K_POLL_END }, { "WorkerParkEvent", K_PARK },
	{ "WorkerUnparkEvent", K_UNPARK }, { "QueueSampleEvent", K_QUEUE }, { "TaskSpawnEvent", K_SPAWN },
	{ "TaskTerminateEvent", K_TERMINATE }, { "WakeEventEvent", K_WAKE }, { "CpuSampleEvent", K_CPU },
	{ "TaskDumpEvent", K_DUMP }, { "SegmentMetadataEvent", K_META }, { "ClockSyncEvent", K_CLOCK },
	{ "SymbolTableEntry", K_SYMBOL }, { "SpanCloseEvent", K_SPAN_CLOSE },
};

static const char *const role_field[R_COUNT] = {
	[R_WORKER] = "worker_id", [R_LQ] = "local_queue", [R_TASK] = "task_id", [R_LOC] = "spawn_loc",
	[R_CPU_TIME] = "cpu_time_ns", [R_TID] = "tid", [R_SCHED] = "sched_wait_ns", [R_GLOBAL] = "global_queue",
	[R_WAKER] = "waker_task_id", [R_SOURCE] = "source", [R_NAME] = "thread_name", [R_STACK] = "callchain",
	[R_CPU] = "cpu", [R_SPAN] = "span_id", [R_PARENT] = "parent_span_id", [R_SPAN_NAME] = "span_name",
	[R_REALTIME] = "realtime_ns", [R_ENTRIES] = "entries", [R_ADDR] = "addr", [R_SYM] = "symbol_name",
	[R_DEPTH] = "inline_depth", [R_FILE] = "source_file", [R_LINE] = "source_line",
};

/* The fields each kind cannot do without (else its events are kept as other). */
static bool complete(const struct kind_info *ki)
{
	const int *f = ki->f;
	switch (ki->k) {
	case K_POLL_START:
		return f[R_WORKER] >= 0 && f[R_TASK] >= 0;
	case K_POLL_END:
	case K_PARK:
	case K_UNPARK:
		return f[R_WORKER] >= 0;
	case K_QUEUE:
		return f[R_GLOBAL] >= 0;
	case K_SPAWN:
	case K_TERMINATE:
	case K_DUMP:
		return f[R_TASK] >= 0;
	case K_WAKE:
		return f[R_TASK] >= 0;
	case K_CPU:
		return f[R_STACK] >= 0;
	case K_META:
		return f[R_ENTRIES] >= 0;
	case K_CLOCK:
		return f[R_REALTIME] >= 0;
	case K_SYMBOL:
		return f[R_ADDR] >= 0 && f[R_SYM] >= 0;
	case K_SPAN_ENTER:
	case K_SPAN_EXIT:
	case K_SPAN_CLOSE:
		return f[R_SPAN] >= 0;
	default:
		return true;
	}
}

static struct kind_info *info_of(struct src *s, struct d9_schema *sc)
{
	if (sc->user)
		return sc->user;
	if (sc->index >= s->n_infos) {
		size_t nc = s->n_infos ? s->n_infos * 2 : 64;
		while (nc <= sc->index)
			nc *= 2;
		struct kind_info *ni = realloc(s->infos, nc * sizeof *ni);
		if (!ni) {
			fail(s);
			static struct kind_info other = { .k = K_OTHER };
			return &other;
		}
		/* schema->user pointers into the old array move with it */
		for (size_t i = 0; i < d9_schema_count(s->r); i++) {
			struct d9_schema *o = d9_schema_at(s->r, i);
			if (o->user)
				o->user = ni + (((struct kind_info *)o->user) - s->infos);
		}
		s->infos = ni;
		s->n_infos = nc;
	}
	struct kind_info *ki = &s->infos[sc->index];
	memset(ki, 0, sizeof *ki);
	ki->k = K_OTHER;
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		if (strlen(kinds[i].name) == (size_t)sc->name_len && memcmp(kinds[i].name, sc->name, sc->name_len) == 0)
			ki->k = kinds[i].k;
	size_t prefix = 0;
	if (sc->name_len > 10 && memcmp(sc->name, "SpanEnter:", 10) == 0)
		ki->k = K_SPAN_ENTER, prefix = 10;
	else if (sc->name_len > 9 && memcmp(sc->name, "SpanExit:", 9) == 0)
		ki->k = K_SPAN_EXIT, prefix = 9;
	for (int r = 0; r < R_COUNT; r++)
		ki->f[r] = d9_schema_field(sc, role_field[r]);
	/* The same field under the names other event types use. */
	if (ki->k == K_WAKE) {
		ki->f[R_TASK] = d9_schema_field(sc, "woken_task_id");
		ki->f[R_WORKER] = d9_schema_field(sc, "target_worker");
	}
	if (ki->k == K_QUEUE && ki->f[R_GLOBAL] < 0)
		ki->f[R_GLOBAL] = d9_schema_field(sc, "global_queue_depth");
	if (!complete(ki))
		ki->k = K_OTHER;
	if (ki->k == K_SPAN_ENTER || ki->k == K_SPAN_EXIT) {
		int last = -1;
		for (int r = 0; r < R_COUNT; r++)
			if ((r == R_WORKER || r == R_SPAN || r == R_PARENT || r == R_SPAN_NAME) && ki->f[r] > last)
				last = ki->f[r];
		ki->first_user = last + 1;
		ki->prefix = prefix;
	}
	sc->user = ki;
	return ki;
}

/* ---- the scan ------------------------------------------------------------------------ */

static void batch_worker(struct src *s, uint32_t batch, uint64_t worker)
{
	if (batch >= D9_MAX_BATCHES)
		return;
	if (batch >= s->n_batch_lane) {
		size_t nc = s->n_batch_lane ? s->n_batch_lane * 2 : 1024;
		while (nc <= batch)
			nc *= 2;
		uint16_t *nb = realloc(s->batch_lane, nc * sizeof *nb);
		if (!nb)
			return;
		memset(nb + s->n_batch_lane, 0, (nc - s->n_batch_lane) * sizeof *nb);
		s->batch_lane = nb;
		s->n_batch_lane = nc;
	}
	if (!s->batch_lane[batch])
		s->batch_lane[batch] = (uint16_t)(lane_of(worker) + 1);
}

static uint32_t lane_of_batch(const struct src *s, uint32_t batch)
{
	return batch < s->n_batch_lane && s->batch_lane[batch] ? s->batch_lane[batch] - 1u : LANE_OTHER;
}

static void symbol(struct src *s, const struct d9_event *e, const struct kind_info *ki)
{
	uint64_t addr = u_or(e, ki->f[R_ADDR], 0), depth = u_or(e, ki->f[R_DEPTH], 0);
	uint64_t line = u_or(e, ki->f[R_LINE], 0);
	size_t fl = 0, sl = 0;
	uint64_t fn_id = str_of(s, e, ki->f[R_SYM]), file_id = str_of(s, e, ki->f[R_FILE]);
	const char *fn = fn_id ? string_of(s, fn_id, &fl) : NULL;
	const char *file = file_id ? string_of(s, file_id, &sl) : NULL;
	if (!addr)
		return;
	/* dial9 symbolizes the addresses as its stacks hold them; the model looks
	 * a return address up one byte back (inside the call), so the entry goes
	 * there too unless that byte has an entry of its own. */
	if (ss_symtab_add(&s->symtab, addr, depth, line, fn && fl ? fn : NULL, file && sl ? file : NULL, NULL) != 0)
		return;
	/* decided at an address's outermost entry, which dial9 writes first */
	if (depth == 0 || addr != s->shadow_addr) {
		struct ss_sym_result probe;
		s->shadow_addr = addr;
		s->shadow = !ss_symtab_lookup(&s->symtab, addr - 1, &probe);
	}
	if (s->shadow)
		ss_symtab_add(&s->symtab, addr - 1, depth, line, fn && fl ? fn : NULL, file && sl ? file : NULL, NULL);
}

static void metadata(struct src *s, const struct d9_event *e, const struct kind_info *ki)
{
	const struct d9_value *v = &e->v[ki->f[R_ENTRIES]];
	if (v->type != D9_STRING_MAP)
		return;
	size_t at = 0;
	for (uint32_t i = 0; i < v->count; i++) {
		uint32_t kl = d9_le32(v->p + at);
		const char *k = (const char *)v->p + at + 4;
		at += 4 + (size_t)kl;
		uint32_t vl = d9_le32(v->p + at);
		const char *val = (const char *)v->p + at + 4;
		at += 4 + (size_t)vl;
		size_t j = 0;
		while (j < s->n_meta && !(strlen(s->meta[j].key) == (size_t)kl && memcmp(s->meta[j].key, k, kl) == 0))
			j++;
		if (j == s->n_meta) {
			if (s->n_meta >= 4096)
				return;
			struct meta *nm = realloc(s->meta, (s->n_meta + 1) * sizeof *nm);
			char *key = strndup(k, kl);
			if (nm)
				s->meta = nm;
			if (!nm || !key) {
				free(key);
				return;
			}
			s->meta[s->n_meta++] = (struct meta){ key, NULL };
		}
		free(s->meta[j].value);
		s->meta[j].value = strndup(val, vl);
		/* "runtime.NAME" = "0,1,2": the workers of a runtime */
		if (kl > 8 && memcmp(k, "runtime.", 8) == 0) {
			uint64_t name = own_string(s, k + 8, kl - 8), w = 0;
			bool digits = false;
			for (uint32_t c = 0; c <= vl; c++) {
				if (c < vl && val[c] >= '0' && val[c] <= '9') {
					w = w * 10 + (uint64_t)(val[c] - '0');
					digits = w < LANE_BLOCKING;
				} else {
					if (digits)
						s->lanes[w].runtime = name;
					w = 0;
					digits = false;
				}
			}
		}
	}
}

static void sample_gap(struct src *s, uint64_t tid, uint64_t ts)
{
	uint64_t last = d9_map_get(&s->tid_last, tid);
	d9_map_put(&s->tid_last, tid, ts + 1);
	if (!last || ts + 1 <= last)
		return;
	uint64_t gap = ts + 1 - last;
	if (gap < 10000 || gap > 1000000000 || s->n_gaps >= MAX_GAPS)
		return;
	if (!s->gaps && !(s->gaps = malloc(MAX_GAPS * sizeof *s->gaps)))
		return;
	s->gaps[s->n_gaps++] = gap;
}

static void progress(struct src *s, uint64_t bytes, uint64_t events)
{
	if (!s->progress)
		return;
	uint64_t db = bytes > s->bytes_reported ? bytes - s->bytes_reported : 0;
	uint64_t de = events > s->events_reported ? events - s->events_reported : 0;
	s->bytes_reported += db;
	s->events_reported += de;
	s->progress(s->pctx, db, de);
}

static int scan_cb(void *ctx, const struct d9_event *e)
{
	struct src *s = ctx;
	struct kind_info *ki = info_of(s, e->schema);
	uint64_t w = 0, tid = 0;
	switch (ki->k) {
	case K_SYMBOL:
		symbol(s, e, ki);
		return s->failed;
	case K_META:
		metadata(s, e, ki);
		return s->failed;
	case K_CLOCK: {
		uint64_t real = u_or(e, ki->f[R_REALTIME], 0);
		if (!s->have_anchor && real && e->has_ts) {
			s->have_anchor = true;
			s->anchor_mono = e->ts;
			s->anchor_real = real;
		}
		return 0;
	}
	case K_PARK:
	case K_UNPARK:
		if (u_of(e, ki->f[R_WORKER], &w) && u_of(e, ki->f[R_TID], &tid) && tid && lane_of(w) < LANE_BLOCKING) {
			if (!d9_map_get(&s->tid_lane, tid))
				d9_map_put(&s->tid_lane, tid, lane_of(w) + 1u);
			s->lanes[lane_of(w)].tid = tid;
		}
		/* fall through */
	case K_POLL_START:
	case K_POLL_END:
		w = u_or(e, ki->f[R_WORKER], LANE_OTHER);
		s->lanes[lane_of(w)].used = s->lanes[lane_of(w)].polls = true;
		batch_worker(s, e->batch, w);
		break;
	case K_SPAN_ENTER:
	case K_SPAN_EXIT:
	case K_WAKE:
		w = u_or(e, ki->f[R_WORKER], LANE_OTHER);
		s->lanes[lane_of(w)].used = true;
		batch_worker(s, e->batch, w);
		break;
	case K_CPU: {
		tid = u_or(e, ki->f[R_TID], 0);
		w = u_or(e, ki->f[R_WORKER], LANE_OTHER);
		if (tid && lane_of(w) < LANE_BLOCKING && !d9_map_get(&s->tid_lane, tid))
			d9_map_put(&s->tid_lane, tid, lane_of(w) + 1u);
		uint64_t name = str_of(s, e, ki->f[R_NAME]);
		if (tid && name && name < OWN_STRINGS)
			d9_map_put(&s->tid_name, tid, name);
		if (tid && e->has_ts && u_or(e, ki->f[R_SOURCE], 0) == 0)
			sample_gap(s, tid, e->ts);
		break;
	}
	case K_QUEUE:
		s->lanes[LANE_OTHER].used = true;
		break;
	default:
		break;
	}
	if (e->has_ts) {
		if (!s->out->first_ts || e->ts < s->out->first_ts)
			s->out->first_ts = e->ts;
		if (e->ts > s->out->last_ts)
			s->out->last_ts = e->ts;
	}
	if ((d9_stats(s->r)->events & 0xffff) == 0)
		progress(s, d9_input_done(s->r) / 2, 0);
	return s->failed;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The sampling period: the smallest gaps between a thread's consecutive
 * on-CPU samples. The wall time between two samples of a thread is at least
 * the CPU time the second stands for (equal while it runs all along), so the
 * period is at the bottom of the distribution; the 1.5th percentile rather
 * than the minimum keeps one early sample of perf's frequency adjustment out. */
static uint64_t sample_period(struct src *s)
{
	if (s->n_gaps < 4)
		return DEFAULT_PERIOD_NS;
	qsort(s->gaps, s->n_gaps, sizeof *s->gaps, cmp_u64);
	return s->gaps[s->n_gaps / 64];
}

/* ---- what the scan found, to the model ------------------------------------------------- */

static int begin_unit(struct src *s)
{
	struct ss_model *m = s->m;
	struct ss_recording_info info = { 0 };
	for (size_t i = 0; i < s->n_meta; i++)
		if (strcmp(s->meta[i].key, "host") == 0 || strcmp(s->meta[i].key, "hostname") == 0)
			info.host = s->meta[i].value;
	if (s->have_anchor) {
		info.anchor_mono_ns = s->anchor_mono;
		info.anchor_real_ns = s->anchor_real;
	}
	if ((info.host || s->have_anchor) && ss_model_recording_fill(m, &info) != 0)
		return -1;
	struct ss_source src = { s, string_of };
	if (ss_model_segment_begin(m, &src, &s->symtab) != 0)
		return -1;
	for (size_t i = 0; i < s->n_meta; i++)
		if (ss_model_meta(m, s->meta[i].key, strlen(s->meta[i].key), s->meta[i].value,
				  s->meta[i].value ? strlen(s->meta[i].value) : 0) != 0)
			return -1;
	char period[32];
	snprintf(period, sizeof period, "%llu", (unsigned long long)s->period);
	static const char fmt[] = "dial9-trace-format 1";
	if (ss_model_meta(m, "trace.format", 12, fmt, sizeof fmt - 1) != 0 ||
	    ss_model_meta(m, "dial9.sample_period_ns", 22, period, strlen(period)) != 0)
		return -1;
	for (uint32_t l = 0; l < LANES; l++) {
		struct lane *ln = &s->lanes[l];
		if (!ln->used)
			continue;
		size_t nl = 0;
		const char *name = NULL;
		uint64_t nid = ln->tid ? d9_map_get(&s->tid_name, ln->tid) : 0;
		if (nid)
			name = string_of(s, nid, &nl);
		else if (l == LANE_BLOCKING)
			name = "blocking pool (dial9 worker 254)";
		else if (l == LANE_OTHER)
			name = "other threads (dial9 worker 255)";
		if (name && !nid)
			nl = strlen(name);
		struct ss_model_thread_def d = {
			.thread = l + 1u, .tid = ln->tid, .name = name, .name_len = nl, .runtime = ln->runtime,
			.worker_index = l, .worker = ln->polls, .partial = true,
		};
		if (ss_model_thread_def(m, &d) != 0)
			return -1;
	}
	return 0;
}

/* ---- the events --------------------------------------------------------------------------- */

static void push(struct src *s, const struct ss_event *ev)
{
	if (ss_model_event(s->m, ev) != 0 && ss_model_failed(s->m))
		fail(s);
}

static void local_queue(struct src *s, uint32_t lane, const struct d9_event *e, const struct kind_info *ki)
{
	uint64_t lq;
	struct lane *ln = &s->lanes[lane];
	if (!u_of(e, ki->f[R_LQ], &lq) || (ln->lq_known && ln->lq == lq))
		return;
	ln->lq_known = true;
	ln->lq = lq;
	struct ss_event q = { .type = SS_EV_QUEUE, .ts = e->ts, .thread = lane + 1u };
	q.u.queue.local = lq;
	q.u.queue.unknown = SS_QUEUE_NO_GLOBAL;
	push(s, &q);
}

static void span_event(struct src *s, const struct d9_event *e, struct kind_info *ki, struct ss_event *ev)
{
	ev->thread = lane_of(u_or(e, ki->f[R_WORKER], LANE_OTHER)) + 1u;
	ev->u.span.id = u_or(e, ki->f[R_SPAN], 0);
	if (ki->k == K_SPAN_EXIT) {
		ev->type = SS_EV_SPAN_END;
		push(s, ev);
		return;
	}
	ev->type = SS_EV_SPAN_BEGIN;
	ev->u.span.name = str_of(s, e, ki->f[R_SPAN_NAME]);
	ev->u.span.parent = u_or(e, ki->f[R_PARENT], 0);
	if (!ki->location_tried) {
		/* defined in the unit, like every location */
		ki->location_tried = true;
		ki->location = span_location(s, e->schema, ki->prefix);
	}
	ev->u.span.location = ki->location;
	/* The user's fields, present ones only, as a JSON object. */
	struct d9_buf *b = &s->json;
	b->len = 0;
	b->failed = false;
	bool any = false;
	for (uint16_t i = (uint16_t)ki->first_user; i < e->schema->n_fields; i++) {
		uint64_t sid = str_of(s, e, i);
		size_t len;
		const char *val = sid ? string_of(s, sid, &len) : NULL;
		if (!val)
			continue;
		d9_buf_put(b, any ? "," : "{", 1);
		d9_json_string(b, e->schema->fields[i].name, e->schema->fields[i].name_len);
		d9_buf_put(b, ":", 1);
		d9_json_string(b, val, len);
		any = true;
	}
	if (any) {
		d9_buf_put(b, "}", 1);
		if (!b->failed)
			ev->u.span.fields = own_string(s, b->p, b->len);
	}
	push(s, ev);
}

static void other(struct src *s, const struct d9_event *e, struct kind_info *ki)
{
	uint64_t w;
	uint32_t lane = u_of(e, ki->f[R_WORKER], &w) ? lane_of(w) : lane_of_batch(s, e->batch);
	const char *json = "{}";
	size_t jl = 2;
	if (d9_event_json(s->r, e, &s->json) == 0) {
		json = s->json.p;
		jl = s->json.len;
	}
	ki->kept++;
	if (ss_model_other(s->m, lane + 1u, e->has_ts, e->ts, e->schema->name, e->schema->name_len, json, jl) != 0 &&
	    ss_model_failed(s->m))
		fail(s);
}

static void event(struct src *s, const struct d9_event *e)
{
	struct kind_info *ki = e->schema->user ? e->schema->user : info_of(s, e->schema);
	struct ss_event ev;
	memset(&ev, 0, sizeof ev);
	ev.ts = e->ts;
	uint64_t v, tid;
	uint32_t lane;
	switch (ki->k) {
	case K_POLL_START:
		lane = lane_of(u_or(e, ki->f[R_WORKER], LANE_OTHER));
		ev.type = SS_EV_POLL_BEGIN;
		ev.thread = lane + 1u;
		ev.u.poll_begin.task = u_or(e, ki->f[R_TASK], 0);
		ev.u.poll_begin.location = location(s, str_of(s, e, ki->f[R_LOC]));
		push(s, &ev);
		s->lanes[lane].in_poll = true;
		s->lanes[lane].poll_task = ev.u.poll_begin.task;
		s->lanes[lane].poll_ts = e->ts;
		local_queue(s, lane, e, ki);
		return;
	case K_POLL_END:
		lane = lane_of(u_or(e, ki->f[R_WORKER], LANE_OTHER));
		ev.type = SS_EV_POLL_END;
		ev.thread = lane + 1u;
		push(s, &ev);
		s->lanes[lane].in_poll = false;
		return;
	case K_PARK:
	case K_UNPARK:
		lane = lane_of(u_or(e, ki->f[R_WORKER], LANE_OTHER));
		ev.thread = lane + 1u;
		if (ki->k == K_PARK) {
			ev.type = SS_EV_PARK;
			if (u_of(e, ki->f[R_CPU_TIME], &v)) {
				ev.u.park.cpu_ns = v;
				ev.u.park.flags = SS_PARK_F_CPU;
			}
		} else {
			ev.type = SS_EV_UNPARK;
			if (u_of(e, ki->f[R_CPU_TIME], &v)) {
				ev.u.unpark.cpu_ns = v;
				ev.u.unpark.flags |= SS_PARK_F_CPU;
			}
			if (u_of(e, ki->f[R_SCHED], &v)) {
				ev.u.unpark.sched_wait_ns = v;
				ev.u.unpark.flags |= SS_PARK_F_SCHED;
			}
		}
		push(s, &ev);
		local_queue(s, lane, e, ki);
		return;
	case K_QUEUE:
		ev.type = SS_EV_QUEUE;
		ev.thread = LANE_OTHER + 1u;
		ev.u.queue.global = u_or(e, ki->f[R_GLOBAL], 0);
		ev.u.queue.unknown = SS_QUEUE_NO_LOCAL;
		push(s, &ev);
		return;
	case K_SPAWN:
		ev.type = SS_EV_SPAWN;
		ev.thread = lane_of_batch(s, e->batch) + 1u;
		ev.u.spawn.task = u_or(e, ki->f[R_TASK], 0);
		ev.u.spawn.location = location(s, str_of(s, e, ki->f[R_LOC]));
		push(s, &ev);
		return;
	case K_TERMINATE:
		ev.type = SS_EV_TERMINATE;
		ev.thread = lane_of_batch(s, e->batch) + 1u;
		ev.u.terminate.task = u_or(e, ki->f[R_TASK], 0);
		push(s, &ev);
		return;
	case K_WAKE:
		ev.type = SS_EV_WAKE;
		ev.thread = lane_of(u_or(e, ki->f[R_WORKER], LANE_OTHER)) + 1u;
		ev.u.wake.task = u_or(e, ki->f[R_TASK], 0);
		ev.u.wake.waker = u_or(e, ki->f[R_WAKER], 0);
		push(s, &ev);
		return;
	case K_CPU: {
		tid = u_or(e, ki->f[R_TID], 0);
		uint64_t w = u_or(e, ki->f[R_WORKER], LANE_OTHER), mapped;
		if (lane_of(w) < LANE_BLOCKING)
			ev.thread = lane_of(w) + 1u;
		else if (tid && (mapped = d9_map_get(&s->tid_lane, tid)))
			ev.thread = mapped; /* lane + 1 */
		ev.tid = tid;
		uint64_t name = str_of(s, e, ki->f[R_NAME]);
		if (!ev.thread && tid && name && d9_map_get(&s->tid_named, tid) != name) {
			size_t nl;
			const char *nm = string_of(s, name, &nl);
			struct ss_event c = { .type = SS_EV_COMM, .ts = e->ts, .tid = tid };
			c.u.comm.name = nm;
			c.u.comm.len = nl;
			if (nm)
				push(s, &c);
			d9_map_put(&s->tid_named, tid, name);
		}
		bool offcpu = u_or(e, ki->f[R_SOURCE], 0) == 1;
		ev.type = SS_EV_SAMPLE;
		ev.u.sample.kind = offcpu ? SS_SAMPLE_KIND_OFFCPU : SS_SAMPLE_KIND_CPU;
		ev.u.sample.weight = offcpu ? 0 : s->period;
		ev.u.sample.cpu1 = u_of(e, ki->f[R_CPU], &v) && v < UINT32_MAX ? v + 1 : 0;
		ev.u.sample.stack = stack(s, &e->v[ki->f[R_STACK]]);
		push(s, &ev);
		return;
	}
	case K_DUMP: {
		lane = lane_of_batch(s, e->batch);
		struct lane *ln = &s->lanes[lane];
		ev.type = SS_EV_TASK_DUMP;
		ev.thread = lane + 1u;
		ev.u.task_dump.task = u_or(e, ki->f[R_TASK], 0);
		ev.u.task_dump.stack = ki->f[R_STACK] >= 0 ? stack(s, &e->v[ki->f[R_STACK]]) : 0;
		/* dial9 writes a dump during the task's next poll: idle until its start */
		ev.u.task_dump.idle_ns = ln->in_poll && ln->poll_task == ev.u.task_dump.task && ln->poll_ts >= e->ts
						 ? ln->poll_ts - e->ts
						 : SS_IDLE_UNKNOWN;
		push(s, &ev);
		return;
	}
	case K_SPAN_ENTER:
	case K_SPAN_EXIT:
		span_event(s, e, ki, &ev);
		return;
	case K_META:
	case K_CLOCK:
	case K_SYMBOL:
	case K_SPAN_CLOSE:
		return; /* taken in by the scan; a span's close ends no interval */
	case K_OTHER:
	default:
		other(s, e, ki);
		return;
	}
}

/* ---- the run --------------------------------------------------------------------------------- */

static void free_src(struct src *s)
{
	d9_strings_free(&s->own);
	free(s->infos);
	free(s->batch_lane);
	d9_map_free(&s->tid_lane);
	d9_map_free(&s->tid_name);
	d9_map_free(&s->tid_last);
	d9_map_free(&s->tid_named);
	d9_map_free(&s->defined_loc);
	d9_map_free(&s->defined_stack);
	free(s->gaps);
	ss_symtab_clear(&s->symtab);
	for (size_t i = 0; i < s->n_meta; i++) {
		free(s->meta[i].key);
		free(s->meta[i].value);
	}
	free(s->meta);
	d9_buf_free(&s->json);
	/* the reader's schemas point at our infos */
	for (size_t i = 0; i < d9_schema_count(s->r); i++)
		d9_schema_at(s->r, i)->user = NULL;
}

static void collect_kept(struct src *s)
{
	struct ss_dial9_run *o = s->out;
	for (size_t i = 0; i < d9_schema_count(s->r); i++) {
		const struct d9_schema *sc = d9_schema_at(s->r, i);
		const struct kind_info *ki = sc->user;
		if (!ki || ki->k != K_OTHER || !ki->kept)
			continue;
		size_t j = 0;
		while (j < o->n_kept && !(strlen(o->kept[j].name) == (size_t)sc->name_len &&
					  memcmp(o->kept[j].name, sc->name, sc->name_len) == 0))
			j++;
		if (j == o->n_kept) {
			struct ss_dial9_kept *nk = realloc(o->kept, (o->n_kept + 1) * sizeof *nk);
			if (!nk)
				return;
			o->kept = nk;
			o->kept[o->n_kept++] = (struct ss_dial9_kept){ strndup(sc->name, sc->name_len), 0 };
		}
		o->kept[j].count += ki->kept;
	}
}

void ss_dial9_run_free(struct ss_dial9_run *run)
{
	for (size_t i = 0; i < run->n_kept; i++)
		free(run->kept[i].name);
	free(run->kept);
	memset(run, 0, sizeof *run);
}

int ss_dial9_source_run(struct ss_model *m, struct d9_reader *r, uint64_t skip_batches, struct ss_dial9_run *out,
			void (*progress_fn)(void *ctx, uint64_t bytes, uint64_t events), void *ctx)
{
	memset(out, 0, sizeof *out);
	struct src *s = calloc(1, sizeof *s);
	if (!s)
		return -1;
	s->m = m;
	s->r = r;
	s->out = out;
	s->progress = progress_fn;
	s->pctx = ctx;
	int rc = -1;
	if (d9_scan(r, scan_cb, s) != 0 || s->failed)
		goto done;
	s->period = sample_period(s);
	if (begin_unit(s) != 0)
		goto done;
	uint64_t total = d9_stats(r)->events, size = d9_input_size(r);
	progress(s, size / 2, 0);
	if (skip_batches > UINT32_MAX || d9_merge_begin(r, (uint32_t)skip_batches) != 0) {
		ss_model_segment_end(m);
		goto done;
	}
	struct d9_event e;
	while (!s->failed && d9_merge_next(r, &e)) {
		event(s, &e);
		out->events++;
		if (++s->since_release >= RELEASE_EVERY) {
			s->since_release = 0;
			if (ss_model_release(m) != 0)
				fail(s);
			progress(s, size / 2 + (total ? size / 2 * (out->events > total ? total : out->events) / total : 0),
				 out->events);
		}
	}
	uint64_t batches = d9_stats(r)->batches;
	out->new_batches = batches > skip_batches ? batches - skip_batches : 0;
	if (ss_model_segment_end(m) != 0 || s->failed || ss_model_failed(m))
		goto done;
	progress(s, size, out->events);
	collect_kept(s);
	rc = 0;
done:
	free_src(s);
	free(s);
	return rc;
}

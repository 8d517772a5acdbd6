/*
 * d9_reader.c - see d9_reader.h. A cursor decodes frames of one range of the
 * decompressed stream; the scan runs one cursor over everything and indexes
 * the streams; the merge runs one cursor per open stream, in a heap keyed by
 * each cursor's next event time.
 *
 * Frame parsers take (p, avail) and return the bytes consumed, 0 when avail
 * is too short (the cursor then asks the store for more and parses again from
 * the frame's start), or -1 for malformed bytes; they change no state before
 * the whole frame has been parsed.
 */
#include "d9_reader.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "d9_store.h"

#define MAX_DAMAGE_KEPT 64
#define SMALL_TYPES 256
#define UNRESOLVED UINT64_MAX /* a pool id whose entry could not be interned */

struct cursor {
	struct d9_reader *r;
	uint64_t pos, end;
	struct d9_window win;
	size_t want;
	/* the stream's state */
	struct d9_schema *types[SMALL_TYPES];
	struct d9_map types_big;
	struct d9_map str_pool, stack_pool;
	uint64_t base, last_ts;
	uint32_t batch;
	bool started;           /* its first header was read */
	/* the decoded event */
	bool got_event;
	struct d9_value *vals;
	size_t vcap;
	struct d9_event ev;
	/* the merge */
	uint64_t key;
	/* damage */
	uint64_t err_off;
	char err[160];
};

struct d9_reader {
	struct d9_store *st;
	struct d9_strings strings;
	struct d9_stacks stacks;
	struct d9_schemas schemas;
	struct d9_stats stats;
	struct d9_damage dmg[MAX_DAMAGE_KEPT];
	size_t n_dmg;
	/* the stream index: start offset and first timestamp of each */
	uint64_t *b_start, *b_first;
	size_t nb, capb;
	struct cursor *scan;
	bool scanned;
	/* the merge */
	uint32_t *order;
	size_t n_order, next_open;
	struct cursor **heap;
	size_t n_heap;
	struct cursor *delivered;
};

__attribute__((format(printf, 2, 3))) static int bad(struct cursor *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->err, sizeof c->err, fmt, ap);
	va_end(ap);
	c->err_off = c->pos;
	return -1;
}

/* ---- cursors ------------------------------------------------------------------- */

static struct cursor *cursor_new(struct d9_reader *r, uint64_t start, uint64_t end, uint32_t batch)
{
	struct cursor *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->r = r;
	c->pos = start;
	c->end = end;
	c->batch = batch;
	c->want = 4096;
	return c;
}

static void cursor_free(struct cursor *c)
{
	if (!c)
		return;
	d9_window_free(&c->win);
	d9_map_free(&c->types_big);
	d9_map_free(&c->str_pool);
	d9_map_free(&c->stack_pool);
	free(c->vals);
	free(c);
}

/* A header: the stream's state starts afresh. */
static void reset(struct cursor *c)
{
	memset(c->types, 0, sizeof c->types);
	d9_map_clear(&c->types_big);
	d9_map_clear(&c->str_pool);
	d9_map_clear(&c->stack_pool);
	c->base = 0;
}

static struct d9_schema *type_of(const struct cursor *c, uint16_t id)
{
	if (id < SMALL_TYPES)
		return c->types[id];
	return (struct d9_schema *)(uintptr_t)d9_map_get(&c->types_big, id);
}

static int set_type(struct cursor *c, uint16_t id, struct d9_schema *s)
{
	if (id < SMALL_TYPES) {
		c->types[id] = s;
		return 0;
	}
	return d9_map_put(&c->types_big, id, (uint64_t)(uintptr_t)s);
}

/* ---- values ---------------------------------------------------------------------- */

/* Unsigned LEB128 of at most 64 bits. */
static int leb(const uint8_t *p, size_t avail, size_t *at, uint64_t *out)
{
	uint64_t v = 0;
	unsigned shift = 0;
	for (size_t i = *at;; i++) {
		if (i >= avail)
			return 0;
		uint8_t b = p[i];
		if (shift == 63 && (b & 0x7e))
			return -1;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*at = i + 1;
			*out = v;
			return 1;
		}
		shift += 7;
		if (shift > 63)
			return -1;
	}
}

#define NEED(n)                                    \
	do {                                       \
		if ((n) > avail - *at)             \
			return 0;                  \
	} while (0)

static bool valid_type(uint8_t t)
{
	uint8_t inner = t & (uint8_t)~D9_OPTIONAL;
	return inner >= 1 && inner <= D9_TYPE_MAX;
}

static uint64_t pooled(struct cursor *c, const struct d9_map *pool, uint32_t id)
{
	uint64_t v = d9_map_get(pool, id);
	if (!v || v == UNRESOLVED) {
		if (c == c->r->scan)
			c->r->stats.unresolved++;
		return 0;
	}
	return v;
}

/* One value of type t (no optional bit) at p + *at. v may be NULL (nested
 * values are only walked). */
static int value(struct cursor *c, uint8_t t, const uint8_t *p, size_t avail, size_t *at, struct d9_value *v,
		 int depth)
{
	struct d9_value tmp;
	if (!v)
		v = &tmp;
	v->type = t;
	v->p = NULL;
	v->len = v->count = 0;
	v->u = 0;
	switch (t) {
	case D9_I64:
	case D9_F64:
		NEED(8);
		v->u = d9_le64(p + *at);
		*at += 8;
		return 1;
	case D9_BOOL:
		NEED(1);
		v->u = p[*at] != 0;
		*at += 1;
		return 1;
	case D9_U8:
		NEED(1);
		v->u = p[*at];
		*at += 1;
		return 1;
	case D9_U16:
		NEED(2);
		v->u = d9_le16(p + *at);
		*at += 2;
		return 1;
	case D9_U32:
		NEED(4);
		v->u = d9_le32(p + *at);
		*at += 4;
		return 1;
	case D9_VARINT: {
		int rc = leb(p, avail, at, &v->u);
		return rc < 0 ? bad(c, "varint longer than 64 bits") : rc;
	}
	case D9_STRING:
	case D9_BYTES: {
		NEED(4);
		uint32_t n = d9_le32(p + *at);
		NEED(4 + (size_t)n);
		v->p = p + *at + 4;
		v->len = n;
		*at += 4 + (size_t)n;
		return 1;
	}
	case D9_POOLED_STRING:
	case D9_POOLED_STACK: {
		NEED(4);
		uint32_t id = d9_le32(p + *at);
		*at += 4;
		if (depth == 0)
			v->u = pooled(c, t == D9_POOLED_STRING ? &c->str_pool : &c->stack_pool, id);
		else
			v->u = id; /* the stream's id: resolved when rendered */
		return 1;
	}
	case D9_STACK: {
		NEED(4);
		uint32_t n = d9_le32(p + *at);
		NEED(4 + (size_t)n * 8);
		v->p = p + *at + 4;
		v->count = n;
		v->len = n * 8u;
		*at += 4 + (size_t)n * 8;
		return 1;
	}
	case D9_STRING_MAP: {
		NEED(4);
		uint32_t n = d9_le32(p + *at);
		size_t start = *at;
		*at += 4;
		for (uint32_t i = 0; i < 2 * n; i++) {
			NEED(4);
			uint32_t len = d9_le32(p + *at);
			NEED(4 + (size_t)len);
			*at += 4 + (size_t)len;
		}
		v->p = p + start + 4;
		v->len = (uint32_t)(*at - start - 4);
		v->count = n;
		return 1;
	}
	case D9_LIST:
	case D9_MAP: {
		if (depth >= D9_MAX_NEST)
			return bad(c, "lists and maps nested deeper than %d", D9_MAX_NEST);
		NEED(4);
		uint32_t n = d9_le32(p + *at);
		size_t start = *at;
		*at += 4;
		unsigned per = t == D9_MAP ? 2 : 1;
		for (uint64_t i = 0; i < (uint64_t)n * per; i++) {
			NEED(1);
			uint8_t et = p[*at];
			if (!valid_type(et))
				return bad(c, "unknown field type 0x%02x inside a list or map", et);
			*at += 1;
			/* An element's optional bit carries no presence byte. */
			int rc = value(c, et & (uint8_t)~D9_OPTIONAL, p, avail, at, NULL, depth + 1);
			if (rc <= 0)
				return rc;
		}
		v->type = t;
		v->p = p + start + 4;
		v->len = (uint32_t)(*at - start - 4);
		v->count = n;
		v->u = 0;
		return 1;
	}
	default:
		return bad(c, "unknown field type 0x%02x", t);
	}
}

/* ---- frames --------------------------------------------------------------------------- */

static long schema_frame(struct cursor *c, const uint8_t *p, size_t avail)
{
	size_t a = 1, *at = &a;
	NEED(4);
	uint16_t id = d9_le16(p + 1);
	uint16_t nl = d9_le16(p + 3);
	*at = 5;
	NEED((size_t)nl + 3);
	*at += nl;
	uint16_t nf = d9_le16(p + *at + 1);
	*at += 3;
	for (uint16_t i = 0; i < nf; i++) {
		NEED(2);
		uint16_t fl = d9_le16(p + *at);
		NEED(3 + (size_t)fl);
		uint8_t t = p[*at + 2 + fl];
		if (!valid_type(t))
			return bad(c, "schema %u: field %u has unknown type 0x%02x", id, i, t);
		*at += 3 + (size_t)fl;
	}
	struct d9_reader *r = c->r;
	struct d9_schema *s = d9_schemas_intern(&r->schemas, p + 3, *at - 3);
	if (!s) {
		r->stats.tables_full = true;
		return bad(c, "more than %u distinct schemas, or out of memory", D9_MAX_SCHEMAS);
	}
	struct d9_schema *old = type_of(c, id);
	if (old && old != s)
		return bad(c, "type id %u registered again with a different schema (%.*s, was %.*s)", id,
			   s->name_len, s->name, old->name_len, old->name);
	if (s->n_fields > c->vcap) {
		struct d9_value *nv = realloc(c->vals, s->n_fields * sizeof *nv);
		if (!nv)
			return bad(c, "out of memory");
		c->vals = nv;
		c->vcap = s->n_fields;
	}
	if (set_type(c, id, s) != 0)
		return bad(c, "out of memory");
	return (long)*at;
}

static long event_frame(struct cursor *c, const uint8_t *p, size_t avail)
{
	size_t a = 1, *at = &a;
	NEED(2);
	uint16_t id = d9_le16(p + 1);
	*at = 3;
	struct d9_schema *s = type_of(c, id);
	if (!s)
		return bad(c, "event of type id %u, which the stream has not defined", id);
	uint64_t ts = c->last_ts;
	if (s->has_ts) {
		NEED(3);
		uint32_t d = d9_le24(p + *at);
		*at += 3;
		if (c->base > UINT64_MAX - d)
			return bad(c, "timestamp past 2^64 ns");
		ts = c->base + d;
	}
	for (uint16_t i = 0; i < s->n_fields; i++) {
		uint8_t t = s->fields[i].type;
		struct d9_value *v = &c->vals[i];
		if (t & D9_OPTIONAL) {
			NEED(1);
			uint8_t present = p[*at];
			*at += 1;
			if (!present) {
				memset(v, 0, sizeof *v);
				continue;
			}
			t &= (uint8_t)~D9_OPTIONAL;
		}
		int rc = value(c, t, p, avail, at, v, 0);
		if (rc <= 0)
			return rc;
	}
	if (s->has_ts)
		c->base = c->last_ts = ts;
	c->ev = (struct d9_event){ s, s->has_ts, ts, c->pos, c->batch, c->vals, c };
	c->got_event = true;
	return (long)*at;
}

/* A string pool (unit 1) or stack pool (unit 8) frame: entries of a u32 pool
 * id, a u32 count and count units of data, each interned in the file's table
 * and mapped from the stream's id. */
static long pool_frame(struct cursor *c, const uint8_t *p, size_t avail, size_t unit)
{
	size_t a = 1, *at = &a;
	NEED(4);
	uint32_t n = d9_le32(p + 1);
	*at = 5;
	for (uint32_t i = 0; i < n; i++) {
		NEED(8);
		uint32_t k = d9_le32(p + *at + 4);
		NEED(8 + (size_t)k * unit);
		*at += 8 + (size_t)k * unit;
	}
	struct d9_reader *r = c->r;
	struct d9_map *pool = unit == 1 ? &c->str_pool : &c->stack_pool;
	for (size_t q = 5; q < *at;) {
		uint32_t id = d9_le32(p + q), k = d9_le32(p + q + 4);
		uint32_t fid = unit == 1 ? d9_strings_intern(&r->strings, p + q + 8, k)
					 : d9_stacks_intern(&r->stacks, p + q + 8, k);
		if (!fid)
			r->stats.tables_full = true;
		if (d9_map_put(pool, id, fid ? fid : UNRESOLVED) != 0)
			return bad(c, "out of memory");
		q += 8 + (size_t)k * unit;
	}
	return (long)*at;
}

/* Per-field annotations (units and the like): checked, and not used. */
static long annotations_frame(struct cursor *c, const uint8_t *p, size_t avail)
{
	size_t a = 1, *at = &a;
	uint64_t type_id;
	int rc = leb(p, avail, at, &type_id);
	if (rc <= 0)
		return rc < 0 ? bad(c, "annotation type id longer than 64 bits") : 0;
	NEED(2);
	uint16_t n = d9_le16(p + *at);
	*at += 2;
	for (uint16_t i = 0; i < n; i++) {
		NEED(4);
		uint16_t kl = d9_le16(p + *at + 2);
		NEED(4 + (size_t)kl + 4);
		uint32_t vl = d9_le32(p + *at + 4 + kl);
		NEED(8 + (size_t)kl + vl);
		*at += 8 + (size_t)kl + vl;
	}
	return (long)*at;
}

static void new_batch(struct d9_reader *r, struct cursor *c);

static long frame(struct cursor *c, const uint8_t *p, size_t avail)
{
	switch (p[0]) {
	case D9_TAG_SCHEMA:
		return schema_frame(c, p, avail);
	case D9_TAG_EVENT:
		return event_frame(c, p, avail);
	case D9_TAG_STRING_POOL:
		return pool_frame(c, p, avail, 1);
	case D9_TAG_STACK_POOL:
		return pool_frame(c, p, avail, 8);
	case D9_TAG_TS_RESET:
		if (avail < 9)
			return 0;
		c->base = d9_le64(p + 1);
		return 9;
	case D9_TAG_ANNOTATIONS:
		return annotations_frame(c, p, avail);
	case 'T':
		if (avail < D9_HEADER_LEN)
			return 0;
		if (memcmp(p, D9_MAGIC, D9_MAGIC_LEN) == 0) {
			if (p[4] != D9_VERSION)
				return bad(c, "a stream of format version %u (only version 1 is known)", p[4]);
			reset(c);
			if (c->started)
				c->batch++;
			c->started = true;
			if (c == c->r->scan)
				new_batch(c->r, c);
			return D9_HEADER_LEN;
		}
		/* fall through */
	default:
		return bad(c, "unknown frame tag 0x%02x", p[0]);
	}
}

/* Decodes frames up to the next event: 1 (in c->ev), 0 at the end of the
 * range or data, -1 at damage (c->err). */
static int step(struct cursor *c)
{
	struct d9_store *st = c->r->st;
	for (;;) {
		if (c->pos >= c->end)
			return 0;
		size_t avail;
		const uint8_t *p = d9_store_get(st, &c->win, c->pos, c->want, &avail);
		if (!p)
			return 0;
		bool clipped = false;
		if (avail > c->end - c->pos) {
			avail = (size_t)(c->end - c->pos);
			clipped = true;
		}
		long n = frame(c, p, avail);
		if (n > 0) {
			c->pos += (uint64_t)n;
			if (c->want > 4096 && (size_t)n < c->want / 4)
				c->want = 4096;
			if (c->got_event) {
				c->got_event = false;
				return 1;
			}
			continue;
		}
		if (n < 0)
			return -1;
		if (clipped || avail < c->want)
			return bad(c, "frame (tag 0x%02x) runs past the end of the data: truncated", p[0]);
		if (c->want >= D9_MAX_FRAME)
			return bad(c, "frame (tag 0x%02x) larger than %u MiB", p[0], D9_MAX_FRAME >> 20);
		size_t nw = avail * 2;
		c->want = nw > D9_MAX_FRAME ? D9_MAX_FRAME : nw;
	}
}

/* ---- opening -------------------------------------------------------------------- */

static struct d9_reader *open_store(struct d9_store *st, char *err, size_t errlen)
{
	if (!st)
		return NULL;
	struct d9_window w = { 0 };
	size_t avail;
	const uint8_t *p = d9_store_get(st, &w, 0, D9_HEADER_LEN, &avail);
	bool ok = p && avail >= D9_HEADER_LEN && d9_is_header(p);
	if (!ok) {
		if (p && avail >= D9_HEADER_LEN && memcmp(p, D9_MAGIC, D9_MAGIC_LEN) == 0)
			snprintf(err, errlen, "dial9 trace of format version %u (only version 1 is known)", p[4]);
		else if (d9_store_note(st))
			snprintf(err, errlen, "%s", d9_store_note(st));
		else
			snprintf(err, errlen, "not a dial9 trace (no TRC header)");
		d9_window_free(&w);
		d9_store_close(st);
		return NULL;
	}
	d9_window_free(&w);
	struct d9_reader *r = calloc(1, sizeof *r);
	if (!r) {
		snprintf(err, errlen, "out of memory");
		d9_store_close(st);
		return NULL;
	}
	r->st = st;
	r->stats.gzip = d9_store_gzip(st);
	return r;
}

struct d9_reader *d9_open_file(const char *path, char *err, size_t errlen)
{
	return open_store(d9_store_open_file(path, err, errlen), err, errlen);
}

struct d9_reader *d9_open_buffer(const void *buf, size_t len, char *err, size_t errlen)
{
	return open_store(d9_store_open_buffer(buf, len, err, errlen), err, errlen);
}

static void merge_free(struct d9_reader *r)
{
	for (size_t i = 0; i < r->n_heap; i++)
		cursor_free(r->heap[i]);
	free(r->heap);
	free(r->order);
	r->heap = NULL;
	r->order = NULL;
	r->n_heap = r->n_order = r->next_open = 0;
	r->delivered = NULL;
}

void d9_close(struct d9_reader *r)
{
	if (!r)
		return;
	merge_free(r);
	cursor_free(r->scan);
	d9_strings_free(&r->strings);
	d9_stacks_free(&r->stacks);
	d9_schemas_free(&r->schemas);
	free(r->b_start);
	free(r->b_first);
	d9_store_close(r->st);
	free(r);
}

/* ---- the scan -------------------------------------------------------------------- */

static void new_batch(struct d9_reader *r, struct cursor *c)
{
	r->stats.batches++;
	if (r->nb >= D9_MAX_BATCHES) {
		r->stats.unindexed = true;
		return;
	}
	if (r->nb == r->capb) {
		size_t nc = r->capb ? r->capb * 2 : 1024;
		uint64_t *ns = realloc(r->b_start, nc * sizeof *ns);
		if (!ns) {
			r->stats.unindexed = true;
			return;
		}
		r->b_start = ns;
		uint64_t *nf = realloc(r->b_first, nc * sizeof *nf);
		if (!nf) {
			r->stats.unindexed = true;
			return;
		}
		r->b_first = nf;
		r->capb = nc;
	}
	r->b_start[r->nb] = c->pos;
	r->b_first[r->nb] = UINT64_MAX;
	r->nb++;
}

static void record_damage(struct d9_reader *r, const struct cursor *c)
{
	r->stats.damaged++;
	if (r->n_dmg == MAX_DAMAGE_KEPT)
		return;
	struct d9_damage *d = &r->dmg[r->n_dmg++];
	d->offset = c->err_off;
	d->batch = c->batch;
	snprintf(d->reason, sizeof d->reason, "%s", c->err);
}

/* After damage: on to the next header, if there is one. */
static bool resync(struct cursor *c)
{
	uint64_t from = c->err_off + 1;
	for (;;) {
		size_t avail;
		const uint8_t *p = d9_store_get(c->r->st, &c->win, from, 1u << 16, &avail);
		if (!p || avail < D9_HEADER_LEN)
			return false;
		const uint8_t *hit = memmem(p, avail, D9_MAGIC "\x01", D9_HEADER_LEN);
		if (hit) {
			c->pos = from + (uint64_t)(hit - p);
			return true;
		}
		from += avail - (D9_HEADER_LEN - 1);
	}
}

int d9_scan(struct d9_reader *r, int (*fn)(void *ctx, const struct d9_event *e), void *ctx)
{
	if (r->scanned || !(r->scan = cursor_new(r, 0, UINT64_MAX, 0)))
		return -1;
	r->scanned = true;
	struct cursor *c = r->scan;
	int rc = 0;
	for (;;) {
		int s = step(c);
		if (s == 1) {
			r->stats.events++;
			if (c->ev.has_ts && r->nb && c->batch == r->nb - 1 && r->b_first[r->nb - 1] == UINT64_MAX)
				r->b_first[r->nb - 1] = c->ev.ts;
			if (fn && (rc = fn(ctx, &c->ev)) != 0)
				break;
			continue;
		}
		if (s == 0) {
			r->stats.intact_end = c->pos < d9_store_size(r->st) ? c->pos : d9_store_size(r->st);
			break;
		}
		record_damage(r, c);
		r->stats.intact_end = c->err_off;
		if (!resync(c))
			break;
	}
	d9_store_finish(r->st);
	r->stats.bytes = d9_store_size(r->st);
	d9_window_free(&c->win);
	return rc;
}

/* ---- the merge -------------------------------------------------------------------- */

static bool earlier(const struct cursor *a, const struct cursor *b)
{
	return a->key != b->key ? a->key < b->key : a->batch < b->batch;
}

static void sift_up(struct d9_reader *r, size_t i)
{
	struct cursor *c = r->heap[i];
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (!earlier(c, r->heap[p]))
			break;
		r->heap[i] = r->heap[p];
		i = p;
	}
	r->heap[i] = c;
}

static void sift_down(struct d9_reader *r, size_t i)
{
	struct cursor *c = r->heap[i];
	for (;;) {
		size_t k = 2 * i + 1;
		if (k >= r->n_heap)
			break;
		if (k + 1 < r->n_heap && earlier(r->heap[k + 1], r->heap[k]))
			k++;
		if (!earlier(r->heap[k], c))
			break;
		r->heap[i] = r->heap[k];
		i = k;
	}
	r->heap[i] = c;
}

static uint64_t first_of(const struct d9_reader *r, uint32_t b)
{
	return r->b_first[b] == UINT64_MAX ? 0 : r->b_first[b];
}

static const struct d9_reader *sort_r;

static int cmp_batch(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	uint64_t fx = first_of(sort_r, x), fy = first_of(sort_r, y);
	if (fx != fy)
		return fx < fy ? -1 : 1;
	return x < y ? -1 : x > y;
}

int d9_merge_begin(struct d9_reader *r, uint32_t first_batch)
{
	if (!r->scanned)
		return -1;
	merge_free(r);
	size_t n = first_batch < r->nb ? r->nb - first_batch : 0;
	r->order = malloc((n ? n : 1) * sizeof *r->order);
	r->heap = malloc(D9_MAX_OPEN * sizeof *r->heap);
	if (!r->order || !r->heap)
		return -1;
	for (size_t i = 0; i < n; i++)
		r->order[i] = first_batch + (uint32_t)i;
	sort_r = r;
	qsort(r->order, n, sizeof *r->order, cmp_batch);
	r->n_order = n;
	return 0;
}

/* Opens the streams whose first event is due (bounded by D9_MAX_OPEN: past
 * it a stream waits, and its events come later than their time). */
static void open_due(struct d9_reader *r)
{
	while (r->next_open < r->n_order && r->n_heap < D9_MAX_OPEN &&
	       (!r->n_heap || first_of(r, r->order[r->next_open]) <= r->heap[0]->key)) {
		uint32_t b = r->order[r->next_open++];
		uint64_t end = b + 1u < r->nb ? r->b_start[b + 1] : d9_store_size(r->st);
		struct cursor *c = cursor_new(r, r->b_start[b], end, b);
		if (!c)
			return;
		c->last_ts = first_of(r, b);
		if (step(c) != 1) {
			cursor_free(c);
			continue;
		}
		c->key = c->ev.ts;
		r->heap[r->n_heap++] = c;
		sift_up(r, r->n_heap - 1);
	}
}

bool d9_merge_next(struct d9_reader *r, struct d9_event *out)
{
	if (!r->heap)
		return false;
	if (r->delivered) {
		struct cursor *c = r->delivered;
		r->delivered = NULL;
		/* It is still at the top. */
		if (step(c) == 1) {
			c->key = c->ev.ts;
			sift_down(r, 0);
		} else {
			cursor_free(c);
			r->heap[0] = r->heap[--r->n_heap];
			if (r->n_heap)
				sift_down(r, 0);
		}
	}
	open_due(r);
	if (!r->n_heap)
		return false;
	r->delivered = r->heap[0];
	*out = r->delivered->ev;
	return true;
}

/* ---- queries ---------------------------------------------------------------------- */

const struct d9_stats *d9_stats(const struct d9_reader *r)
{
	return &r->stats;
}

size_t d9_damage_count(const struct d9_reader *r)
{
	return r->n_dmg;
}

const struct d9_damage *d9_damage_at(const struct d9_reader *r, size_t i)
{
	return i < r->n_dmg ? &r->dmg[i] : NULL;
}

const char *d9_store_problem(const struct d9_reader *r)
{
	return d9_store_note(r->st);
}

uint64_t d9_input_done(const struct d9_reader *r)
{
	if (d9_store_gzip(r->st))
		return d9_store_input_done(r->st);
	return r->scan ? r->scan->pos : 0;
}

uint64_t d9_input_size(const struct d9_reader *r)
{
	return d9_store_input_size(r->st);
}

const char *d9_string(const struct d9_reader *r, uint32_t id, size_t *len)
{
	return d9_strings_get(&r->strings, id, len);
}

const uint64_t *d9_stack(const struct d9_reader *r, uint32_t id, size_t *count)
{
	return d9_stacks_get(&r->stacks, id, count);
}

uint32_t d9_value_stack(struct d9_reader *r, const struct d9_value *v)
{
	if (v->type == D9_POOLED_STACK)
		return (uint32_t)v->u;
	if (v->type != D9_STACK)
		return 0;
	uint32_t id = d9_stacks_intern(&r->stacks, v->p, v->count);
	if (!id)
		r->stats.tables_full = true;
	return id;
}

size_t d9_schema_count(const struct d9_reader *r)
{
	return r->schemas.n;
}

struct d9_schema *d9_schema_at(const struct d9_reader *r, size_t i)
{
	return i < r->schemas.n ? r->schemas.v[i] : NULL;
}

/* ---- JSON (d9_json.c needs the stream's pools) ---------------------------------------- */

uint64_t d9_pool_string(const void *priv, uint32_t id);
uint64_t d9_pool_stack(const void *priv, uint32_t id);

uint64_t d9_pool_string(const void *priv, uint32_t id)
{
	uint64_t v = d9_map_get(&((const struct cursor *)priv)->str_pool, id);
	return v == UNRESOLVED ? 0 : v;
}

uint64_t d9_pool_stack(const void *priv, uint32_t id)
{
	uint64_t v = d9_map_get(&((const struct cursor *)priv)->stack_pool, id);
	return v == UNRESOLVED ? 0 : v;
}

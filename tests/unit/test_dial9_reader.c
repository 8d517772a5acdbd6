/*
 * test_dial9_reader.c - the dial9 reader (viewer/reader/dial9/) on hand-made
 * byte vectors (tests/fuzz/d9_builder.c writes them from the format's spec):
 *   - every frame type (schema, event, string pool, stack pool, timestamp
 *     reset, schema annotations) and every field type, required and optional
 *     (present and absent), with the values and their JSON checked exactly;
 *   - timestamps: 24-bit deltas from a running base, resets;
 *   - a schema re-registered identically is accepted, differently is damage;
 *   - a header mid-stream resets schemas, pools and the base (the same type
 *     and pool ids mean other things in the next stream), and a pooled string
 *     defined twice in a stream takes its later value;
 *   - an unknown tag, an undefined type id, an overlong varint, lists nested
 *     too deep, an unknown field type: damage with the offset, and reading
 *     resumes at the next header; every prefix of a vector reads without harm;
 *   - gzip and raw give the same events; a truncated or two-member gzip; a
 *     gzip larger than the in-memory limit (read through a temporary file);
 *   - the merge returns the streams' events in time order, from a given stream.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "d9_builder.h"
#include "d9_reader.h"
#include "d9_store.h"
#include "soft_check.h"

#define MAX_EV 64

struct seen {
	size_t n;
	uint64_t ts[MAX_EV];
	uint32_t batch[MAX_EV];
	char name[MAX_EV][64];
	char json[MAX_EV][512];
};

static int collect(void *ctx, const struct d9_event *e)
{
	void **c = ctx;
	struct seen *s = c[0];
	struct d9_reader *r = c[1];
	if (s->n < MAX_EV) {
		s->ts[s->n] = e->ts;
		s->batch[s->n] = e->batch;
		snprintf(s->name[s->n], 64, "%.*s", e->schema->name_len, e->schema->name);
		struct d9_buf b = { 0 };
		d9_event_json(r, e, &b);
		snprintf(s->json[s->n], 512, "%s", b.p ? b.p : "");
		d9_buf_free(&b);
	}
	s->n++;
	return 0;
}

/* Scans buf; fills s; returns the reader (closed by the caller) or NULL. */
static struct d9_reader *scan(const struct d9b *b, struct seen *s)
{
	memset(s, 0, sizeof *s);
	char err[256];
	struct d9_reader *r = d9_open_buffer(b->buf, b->len, err, sizeof err);
	if (!r)
		return NULL;
	void *ctx[2] = { s, r };
	d9_scan(r, collect, ctx);
	return r;
}

enum { I64 = 1, F64, BOOL, STR, BYTES, PSTK, PSTR, STK, VAR, SMAP, U8, U16, U32, LIST, MAP, OPT = 0x80 };

/* ---- every field type ------------------------------------------------------------ */

static void every_type(struct d9b *b)
{
	static const struct d9b_field f[] = {
		{ "i", I64 }, { "f", F64 }, { "b", BOOL }, { "s", STR }, { "by", BYTES }, { "ps", PSTK },
		{ "pstr", PSTR }, { "stk", STK }, { "v", VAR }, { "m", SMAP }, { "u8", U8 }, { "u16", U16 },
		{ "u32", U32 }, { "l", LIST }, { "dm", MAP }, { "o1", VAR | OPT }, { "o2", PSTR | OPT },
	};
	d9b_header(b);
	d9b_schema(b, 3, "All", true, f, sizeof f / sizeof f[0]);
	d9b_annotation(b, 3, 8, "metrique.unit", "nanoseconds");
	uint32_t ids[2] = { 10, 11 };
	const char *strs[2] = { "pooled", "key" };
	d9b_string_pool(b, 2, ids, strs);
	uint64_t pcs[2] = { 0x1000, 0x2000 };
	d9b_stack_pool(b, 20, pcs, 2);
	d9b_ts_reset(b, 1000000);
	d9b_event(b, 3, true, 5);
	d9b_u64(b, (uint64_t)-42);
	double d = 2.5;
	uint64_t du;
	memcpy(&du, &d, 8);
	d9b_u64(b, du);
	d9b_u8(b, 7); /* any non-zero is true */
	d9b_v_string(b, "a\"b\n");
	d9b_v_string(b, "\x01\xff");
	d9b_u32(b, 20);
	d9b_u32(b, 10);
	uint64_t inl[1] = { 0xdeadbeef };
	d9b_v_stack(b, inl, 1);
	d9b_varint(b, 300);
	const char *mk[1] = { "k" }, *mv[1] = { "v" };
	d9b_v_string_map(b, 1, mk, mv);
	d9b_u8(b, 200);
	d9b_u16(b, 60000);
	d9b_u32(b, 4000000000u);
	/* list: [u8 5, pooled "pooled", list [bool true]] */
	d9b_u32(b, 3);
	d9b_u8(b, U8);
	d9b_u8(b, 5);
	d9b_u8(b, PSTR);
	d9b_u32(b, 10);
	d9b_u8(b, LIST);
	d9b_u32(b, 1);
	d9b_u8(b, BOOL);
	d9b_u8(b, 1);
	/* map with a string key, then one with a number key */
	d9b_u32(b, 1);
	d9b_u8(b, PSTR);
	d9b_u32(b, 11);
	d9b_u8(b, VAR);
	d9b_varint(b, 9);
	d9b_u8(b, 1); /* o1 present */
	d9b_varint(b, 77);
	d9b_u8(b, 0); /* o2 absent */
	/* the second event: a map with a non-string key, optionals flipped */
	d9b_event(b, 3, true, 16777215);
	d9b_u64(b, 1);
	d9b_u64(b, 0);
	d9b_u8(b, 0);
	d9b_v_string(b, "");
	d9b_v_string(b, "");
	d9b_u32(b, 99); /* undefined pooled stack */
	d9b_u32(b, 11);
	d9b_v_stack(b, NULL, 0);
	d9b_varint(b, 0);
	d9b_v_string_map(b, 0, NULL, NULL);
	d9b_u8(b, 0);
	d9b_u16(b, 0);
	d9b_u32(b, 0);
	d9b_u32(b, 0);
	d9b_u32(b, 1);
	d9b_u8(b, U16);
	d9b_u16(b, 3);
	d9b_u8(b, STR);
	d9b_v_string(b, "x");
	d9b_u8(b, 0);
	d9b_u8(b, 1);
	d9b_u32(b, 10);
}

static void test_every_type(void)
{
	struct d9b b = { 0 };
	every_type(&b);
	struct seen s;
	struct d9_reader *r = scan(&b, &s);
	CHECK(r != NULL, "opens");
	CHECK(s.n == 2, "two events, got %zu", s.n);
	CHECK(s.ts[0] == 1000005 && s.ts[1] == 1000005 + 16777215, "ts %llu %llu", (unsigned long long)s.ts[0],
	      (unsigned long long)s.ts[1]);
	const char *want0 = "{\"i\":-42,\"f\":2.5,\"b\":true,\"s\":\"a\\\"b\\u000a\",\"by\":\"01ff\","
			    "\"ps\":[\"0x1000\",\"0x2000\"],\"pstr\":\"pooled\",\"stk\":[\"0xdeadbeef\"],\"v\":300,"
			    "\"m\":{\"k\":\"v\"},\"u8\":200,\"u16\":60000,\"u32\":4000000000,"
			    "\"l\":[5,\"pooled\",[true]],\"dm\":{\"key\":9},\"o1\":77,\"o2\":null}";
	CHECK(strcmp(s.json[0], want0) == 0, "json 0:\n  got  %s\n  want %s", s.json[0], want0);
	const char *want1 = "{\"i\":1,\"f\":0,\"b\":false,\"s\":\"\",\"by\":\"\",\"ps\":null,\"pstr\":\"key\","
			    "\"stk\":[],\"v\":0,\"m\":{},\"u8\":0,\"u16\":0,\"u32\":0,\"l\":[],"
			    "\"dm\":[[3,\"x\"]],\"o1\":null,\"o2\":\"pooled\"}";
	CHECK(strcmp(s.json[1], want1) == 0, "json 1:\n  got  %s\n  want %s", s.json[1], want1);
	CHECK(d9_damage_count(r) == 0, "no damage: %s", d9_damage_count(r) ? d9_damage_at(r, 0)->reason : "");
	CHECK(d9_stats(r)->unresolved == 1, "one undefined stack reference, got %llu",
	      (unsigned long long)d9_stats(r)->unresolved);
	CHECK(d9_stats(r)->batches == 1 && d9_stats(r)->events == 2, "stats");
	d9_close(r);
	d9b_free(&b);
}

/* ---- streams: headers, schemas, pools ------------------------------------------------- */

static void stream(struct d9b *b, const char *schema_name, const char *value, uint64_t ts)
{
	static const struct d9b_field f[] = { { "x", PSTR } };
	d9b_header(b);
	d9b_schema(b, 0, schema_name, true, f, 1);
	uint32_t id = 1;
	d9b_string_pool(b, 1, &id, &value);
	d9b_ts_reset(b, ts);
	d9b_event(b, 0, true, 0);
	d9b_u32(b, 1);
}

static void test_streams(void)
{
	struct d9b b = { 0 };
	/* The same type id and pool id mean other things in each stream. */
	stream(&b, "A", "first", 5000);
	stream(&b, "B", "second", 3000);
	/* a re-registration identical to the first is fine; a pooled string
	 * redefined in the stream takes its new value */
	static const struct d9b_field f[] = { { "x", PSTR } };
	d9b_schema(&b, 0, "B", true, f, 1);
	uint32_t id = 1;
	const char *again = "redefined";
	d9b_string_pool(&b, 1, &id, &again);
	d9b_event(&b, 0, true, 10);
	d9b_u32(&b, 1);
	struct seen s;
	struct d9_reader *r = scan(&b, &s);
	CHECK(r && s.n == 3, "3 events, got %zu", s.n);
	CHECK(strcmp(s.name[0], "A") == 0 && strcmp(s.json[0], "{\"x\":\"first\"}") == 0, "stream 1: %s %s",
	      s.name[0], s.json[0]);
	CHECK(strcmp(s.name[1], "B") == 0 && strcmp(s.json[1], "{\"x\":\"second\"}") == 0, "stream 2: %s %s",
	      s.name[1], s.json[1]);
	CHECK(strcmp(s.json[2], "{\"x\":\"redefined\"}") == 0 && s.ts[2] == 3010, "redefined: %s %llu", s.json[2],
	      (unsigned long long)s.ts[2]);
	CHECK(s.batch[0] == 0 && s.batch[1] == 1 && s.batch[2] == 1, "batches");
	CHECK(r && d9_schema_count(r) == 2 && d9_damage_count(r) == 0, "two distinct schemas, no damage");
	/* time order across streams: stream 2 (t=3000, 3010) before stream 1 (5000) */
	d9_merge_begin(r, 0);
	struct d9_event e;
	uint64_t order[4];
	size_t n = 0;
	while (n < 4 && d9_merge_next(r, &e))
		order[n++] = e.ts;
	CHECK(n == 3 && order[0] == 3000 && order[1] == 3010 && order[2] == 5000, "merged order");
	d9_merge_begin(r, 1);
	n = 0;
	while (n < 4 && d9_merge_next(r, &e))
		order[n++] = e.ts;
	CHECK(n == 2 && order[0] == 3000, "from stream 1 on: %zu", n);
	d9_close(r);

	/* A type id registered again with other fields is damage; the next
	 * stream reads. */
	struct d9b c = { 0 };
	stream(&c, "A", "one", 100);
	size_t bad_at = c.len;
	static const struct d9b_field g[] = { { "y", VAR } };
	d9b_schema(&c, 0, "A", true, g, 1);
	stream(&c, "C", "three", 200);
	r = scan(&c, &s);
	CHECK(r && s.n == 2, "events around the bad schema: %zu", s.n);
	CHECK(r && d9_damage_count(r) == 1 && d9_damage_at(r, 0)->offset == bad_at &&
		      strstr(d9_damage_at(r, 0)->reason, "different schema"),
	      "damage at %zu: %s @%llu", bad_at, r && d9_damage_count(r) ? d9_damage_at(r, 0)->reason : "-",
	      r && d9_damage_count(r) ? (unsigned long long)d9_damage_at(r, 0)->offset : 0ull);
	d9_close(r);
	d9b_free(&b);
	d9b_free(&c);
}

/* ---- damage ---------------------------------------------------------------------------- */

/* bad() writes a damaged frame (after good ones it may need) and returns its offset. */
static void damaged(const char *what, size_t (*bad)(struct d9b *), const char *reason)
{
	struct d9b b = { 0 };
	stream(&b, "A", "one", 100);
	size_t at = bad(&b);
	stream(&b, "B", "two", 200);
	struct seen s;
	struct d9_reader *r = scan(&b, &s);
	CHECK(r && s.n == 2, "%s: events before and after: %zu", what, s.n);
	const struct d9_damage *d = r && d9_damage_count(r) ? d9_damage_at(r, 0) : NULL;
	CHECK(d && d->offset == at && strstr(d->reason, reason), "%s: damage %s at %llu (want '%s' at %zu)", what,
	      d ? d->reason : "none", d ? (unsigned long long)d->offset : 0ull, reason, at);
	d9_close(r);
	d9b_free(&b);
}

static size_t bad_tag(struct d9b *b)
{
	size_t at = b->len;
	d9b_u8(b, 0x42);
	d9b_bytes(b, "garbage", 7);
	return at;
}

static size_t bad_type_id(struct d9b *b)
{
	size_t at = b->len;
	d9b_event(b, 9, true, 0);
	return at;
}

static size_t bad_varint(struct d9b *b)
{
	static const struct d9b_field f[] = { { "v", VAR } };
	d9b_schema(b, 1, "V", false, f, 1);
	size_t at = b->len;
	d9b_event(b, 1, false, 0);
	d9b_bytes(b, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 10);
	return at;
}

static size_t bad_nesting(struct d9b *b)
{
	static const struct d9b_field f[] = { { "l", LIST } };
	d9b_schema(b, 1, "L", false, f, 1);
	size_t at = b->len;
	d9b_event(b, 1, false, 0);
	for (int i = 0; i < 17; i++) {
		d9b_u32(b, 1);
		d9b_u8(b, LIST);
	}
	d9b_u32(b, 0);
	return at;
}

static size_t bad_field_type(struct d9b *b)
{
	static const struct d9b_field f[] = { { "z", 16 } };
	size_t at = b->len;
	d9b_schema(b, 1, "Z", false, f, 1);
	return at;
}

static size_t bad_version(struct d9b *b)
{
	size_t at = b->len;
	d9b_bytes(b, "TRC\0\x02", 5);
	return at;
}

static void test_damage(void)
{
	damaged("unknown tag", bad_tag, "unknown frame tag 0x42");
	damaged("undefined type id", bad_type_id, "type id 9");
	damaged("overlong varint", bad_varint, "varint");
	damaged("deep nesting", bad_nesting, "nested deeper");
	damaged("unknown field type", bad_field_type, "unknown type 0x10");
	damaged("version 2 stream", bad_version, "version 2");
}

/* Every prefix of a vector: never worse than what it holds. */
static void test_prefixes(void)
{
	struct d9b b = { 0 };
	every_type(&b);
	stream(&b, "B", "two", 1);
	size_t last = 0;
	for (size_t n = 0; n <= b.len; n++) {
		struct d9b p = { b.buf, n, n };
		char err[256];
		struct d9_reader *r = d9_open_buffer(p.buf, p.len, err, sizeof err);
		CHECK((r != NULL) == (n >= 5), "prefix %zu opens: %s", n, r ? "yes" : err);
		if (!r)
			continue;
		d9_scan(r, NULL, NULL);
		size_t events = (size_t)d9_stats(r)->events;
		CHECK(events >= last, "prefix %zu: %zu events after %zu", n, events, last);
		bool whole = n == b.len || events == 3;
		CHECK(whole || d9_damage_count(r) == 0 || strstr(d9_damage_at(r, 0)->reason, "truncated"),
		      "prefix %zu: %s", n, d9_damage_count(r) ? d9_damage_at(r, 0)->reason : "");
		last = events;
		d9_close(r);
	}
	CHECK(last == 3, "the whole vector: %zu events", last);
	d9b_free(&b);
}

/* ---- gzip ------------------------------------------------------------------------------- */

static void test_gzip(void)
{
	struct d9b raw = { 0 };
	every_type(&raw);
	stream(&raw, "B", "two", 1);
	struct seen a, g;
	struct d9_reader *r = scan(&raw, &a);
	d9_close(r);
	uint8_t *gz;
	size_t gl;
	d9b_gzip(raw.buf, raw.len, &gz, &gl);
	CHECK(d9_detect(gz, gl) == D9_DETECT_GZIP && d9_detect(raw.buf, raw.len) == D9_DETECT_RAW, "detect");
	CHECK(d9_detect((const uint8_t *)"\x1f\x8bxxxxxxxxxxxx", 14) == D9_DETECT_OTHER_GZIP ||
		      d9_detect((const uint8_t *)"\x1f\x8bxxxxxxxxxxxx", 14) == D9_DETECT_NO,
	      "not gzip of a trace");
	CHECK(d9_detect((const uint8_t *)"SQLite format 3", 15) == D9_DETECT_NO, "sqlite is not a trace");
	struct d9b gb = { gz, gl, gl };
	r = scan(&gb, &g);
	CHECK(r && d9_stats(r)->gzip && g.n == a.n && a.n == 3, "gzip events %zu raw %zu", g.n, a.n);
	for (size_t i = 0; i < a.n && i < g.n; i++)
		CHECK(strcmp(a.json[i], g.json[i]) == 0 && a.ts[i] == g.ts[i], "event %zu same", i);
	CHECK(r && !d9_store_problem(r), "clean gzip");
	d9_close(r);
	/* two members: one stream */
	struct d9b two = { 0 };
	d9b_bytes(&two, gz, gl);
	d9b_bytes(&two, gz, gl);
	r = scan(&two, &g);
	CHECK(r && g.n == 6 && !d9_store_problem(r), "two members: %zu events", g.n);
	d9_close(r);
	/* cut in the middle of the compressed data */
	struct d9b cut = { gz, gl / 2, gl / 2 };
	r = scan(&cut, &g);
	CHECK(r && d9_store_problem(r) && strstr(d9_store_problem(r), "truncated"), "truncated gzip: %s",
	      r && d9_store_problem(r) ? d9_store_problem(r) : "no note");
	CHECK(r && g.n <= 3, "truncated gzip keeps what came before: %zu", g.n);
	d9_close(r);
	d9b_free(&two);
	free(gz);
	d9b_free(&raw);
}

/* 72 MiB in 1 MiB string pool frames, each followed by an event; noisy
 * (every 16th byte pseudo-random) so that it compresses like a trace, or
 * not at all. */
static void big(struct d9b *b, bool noisy)
{
	d9b_header(b);
	static const struct d9b_field f[] = { { "n", VAR }, { "s", STR } };
	d9b_schema(b, 0, "Big", true, f, 2);
	char *blob = malloc(1u << 20);
	uint32_t x = 12345;
	for (size_t i = 0; i + 1 < 1u << 20; i++) {
		x = x * 1103515245u + 12345u;
		blob[i] = noisy && i % 16 == 0 ? (char)('a' + (x >> 16) % 26) : 'z';
	}
	blob[(1u << 20) - 1] = 0;
	uint32_t id = 1;
	const char *bp = blob;
	for (int i = 0; i < 72; i++) {
		d9b_string_pool(b, 1, &id, &bp);
		d9b_event(b, 0, true, 1);
		d9b_varint(b, (uint64_t)i);
		d9b_v_string(b, "tail");
	}
	free(blob);
}

/* A gzip larger than D9_INFLATE_IN_MEMORY: read back from the temporary file,
 * frames spanning read windows. And one that inflates more than 1000-fold: a
 * bomb, cut with a note, what came before it kept. */
static void test_spill(void)
{
	struct d9b b = { 0 };
	big(&b, true);
	uint8_t *gz;
	size_t gl;
	d9b_gzip(b.buf, b.len, &gz, &gl);
	char err[256];
	struct d9_reader *r = d9_open_buffer(gz, gl, err, sizeof err);
	CHECK(r != NULL, "opens: %s", r ? "" : err);
	if (r) {
		d9_scan(r, NULL, NULL);
		CHECK(d9_stats(r)->events == 72 && d9_stats(r)->bytes == b.len && d9_damage_count(r) == 0,
		      "72 events over %zu bytes: %llu, %llu", b.len, (unsigned long long)d9_stats(r)->events,
		      (unsigned long long)d9_stats(r)->bytes);
		d9_merge_begin(r, 0);
		struct d9_event e;
		uint64_t n = 0, ok = 0;
		while (d9_merge_next(r, &e)) {
			ok += e.v[0].u == n && e.ts == n + 1 && e.v[1].len == 4;
			n++;
		}
		CHECK(n == 72 && ok == 72, "merge reads them back: %llu of %llu", (unsigned long long)ok,
		      (unsigned long long)n);
		d9_close(r);
	}
	free(gz);
	d9b_free(&b);
	big(&b, false);
	d9b_gzip(b.buf, b.len, &gz, &gl);
	r = d9_open_buffer(gz, gl, err, sizeof err);
	CHECK(r != NULL, "the bomb opens: %s", r ? "" : err);
	if (r) {
		d9_scan(r, NULL, NULL);
		const char *note = d9_store_problem(r);
		uint64_t ev = d9_stats(r)->events;
		CHECK(note && strstr(note, "1000 times") && d9_stats(r)->bytes < b.len && ev > 60 && ev < 72,
		      "cut at %llu of %zu bytes (%zu compressed), %llu events: %s",
		      (unsigned long long)d9_stats(r)->bytes, b.len, gl, (unsigned long long)ev, note ? note : "no note");
		d9_close(r);
	}
	free(gz);
	d9b_free(&b);
}

int main(void)
{
	test_every_type();
	test_streams();
	test_damage();
	test_prefixes();
	test_gzip();
	test_spill();
	if (failures)
		fprintf(stderr, "%d checks failed\n", failures);
	return failures ? 1 : 0;
}

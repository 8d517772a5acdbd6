/*
 * test_segment_reader.c - the segment reader against segments built in memory by
 * tests/fuzz/segment_builder.c: exact decoding of every record kind with absolute
 * timestamps, truncation at every byte keeping exactly the intact blocks, every
 * flipped byte detected, unknown extension records skipped, malformed records
 * rejected per block, compressed and raw blocks decoding alike, and the file API
 * agreeing with the buffer API; the floors read ahead (ss_reader_floors) never
 * above a block's earliest record (samples, switches and the watchdog's
 * records, which carry their own times, included), one per block the reader
 * would deliver at every cut and ending as its read ends, the threads defined
 * and redefined ids told, and what is read after them unchanged; a reader kept
 * to the blocks walked (ss_reader_end_at) reads what the walk saw.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "segment_builder.h"
#include "segment_reader.h"

static int failures;

#define CHECK(cond) \
	do { \
		if (!(cond)) { \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			failures++; \
		} \
	} while (0)

#define T0 5000000000ull

static void begin(struct sb *b)
{
	struct sb_header h = {
		.session_id = 0xabcdef0123456789ull, .segment_seq = 7, .pid = 99,
		.start_ts = T0, .anchor_mono_ns = T0 - 1000, .anchor_real_ns = 1700000000000000000ull,
		.exe = "/opt/app", .hostname = "host-a", .boot_id = "boot-1",
	};
	sb_init(b, &h);
}

/* Record -> one canonical line, so expectations read like the format spec. */
__attribute__((format(printf, 3, 4)))
static void app(char *buf, size_t n, const char *fmt, ...)
{
	size_t used = strlen(buf);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf + used, n - used, fmt, ap);
	va_end(ap);
}

static void rec_str(const struct ss_record *r, char *buf, size_t n)
{
	buf[0] = '\0';
	const char *name = ss_record_type_name(r->type);
	if (name)
		app(buf, n, "%s", name);
	else
		app(buf, n, "0x%02x", r->type);
	if (r->is_event || r->type == SS_REC_THREAD)
		app(buf, n, " t=%" PRIu64 " T%" PRIu64, (uint64_t)(r->ts - T0), r->thread);
	switch (r->type) {
	case SS_REC_STRING:
		app(buf, n, " %" PRIu64 " %.*s", r->u.string.id, (int)r->u.string.len, r->u.string.data);
		break;
	case SS_REC_LOCATION:
		app(buf, n, " %" PRIu64 " %" PRIu64 ":%" PRIu64 " %" PRIu64, r->u.location.id,
		    r->u.location.file, r->u.location.line, r->u.location.function);
		break;
	case SS_REC_THREAD_DEF:
		app(buf, n, " %" PRIu64 " tid %" PRIu64 " %.*s rt %" PRIu64 " #%" PRIu64 " f%" PRIu64,
		    r->u.thread_def.thread, r->u.thread_def.tid, (int)r->u.thread_def.name_len,
		    r->u.thread_def.name, r->u.thread_def.runtime, r->u.thread_def.worker_index,
		    r->u.thread_def.flags);
		break;
	case SS_REC_POLL_BEGIN:
	case SS_REC_SPAWN:
		app(buf, n, " task %" PRIu64 " loc %" PRIu64, r->u.poll_begin.task, r->u.poll_begin.location);
		break;
	case SS_REC_TERMINATE:
	case SS_REC_WAKE:
		app(buf, n, " task %" PRIu64, r->u.wake.task);
		break;
	case SS_REC_QUEUE:
		app(buf, n, " %" PRIu64 "/%" PRIu64, r->u.queue.local, r->u.queue.global);
		break;
	case SS_REC_MARK:
		app(buf, n, " %" PRIu64 "=%" PRId64, r->u.mark.name, r->u.mark.value);
		break;
	case SS_REC_SPAN_BEGIN:
	case SS_REC_SPAN_END:
		app(buf, n, " %" PRIu64, r->u.span.name);
		break;
	case SS_REC_WORKER_BEGIN:
		app(buf, n, " rt %" PRIu64 " #%" PRIu64, r->u.worker_begin.runtime, r->u.worker_begin.index);
		break;
	case SS_REC_LOSS:
		app(buf, n, " %" PRIu64 " over %" PRIu64 " r%" PRIu64, r->u.loss.count, r->u.loss.span,
		    r->u.loss.reason);
		break;
	case SS_REC_META:
		app(buf, n, " %.*s=%.*s", (int)r->u.meta.key_len, r->u.meta.key,
		    (int)r->u.meta.value_len, r->u.meta.value);
		break;
	default:
		if (r->type >= 0x40)
			app(buf, n, " len %zu", r->u.unknown.len);
		break;
	}
}

/* Reads a whole buffer into one string of record lines; returns blocks read. */
struct readout {
	char text[16384];
	uint64_t blocks;
	struct ss_damage damage;
	struct ss_reader_stats stats;
	int open_failed;
	enum ss_damage_kind open_kind;
};

static void read_all(struct ss_reader *r, struct readout *o)
{
	struct ss_block_info b;
	struct ss_record rec;
	char line[512];
	while (ss_reader_next_block(r, &b)) {
		o->blocks++;
		while (ss_reader_next_record(r, &rec)) {
			rec_str(&rec, line, sizeof line);
			app(o->text, sizeof o->text, "%s\n", line);
		}
	}
	o->damage = *ss_reader_damage(r);
	o->stats = *ss_reader_stats(r);
}

static void read_buf(const uint8_t *buf, size_t len, struct readout *o)
{
	struct ss_reader *r;
	char err[256];
	memset(o, 0, sizeof *o);
	if (ss_reader_open_buffer(&r, buf, len, NULL, &o->open_kind, err, sizeof err) != 0) {
		o->open_failed = 1;
		return;
	}
	read_all(r, o);
	ss_reader_close(r);
}

/* The segment of the every-kind test: two event blocks and a footer. */
static void build_every_kind(struct sb *b, bool zstd)
{
	begin(b);
	sb_begin_block(b);
	sb_meta(b, "k", "v");
	sb_string(b, 1, "rt");
	sb_location(b, 2, 1, 42, 1);
	sb_thread_def(b, 3, 1234, "w0", 1, 0, SS_THREAD_F_WORKER);
	sb_thread(b, 3, T0 + 110);
	sb_event(b, SS_REC_WORKER_BEGIN, T0 + 111, 2, (uint64_t)1, (uint64_t)0);
	sb_event(b, SS_REC_SPAWN, T0 + 120, 2, (uint64_t)9, (uint64_t)2);
	sb_event(b, SS_REC_POLL_BEGIN, T0 + 130, 2, (uint64_t)9, (uint64_t)2);
	sb_event(b, SS_REC_WAKE, T0 + 131, 1, (uint64_t)10);
	sb_event(b, SS_REC_MARK, T0 + 132, 2, (uint64_t)1, ss_zigzag(INT64_MIN));
	sb_event(b, SS_REC_SPAN_BEGIN, T0 + 133, 1, (uint64_t)1);
	sb_event(b, SS_REC_SPAN_END, T0 + 134, 1, (uint64_t)1);
	sb_event(b, SS_REC_POLL_END, T0 + 140, 0);
	sb_event(b, SS_REC_TERMINATE, T0 + 141, 1, (uint64_t)9);
	sb_event(b, SS_REC_QUEUE, T0 + 142, 2, (uint64_t)4, (uint64_t)5);
	sb_event(b, SS_REC_PARK, T0 + 150, 0);
	sb_thread(b, 0, T0 + 105); /* earlier than the previous thread's clock: per-thread */
	sb_event(b, SS_REC_LOSS, T0 + 105, 3, (uint64_t)3, (uint64_t)20, (uint64_t)SS_LOSS_WRITE_FAILED);
	sb_end_block(b, zstd);
	sb_begin_block(b);
	sb_thread(b, 3, T0 + 1000000);
	sb_event(b, SS_REC_UNPARK, T0 + 1000001, 0);
	sb_event(b, SS_REC_WORKER_END, T0 + 1000002, 0);
	sb_event(b, SS_REC_THREAD_EXIT, T0 + 1000003, 0);
	sb_end_block(b, zstd);
	sb_footer(b, SS_SEALED_WRITER, 3);
}

static const char every_kind_expected[] =
	"META k=v\n"
	"STRING 1 rt\n"
	"LOCATION 2 1:42 1\n"
	"THREAD_DEF 3 tid 1234 w0 rt 1 #0 f1\n"
	"THREAD t=110 T3\n"
	"WORKER_BEGIN t=111 T3 rt 1 #0\n"
	"SPAWN t=120 T3 task 9 loc 2\n"
	"POLL_BEGIN t=130 T3 task 9 loc 2\n"
	"WAKE t=131 T3 task 10\n"
	"MARK t=132 T3 1=-9223372036854775808\n"
	"SPAN_BEGIN t=133 T3 1\n"
	"SPAN_END t=134 T3 1\n"
	"POLL_END t=140 T3\n"
	"TERMINATE t=141 T3 task 9\n"
	"QUEUE t=142 T3 4/5\n"
	"PARK t=150 T3\n"
	"THREAD t=105 T0\n"
	"LOSS t=105 T0 3 over 20 r3\n"
	"THREAD t=1000000 T3\n"
	"UNPARK t=1000001 T3\n"
	"WORKER_END t=1000002 T3\n"
	"THREAD_EXIT t=1000003 T3\n";

static void test_every_kind(void)
{
	struct sb b;
	struct readout o;
	build_every_kind(&b, false);
	read_buf(b.buf, b.len, &o);
	CHECK(!o.open_failed);
	if (strcmp(o.text, every_kind_expected) != 0)
		fprintf(stderr, "decoded:\n%s\nexpected:\n%s\n", o.text, every_kind_expected);
	CHECK(strcmp(o.text, every_kind_expected) == 0);
	CHECK(o.blocks == 3);
	CHECK(o.damage.kind == SS_DAMAGE_NONE);
	CHECK(o.stats.sealed);
	CHECK(o.stats.footer.blocks == 2 && o.stats.footer.events == 14);
	CHECK(o.stats.footer.dropped_events == 3 && o.stats.footer.sealed_by == SS_SEALED_WRITER);
	/* LOSS is not an event in the format's counts. */
	CHECK(o.stats.events == 14 && o.stats.definitions == 4 && o.stats.records == 22);
	CHECK(o.stats.by_type[SS_REC_THREAD] == 3 && o.stats.by_type[SS_REC_LOSS] == 1);
	CHECK(o.stats.loss_records == 1 && o.stats.process_events == 0);
	CHECK(o.stats.lost_events == 3 && o.stats.lost_by_reason[SS_LOSS_WRITE_FAILED] == 3);
	CHECK(o.stats.first_event_ts == T0 + 111 && o.stats.last_event_ts == T0 + 1000003);
	CHECK(o.stats.note[0] == '\0');
	CHECK(o.stats.intact_end == b.len);

	/* Header and lookups. */
	struct ss_reader *r;
	char err[256];
	CHECK(ss_reader_open_buffer(&r, b.buf, b.len, NULL, NULL, err, sizeof err) == 0);
	const struct ss_segment_header *h = ss_reader_header(r);
	CHECK(h->pid == 99 && h->segment_seq == 7 && h->session_id == 0xabcdef0123456789ull);
	CHECK(h->start_ts == T0 && h->anchor_mono_ns == T0 - 1000);
	CHECK(strcmp(h->exe, "/opt/app") == 0 && h->exe_len == 8);
	CHECK(strcmp(h->hostname, "host-a") == 0 && strcmp(h->boot_id, "boot-1") == 0);
	struct ss_block_info bi;
	struct ss_record rec;
	CHECK(ss_reader_next_block(r, &bi));
	CHECK(bi.index == 0 && bi.kind == SS_BLOCK_EVENTS && bi.record_count == 11);
	CHECK(bi.first_ts == T0 + 111 && bi.last_ts == T0 + 150);
	/* Skipping records must not lose definitions: they are kept at block load. */
	const struct ss_string_def *s = ss_reader_string(r, 1);
	CHECK(s && s->len == 2 && memcmp(s->data, "rt", 2) == 0);
	const struct ss_location_def *l = ss_reader_location(r, 2);
	CHECK(l && l->line == 42);
	const struct ss_thread_def *t = ss_reader_thread(r, 3);
	CHECK(t && t->tid == 1234 && strcmp(t->name, "w0") == 0 && t->events == 11);
	int events_with_def = 0;
	while (ss_reader_next_record(r, &rec))
		events_with_def += rec.is_event && rec.thread_def && rec.thread_def->tid == 1234;
	CHECK(events_with_def == 11);
	ss_reader_close(r);
	sb_free(&b);
}

/* Block boundaries of a segment: offsets where a cut leaves only whole blocks. */
static size_t boundaries(const uint8_t *buf, size_t len, size_t *out, size_t max)
{
	struct ss_file_header fh;
	memcpy(&fh, buf, sizeof fh);
	size_t n = 0, off = fh.header_size;
	out[n++] = off;
	while (off < len && n < max) {
		struct ss_block_header bh;
		memcpy(&bh, buf + off, sizeof bh);
		off += sizeof bh + bh.payload_len;
		out[n++] = off;
	}
	return n;
}

static void test_truncation(bool zstd)
{
	struct sb b;
	struct readout o;
	size_t bounds[16];
	build_every_kind(&b, zstd);
	size_t nb = boundaries(b.buf, b.len, bounds, 16);
	CHECK(nb == 4 && bounds[nb - 1] == b.len);
	for (size_t cut = 0; cut <= b.len; cut++) {
		uint8_t *copy = malloc(cut ? cut : 1); /* exact size: ASan sees any overread */
		memcpy(copy, b.buf, cut);
		read_buf(copy, cut, &o);
		if (cut < bounds[0]) {
			CHECK(o.open_failed && o.open_kind == SS_DAMAGE_TRUNCATED);
			free(copy);
			continue;
		}
		CHECK(!o.open_failed);
		uint64_t whole = 0;
		bool at_boundary = false;
		for (size_t k = 1; k < nb; k++)
			whole += bounds[k] <= cut;
		for (size_t k = 0; k < nb; k++)
			at_boundary |= bounds[k] == cut;
		CHECK(o.blocks == whole);
		CHECK(o.stats.blocks == whole);
		CHECK(o.stats.sealed == (cut == b.len));
		if (at_boundary) {
			CHECK(o.damage.kind == SS_DAMAGE_NONE);
		} else {
			CHECK(o.damage.kind == SS_DAMAGE_TRUNCATED);
			CHECK(o.damage.block == whole && o.damage.offset == bounds[whole]);
		}
		free(copy);
	}
	sb_free(&b);
}

/* Any change to any byte is caught, and the block that holds it is never delivered. */
static void test_flips(bool zstd)
{
	struct sb b;
	struct readout o;
	size_t bounds[16];
	static const uint8_t masks[] = { 0x01, 0x80, 0xff, 0x10 };
	build_every_kind(&b, zstd);
	size_t nb = boundaries(b.buf, b.len, bounds, 16);
	uint8_t *copy = malloc(b.len);
	for (size_t i = 0; i < b.len; i++) {
		for (size_t m = 0; m < sizeof masks; m++) {
			memcpy(copy, b.buf, b.len);
			copy[i] ^= masks[m];
			read_buf(copy, b.len, &o);
			if (i < bounds[0]) {
				CHECK(o.open_failed && o.open_kind == SS_DAMAGE_CORRUPT);
				continue;
			}
			uint64_t before = 0;
			for (size_t k = 1; k < nb; k++)
				before += bounds[k] <= i;
			CHECK(!o.open_failed);
			CHECK(o.damage.kind == SS_DAMAGE_CORRUPT);
			CHECK(o.blocks == before);
			CHECK(!o.stats.sealed);
			if (o.blocks != before || o.damage.kind != SS_DAMAGE_CORRUPT) {
				fprintf(stderr, "  flip at %zu mask 0x%02x: %s\n", i, masks[m], o.damage.reason);
				goto out;
			}
		}
	}
out:
	free(copy);
	sb_free(&b);
}

static void test_unknown_extensions(void)
{
	struct sb b;
	struct readout o;
	begin(&b);
	sb_begin_block(&b);
	sb_ext(&b, 0x45, "\x01\x02\x03", 3);
	sb_thread(&b, 1, T0 + 5);
	sb_ext(&b, 0x5f, "", 0);
	sb_event(&b, SS_REC_PARK, T0 + 7, 0);
	uint8_t big[300];
	memset(big, 0xee, sizeof big); /* body bytes look like anything; only the length counts */
	sb_ext(&b, 0xff, big, sizeof big);
	sb_event(&b, SS_REC_UNPARK, T0 + 9, 0);
	/* META with a field appended by some later version: still readable. */
	sb_ext(&b, SS_REC_META, "\x01" "a" "\x01" "b" "\x07\x07", 6);
	sb_end_block(&b, false);
	read_buf(b.buf, b.len, &o);
	CHECK(o.damage.kind == SS_DAMAGE_NONE);
	CHECK(strcmp(o.text, "0x45 len 3\nTHREAD t=5 T1\n0x5f len 0\nPARK t=7 T1\n0xff len 300\n"
			     "UNPARK t=9 T1\nMETA a=b\n") == 0);
	CHECK(o.stats.unknown_records == 3 && o.stats.events == 2);
	sb_free(&b);
}

/* One good block, then a block with the given bad record: the good one is kept. */
static void check_malformed(const char *what, const void *bytes, size_t len, bool with_thread)
{
	struct sb b;
	struct readout o;
	begin(&b);
	sb_begin_block(&b);
	sb_thread(&b, 1, T0 + 1);
	sb_event(&b, SS_REC_PARK, T0 + 2, 0);
	sb_end_block(&b, false);
	size_t second = b.len;
	sb_begin_block(&b);
	if (with_thread)
		sb_thread(&b, 1, T0 + 10);
	sb_event(&b, SS_REC_UNPARK, T0 + 11, 0);
	sb_raw_record(&b, bytes, len);
	sb_end_block(&b, false);
	sb_footer(&b, SS_SEALED_WRITER, 0);
	read_buf(b.buf, b.len, &o);
	CHECK(o.blocks == 1);
	CHECK(o.damage.kind == SS_DAMAGE_CORRUPT && o.damage.block == 1 && o.damage.offset == second);
	CHECK(strcmp(o.text, "THREAD t=1 T1\nPARK t=2 T1\n") == 0);
	if (o.blocks != 1 || o.damage.kind != SS_DAMAGE_CORRUPT)
		fprintf(stderr, "  malformed case '%s' not rejected\n", what);
	sb_free(&b);
}

static void test_malformed(void)
{
	check_malformed("unknown type below 0x40", "\x20\x00", 2, true);
	check_malformed("type 0", "\x00", 1, true);
	check_malformed("truncated varint", "\x10\x80", 2, true);
	check_malformed("11-byte varint", "\x12\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12, true);
	check_malformed("varint over 64 bits", "\x12\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02", 11, true);
	check_malformed("string past the end", "\x01\x05\x10" "ab", 5, true);
	check_malformed("extension past the end", "\x41\x10" "ab", 4, true);
	check_malformed("META body too short for its strings", "\x40\x02\x05" "a", 4, true);
	check_malformed("event before THREAD", "\x12\x00", 2, false);
	check_malformed("timestamp overflow", "\x12\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11, true);
	check_malformed("missing fields", "\x10\x01\x02", 3, true);

	/* record_count disagreeing with the payload. */
	struct sb b;
	struct readout o;
	begin(&b);
	sb_begin_block(&b);
	sb_thread(&b, 1, T0 + 1);
	b.blk_events++;
	sb_end_block(&b, false);
	read_buf(b.buf, b.len, &o);
	CHECK(o.blocks == 0 && o.damage.kind == SS_DAMAGE_CORRUPT);
	sb_free(&b);
}

static void test_framing(void)
{
	struct sb b;
	struct readout o;

	/* A zero-filled tail (crash on a delayed-allocation filesystem) is truncation. */
	begin(&b);
	sb_begin_block(&b);
	sb_end_block(&b, false);
	size_t n = b.len;
	uint8_t *z = calloc(1, n + 4096);
	memcpy(z, b.buf, n);
	read_buf(z, n + 4096, &o);
	CHECK(o.blocks == 1 && o.damage.kind == SS_DAMAGE_TRUNCATED && o.damage.offset == n);
	z[n + 100] = 1; /* ... but garbage after it is corruption */
	read_buf(z, n + 4096, &o);
	CHECK(o.blocks == 1 && o.damage.kind == SS_DAMAGE_CORRUPT);
	free(z);

	/* Bytes after the footer: the footer counts, the extra bytes are damage. */
	sb_footer(&b, SS_SEALED_RECOVERY, 0);
	uint8_t *t = malloc(b.len + 3);
	memcpy(t, b.buf, b.len);
	memcpy(t + b.len, "xyz", 3);
	read_buf(t, b.len + 3, &o);
	CHECK(o.stats.sealed && o.stats.footer.sealed_by == SS_SEALED_RECOVERY);
	CHECK(o.damage.kind == SS_DAMAGE_CORRUPT && o.damage.offset == b.len);
	free(t);
	sb_free(&b);

	/* A block sequence gap (a block missing from a spliced file). */
	begin(&b);
	sb_begin_block(&b);
	sb_end_block(&b, false);
	b.block_seq++;
	sb_begin_block(&b);
	sb_end_block(&b, false);
	read_buf(b.buf, b.len, &o);
	CHECK(o.blocks == 1 && o.damage.kind == SS_DAMAGE_CORRUPT);
	sb_free(&b);

	/* Not a segment at all, and a short non-segment. */
	read_buf((const uint8_t *)"hello world", 11, &o);
	CHECK(o.open_failed && o.open_kind == SS_DAMAGE_CORRUPT);
	read_buf((const uint8_t *)"STALL", 5, &o);
	CHECK(o.open_failed && o.open_kind == SS_DAMAGE_TRUNCATED);
	read_buf(NULL, 0, &o);
	CHECK(o.open_failed && o.open_kind == SS_DAMAGE_TRUNCATED);
}

static void test_compressed_same(void)
{
	struct sb raw, zst;
	struct readout a, c;
	build_every_kind(&raw, false);
	build_every_kind(&zst, true);
	read_buf(raw.buf, raw.len, &a);
	read_buf(zst.buf, zst.len, &c);
	if (!ss_reader_has_zstd()) {
		/* The builder cannot compress either; mark block 0 compressed by hand: the
		 * reader must report it unreadable and go on to the next block. */
		struct ss_file_header fh;
		struct ss_block_header bh;
		memcpy(&fh, raw.buf, sizeof fh);
		memcpy(&bh, raw.buf + fh.header_size, sizeof bh);
		bh.flags |= SS_BLOCK_F_ZSTD;
		bh.header_crc = ss_block_header_crc(&bh);
		memcpy(raw.buf + fh.header_size, &bh, sizeof bh);
		read_buf(raw.buf, raw.len, &c);
		CHECK(c.stats.unreadable_blocks == 1 && c.blocks == 3 && c.stats.sealed);
		CHECK(c.damage.kind == SS_DAMAGE_NONE);
	} else {
		CHECK(c.stats.compressed_blocks == 2);
		CHECK(c.damage.kind == SS_DAMAGE_NONE);
		CHECK(strcmp(a.text, c.text) == 0);
		CHECK(a.stats.events == c.stats.events && a.stats.raw_bytes == c.stats.raw_bytes);
	}
	sb_free(&raw);
	sb_free(&zst);
}

/* The records an importer puts in time order: events and LOSS, and the types
 * with a time of their own. */
static bool timed(uint8_t type)
{
	return (type >= 0x10 && type < 0x40) || type == SS_REC_SAMPLE || type == SS_REC_SWITCH ||
	       type == SS_REC_COMM || type == SS_REC_SAMPLER_LOSS || type == SS_REC_STALL ||
	       type == SS_REC_STALL_END || type == SS_REC_TASK_DUMP;
}

/* Each delivered block's earliest timed record (UINT64_MAX: none), by a full read. */
static size_t block_minima(const uint8_t *buf, size_t len, uint64_t *out, size_t max)
{
	struct ss_reader *r;
	char err[256];
	if (ss_reader_open_buffer(&r, buf, len, NULL, NULL, err, sizeof err) != 0)
		return 0;
	size_t n = 0;
	struct ss_block_info bi;
	struct ss_record rec;
	while (n < max && ss_reader_next_block(r, &bi)) {
		uint64_t lo = UINT64_MAX;
		while (ss_reader_next_record(r, &rec))
			if (timed(rec.type) && rec.ts < lo)
				lo = rec.ts;
		out[n++] = lo;
	}
	ss_reader_close(r);
	return n;
}

static void ext(struct sb *b, uint8_t type, int n, ...)
{
	uint8_t body[128];
	size_t k = 0;
	va_list ap;
	va_start(ap, n);
	for (int i = 0; i < n; i++)
		k += ss_put_varint(body + k, va_arg(ap, uint64_t));
	va_end(ap);
	sb_ext(b, type, body, k);
}

static void test_floors(bool zstd)
{
	struct sb b;
	begin(&b);
	sb_begin_block(&b);
	sb_string(&b, 1, "rt");
	sb_location(&b, 2, 1, 42, 1);
	sb_thread_def(&b, 3, 1234, "w0", 1, 0, SS_THREAD_F_WORKER);
	sb_thread(&b, 3, T0 + 110);
	sb_event(&b, SS_REC_POLL_BEGIN, T0 + 130, 2, (uint64_t)9, (uint64_t)2);
	sb_thread(&b, 0, T0 + 105);
	sb_event(&b, SS_REC_LOSS, T0 + 105, 3, (uint64_t)3, (uint64_t)20, (uint64_t)SS_LOSS_WRITE_FAILED);
	sb_end_block(&b, zstd);
	sb_begin_block(&b);
	sb_thread(&b, 3, T0 + 2000000);
	sb_event(&b, SS_REC_POLL_END, T0 + 2000010, 0);
	sb_cpu_sample(&b, 3, 1234, T0 + 500, 0);
	ext(&b, SS_REC_SWITCH, 5, (uint64_t)3, (uint64_t)1234, T0 + 450, (uint64_t)1, (uint64_t)1);
	ext(&b, SS_REC_STALL_END, 6, (uint64_t)3, (uint64_t)1234, (uint64_t)9, T0 + 130, T0 + 400, (uint64_t)1);
	ext(&b, SS_REC_TASK_DUMP, 7, (uint64_t)9, (uint64_t)3, (uint64_t)1234, (uint64_t)2, T0 + 300,
	    (uint64_t)5, (uint64_t)0);
	sb_end_block(&b, zstd);
	sb_begin_block(&b);
	sb_meta(&b, "only", "a definition"); /* no timed record */
	sb_end_block(&b, zstd);
	sb_footer(&b, SS_SEALED_WRITER, 3);

	uint64_t want[8];
	struct ss_floors f;
	size_t nm = block_minima(b.buf, b.len, want, 8);
	CHECK(nm == 4 && want[1] == T0 + 300 && want[2] == UINT64_MAX);
	struct ss_reader *r;
	char err[256];
	CHECK(ss_reader_open_buffer(&r, b.buf, b.len, NULL, NULL, err, sizeof err) == 0);
	CHECK(ss_reader_floors(r, &f) == 0);
	CHECK(f.n == 4 && !f.redefined && f.sealed && !f.cut_short && f.damage.kind == SS_DAMAGE_NONE);
	/* the threads the blocks define */
	CHECK(f.n_threads == 1 && f.threads[0] == 3);
	/* exact where a block's first run starts with its earliest record */
	CHECK(f.n == 4 && f.floor[0] == T0 + 105 && f.floor[1] == T0 + 300 && f.floor[2] == UINT64_MAX &&
	      f.floor[3] == UINT64_MAX);
	for (size_t i = 0; i < f.n && i < nm; i++)
		CHECK(f.floor[i] <= want[i]);
	ss_floors_free(&f);
	/* The reader delivers what it would have without them. */
	struct readout o, plain;
	memset(&o, 0, sizeof o);
	read_all(r, &o);
	ss_reader_close(r);
	read_buf(b.buf, b.len, &plain);
	CHECK(strcmp(o.text, plain.text) == 0 && o.blocks == 4 && o.stats.events == plain.stats.events);

	/* From a second reader of the file, taken after a block was read: the
	 * floors from there on, and the first reader goes on as before. */
	char path[] = "/tmp/test_segment_reader_floors_XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0 && write(fd, b.buf, b.len) == (ssize_t)b.len);
	close(fd);
	CHECK(ss_reader_open_file(&r, path, NULL, NULL, err, sizeof err) == 0);
	struct ss_block_info first;
	CHECK(ss_reader_next_block(r, &first) && first.index == 0);
	struct ss_reader *d = ss_reader_dup(r);
	CHECK(d != NULL);
	CHECK(d && ss_reader_floors(d, &f) == 0);
	CHECK(f.n == 3 && f.floor[0] == T0 + 300 && f.floor[2] == UINT64_MAX && f.sealed && f.n_threads == 0);
	ss_floors_free(&f);
	ss_reader_close(d);
	unlink(path);
	memset(&o, 0, sizeof o);
	read_all(r, &o);
	CHECK(o.blocks == 3 && o.stats.blocks == 4 && o.damage.kind == SS_DAMAGE_NONE);
	ss_reader_close(r);

	/* Cut anywhere: a floor for each block a reader delivers, none above its
	 * records; the walk ends where and as the read ends (sealed only with the
	 * footer), and a reader of the whole file kept to the blocks walked
	 * (ss_reader_end_at) reads what the cut copy reads, damage included. */
	for (size_t cut = 0; cut <= b.len; cut++) {
		uint8_t *copy = malloc(cut ? cut : 1);
		memcpy(copy, b.buf, cut);
		nm = block_minima(copy, cut, want, 8);
		struct readout cutread, kept;
		read_buf(copy, cut, &cutread);
		if (ss_reader_open_buffer(&r, copy, cut, NULL, NULL, err, sizeof err) == 0) {
			CHECK(ss_reader_floors(r, &f) == 0);
			CHECK(f.n == nm && f.sealed == (cut == b.len) && !f.cut_short);
			CHECK(f.damage.kind == cutread.damage.kind && f.damage.offset == cutread.damage.offset &&
			      f.damage.block == cutread.damage.block &&
			      strcmp(f.damage.reason, cutread.damage.reason) == 0);
			for (size_t i = 0; i < f.n && i < nm; i++)
				CHECK(f.floor[i] <= want[i]);
			ss_reader_close(r);
			CHECK(ss_reader_open_buffer(&r, b.buf, b.len, NULL, NULL, err, sizeof err) == 0);
			ss_reader_end_at(r, f.n, &f.damage);
			memset(&kept, 0, sizeof kept);
			read_all(r, &kept);
			CHECK(kept.blocks == cutread.blocks && strcmp(kept.text, cutread.text) == 0);
			CHECK(kept.damage.kind == cutread.damage.kind && kept.damage.offset == cutread.damage.offset &&
			      strcmp(kept.damage.reason, cutread.damage.reason) == 0);
			CHECK(kept.stats.blocks == cutread.stats.blocks && kept.stats.sealed == cutread.stats.sealed);
			ss_floors_free(&f);
			ss_reader_close(r);
		}
		free(copy);
	}
	sb_free(&b);

	/* An id defined twice is told (a string, a stack, in two blocks); two
	 * stacks of two ids are not. */
	for (int kind = 0; kind < 3; kind++) {
		begin(&b);
		for (uint64_t blk = 0; blk < 2; blk++) {
			sb_begin_block(&b);
			uint64_t pc = 0x1000;
			if (kind == 0)
				sb_string(&b, 1, blk ? "again" : "rt");
			else
				sb_stack(&b, kind == 1 ? 5 : 5 + blk, &pc, 1);
			sb_end_block(&b, zstd);
		}
		sb_footer(&b, SS_SEALED_WRITER, 0);
		CHECK(ss_reader_open_buffer(&r, b.buf, b.len, NULL, NULL, err, sizeof err) == 0);
		CHECK(ss_reader_floors(r, &f) == 0);
		CHECK(f.n == 3 && f.redefined == (kind < 2));
		ss_floors_free(&f);
		ss_reader_close(r);
		sb_free(&b);
	}
}

static void test_file_api(void)
{
	struct sb b;
	struct readout mem, file;
	char path[] = "/tmp/test_segment_reader.XXXXXX";
	build_every_kind(&b, true);
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	/* Written without its last 10 bytes: an active file mid-write. */
	CHECK(write(fd, b.buf, b.len - 10) == (ssize_t)(b.len - 10));
	close(fd);
	read_buf(b.buf, b.len - 10, &mem);
	struct ss_reader *r;
	enum ss_damage_kind kind;
	char err[256];
	memset(&file, 0, sizeof file);
	CHECK(ss_reader_open_file(&r, path, NULL, &kind, err, sizeof err) == 0);
	read_all(r, &file);
	ss_reader_close(r);
	unlink(path);
	CHECK(strcmp(mem.text, file.text) == 0);
	CHECK(file.blocks == 2 && file.damage.kind == SS_DAMAGE_TRUNCATED);
	CHECK(ss_reader_open_file(&r, "/nonexistent/x.bin", NULL, &kind, err, sizeof err) != 0);
	CHECK(kind == SS_DAMAGE_IO && r == NULL);
	sb_free(&b);
}

static void test_definition_cap(void)
{
	struct sb b;
	begin(&b);
	sb_begin_block(&b);
	char s[64];
	for (int i = 0; i < 2000; i++) {
		snprintf(s, sizeof s, "string number %d", i);
		sb_string(&b, (uint64_t)i * 7919, s);
	}
	sb_string(&b, 0, "replaced");
	sb_string(&b, 0, "again");
	sb_end_block(&b, false);
	struct ss_reader_options opts = { .max_definition_bytes = 16 << 10 };
	struct ss_reader *r;
	char err[256];
	CHECK(ss_reader_open_buffer(&r, b.buf, b.len, &opts, NULL, err, sizeof err) == 0);
	struct readout o;
	memset(&o, 0, sizeof o);
	read_all(r, &o);
	CHECK(o.damage.kind == SS_DAMAGE_NONE && o.stats.definitions == 2002);
	CHECK(o.stats.defs_not_kept > 0 && o.stats.defs_not_kept < 2002);
	const struct ss_string_def *d = ss_reader_string(r, 7919);
	CHECK(d && strcmp(d->data, "string number 1") == 0);
	ss_reader_close(r);

	CHECK(ss_reader_open_buffer(&r, b.buf, b.len, NULL, NULL, err, sizeof err) == 0);
	memset(&o, 0, sizeof o);
	read_all(r, &o);
	CHECK(o.stats.defs_not_kept == 0);
	d = ss_reader_string(r, 0);
	CHECK(d && strcmp(d->data, "again") == 0);
	d = ss_reader_string(r, 1999ull * 7919);
	CHECK(d && strcmp(d->data, "string number 1999") == 0);
	ss_reader_close(r);
	sb_free(&b);
}

int main(void)
{
	test_every_kind();
	test_truncation(false);
	test_truncation(true);
	test_flips(false);
	test_flips(true);
	test_unknown_extensions();
	test_malformed();
	test_framing();
	test_compressed_same();
	test_file_api();
	test_definition_cap();
	test_floors(false);
	test_floors(true);
	if (failures) {
		fprintf(stderr, "test_segment_reader: %d checks failed\n", failures);
		return 1;
	}
	printf("test_segment_reader: all checks passed\n");
	return 0;
}

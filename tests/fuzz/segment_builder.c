/*
 * segment_builder.c - in-memory segment construction for tests and seeds.
 */
#include "segment_builder.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef STALLSCOPE_HAVE_ZSTD
#include <zstd.h>
#endif

static void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q) {
		fputs("segment_builder: out of memory\n", stderr);
		abort();
	}
	return q;
}

static void grow(uint8_t **buf, size_t *cap, size_t need)
{
	if (need <= *cap)
		return;
	size_t n = *cap ? *cap : 256;
	while (n < need)
		n *= 2;
	*buf = xrealloc(*buf, n);
	*cap = n;
}

static void file_put(struct sb *b, const void *p, size_t n)
{
	grow(&b->buf, &b->cap, b->len + n);
	if (n) /* an empty block's payload pointer may be NULL */
		memcpy(b->buf + b->len, p, n);
	b->len += n;
}

static void blk_put(struct sb *b, const void *p, size_t n)
{
	grow(&b->blk, &b->blk_cap, b->blk_len + n);
	if (n)
		memcpy(b->blk + b->blk_len, p, n);
	b->blk_len += n;
}

static void blk_v(struct sb *b, uint64_t v)
{
	uint8_t tmp[10];
	blk_put(b, tmp, ss_put_varint(tmp, v));
}

static void blk_s(struct sb *b, const char *s)
{
	size_t n = strlen(s);
	blk_v(b, n);
	blk_put(b, s, n);
}

static void blk_type(struct sb *b, uint8_t type)
{
	blk_put(b, &type, 1);
}

void sb_init(struct sb *b, const struct sb_header *h)
{
	memset(b, 0, sizeof *b);
	struct ss_file_header fh;
	memset(&fh, 0, sizeof fh);
	const char *exe = h->exe ? h->exe : "";
	memcpy(fh.magic, SS_FILE_MAGIC, 8);
	fh.version = SS_FORMAT_VERSION;
	fh.endian = SS_ENDIAN_MARK;
	fh.exe_len = (uint32_t)strlen(exe);
	fh.header_size = (uint32_t)sizeof fh + fh.exe_len;
	fh.session_id = h->session_id;
	fh.segment_seq = h->segment_seq;
	fh.pid = h->pid;
	fh.start_ts = h->start_ts;
	fh.anchor_mono_ns = h->anchor_mono_ns;
	fh.anchor_real_ns = h->anchor_real_ns;
	/* NUL padded, and a full-width value has no terminator: memcpy, not strcpy. */
	if (h->boot_id)
		memcpy(fh.boot_id, h->boot_id, strnlen(h->boot_id, sizeof fh.boot_id));
	if (h->hostname)
		memcpy(fh.hostname, h->hostname, strnlen(h->hostname, sizeof fh.hostname));
	fh.header_crc = ss_file_header_crc(&fh, exe);
	file_put(b, &fh, sizeof fh);
	file_put(b, exe, fh.exe_len);
	b->start_ts = h->start_ts;
}

void sb_free(struct sb *b)
{
	free(b->buf);
	free(b->blk);
	memset(b, 0, sizeof *b);
}

void sb_begin_block(struct sb *b)
{
	b->in_block = true;
	b->blk_len = 0;
	b->blk_events = 0;
	b->first_ts = b->last_ts = b->clock = 0;
}

static void put_block(struct sb *b, uint32_t kind, const uint8_t *raw, size_t raw_len, bool zstd)
{
	struct ss_block_header h;
	memset(&h, 0, sizeof h);
	const uint8_t *payload = raw;
	size_t payload_len = raw_len;
	uint8_t *z = NULL;
	bool compressed = false;
#ifdef STALLSCOPE_HAVE_ZSTD
	if (zstd) {
		size_t bound = ZSTD_compressBound(raw_len);
		z = xrealloc(NULL, bound);
		size_t n = ZSTD_compress(z, bound, raw, raw_len, 3);
		if (!ZSTD_isError(n)) {
			payload = z;
			payload_len = n;
			compressed = true;
		}
	}
#else
	(void)zstd;
#endif
	h.magic = SS_BLOCK_MAGIC;
	h.kind = kind;
	h.flags = compressed ? SS_BLOCK_F_ZSTD : 0;
	h.payload_len = (uint32_t)payload_len;
	h.raw_len = (uint32_t)raw_len;
	h.record_count = kind == SS_BLOCK_EVENTS ? b->blk_events : 0;
	h.block_seq = b->block_seq++;
	h.first_ts = kind == SS_BLOCK_EVENTS ? b->first_ts : b->first_event_ts;
	h.last_ts = kind == SS_BLOCK_EVENTS ? b->last_ts : b->last_event_ts;
	h.payload_crc = ss_crc32c(0, payload, payload_len);
	h.header_crc = ss_block_header_crc(&h);
	file_put(b, &h, sizeof h);
	file_put(b, payload, payload_len);
	free(z);
}

bool sb_end_block(struct sb *b, bool zstd)
{
	size_t before = b->len;
	put_block(b, SS_BLOCK_EVENTS, b->blk, b->blk_len, zstd);
	b->in_block = false;
	b->event_blocks++;
	struct ss_block_header h;
	memcpy(&h, b->buf + before, sizeof h);
	return (h.flags & SS_BLOCK_F_ZSTD) != 0;
}

void sb_footer(struct sb *b, uint32_t sealed_by, uint64_t dropped_events)
{
	struct ss_footer f;
	memset(&f, 0, sizeof f);
	f.start_ts = b->start_ts;
	f.end_ts = b->last_event_ts > b->start_ts ? b->last_event_ts + 1 : b->start_ts + 1;
	f.first_event_ts = b->first_event_ts;
	f.last_event_ts = b->last_event_ts;
	f.events = b->events;
	f.blocks = b->event_blocks;
	f.dropped_events = dropped_events;
	f.loss_records = b->loss_records;
	f.sealed_by = sealed_by;
	put_block(b, SS_BLOCK_FOOTER, (const uint8_t *)&f, sizeof f, false);
}

void sb_string(struct sb *b, uint64_t id, const char *s)
{
	blk_type(b, SS_REC_STRING);
	blk_v(b, id);
	blk_s(b, s);
}

void sb_location(struct sb *b, uint64_t id, uint64_t file, uint64_t line, uint64_t function)
{
	blk_type(b, SS_REC_LOCATION);
	blk_v(b, id);
	blk_v(b, file);
	blk_v(b, line);
	blk_v(b, function);
}

void sb_thread_def(struct sb *b, uint64_t thread, uint64_t tid, const char *name,
		   uint64_t runtime, uint64_t worker_index, uint64_t flags)
{
	blk_type(b, SS_REC_THREAD_DEF);
	blk_v(b, thread);
	blk_v(b, tid);
	blk_s(b, name);
	blk_v(b, runtime);
	blk_v(b, worker_index);
	blk_v(b, flags);
	blk_v(b, 0); /* open_task */
	blk_v(b, 0); /* open_location */
	blk_v(b, 0); /* open_since */
	blk_v(b, 0); /* parked_since */
}

void sb_thread(struct sb *b, uint64_t thread, uint64_t ts)
{
	blk_type(b, SS_REC_THREAD);
	blk_v(b, thread);
	blk_v(b, ts);
	b->clock = ts;
}

void sb_event(struct sb *b, uint8_t type, uint64_t ts, int n, ...)
{
	blk_type(b, type);
	blk_v(b, ts - b->clock);
	b->clock = ts;
	va_list ap;
	va_start(ap, n);
	for (int i = 0; i < n; i++)
		blk_v(b, va_arg(ap, uint64_t));
	va_end(ap);
	/* A LOSS records missing events; the format does not count it as one. */
	if (type == SS_REC_LOSS) {
		b->loss_records++;
		return;
	}
	b->blk_events++;
	b->events++;
	if (!b->first_ts || ts < b->first_ts)
		b->first_ts = ts;
	if (ts > b->last_ts)
		b->last_ts = ts;
	if (!b->first_event_ts || ts < b->first_event_ts)
		b->first_event_ts = ts;
	if (ts > b->last_event_ts)
		b->last_event_ts = ts;
}

void sb_ext(struct sb *b, uint8_t type, const void *body, size_t len)
{
	blk_type(b, type);
	blk_v(b, len);
	blk_put(b, body, len);
}

void sb_mapping(struct sb *b, uint64_t start, uint64_t end, uint64_t pgoff, const uint8_t *build_id,
		size_t build_id_len, const char *path)
{
	uint8_t body[4096 + 128];
	size_t pl = strlen(path), n = 0;
	if (pl > 4096 || build_id_len > 64)
		abort();
	n += ss_put_varint(body + n, 0);
	n += ss_put_varint(body + n, start);
	n += ss_put_varint(body + n, end);
	n += ss_put_varint(body + n, pgoff);
	n += ss_put_varint(body + n, 5);
	n += ss_put_varint(body + n, build_id_len);
	memcpy(body + n, build_id, build_id_len);
	n += build_id_len;
	n += ss_put_varint(body + n, pl);
	memcpy(body + n, path, pl);
	n += pl;
	sb_ext(b, SS_REC_MAPPING, body, n);
}

void sb_stack(struct sb *b, uint64_t id, const uint64_t *pcs, size_t n)
{
	sb_stack_kernel(b, id, pcs, n, 0);
}

void sb_stack_kernel(struct sb *b, uint64_t id, const uint64_t *pcs, size_t n, size_t nkernel)
{
	uint8_t body[SS_MAX_STACK_FRAMES * 10 + 32];
	size_t k = 0;
	if (n > SS_MAX_STACK_FRAMES || nkernel > n)
		abort();
	k += ss_put_varint(body + k, id);
	k += ss_put_varint(body + k, nkernel);
	k += ss_put_varint(body + k, n);
	for (size_t i = 0; i < n; i++)
		k += ss_put_varint(body + k, pcs[i]);
	sb_ext(b, SS_REC_STACK, body, k);
}

void sb_cpu_sample(struct sb *b, uint64_t thread, uint64_t tid, uint64_t ts, uint64_t stack)
{
	uint8_t body[80];
	size_t k = 0;
	k += ss_put_varint(body + k, thread);
	k += ss_put_varint(body + k, tid);
	k += ss_put_varint(body + k, ts);
	k += ss_put_varint(body + k, 1);    /* cpu 0 */
	k += ss_put_varint(body + k, 1000); /* weight */
	k += ss_put_varint(body + k, SS_SAMPLE_KIND_CPU);
	k += ss_put_varint(body + k, stack);
	sb_ext(b, SS_REC_SAMPLE, body, k);
}

void sb_meta(struct sb *b, const char *key, const char *value)
{
	uint8_t body[512];
	size_t kl = strlen(key), vl = strlen(value), n = 0;
	if (kl + vl + 20 > sizeof body)
		abort();
	n += ss_put_varint(body + n, kl);
	memcpy(body + n, key, kl);
	n += kl;
	n += ss_put_varint(body + n, vl);
	memcpy(body + n, value, vl);
	n += vl;
	sb_ext(b, SS_REC_META, body, n);
}

void sb_raw_record(struct sb *b, const void *bytes, size_t len)
{
	blk_put(b, bytes, len);
}

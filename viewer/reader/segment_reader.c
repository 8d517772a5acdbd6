/*
 * segment_reader.c - framing of a segment: the file header, then blocks one at a
 * time, each checked (header CRC, sequence, length against what the file holds,
 * payload CRC, decompression, a full structural pass over its records) before any
 * of it is delivered.
 *
 * Why two passes over a block's records: the first proves the whole block
 * decodes (so a consumer never imports half a block) and notes its definitions
 * and counts; they are applied only once the block has proved intact, so stats
 * are complete even when a caller skips records, and a corrupt block leaves no
 * trace. The second pass hands records out. Decoding is most of the importer's
 * reading cost, which is why there is no third pass.
 *
 * Lengths from the file are trusted only after they are checked against the format
 * limits and against the bytes that actually exist, so a hostile length never
 * causes an allocation beyond SS_MAX_BLOCK_PAYLOAD / SS_MAX_BLOCK_RAW or a read
 * past the input.
 */
#include "segment_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef STALLSCOPE_HAVE_ZSTD
#include <zstd.h>
#endif

#include "definitions.h"
#include "record_decode.h"

#define DEFAULT_MAX_DEFINITION_BYTES ((size_t)256 << 20)

/* Definitions and per-thread counts noted by the checking pass, in stream
 * order; applied once the whole block has decoded. */
enum { OP_DEF, OP_EVENTS, OP_WORKER };
struct stage_op {
	uint8_t kind;
	uint64_t thread;
	uint64_t a, b; /* OP_DEF: index in defs_staged; OP_EVENTS: count;
			* OP_WORKER: runtime, index */
};

struct ss_reader {
	int fd;                 /* -1 when reading a buffer */
	const uint8_t *buf;
	size_t buf_len;
	struct ss_reader_options opts;
	struct ss_segment_header hdr;
	struct ss_defs *defs;

	uint64_t pos;           /* file offset of the next block */
	uint64_t next_index;
	bool done;
	struct ss_damage damage;
	struct ss_reader_stats stats;

	/* the current block */
	bool have_block;
	struct ss_block_info cur;
	const uint8_t *raw;     /* decoded payload */
	size_t raw_len, raw_pos;
	uint32_t rec_index;
	struct ss_decode_state st;

	uint8_t *payload_buf;   /* file source only: stored payload */
	size_t payload_cap;
	uint8_t *raw_buf;       /* decompressed payload */
	size_t raw_cap;

	/* what the checking pass staged for the block (scan_records) */
	struct stage_op *ops;
	size_t n_ops, cap_ops;
	struct ss_record *defs_staged;
	size_t n_defs, cap_defs;
	/* the thread of the last record delivered, and its definition */
	uint64_t last_thread;
	const struct ss_thread_def *last_def;
	/* ss_reader_floors' copy: blocks are checked and their records walked
	 * for their floor (cur_floor), nothing is staged or applied; the ids
	 * defined so far, to tell one defined again (redefined) */
	bool floors_only;
	uint64_t cur_floor;
	struct def_ids *def_ids;
	bool redefined;
	uint64_t *def_threads;  /* the THREAD_DEFs' threads, each once */
	size_t n_def_threads, cap_def_threads;
	/* memory ran out (damage that a later read need not meet) */
	bool no_memory;
	/* ss_reader_end_at: reading ends before block end_index, with end_damage */
	bool end_set;
	uint64_t end_index;
	struct ss_damage end_damage;
#ifdef STALLSCOPE_HAVE_ZSTD
	ZSTD_DCtx *zctx;
#endif
};

__attribute__((format(printf, 3, 4)))
static void put_msg(char *dst, size_t len, const char *fmt, ...)
{
	if (!dst || len == 0)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(dst, len, fmt, ap);
	va_end(ap);
}

__attribute__((format(printf, 5, 6)))
static void set_damage(struct ss_reader *r, enum ss_damage_kind kind, uint64_t offset,
		       uint64_t block, const char *fmt, ...)
{
	r->done = true;
	if (r->damage.kind != SS_DAMAGE_NONE)
		return; /* the first damage is the one that matters */
	r->damage.kind = kind;
	r->damage.offset = offset;
	r->damage.block = block;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->damage.reason, sizeof r->damage.reason, fmt, ap);
	va_end(ap);
}

/* ---- the byte source ---------------------------------------------------------- */

/* Current size: a .bin.active file may grow while it is read, so ask each time. */
static int source_size(struct ss_reader *r, uint64_t *size)
{
	if (r->fd < 0) {
		*size = r->buf_len;
		return 0;
	}
	struct stat st;
	if (fstat(r->fd, &st) != 0)
		return -1;
	*size = st.st_size > 0 ? (uint64_t)st.st_size : 0;
	return 0;
}

/* Reads exactly len bytes at off into dst; returns bytes read (less at EOF), -1 on
 * error. The caller has checked off + len against source_size. */
static int64_t source_read(struct ss_reader *r, uint64_t off, void *dst, size_t len)
{
	if (r->fd < 0) {
		if (off > r->buf_len)
			return 0;
		size_t n = r->buf_len - (size_t)off < len ? r->buf_len - (size_t)off : len;
		if (n) /* an empty buffer may be NULL */
			memcpy(dst, r->buf + off, n);
		return (int64_t)n;
	}
	size_t got = 0;
	while (got < len) {
		ssize_t n = pread(r->fd, (char *)dst + got, len - got, (off_t)(off + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (int64_t)got;
}

/* A view of len bytes at off: into the buffer itself, or read into *bufp. */
static const uint8_t *source_view(struct ss_reader *r, uint64_t off, size_t len,
				  uint8_t **bufp, size_t *capp, int64_t *got)
{
	if (r->fd < 0) {
		*got = off <= r->buf_len && r->buf_len - off >= len ? (int64_t)len : 0;
		return *got ? r->buf + off : NULL;
	}
	if (*capp < len || !*bufp) {
		uint8_t *n = realloc(*bufp, len ? len : 1);
		if (!n) {
			*got = -1;
			return NULL;
		}
		*bufp = n;
		*capp = len ? len : 1;
	}
	*got = source_read(r, off, *bufp, len);
	return *bufp;
}

/* Whether everything from off to the end is zero: the tail an interrupted write or
 * a crash on a delayed-allocation filesystem leaves, which is truncation rather
 * than corruption. */
static bool rest_is_zero(struct ss_reader *r, uint64_t off, uint64_t size)
{
	uint8_t chunk[4096];
	while (off < size) {
		size_t want = size - off < sizeof chunk ? (size_t)(size - off) : sizeof chunk;
		int64_t n = source_read(r, off, chunk, want);
		if (n <= 0)
			return n == 0;
		for (int64_t i = 0; i < n; i++)
			if (chunk[i])
				return false;
		off += (uint64_t)n;
	}
	return true;
}

/* ---- open / close ---------------------------------------------------------------- */

static void copy_text(char *dst, size_t dstlen, const char *src, size_t srclen)
{
	size_t n = srclen < dstlen - 1 ? srclen : dstlen - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

static int read_file_header(struct ss_reader *r, enum ss_damage_kind *kind, char *err, size_t errlen)
{
	struct ss_file_header h;
	uint64_t size;
	const size_t hsz = sizeof h;

	if (source_size(r, &size) != 0) {
		*kind = SS_DAMAGE_IO;
		put_msg(err, errlen, "cannot stat: %s", strerror(errno));
		return -1;
	}
	if (size < hsz) {
		uint8_t head[8] = { 0 };
		size_t n = size < 8 ? (size_t)size : 8;
		if (source_read(r, 0, head, n) != (int64_t)n) {
			*kind = SS_DAMAGE_IO;
			put_msg(err, errlen, "read error: %s", strerror(errno));
			return -1;
		}
		if (memcmp(head, SS_FILE_MAGIC, n) != 0) {
			*kind = SS_DAMAGE_CORRUPT;
			put_msg(err, errlen, "not a stallscope segment (bad magic)");
		} else {
			*kind = SS_DAMAGE_TRUNCATED;
			put_msg(err, errlen, size ? "file ends inside the file header (%llu of %zu bytes)"
						  : "empty file (%llu of %zu header bytes)",
				(unsigned long long)size, hsz);
		}
		return -1;
	}
	if (source_read(r, 0, &h, hsz) != (int64_t)hsz) {
		*kind = SS_DAMAGE_IO;
		put_msg(err, errlen, "read error: %s", strerror(errno));
		return -1;
	}
	/* Sizes first: exe_len must be known sane before it is used to read. */
	const char *why = ss_file_header_check(&h, NULL);
	if (why) {
		*kind = SS_DAMAGE_CORRUPT;
		put_msg(err, errlen, "%s", why);
		return -1;
	}
	if (size < h.header_size) {
		*kind = SS_DAMAGE_TRUNCATED;
		put_msg(err, errlen, "file ends inside the executable path of the header");
		return -1;
	}
	char exe[SS_MAX_EXE_LEN];
	if (source_read(r, hsz, exe, h.exe_len) != (int64_t)h.exe_len) {
		*kind = SS_DAMAGE_IO;
		put_msg(err, errlen, "read error: %s", strerror(errno));
		return -1;
	}
	if (r->opts.ignore_crc)
		h.header_crc = ss_file_header_crc(&h, exe);
	why = ss_file_header_check(&h, exe);
	if (why) {
		*kind = SS_DAMAGE_CORRUPT;
		put_msg(err, errlen, "%s", why);
		return -1;
	}

	struct ss_segment_header *o = &r->hdr;
	o->version = h.version;
	o->header_size = h.header_size;
	o->flags = h.flags;
	o->session_id = h.session_id;
	o->segment_seq = h.segment_seq;
	o->pid = h.pid;
	o->start_ts = h.start_ts;
	o->anchor_mono_ns = h.anchor_mono_ns;
	o->anchor_real_ns = h.anchor_real_ns;
	copy_text(o->boot_id, sizeof o->boot_id, h.boot_id, strnlen(h.boot_id, sizeof h.boot_id));
	copy_text(o->hostname, sizeof o->hostname, h.hostname, strnlen(h.hostname, sizeof h.hostname));
	o->exe_len = h.exe_len;
	memcpy(o->exe, exe, h.exe_len);
	o->exe[h.exe_len] = '\0';
	r->pos = h.header_size;
	r->stats.intact_end = h.header_size;
	return 0;
}

static struct ss_reader *reader_new(const struct ss_reader_options *opts)
{
	struct ss_reader *r = calloc(1, sizeof *r);
	if (!r)
		return NULL;
	r->fd = -1;
	if (opts)
		r->opts = *opts;
	if (!r->opts.max_definition_bytes)
		r->opts.max_definition_bytes = DEFAULT_MAX_DEFINITION_BYTES;
	r->defs = ss_defs_new(r->opts.max_definition_bytes);
	if (!r->defs) {
		free(r);
		return NULL;
	}
	return r;
}

static int finish_open(struct ss_reader *r, struct ss_reader **out,
		       enum ss_damage_kind *kind_out, char *err, size_t errlen)
{
	enum ss_damage_kind kind = SS_DAMAGE_NONE;
	if (read_file_header(r, &kind, err, errlen) != 0) {
		if (kind_out)
			*kind_out = kind;
		ss_reader_close(r);
		*out = NULL;
		return -1;
	}
	if (kind_out)
		*kind_out = SS_DAMAGE_NONE;
	*out = r;
	return 0;
}

int ss_reader_open_file(struct ss_reader **out, const char *path,
			const struct ss_reader_options *opts,
			enum ss_damage_kind *kind_out, char *err, size_t errlen)
{
	*out = NULL;
	if (kind_out)
		*kind_out = SS_DAMAGE_IO;
	struct ss_reader *r = reader_new(opts);
	if (!r) {
		put_msg(err, errlen, "out of memory");
		return -1;
	}
	r->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (r->fd < 0) {
		put_msg(err, errlen, "%s", strerror(errno));
		ss_reader_close(r);
		return -1;
	}
	struct stat st;
	if (fstat(r->fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		put_msg(err, errlen, "not a regular file");
		ss_reader_close(r);
		return -1;
	}
	return finish_open(r, out, kind_out, err, errlen);
}

int ss_reader_open_buffer(struct ss_reader **out, const void *buf, size_t len,
			  const struct ss_reader_options *opts,
			  enum ss_damage_kind *kind_out, char *err, size_t errlen)
{
	*out = NULL;
	if (kind_out)
		*kind_out = SS_DAMAGE_IO;
	struct ss_reader *r = reader_new(opts);
	if (!r) {
		put_msg(err, errlen, "out of memory");
		return -1;
	}
	r->buf = buf;
	r->buf_len = buf ? len : 0;
	return finish_open(r, out, kind_out, err, errlen);
}

struct ss_reader *ss_reader_dup(const struct ss_reader *r)
{
	struct ss_reader *d = reader_new(&r->opts);
	if (!d)
		return NULL;
	if (r->fd >= 0 && (d->fd = fcntl(r->fd, F_DUPFD_CLOEXEC, 0)) < 0) {
		ss_reader_close(d);
		return NULL;
	}
	d->buf = r->buf;
	d->buf_len = r->buf_len;
	d->hdr = r->hdr;
	d->pos = r->pos;
	d->next_index = r->next_index;
	d->done = r->done;
	return d;
}

void ss_reader_close(struct ss_reader *r)
{
	if (!r)
		return;
	if (r->fd >= 0)
		close(r->fd);
	ss_defs_free(r->defs);
	free(r->payload_buf);
	free(r->raw_buf);
	free(r->ops);
	free(r->defs_staged);
#ifdef STALLSCOPE_HAVE_ZSTD
	ZSTD_freeDCtx(r->zctx);
#endif
	free(r);
}

/* ---- the ids a floor walk met ------------------------------------------------------ */

/* A set of (record type, id): open addressing, type 0 marks a free slot. */
struct def_ids {
	uint64_t *id;
	uint8_t *type;
	size_t cap, len;
};

static size_t def_slot(const struct def_ids *s, uint8_t type, uint64_t id)
{
	size_t i = (size_t)((id * 0x9E3779B97F4A7C15ull ^ type) >> 7) & (s->cap - 1);
	while (s->type[i] && (s->type[i] != type || s->id[i] != id))
		i = (i + 1) & (s->cap - 1);
	return i;
}

static bool def_grow(struct def_ids *s)
{
	size_t nc = s->cap ? s->cap * 2 : 256;
	struct def_ids n = { calloc(nc, sizeof *n.id), calloc(nc, 1), nc, s->len };
	if (!n.id || !n.type) {
		free(n.id);
		free(n.type);
		return false;
	}
	for (size_t i = 0; i < s->cap; i++)
		if (s->type[i]) {
			size_t j = def_slot(&n, s->type[i], s->id[i]);
			n.type[j] = s->type[i];
			n.id[j] = s->id[i];
		}
	free(s->id);
	free(s->type);
	*s = n;
	return true;
}

/* Out of memory counts as defined again: the caller then trusts no floor. */
static void note_def(void *ctx, uint8_t type, uint64_t id)
{
	struct ss_reader *r = ctx;
	struct def_ids *s = r->def_ids;
	if (r->redefined)
		return;
	if (s->len * 2 >= s->cap && !def_grow(s)) {
		r->redefined = true;
		return;
	}
	size_t i = def_slot(s, type, id);
	if (s->type[i]) {
		r->redefined = true;
		return;
	}
	s->type[i] = type;
	s->id[i] = id;
	s->len++;
	if (type != SS_REC_THREAD_DEF)
		return;
	if (r->n_def_threads == r->cap_def_threads) {
		size_t nc = r->cap_def_threads ? r->cap_def_threads * 2 : 64;
		uint64_t *nv = realloc(r->def_threads, nc * sizeof *nv);
		if (!nv) {
			r->redefined = true;
			return;
		}
		r->def_threads = nv;
		r->cap_def_threads = nc;
	}
	r->def_threads[r->n_def_threads++] = id;
}

/* ---- blocks ------------------------------------------------------------------------- */

bool ss_reader_has_zstd(void)
{
#ifdef STALLSCOPE_HAVE_ZSTD
	return true;
#else
	return false;
#endif
}

/* Decodes a compressed payload into raw_buf. NULL on success, else why not. */
static const char *decompress(struct ss_reader *r, const uint8_t *src, size_t len, size_t raw_len)
{
#ifdef STALLSCOPE_HAVE_ZSTD
	if (!r->zctx) {
		r->zctx = ZSTD_createDCtx();
		if (!r->zctx) {
			r->no_memory = true;
			return "out of memory (zstd context)";
		}
	}
	/* One frame, exactly filling the payload: trailing bytes would be data that no
	 * CRC-checked length describes. */
	size_t fsz = ZSTD_findFrameCompressedSize(src, len);
	if (ZSTD_isError(fsz) || fsz != len)
		return "compressed payload is not exactly one zstd frame";
	unsigned long long csz = ZSTD_getFrameContentSize(src, len);
	if (csz != ZSTD_CONTENTSIZE_UNKNOWN && csz != raw_len)
		return "zstd frame size disagrees with the block's raw length";
	if (r->raw_cap < raw_len || !r->raw_buf) {
		uint8_t *n = realloc(r->raw_buf, raw_len ? raw_len : 1);
		if (!n) {
			r->no_memory = true;
			return "out of memory (decompressed block)";
		}
		r->raw_buf = n;
		r->raw_cap = raw_len ? raw_len : 1;
	}
	size_t got = ZSTD_decompressDCtx(r->zctx, r->raw_buf, raw_len, src, len);
	if (ZSTD_isError(got))
		return "zstd frame does not decode";
	if (got != raw_len)
		return "zstd frame decodes to fewer bytes than the block's raw length";
	return NULL;
#else
	(void)r;
	(void)src;
	(void)len;
	(void)raw_len;
	return "compressed block, and this build has no zstd";
#endif
}

static struct stage_op *push_op(struct ss_reader *r, uint8_t kind, uint64_t thread)
{
	if (r->n_ops == r->cap_ops) {
		size_t nc = r->cap_ops ? r->cap_ops * 2 : 256;
		struct stage_op *n = realloc(r->ops, nc * sizeof *n);
		if (!n)
			return NULL;
		r->ops = n;
		r->cap_ops = nc;
	}
	struct stage_op *o = &r->ops[r->n_ops++];
	o->kind = kind;
	o->thread = thread;
	o->a = o->b = 0;
	return o;
}

static bool stage_def(struct ss_reader *r, const struct ss_record *rec)
{
	if (r->n_defs == r->cap_defs) {
		size_t nc = r->cap_defs ? r->cap_defs * 2 : 64;
		struct ss_record *n = realloc(r->defs_staged, nc * sizeof *n);
		if (!n)
			return false;
		r->defs_staged = n;
		r->cap_defs = nc;
	}
	struct stage_op *o = push_op(r, OP_DEF, 0);
	if (!o)
		return false;
	o->a = r->n_defs;
	r->defs_staged[r->n_defs++] = *rec;
	return true;
}

/* Counters of one block, added to the reader's stats once it is known intact. */
struct block_counts {
	uint64_t records, events, definitions, unknown, loss_records, lost_events, lost_samples;
	uint64_t lost_by_reason[5];
	uint64_t first_ts, last_ts;
	uint64_t by_type[256];
};

/* Pass one: the whole block must decode and hold record_count events. Its
 * definitions and counts are staged, not applied. */
static bool scan_records(struct ss_reader *r, const struct ss_block_header *h,
			 const uint8_t *raw, size_t len, struct block_counts *c)
{
	struct ss_decode_state st;
	struct ss_record rec;
	const char *why = NULL;
	size_t pos = 0;
	uint64_t n = 0;
	struct stage_op *run = NULL; /* the open run of events on one thread */

	memset(c, 0, sizeof *c);
	r->n_ops = r->n_defs = 0;
	ss_decode_begin(&st);
	while (pos < len) {
		size_t used = ss_decode_record(&st, raw + pos, len - pos, &rec, &why);
		if (used == 0) {
			set_damage(r, SS_DAMAGE_CORRUPT, r->pos, r->next_index,
				   "record %llu at payload byte %zu (type 0x%02x): %s",
				   (unsigned long long)n, pos, raw[pos], why);
			return false;
		}
		pos += used;
		c->records++;
		c->by_type[rec.type]++;
		bool staged = true;
		if (rec.type == SS_REC_STRING || rec.type == SS_REC_LOCATION || rec.type == SS_REC_THREAD_DEF) {
			staged = stage_def(r, &rec);
			run = NULL;
		}
		if (rec.is_event && rec.type == SS_REC_LOSS) {
			c->loss_records++;
			c->lost_events += rec.u.loss.count;
			c->lost_by_reason[rec.u.loss.reason < 5 ? rec.u.loss.reason : 0] += rec.u.loss.count;
		} else if (rec.is_event) {
			n++;
			c->events++;
			if (!c->first_ts || rec.ts < c->first_ts)
				c->first_ts = rec.ts;
			if (rec.ts > c->last_ts)
				c->last_ts = rec.ts;
			if (!run || run->thread != rec.thread) {
				/* push_op may move the array: every other push resets run. */
				run = push_op(r, OP_EVENTS, rec.thread);
				staged = run != NULL;
			}
			if (run)
				run->a++;
			if (rec.type == SS_REC_WORKER_BEGIN) {
				struct stage_op *o = push_op(r, OP_WORKER, rec.thread);
				if (o) {
					o->a = rec.u.worker_begin.runtime;
					o->b = rec.u.worker_begin.index;
				}
				staged = o != NULL;
				run = NULL;
			}
		} else if (rec.type == SS_REC_THREAD) {
			; /* a clock switch, neither an event nor a definition */
		} else if (rec.type >= 0x40 && !ss_record_type_name(rec.type)) {
			c->unknown++;
		} else if (rec.type == SS_REC_SAMPLER_LOSS) {
			c->lost_samples += rec.u.sampler_loss.count;
		} else {
			c->definitions++;
		}
		if (!staged) {
			set_damage(r, SS_DAMAGE_IO, r->pos, r->next_index, "out of memory");
			return false;
		}
	}
	if (n != h->record_count) {
		set_damage(r, SS_DAMAGE_CORRUPT, r->pos, r->next_index,
			   "block holds %llu event records, its header says %u",
			   (unsigned long long)n, h->record_count);
		return false;
	}
	return true;
}

/* The block is intact: its definitions and counts become the reader's. */
static void apply_staged(struct ss_reader *r, const struct block_counts *c)
{
	struct ss_reader_stats *s = &r->stats;
	for (size_t i = 0; i < r->n_ops; i++) {
		const struct stage_op *o = &r->ops[i];
		if (o->kind == OP_DEF) {
			const struct ss_record *d = &r->defs_staged[o->a];
			int rc = d->type == SS_REC_STRING
					 ? ss_defs_put_string(r->defs, d->u.string.id, d->u.string.data, d->u.string.len)
				 : d->type == SS_REC_LOCATION ? ss_defs_put_location(r->defs, &d->u.location)
							      : ss_defs_put_thread(r->defs, &d->u.thread_def);
			if (rc)
				s->defs_not_kept++;
			continue;
		}
		struct ss_thread_def *t = ss_defs_thread(r->defs, o->thread);
		if (o->kind == OP_WORKER) {
			if (t && !(t->flags & SS_THREAD_F_WORKER)) {
				/* A thread defined before the runtime adopted it as a worker. */
				t->became_worker = true;
				t->runtime = o->a;
				t->worker_index = o->b;
			}
		} else if (t) {
			t->events += o->a;
		} else if (o->thread == 0) {
			s->process_events += o->a;
		} else {
			s->events_no_thread_def += o->a;
		}
	}
	s->records += c->records;
	s->events += c->events;
	s->definitions += c->definitions;
	s->unknown_records += c->unknown;
	s->loss_records += c->loss_records;
	s->lost_events += c->lost_events;
	s->lost_samples += c->lost_samples;
	for (int i = 0; i < 5; i++)
		s->lost_by_reason[i] += c->lost_by_reason[i];
	for (int i = 0; i < 256; i++)
		s->by_type[i] += c->by_type[i];
	if (c->first_ts && (!s->first_event_ts || c->first_ts < s->first_event_ts))
		s->first_event_ts = c->first_ts;
	if (c->last_ts > s->last_event_ts)
		s->last_event_ts = c->last_ts;
}

__attribute__((format(printf, 2, 3)))
static void add_note(struct ss_reader *r, const char *fmt, ...)
{
	size_t used = strlen(r->stats.note);
	if (used + 3 >= sizeof r->stats.note)
		return;
	if (used) {
		memcpy(r->stats.note + used, "; ", 3);
		used += 2;
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->stats.note + used, sizeof r->stats.note - used, fmt, ap);
	va_end(ap);
}

/* The footer states what the writer wrote; disagreement with what was read is worth
 * telling but does not make intact blocks less intact. */
static void check_footer(struct ss_reader *r)
{
	const struct ss_footer *f = &r->stats.footer;
	const struct ss_reader_stats *s = &r->stats;
	if (f->start_ts != r->hdr.start_ts)
		add_note(r, "footer start_ts differs from the file header");
	if (f->blocks != s->event_blocks)
		add_note(r, "footer counts %llu event blocks, %llu read",
			 (unsigned long long)f->blocks, (unsigned long long)s->event_blocks);
	if (!s->unreadable_blocks && f->events != s->events)
		add_note(r, "footer counts %llu events, %llu read",
			 (unsigned long long)f->events, (unsigned long long)s->events);
	if (!s->unreadable_blocks && f->loss_records != s->loss_records)
		add_note(r, "footer counts %llu LOSS records, %llu read",
			 (unsigned long long)f->loss_records, (unsigned long long)s->loss_records);
	if (f->sealed_by != SS_SEALED_WRITER && f->sealed_by != SS_SEALED_RECOVERY)
		add_note(r, "footer sealed_by %u is unknown", f->sealed_by);
}

/* Reads and checks the block at r->pos; on success r->cur/raw describe it. */
static bool load_block(struct ss_reader *r)
{
	struct ss_block_header h;
	const size_t hsz = sizeof h;
	uint64_t off = r->pos, size;
	uint64_t idx = r->next_index;

	if (r->end_set && idx >= r->end_index && r->end_damage.kind == SS_DAMAGE_NONE) {
		r->done = true; /* where the file ended (ss_reader_end_at) */
		return false;
	}
	if (source_size(r, &size) != 0) {
		set_damage(r, SS_DAMAGE_IO, off, idx, "cannot stat: %s", strerror(errno));
		return false;
	}
	if (off >= size) {
		r->done = true; /* a clean end at a block boundary */
		return false;
	}
	if (size - off < hsz) {
		set_damage(r, SS_DAMAGE_TRUNCATED, off, idx,
			   "file ends inside a block header (%llu of %zu bytes)%s",
			   (unsigned long long)(size - off), hsz,
			   rest_is_zero(r, off, size) ? ", zero-filled" : "");
		return false;
	}
	if (source_read(r, off, &h, hsz) != (int64_t)hsz) {
		set_damage(r, SS_DAMAGE_IO, off, idx, "read error: %s", strerror(errno));
		return false;
	}
	if (r->opts.ignore_crc)
		h.header_crc = ss_block_header_crc(&h);
	const char *why = ss_block_header_check(&h);
	if (why) {
		if (rest_is_zero(r, off, size))
			set_damage(r, SS_DAMAGE_TRUNCATED, off, idx,
				   "zero-filled tail of %llu bytes (an unfinished write)",
				   (unsigned long long)(size - off));
		else
			set_damage(r, SS_DAMAGE_CORRUPT, off, idx, "%s", why);
		return false;
	}
	if (h.block_seq != idx) {
		set_damage(r, SS_DAMAGE_CORRUPT, off, idx,
			   "block sequence number %llu where %llu was expected",
			   (unsigned long long)h.block_seq, (unsigned long long)idx);
		return false;
	}
	uint64_t avail = size - off - hsz;
	if (avail < h.payload_len) {
		set_damage(r, SS_DAMAGE_TRUNCATED, off, idx,
			   "file ends inside a block payload (%llu of %u bytes)",
			   (unsigned long long)avail, h.payload_len);
		return false;
	}

	int64_t got;
	const uint8_t *payload = source_view(r, off + hsz, h.payload_len,
					     &r->payload_buf, &r->payload_cap, &got);
	if (got < 0 || (uint64_t)got != h.payload_len || (!payload && h.payload_len)) {
		if (got < 0)
			set_damage(r, SS_DAMAGE_IO, off, idx, "read error: %s", strerror(errno));
		else
			set_damage(r, SS_DAMAGE_TRUNCATED, off, idx, "file shrank while it was read");
		return false;
	}
	/* Not for floors: a block that fails its CRC is never read, so its floor
	 * can only lower those of the blocks before it (ss_reader_floors). */
	if (!r->opts.ignore_crc && !r->floors_only && ss_crc32c(0, payload, h.payload_len) != h.payload_crc) {
		set_damage(r, SS_DAMAGE_CORRUPT, off, idx, "payload CRC mismatch");
		return false;
	}

	struct ss_block_info *b = &r->cur;
	memset(b, 0, sizeof *b);
	b->index = idx;
	b->offset = off;
	b->kind = h.kind;
	b->flags = h.flags;
	b->payload_len = h.payload_len;
	b->raw_len = h.raw_len;
	b->record_count = h.record_count;
	b->block_seq = h.block_seq;
	b->first_ts = h.first_ts;
	b->last_ts = h.last_ts;

	const uint8_t *raw = payload;
	if (h.flags & SS_BLOCK_F_ZSTD) {
		if (!ss_reader_has_zstd()) {
			b->unreadable = true;
		} else {
			why = decompress(r, payload, h.payload_len, h.raw_len);
			if (why) {
				set_damage(r, SS_DAMAGE_CORRUPT, off, idx, "%s", why);
				return false;
			}
			raw = r->raw_buf;
		}
	}

	struct block_counts counts;
	r->cur_floor = UINT64_MAX;
	if (h.kind == SS_BLOCK_EVENTS && !b->unreadable && r->floors_only) {
		size_t threads_before = r->n_def_threads;
		if (!ss_walk_floor(raw, h.raw_len, &r->cur_floor, note_def, r)) {
			r->n_def_threads = threads_before; /* the block is not read */
			set_damage(r, SS_DAMAGE_CORRUPT, off, idx, "a record does not walk");
			return false;
		}
	} else if (h.kind == SS_BLOCK_EVENTS && !b->unreadable && !scan_records(r, &h, raw, h.raw_len, &counts)) {
		return false;
	}

	if (r->end_set && idx >= r->end_index) {
		/* Damaged when the floors were walked, whole now (written since):
		 * reading ends at the damage they saw (ss_reader_end_at). A block
		 * that fails here says why itself. */
		const struct ss_damage *d = &r->end_damage;
		set_damage(r, d->kind, d->offset, d->block, "%s", d->reason);
		return false;
	}

	/* The block is intact: from here on it counts. */
	r->pos = off + hsz + h.payload_len;
	r->next_index++;
	r->stats.intact_end = r->pos;
	r->stats.blocks++;
	r->stats.payload_bytes += h.payload_len;
	if (h.flags & SS_BLOCK_F_ZSTD)
		r->stats.compressed_blocks++;
	if (b->unreadable) {
		r->stats.unreadable_blocks++;
		if (h.kind == SS_BLOCK_EVENTS)
			r->stats.event_blocks++;
		r->raw = NULL;
		r->raw_len = 0;
		if (h.kind == SS_BLOCK_FOOTER) {
			/* Sealed, though its contents cannot be read here. */
			r->stats.sealed = true;
			r->done = true;
		}
		return true;
	}
	r->stats.raw_bytes += h.raw_len;

	if (h.kind == SS_BLOCK_FOOTER) {
		memcpy(&r->stats.footer, raw, sizeof r->stats.footer);
		r->stats.sealed = true;
		r->done = true;
		check_footer(r);
		if (size > r->pos)
			set_damage(r, SS_DAMAGE_CORRUPT, r->pos, r->next_index,
				   "%llu bytes after the footer",
				   (unsigned long long)(size - r->pos));
		r->raw = NULL;
		r->raw_len = 0;
		return true;
	}

	r->stats.event_blocks++;
	if (!r->floors_only)
		apply_staged(r, &counts);
	r->raw = raw;
	r->raw_len = h.raw_len;
	return true;
}

bool ss_reader_next_block(struct ss_reader *r, struct ss_block_info *out)
{
	r->have_block = false;
	r->raw = NULL;
	r->raw_len = r->raw_pos = 0;
	r->rec_index = 0;
	r->last_def = NULL; /* definitions may change with the block */
	if (r->done || !load_block(r))
		return false;
	r->have_block = true;
	ss_decode_begin(&r->st);
	if (out)
		*out = r->cur;
	return true;
}

bool ss_reader_next_record(struct ss_reader *r, struct ss_record *out)
{
	if (!r->have_block || !r->raw || r->raw_pos >= r->raw_len)
		return false;
	const char *why;
	size_t at = r->raw_pos;
	size_t used = ss_decode_record(&r->st, r->raw + at, r->raw_len - at, out, &why);
	if (used == 0) {
		r->raw_pos = r->raw_len; /* validated already: unreachable */
		return false;
	}
	r->raw_pos += used;
	out->index = r->rec_index++;
	out->raw_offset = (uint32_t)at;
	if (out->is_event) {
		if (!r->last_def || out->thread != r->last_thread) {
			r->last_thread = out->thread;
			r->last_def = ss_defs_thread(r->defs, out->thread);
		}
		out->thread_def = r->last_def;
	}
	return true;
}

/* A shallow copy of the reader reads ahead with the reader's own buffers and
 * zstd context (they are between blocks: nothing points into them), then hands
 * them back; its definitions, stats and damage are dropped. */
int ss_reader_floors(struct ss_reader *r, struct ss_floors *out)
{
	memset(out, 0, sizeof *out);
	if (r->done) {
		out->sealed = r->stats.sealed;
		out->damage = r->damage;
		return 0;
	}
	struct def_ids ids = { 0 };
	struct ss_reader t = *r;
	t.floors_only = true;
	t.def_ids = &ids;
	t.redefined = false;
	t.def_threads = NULL;
	t.n_def_threads = t.cap_def_threads = 0;
	t.no_memory = false;
	t.defs = NULL;
	t.ops = NULL;
	t.n_ops = t.cap_ops = 0;
	t.defs_staged = NULL;
	t.n_defs = t.cap_defs = 0;
	t.damage.kind = SS_DAMAGE_NONE;
	t.stats.sealed = false;
	bool borrowed = !r->have_block;
	if (!borrowed) {
		t.payload_buf = t.raw_buf = NULL;
		t.payload_cap = t.raw_cap = 0;
#ifdef STALLSCOPE_HAVE_ZSTD
		t.zctx = NULL;
#endif
	}
	uint64_t *v = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;
	while (!t.done && load_block(&t)) {
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 64;
			uint64_t *nv = realloc(v, nc * sizeof *nv);
			if (!nv) {
				rc = -1;
				break;
			}
			v = nv;
			cap = nc;
		}
		v[n++] = t.cur_floor;
	}
	free(ids.id);
	free(ids.type);
	if (borrowed) {
		r->payload_buf = t.payload_buf;
		r->payload_cap = t.payload_cap;
		r->raw_buf = t.raw_buf;
		r->raw_cap = t.raw_cap;
#ifdef STALLSCOPE_HAVE_ZSTD
		r->zctx = t.zctx;
#endif
	} else {
		free(t.payload_buf);
		free(t.raw_buf);
#ifdef STALLSCOPE_HAVE_ZSTD
		ZSTD_freeDCtx(t.zctx);
#endif
	}
	if (rc != 0) {
		free(v);
		free(t.def_threads);
		return -1;
	}
	out->floor = v;
	out->n = n;
	out->threads = t.def_threads;
	out->n_threads = t.n_def_threads;
	out->redefined = t.redefined;
	out->sealed = t.stats.sealed;
	out->cut_short = t.no_memory || t.damage.kind == SS_DAMAGE_IO;
	out->damage = t.damage;
	return 0;
}

void ss_floors_free(struct ss_floors *f)
{
	free(f->floor);
	free(f->threads);
	f->floor = f->threads = NULL;
	f->n = f->n_threads = 0;
}

void ss_reader_end_at(struct ss_reader *r, uint64_t index, const struct ss_damage *d)
{
	r->end_set = true;
	r->end_index = index;
	r->end_damage = *d;
}

int ss_reader_run(struct ss_reader *r, const struct ss_visitor *v, void *ctx)
{
	struct ss_block_info b;
	struct ss_record rec;
	while (ss_reader_next_block(r, &b)) {
		int rc = v->block ? v->block(ctx, &b) : 0;
		if (rc)
			return rc;
		while (v->record && ss_reader_next_record(r, &rec)) {
			rc = v->record(ctx, &b, &rec);
			if (rc)
				return rc;
		}
	}
	return 0;
}

/* ---- accessors ---------------------------------------------------------------------- */

const struct ss_segment_header *ss_reader_header(const struct ss_reader *r) { return &r->hdr; }
const struct ss_damage *ss_reader_damage(const struct ss_reader *r) { return &r->damage; }
const struct ss_reader_stats *ss_reader_stats(const struct ss_reader *r) { return &r->stats; }

const struct ss_string_def *ss_reader_string(const struct ss_reader *r, uint64_t id)
{
	return ss_defs_string(r->defs, id);
}

const struct ss_location_def *ss_reader_location(const struct ss_reader *r, uint64_t id)
{
	return ss_defs_location(r->defs, id);
}

const struct ss_thread_def *ss_reader_thread(const struct ss_reader *r, uint64_t thread)
{
	return ss_defs_thread(r->defs, thread);
}

int ss_reader_foreach_thread(const struct ss_reader *r,
			     int (*fn)(void *ctx, const struct ss_thread_def *t), void *ctx)
{
	return ss_defs_foreach_thread(r->defs, fn, ctx);
}

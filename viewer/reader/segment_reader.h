/*
 * segment_reader.h - streaming decoder for one stallscope segment (a file, or a
 * memory buffer for fuzzing and tests).
 *
 * Guarantees, for any input bytes whatsoever:
 *  - no read outside the input, no crash, no undefined behaviour;
 *  - memory is one block at a time (payload <= SS_MAX_BLOCK_PAYLOAD, decoded
 *    payload <= SS_MAX_BLOCK_RAW, both allocated only after the bytes are known to
 *    exist) plus the definition tables, which are capped (ss_reader_options);
 *  - a block is delivered only after its header CRC, payload CRC, decompression and
 *    a full structural decode of every record succeeded, so a consumer never sees
 *    half of a damaged block;
 *  - reading stops at the first damaged block: everything before it is kept, and the
 *    damage (offset, block, reason, truncated tail or corruption) is reported.
 *
 * Use:
 *     struct ss_reader *r;
 *     if (ss_reader_open_file(&r, path, NULL, err, sizeof err) != 0) ...
 *     struct ss_block_info b;
 *     while (ss_reader_next_block(r, &b)) {
 *             struct ss_record rec;
 *             while (ss_reader_next_record(r, &rec)) ...
 *     }
 *     ss_reader_damage(r), ss_reader_stats(r) ... ss_reader_close(r);
 *
 * Pointers handed out (record strings, definitions) stay valid until the next call
 * to ss_reader_next_block() unless stated otherwise. Not thread-safe per reader;
 * separate readers are independent.
 */
#ifndef STALLSCOPE_SEGMENT_READER_H
#define STALLSCOPE_SEGMENT_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "segment_format.h"

struct ss_reader;

struct ss_reader_options {
	/* Cap on memory kept for definitions (strings, locations, threads) across the
	 * segment; further definitions are still delivered as records but not kept for
	 * lookups (counted in stats.defs_not_kept). 0 means the default, 256 MiB. */
	size_t max_definition_bytes;
	/* Fuzzing only: treat CRC mismatches as matches so mutated inputs reach the
	 * decoders behind the checks. Never set this when reading real data. */
	bool ignore_crc;
};

/* The file header, copied out of the file with strings NUL terminated. */
struct ss_segment_header {
	uint32_t version;
	uint32_t header_size;
	uint32_t flags;
	uint64_t session_id;
	uint64_t segment_seq;
	uint64_t pid;
	uint64_t start_ts;
	uint64_t anchor_mono_ns;
	uint64_t anchor_real_ns;
	char boot_id[41];
	char hostname[73];
	size_t exe_len;                /* bytes in exe, which may hold NULs */
	char exe[SS_MAX_EXE_LEN + 1];
};

enum ss_damage_kind {
	SS_DAMAGE_NONE = 0,
	SS_DAMAGE_TRUNCATED, /* the file ends inside the header or a block: an
			      * unfinished write or a copy cut short (.bin.active) */
	SS_DAMAGE_CORRUPT,   /* bytes that are present are wrong */
	SS_DAMAGE_IO,        /* the file could not be read */
};

struct ss_damage {
	enum ss_damage_kind kind;
	uint64_t offset;   /* file offset of the damaged block (or header) */
	uint64_t block;    /* index of the damaged block; UINT64_MAX for the header */
	char reason[192];
};

struct ss_block_info {
	uint64_t index;        /* position in the file, 0-based */
	uint64_t offset;       /* file offset of the block header */
	uint32_t kind;         /* enum ss_block_kind */
	uint32_t flags;        /* SS_BLOCK_F_* */
	uint32_t payload_len;
	uint32_t raw_len;
	uint32_t record_count;
	uint64_t block_seq;
	uint64_t first_ts;     /* earliest event, 0 when the block has none */
	uint64_t last_ts;
	/* The block is intact but compressed and this build has no zstd: its records are
	 * not delivered (stats.unreadable_blocks counts it) and reading continues. */
	bool unreadable;
};

/* Kept definitions, looked up by id. */
struct ss_string_def {
	uint64_t id;
	size_t len;
	const char *data; /* len bytes, NUL terminated for convenience; may hold NULs */
};

struct ss_location_def {
	uint64_t id, file, line, function;
};

struct ss_thread_def {
	uint64_t thread, tid;
	const char *name; /* NUL terminated; name_len bytes; may hold NULs */
	size_t name_len;
	uint64_t runtime, worker_index, flags;
	uint64_t open_task, open_location, open_since, parked_since;
	/* Maintained by the reader, not read from the file: */
	uint64_t events;  /* events (LOSS excluded) on this thread so far */
	bool became_worker; /* not flagged a worker when defined, but a WORKER_BEGIN
			     * followed; runtime and worker_index are then its fields */
};

/* One decoded record. Events (and LOSS) carry absolute CLOCK_MONOTONIC ns in ts
 * and the current thread; definitions have ts = 0. */
struct ss_record {
	uint8_t type;            /* enum ss_record_type, or an unknown type >= 0x40 */
	bool is_event;           /* 0x10..0x3f, LOSS included: carries ts and thread */
	uint64_t ts;             /* events and THREAD: absolute ns */
	uint64_t thread;         /* events: the current thread */
	const struct ss_thread_def *thread_def; /* events: its definition, or NULL */
	uint32_t index;          /* position of the record in its block */
	uint32_t raw_offset;     /* byte offset in the decoded payload */
	union {
		struct { uint64_t id; const char *data; size_t len; } string;
		struct ss_location_def location;
		struct ss_thread_def thread_def; /* events counter is 0 here */
		struct { uint64_t thread; } thread;
		struct { uint64_t task, location; } poll_begin, spawn;
		struct { uint64_t task; } terminate, wake;
		struct { uint64_t local, global; } queue;
		struct { uint64_t name; int64_t value; } mark;
		struct { uint64_t name; } span; /* SPAN_BEGIN, SPAN_END */
		struct { uint64_t runtime, index; } worker_begin;
		/* first lost event at ts, last at ts + span */
		struct { uint64_t count, span, reason; } loss;
		struct { const char *key; size_t key_len; const char *value; size_t value_len; } meta;
		struct { const uint8_t *body; size_t len; } unknown; /* skipped >= 0x40 */
		/* SAMPLE (time in ts): cpu is cpu + 1, 0 = unknown */
		struct { uint64_t thread, tid, cpu, weight, kind, stack; } sample;
		/* SWITCH (time in ts): flags SS_SWITCH_F_* */
		struct { uint64_t thread, tid, cpu, flags; } switch_rec;
		/* COMM (time in ts) */
		struct { uint64_t thread, tid; const char *name; size_t name_len; } comm;
		/* SAMPLER_LOSS (first lost at ts, last at ts + span) */
		struct { uint64_t tid, span, count, reason; } sampler_loss;
		/* STACK: frames are still varints; ss_stack_frames() decodes them. flags
		 * SS_STACK_F_* (0 when the record has none: older writers, fp stacks) */
		struct {
			uint64_t id, nkernel, nframes; const uint8_t *frames; size_t frames_len;
			uint64_t flags;
		} stack;
		/* STALL (capture time in ts): syscall1 is the system call + 1 (0 = none),
		 * kind enum ss_stall_kind_rec, stack a STACK id (0 = none) */
		struct {
			uint64_t thread, tid, task, location, poll_ts, index, kind, syscall1, stack;
			const char *reason; size_t reason_len;
		} stall;
		/* STALL_END (end time in ts) */
		struct { uint64_t thread, tid, task, poll_ts, captures; } stall_end;
		/* TASK_DUMP (pending time in ts) */
		struct { uint64_t task, thread, tid, location, idle_ns, stack; } task_dump;
		/* CLOCK: how the hooks stamped events (enum ss_clock_source) and the
		 * writer's latest TSC calibration; ts stays 0 */
		struct { uint64_t source, tsc, mono_ns, tsc_hz, points, drift_ns; } clock;
		/* MAPPING (ts 0 = snapshot at segment start) */
		struct {
			uint64_t start, end, pgoff, prot;
			const uint8_t *build_id; size_t build_id_len;
			const char *path; size_t path_len;
		} mapping;
	} u;
};

struct ss_reader_stats {
	uint64_t blocks;            /* intact blocks, footer included */
	uint64_t event_blocks;
	uint64_t compressed_blocks;
	uint64_t unreadable_blocks; /* compressed, and no zstd in this build */
	uint64_t payload_bytes;     /* stored */
	uint64_t raw_bytes;         /* decoded */
	uint64_t records;
	uint64_t events;            /* as the format counts them: LOSS excluded */
	uint64_t definitions;
	uint64_t unknown_records;   /* types >= 0x40 the reader does not know, skipped */
	uint64_t by_type[256];      /* records delivered, by type byte */
	uint64_t first_event_ts, last_event_ts; /* 0 when no event */
	uint64_t loss_records;
	uint64_t lost_events;       /* sum of LOSS counts */
	uint64_t lost_by_reason[5]; /* index enum ss_loss_reason; 0 = other */
	uint64_t defs_not_kept;     /* definitions past max_definition_bytes */
	uint64_t lost_samples;      /* sum of SAMPLER_LOSS counts */
	uint64_t process_events;    /* events on thread 0 (process-wide) with no THREAD_DEF */
	uint64_t events_no_thread_def; /* events on other threads with no THREAD_DEF */
	uint64_t intact_end;        /* file offset just after the last intact block */
	bool sealed;                /* a footer block was read */
	struct ss_footer footer;    /* valid when sealed */
	/* Non-fatal disagreements (footer counts vs what was read); empty when none. */
	char note[192];
};

/* Open a segment. On failure returns -1 and puts a message in err; an unreadable
 * or damaged file header is failure too (ss_reader_open_* then also reports the
 * damage kind through *kind_out when it is non-NULL). The buffer is not copied and
 * must outlive the reader. opts may be NULL. */
int ss_reader_open_file(struct ss_reader **out, const char *path,
			const struct ss_reader_options *opts,
			enum ss_damage_kind *kind_out, char *err, size_t errlen);
int ss_reader_open_buffer(struct ss_reader **out, const void *buf, size_t len,
			  const struct ss_reader_options *opts,
			  enum ss_damage_kind *kind_out, char *err, size_t errlen);
void ss_reader_close(struct ss_reader *r);
/* A second reader of the same file or buffer (the buffer is shared, the file
 * descriptor duplicated), at r's position with nothing of r's definitions or
 * stats: to read ahead (ss_reader_floors) on another thread while r is read.
 * NULL when memory or a descriptor could not be had. */
struct ss_reader *ss_reader_dup(const struct ss_reader *r);

const struct ss_segment_header *ss_reader_header(const struct ss_reader *r);

/* Advance to the next intact block. Returns true and fills *out, or false at the
 * end of the file, after the footer, or at damage (see ss_reader_damage). */
bool ss_reader_next_block(struct ss_reader *r, struct ss_block_info *out);

/* Next record of the current block; false when the block has no more. */
bool ss_reader_next_record(struct ss_reader *r, struct ss_record *out);

/* What ss_reader_floors found from the reader's position on. */
struct ss_floors {
	/* floor[i] is a time that no record of block next+i carries an earlier
	 * one of (malloc'd; NULL when n is 0) */
	uint64_t *floor;
	size_t n;
	/* the threads those blocks define (THREAD_DEF), each once, in file order */
	uint64_t *threads;
	size_t n_threads;
	bool redefined;  /* an id is defined a second time (or memory ran out noting them) */
	bool sealed;     /* the walk read the footer: no block comes after the last one */
	/* a read error or memory ended the walk, not the file: a read may get further */
	bool cut_short;
	struct ss_damage damage; /* what ended the walk; kind NONE at a clean end */
};

/* The floor of every intact block from the reader's position on, read ahead
 * without changing what the reader delivers next: (*out).floor[i] is a time
 * that no record of block next+i carries an earlier one of (events and LOSS,
 * samples, switches, COMM, SAMPLER_LOSS, STALL, STALL_END, TASK_DUMP: what an
 * importer puts in time order), UINT64_MAX for a block with none (the footer,
 * a block this build cannot decompress). A second pass over the file, cheaper
 * than reading it: the blocks' framing and decompression are checked as
 * ss_reader_next_block checks them, not their CRCs, and their records only
 * walked, not decoded (ss_walk_floor), so a block that would fail the full
 * check can still have a floor (reading stops there: the floors of the blocks
 * read are right, and that one can only lower the floors before it); the list
 * ends where a record does not walk or reading would end at other damage.
 * redefined says whether those blocks define a STRING, LOCATION, THREAD_DEF (a
 * thread) or STACK id a second time (a writer defines each once a segment,
 * unless a block failed to reach the disk: then it defines everything again;
 * a reader resolves an id when it delivers an event, so delivering earlier
 * than before could name a different definition). A file that is still
 * written (.active) may have more blocks by the time they are read: the
 * floors hold for the blocks walked only (ss_reader_end_at keeps a read to
 * them). Call it between blocks. Returns 0, or -1 when memory ran out (*out
 * then holds nothing); ss_floors_free frees what it holds. */
int ss_reader_floors(struct ss_reader *r, struct ss_floors *out);
void ss_floors_free(struct ss_floors *f);

/* Reading ends before block index, as it would have at the moment the floors
 * were walked, unless it ends earlier by itself: at a clean end where d's kind
 * is NONE; else at block index with its own damage where that block fails
 * its checks, or with damage d (copied) where it has been written whole since.
 * For a file that grows while it is read: what comes after is read by the
 * next import (the blocks read are counted as usual). */
void ss_reader_end_at(struct ss_reader *r, uint64_t index, const struct ss_damage *d);

/* Damage that ended reading; kind SS_DAMAGE_NONE when the file read cleanly. */
const struct ss_damage *ss_reader_damage(const struct ss_reader *r);
const struct ss_reader_stats *ss_reader_stats(const struct ss_reader *r);

/* Lookups among definitions read so far; NULL when unknown. Valid until close or
 * until the id is redefined. */
const struct ss_string_def *ss_reader_string(const struct ss_reader *r, uint64_t id);
const struct ss_location_def *ss_reader_location(const struct ss_reader *r, uint64_t id);
const struct ss_thread_def *ss_reader_thread(const struct ss_reader *r, uint64_t thread);

/* Calls fn for every kept thread definition, in no particular order; stops early
 * when fn returns non-zero and returns that value. */
int ss_reader_foreach_thread(const struct ss_reader *r,
			     int (*fn)(void *ctx, const struct ss_thread_def *t), void *ctx);

/* Visitor form of the two loops above. A callback returning non-zero stops the walk
 * and is returned. Either callback may be NULL. */
struct ss_visitor {
	int (*block)(void *ctx, const struct ss_block_info *b);
	int (*record)(void *ctx, const struct ss_block_info *b, const struct ss_record *rec);
};
int ss_reader_run(struct ss_reader *r, const struct ss_visitor *v, void *ctx);

/* Whether a record type is an "event" as the format counts them (block
 * record_count, footer events): types 0x10..0x3f except LOSS, which records the
 * absence of events. */
bool ss_record_counts_as_event(uint8_t type);

/* Decodes up to max frames of a STACK record into out (leaf first; the first
 * rec->u.stack.nkernel are kernel addresses). Returns the count decoded; the reader
 * has already checked that all nframes varints are present. */
size_t ss_stack_frames(const struct ss_record *rec, uint64_t *out, size_t max);

/* The address to look up (symbols, frames) for frame i of such a stack. The
 * leaf of each part is where the thread was: the kernel's leaf, and the first
 * user frame, the pc the kernel interrupted or returns to (a sample taken while
 * a signal is delivered has there the handler's first instruction, whose
 * address - 1 is the end of another function). Every other frame is a return
 * address: the call is the instruction before it. */
static inline uint64_t ss_stack_lookup_pc(const uint64_t *pcs, size_t i, size_t nkernel)
{
	return i == 0 || i == nkernel || pcs[i] == 0 ? pcs[i] : pcs[i] - 1;
}

/* "POLL_BEGIN" etc.; NULL for a type the reader does not know. */
const char *ss_record_type_name(uint8_t type);
const char *ss_loss_reason_name(uint64_t reason);
const char *ss_sampler_loss_reason_name(uint64_t reason);
/* "running", "blocked", "runnable", "unknown" for enum ss_stall_kind_rec. */
const char *ss_stall_kind_name(uint64_t kind);
const char *ss_damage_kind_name(enum ss_damage_kind kind);
/* Whether this build can decode SS_BLOCK_F_ZSTD blocks. */
bool ss_reader_has_zstd(void);

#endif /* STALLSCOPE_SEGMENT_READER_H */

/*
 * schema/ - what both halves of stallscope compile: the formats between them.
 *
 *   FORMAT.md, segment_format.h   the segment format: prose and exact form (this file)
 *   format.c                      CRC32C and the header checks every reader makes
 *   segment_write.h               writing segments, the only code that frames a block:
 *     segment_frame.c               file header, blocks (CRC, zstd), footer, writes
 *     segment_rewrite.c             the crash-safe rewrite of a sealed segment
 *   stallscope.sql                the SQLite schema, every table and column documented
 *   summary_levels.h              the summary ladder the importer and timeline share
 *
 * The C files build the static library ss_format (meson.build), linked into
 * libstallscope.so with hidden visibility (it exports only stallscope_*), the
 * viewer's reader and the CLI. May depend on libc and zstd only; anything of
 * ours may depend on it.
 *
 * segment_format.h - the on-disk layout of a stallscope segment, compiled by the
 * writer (recorder/) and every reader (viewer/, the CLI). FORMAT.md beside this file
 * is the prose specification; this header is its exact form. Change both together
 * and bump SS_FORMAT_VERSION when an old reader would misread a new file.
 *
 * Layout:  file header | block | block | ... | footer block (only when sealed)
 *
 * All integers are little-endian; the endian field lets a reader refuse a file
 * written on a big-endian host instead of misreading it. Every block carries a
 * CRC32C of its header and of its payload, so a reader keeps every block up to the
 * first damaged one and never accepts a damaged block.
 */
#ifndef STALLSCOPE_SEGMENT_FORMAT_H
#define STALLSCOPE_SEGMENT_FORMAT_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#define SS_FILE_MAGIC "STALLSEG"      /* 8 bytes, no NUL */
#define SS_FORMAT_VERSION 1u
#define SS_ENDIAN_MARK 0x01020304u    /* reads as 0x04030201 on the wrong endianness */
#define SS_BLOCK_MAGIC 0x4b4c4253u    /* "SBLK" */
#define SS_MAX_EXE_LEN 4096u
#define SS_MAX_BLOCK_PAYLOAD (16u << 20) /* readers refuse larger blocks as damage */
#define SS_MAX_BLOCK_RAW (64u << 20)
#define SS_MAX_STACK_FRAMES 256u      /* readers refuse longer STACK records */

/* The fixed part of the file header. The executable path (exe_len bytes, no NUL)
 * follows it; header_crc covers the fixed part (with header_crc = 0) and the path. */
struct ss_file_header {
	char magic[8];            /* SS_FILE_MAGIC */
	uint32_t version;         /* SS_FORMAT_VERSION */
	uint32_t endian;          /* SS_ENDIAN_MARK as written by the host */
	uint32_t header_size;     /* sizeof(struct ss_file_header) + exe_len */
	uint32_t exe_len;         /* length of the executable path that follows */
	uint64_t session_id;      /* random per recording session: groups segments */
	uint64_t segment_seq;     /* N of PREFIX.N.bin */
	uint64_t pid;
	uint64_t start_ts;        /* CLOCK_MONOTONIC ns: the segment covers [start_ts, end] */
	uint64_t anchor_mono_ns;  /* a CLOCK_MONOTONIC reading ... */
	uint64_t anchor_real_ns;  /* ... and the CLOCK_REALTIME reading taken with it */
	char boot_id[40];         /* /proc/sys/kernel/random/boot_id, NUL padded */
	char hostname[72];        /* uname nodename (max 64), NUL padded */
	uint32_t flags;           /* reserved, 0 */
	uint32_t header_crc;      /* CRC32C, see above */
};
static_assert(sizeof(struct ss_file_header) == 192, "file header size is part of the format");

enum ss_block_kind {
	SS_BLOCK_EVENTS = 1, /* payload: a stream of records (below) */
	SS_BLOCK_FOOTER = 2, /* payload: struct ss_footer; the segment is sealed */
};

#define SS_BLOCK_F_ZSTD 1u /* payload is one zstd frame that decodes to raw_len bytes */

struct ss_block_header {
	uint32_t magic;        /* SS_BLOCK_MAGIC */
	uint32_t kind;         /* enum ss_block_kind */
	uint32_t flags;        /* SS_BLOCK_F_* */
	uint32_t payload_len;  /* bytes stored after this header */
	uint32_t raw_len;      /* payload bytes after decompression */
	uint32_t record_count; /* event records in the payload: types 0x10..0x3f except
				* LOSS (definitions, LOSS and length-prefixed records are
				* not counted); a reader checks it */
	uint64_t block_seq;    /* 0, 1, 2 ... within the segment */
	uint64_t first_ts;     /* earliest event time in the block (0 if none) */
	uint64_t last_ts;      /* latest event time in the block (0 if none) */
	uint32_t payload_crc;  /* CRC32C of the stored payload */
	uint32_t header_crc;   /* CRC32C of this header with header_crc = 0 */
};
static_assert(sizeof(struct ss_block_header) == 56, "block header size is part of the format");

/* Loss accounting kept per segment. */
struct ss_footer {
	uint64_t start_ts;        /* = file header start_ts */
	uint64_t end_ts;          /* segment boundary: events of later time are in N+1 */
	uint64_t first_event_ts;  /* 0 when the segment holds no event */
	uint64_t last_event_ts;
	uint64_t events;          /* event records in this segment */
	uint64_t blocks;          /* event blocks before the footer */
	uint64_t dropped_events;  /* events lost (buffer full, no buffer, failed write) */
	uint64_t loss_records;    /* LOSS records in this segment */
	uint32_t sealed_by;       /* enum ss_sealed_by */
	uint32_t pad;             /* 0 */
};
static_assert(sizeof(struct ss_footer) == 72, "footer size is part of the format");

enum ss_sealed_by {
	SS_SEALED_WRITER = 1,    /* rotated or stopped normally */
	SS_SEALED_RECOVERY = 2,  /* an orphaned .active file sealed at the next start */
};

/*
 * Records. A block payload is a sequence of records, each starting with a type
 * byte. Integers in records are unsigned LEB128 varints ("v" below) unless noted;
 * "z" is a zigzag-encoded signed varint; "s" is a varint length then that many
 * bytes (no NUL).
 *
 * Types below 0x40 have the fixed field lists given here. Types 0x40 and above are
 * followed by a varint byte length of their body, so a reader skips the ones it
 * does not know: that is the room for CPU samples, stacks, mappings and symbols.
 *
 * Timestamps: a THREAD record sets the current thread and its clock (absolute
 * CLOCK_MONOTONIC ns). Each event record then carries "dt", the delta from the
 * previous timestamp of that current thread (events of one thread never go back in
 * time). A block holds runs of events of several threads, each run opened by a
 * THREAD record; definitions may appear anywhere and take effect from there on.
 */
enum ss_record_type {
	/* definitions (thread-independent) */
	SS_REC_STRING = 0x01,    /* v id, s bytes                                   */
	SS_REC_LOCATION = 0x02,  /* v id, v file_string, v line, v function_string  */
	SS_REC_THREAD_DEF = 0x03, /* v thread, v tid, s name, v runtime_string (0 = not
				   * a worker), v worker_index, v flags (SS_THREAD_F_*),
				   * v open_task, v open_location, v open_since (0 or abs ns),
				   * v parked_since (0 or abs ns)                          */
	SS_REC_THREAD = 0x04,    /* v thread, v ts (absolute CLOCK_MONOTONIC ns): sets the
				   * current thread and its clock; thread 0 = process-wide */

	/* events of the current thread */
	SS_REC_POLL_BEGIN = 0x10, /* v dt, v task, v location */
	SS_REC_POLL_END = 0x11,   /* v dt */
	SS_REC_PARK = 0x12,       /* v dt */
	SS_REC_UNPARK = 0x13,     /* v dt */
	SS_REC_SPAWN = 0x14,      /* v dt, v task, v location */
	SS_REC_TERMINATE = 0x15,  /* v dt, v task */
	SS_REC_WAKE = 0x16,       /* v dt, v task (woken); the waker is the current thread
				   * and the task it is polling at dt */
	SS_REC_QUEUE = 0x17,      /* v dt, v local, v global */
	SS_REC_MARK = 0x18,       /* v dt, v name_string, z value */
	SS_REC_SPAN_BEGIN = 0x19, /* v dt, v name_string */
	SS_REC_SPAN_END = 0x1a,   /* v dt, v name_string */
	SS_REC_WORKER_BEGIN = 0x1b, /* v dt, v runtime_string, v index */
	SS_REC_WORKER_END = 0x1c, /* v dt */
	SS_REC_THREAD_EXIT = 0x1d, /* v dt: the thread ended; its id is not reused */
	SS_REC_LOSS = 0x1e,       /* v dt (= first lost ts), v count, v last - first,
				   * v reason (enum ss_loss_reason). With the current thread
				   * 0 the loss is process-wide. */

	/* length-prefixed records (v body_len, body) */
	SS_REC_META = 0x40,       /* s key, s value: session metadata (config, versions,
				   * sampler mode and the reasons for each refusal) */
	SS_REC_SAMPLE = 0x41,     /* v thread (0 = a thread with no THREAD_DEF), v tid,
				   * v ts (absolute ns), v cpu + 1 (0 = unknown),
				   * v weight (ns of CPU time it stands for),
				   * v kind (enum ss_sample_kind), v stack (STACK id)    */
	SS_REC_SWITCH = 0x42,     /* v thread, v tid, v ts (absolute ns), v cpu + 1,
				   * v flags (SS_SWITCH_F_*)                              */
	SS_REC_COMM = 0x43,       /* v thread, v tid, v ts, s name: a thread (re)named    */
	SS_REC_SAMPLER_LOSS = 0x44, /* v tid (0 = any), v ts, v ts_end - ts, v count,
				   * v reason (enum ss_sampler_loss_reason)               */
	/* 0x45..0x4f reserved for more sampling records                  */
	SS_REC_STACK = 0x50,      /* v id, v nkernel, v nframes, nframes x v address,
				   * then optionally v flags (SS_STACK_F_*; absent = 0):
				   * leaf first; the first nkernel are kernel addresses.
				   * Ids are unique within a segment and defined before
				   * use; a writer never reuses an id in a segment.       */
	SS_REC_MAPPING = 0x51,    /* v ts (0 = snapshot at segment start), v start, v end,
				   * v pgoff, v prot (PROT_*), s build_id (raw bytes,
				   * may be empty), s path                               */
	SS_REC_SYMBOL = 0x52,     /* v address (as looked up: return addresses minus 1),
				   * v inline_depth (0 = the function the code is in,
				   * 1 = inlined into it ...), v line (0 = unknown),
				   * s function, s file, then optionally s mangled (the
				   * symbol's mangled name when function is demangled):
				   * added to sealed segments by `stallscope symbolize`,
				   * in one EVENTS block just before the footer that
				   * starts with a SYMBOL record */
	/* 0x53..0x5f reserved: more symbol records                        */
	SS_REC_STALL = 0x60,      /* v thread, v tid, v task, v location, v poll_ts,
				   * v capture_ts (absolute ns), v index (0 = the capture
				   * at the threshold, then 2x, 4x ...), v kind
				   * (enum ss_stall_kind_rec), v syscall + 1 (0 = none or
				   * unknown), v stack (STACK id, 0 = none), s reason     */
	SS_REC_STALL_END = 0x61,  /* v thread, v tid, v task, v poll_ts, v end_ts,
				   * v captures: the stalled poll ended at end_ts        */
	SS_REC_TASK_DUMP = 0x62,  /* v task, v thread (of the poll that returned
				   * pending), v tid, v location, v pending_ts,
				   * v idle_ns (idle so far when dumped), v stack        */
	/* 0x63..0x6f reserved for more stall and task records            */
	SS_REC_CLOCK = 0x70,      /* v source (enum ss_clock_source), v tsc, v mono_ns (the
				   * latest calibration point: a TSC reading and the
				   * CLOCK_MONOTONIC time of the same instant), v tsc_hz
				   * (ticks per second so far), v points (calibration
				   * points in this segment so far), v drift_ns (their
				   * largest difference from what the previous interval
				   * predicted); all 0 but source for SS_CLOCK_VDSO      */
};

/* How the hooks stamped the events of a segment (CLOCK records). Either way the
 * segment holds CLOCK_MONOTONIC ns. */
enum ss_clock_source {
	SS_CLOCK_TSC = 1,  /* the TSC, converted by the writer between calibration points */
	SS_CLOCK_VDSO = 2, /* clock_gettime(CLOCK_MONOTONIC) in every hook */
};

enum ss_stall_kind_rec {
	SS_STALL_RUNNING = 1,    /* on CPU in user code */
	SS_STALL_BLOCKED = 2,    /* off CPU: in a system call (syscall + 1 names it) or
				  * blocked outside one (page fault) */
	SS_STALL_RUNNABLE = 3,   /* runnable but not running: CPU starvation */
	SS_STALL_UNKNOWN = 4,    /* could not tell; the reason says why */
};

enum ss_sample_kind_rec {
	SS_SAMPLE_KIND_CPU = 1,    /* a CPU-time sample: the thread was running */
	SS_SAMPLE_KIND_OFFCPU = 2, /* taken at a switch-out: where the thread blocked */
};

/* STACK flags. */
#define SS_STACK_F_TRUNCATED 1u  /* the unwinder could not get past the last frame: the
				  * stack ends early there (the outermost callers are
				  * missing), it is not a guess */
#define SS_STACK_F_CFI 2u        /* the user frames were unwound by CFI from a stack
				  * copy (else they are a frame-pointer chain) */

#define SS_SWITCH_F_OUT 1u       /* switched out (else: switched in) */
#define SS_SWITCH_F_PREEMPT 2u   /* out while still runnable (preempted), not blocked */

/* META key saying where a session's SWITCH records come from. A value that
 * begins with SS_SWITCHES_NOT_PARKED: a worker's switches from its PARK to its
 * UNPARK are not recorded, so readers leave its CPU state unknown over each
 * park (and ignore a SWITCH inside one). */
#define SS_META_SWITCHES "switches"
#define SS_SWITCHES_NOT_PARKED "sched_switch program, not while parked"

enum ss_sampler_loss_reason {
	SS_SAMPLER_LOSS_KERNEL = 1,   /* PERF_RECORD_LOST: the kernel ring was full */
	SS_SAMPLER_LOSS_THROTTLE = 2, /* the kernel throttled sampling */
	SS_SAMPLER_LOSS_FALLBACK = 3, /* the timer fallback's ring was full */
	SS_SAMPLER_LOSS_WRITER = 4,   /* the writer could not keep the samples */
};

#define SS_THREAD_F_WORKER 1u   /* the thread is a worker lane */
#define SS_THREAD_F_EXITED 2u   /* the thread ended before this segment began */

enum ss_loss_reason {
	SS_LOSS_BUFFER_FULL = 1, /* the thread's ring was full */
	SS_LOSS_NO_BUFFER = 2,   /* no free thread buffer (max_threads reached) */
	SS_LOSS_WRITE_FAILED = 3, /* disk full, file size limit, I/O error */
	SS_LOSS_SAMPLER = 4,     /* unused: sampler losses are SAMPLER_LOSS records */
};

/* ---- helpers shared by writer and readers (schema/format.c) ----------------- */

/* Hidden: these are linked into libstallscope.so, which exports stallscope_* only. */
#define SS_FORMAT_API __attribute__((visibility("hidden")))

SS_FORMAT_API uint32_t ss_crc32c(uint32_t crc, const void *data, size_t len);

/* CRC of a file header plus its executable path, with header_crc taken as 0. */
SS_FORMAT_API uint32_t ss_file_header_crc(const struct ss_file_header *h, const char *exe);
/* CRC of a block header with header_crc taken as 0. */
SS_FORMAT_API uint32_t ss_block_header_crc(const struct ss_block_header *b);

/* Validates a file header read from untrusted data. Returns NULL when it is good,
 * else a static message saying what is wrong. exe may be NULL to skip its CRC. */
SS_FORMAT_API const char *ss_file_header_check(const struct ss_file_header *h, const char *exe);
/* Validates a block header (magic, header CRC, sane lengths). NULL when good. */
SS_FORMAT_API const char *ss_block_header_check(const struct ss_block_header *b);

/* Varints: put returns bytes written (at most 10); get returns bytes read, or 0 when
 * the input ends or the varint is longer than 10 bytes. */
static inline size_t ss_put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;
	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

static inline size_t ss_get_varint(const uint8_t *p, size_t avail, uint64_t *out)
{
	uint64_t v = 0;
	for (size_t i = 0; i < avail && i < 10; i++) {
		/* The 10th byte holds bit 63 only: anything more would be silently lost. */
		if (i == 9 && p[i] > 1)
			return 0;
		v |= (uint64_t)(p[i] & 0x7f) << (7 * i);
		if (!(p[i] & 0x80)) {
			*out = v;
			return i + 1;
		}
	}
	return 0;
}

static inline uint64_t ss_zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static inline int64_t ss_unzigzag(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

#endif /* STALLSCOPE_SEGMENT_FORMAT_H */

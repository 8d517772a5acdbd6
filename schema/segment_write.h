/*
 * segment_write.h - the one implementation of writing the segment format: the
 * file header, block framing (both CRCs, zstd when it pays), the footer block,
 * whole writes at an offset, and the crash-safe rewrite of a sealed segment.
 *
 * The recorder's writer (recorder/src/segment_file.c, writer_blocks.c) and
 * `stallscope symbolize` (viewer/cli/cmd_symbolize.c) frame blocks only through
 * these functions. Readers need only segment_format.h; tests/fuzz/segment_builder.c
 * is a second, independent implementation on purpose (tests/unit/test_segment_write.c
 * holds the two to the same bytes).
 *
 * Every function is safe from any thread on its own arguments; none keeps state
 * between calls except the compressor the caller owns. The framing functions
 * make no system call and allocate nothing (the compressor's work buffers are
 * allocated by ss_block_zstd_init).
 */
#ifndef STALLSCOPE_SEGMENT_WRITE_H
#define STALLSCOPE_SEGMENT_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "segment_format.h"

/* ---- framing ---------------------------------------------------------------- */

/* Completes a file header for an executable path of exe_len bytes: sets magic,
 * version, endian, exe_len, header_size, flags (0) and header_crc. The caller has
 * set the recording's fields (session_id, segment_seq, pid, start_ts, anchors,
 * boot_id, hostname) and zeroed the rest. exe may be NULL when exe_len is 0. */
SS_FORMAT_API void ss_file_header_finish(struct ss_file_header *h, const char *exe,
					 uint32_t exe_len);

/* A block compressor the caller owns (one per writing thread). Without zstd in
 * the build, or when its context could not be created, it never compresses. */
struct ss_block_zstd {
	void *cctx;      /* ZSTD_CCtx, NULL: store blocks as they are */
	uint8_t *buf;    /* compressed payload of the last framed block */
	size_t cap;
	int level;
};

/* Prepares z for raw payloads of up to max_raw bytes (larger ones are stored
 * uncompressed) at zstd level `level`. 0, or -1 when out of memory (z is then
 * empty and ss_block_zstd_free is still safe). */
SS_FORMAT_API int ss_block_zstd_init(struct ss_block_zstd *z, size_t max_raw, int level);
SS_FORMAT_API void ss_block_zstd_free(struct ss_block_zstd *z);

/* Frames a block. The caller has set b's kind, record_count, block_seq, first_ts
 * and last_ts; this sets magic, flags, payload_len, raw_len and both CRCs. The
 * raw payload is compressed by z (may be NULL) when that makes it smaller.
 * Returns the bytes to store after the header: raw, or z's buffer (valid until z
 * frames the next block). raw_len must not exceed SS_MAX_BLOCK_RAW. */
SS_FORMAT_API const void *ss_block_frame(struct ss_block_header *b, const void *raw,
					 size_t raw_len, struct ss_block_zstd *z);

/* Frames the footer block that seals a segment of f->blocks event blocks: its
 * block_seq is f->blocks, its time range the segment's first and last event. The
 * payload to store after b is f itself. */
SS_FORMAT_API void ss_footer_frame(struct ss_block_header *b, const struct ss_footer *f);

/* ---- writing ---------------------------------------------------------------- */

/* Writes n bytes at off, finishing short writes and retrying EINTR. 0, or -1
 * with errno set (EIO when the file takes no more bytes without saying why). */
SS_FORMAT_API int ss_write_at(int fd, const void *p, size_t n, uint64_t off);

/* Writes a finished file header and its executable path at offset 0. */
SS_FORMAT_API int ss_file_header_write(int fd, const struct ss_file_header *h, const char *exe);

/* Writes a framed block (header, then payload_len bytes of payload) at off with
 * one system call when it can. 0, or -1 with errno set; then part of the block
 * may be in the file and the caller cuts it back. */
SS_FORMAT_API int ss_block_write(int fd, uint64_t off, const struct ss_block_header *b,
				 const void *payload);

/* ---- rewriting a sealed segment ----------------------------------------------- */

/* Inserts one uncompressed EVENTS block holding no event records (payload of len
 * bytes, e.g. SYMBOL records) just before the footer of the sealed segment at
 * path, whose footer block starts at footer_off; the footer is re-sealed (its
 * block_seq and blocks count one more, nothing else changes).
 *
 * Crash-safe: the new file is written beside the old one under a fresh name
 * (PATH.TAG-PID.K) opened O_EXCL|O_NOFOLLOW with the segment's own mode, synced,
 * renamed over PATH, and the directory synced; an interrupted run leaves the old
 * file or the new one, never a mix, and never writes through a planted link.
 * Returns 0, or -1 with a one-line reason in why (the old file is then untouched
 * and no temporary file is left). */
SS_FORMAT_API int ss_segment_insert_block(const char *path, uint64_t footer_off,
					  const void *payload, size_t len, const char *tag,
					  char *why, size_t why_len);

#endif /* STALLSCOPE_SEGMENT_WRITE_H */

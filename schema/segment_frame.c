/*
 * segment_frame.c - file header, block and footer framing, and the writes that put
 * them in a file (see segment_write.h). What a block's bytes are is decided here
 * and nowhere else, so the writer and `stallscope symbolize` cannot drift apart.
 */
#include "segment_write.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#ifdef STALLSCOPE_HAVE_ZSTD
#include <zstd.h>
#endif

void ss_file_header_finish(struct ss_file_header *h, const char *exe, uint32_t exe_len)
{
	memcpy(h->magic, SS_FILE_MAGIC, 8);
	h->version = SS_FORMAT_VERSION;
	h->endian = SS_ENDIAN_MARK;
	h->exe_len = exe_len;
	h->header_size = (uint32_t)sizeof *h + exe_len;
	h->flags = 0;
	h->header_crc = ss_file_header_crc(h, exe);
}

int ss_block_zstd_init(struct ss_block_zstd *z, size_t max_raw, int level)
{
	memset(z, 0, sizeof *z);
	z->level = level;
#ifdef STALLSCOPE_HAVE_ZSTD
	z->cap = ZSTD_compressBound(max_raw);
	z->buf = malloc(z->cap);
	if (!z->buf) {
		z->cap = 0;
		return -1;
	}
	/* No context: blocks are stored as they are, which every reader reads. */
	z->cctx = ZSTD_createCCtx();
#else
	(void)max_raw;
#endif
	return 0;
}

void ss_block_zstd_free(struct ss_block_zstd *z)
{
#ifdef STALLSCOPE_HAVE_ZSTD
	ZSTD_freeCCtx(z->cctx);
#endif
	free(z->buf);
	memset(z, 0, sizeof *z);
}

const void *ss_block_frame(struct ss_block_header *b, const void *raw, size_t raw_len,
			   struct ss_block_zstd *z)
{
	const void *payload = raw;
	b->magic = SS_BLOCK_MAGIC;
	b->flags = 0;
	b->raw_len = (uint32_t)raw_len;
	b->payload_len = (uint32_t)raw_len;
#ifdef STALLSCOPE_HAVE_ZSTD
	if (z && z->cctx) {
		/* A buffer too small for the bound fails here: the block is then stored. */
		size_t n = ZSTD_compressCCtx(z->cctx, z->buf, z->cap, raw, raw_len, z->level);
		if (!ZSTD_isError(n) && n < raw_len) {
			payload = z->buf;
			b->payload_len = (uint32_t)n;
			b->flags = SS_BLOCK_F_ZSTD;
		}
	}
#else
	(void)z;
#endif
	b->payload_crc = ss_crc32c(0, payload, b->payload_len);
	b->header_crc = ss_block_header_crc(b);
	return payload;
}

void ss_footer_frame(struct ss_block_header *b, const struct ss_footer *f)
{
	memset(b, 0, sizeof *b);
	b->kind = SS_BLOCK_FOOTER;
	b->block_seq = f->blocks;
	b->first_ts = f->first_event_ts;
	b->last_ts = f->last_event_ts;
	ss_block_frame(b, f, sizeof *f, NULL);
}

int ss_write_at(int fd, const void *p, size_t n, uint64_t off)
{
	const char *c = p;
	while (n) {
		ssize_t w = pwrite(fd, c, n, (off_t)off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (w == 0)
				errno = EIO;
			return -1;
		}
		c += w;
		n -= (size_t)w;
		off += (uint64_t)w;
	}
	return 0;
}

int ss_file_header_write(int fd, const struct ss_file_header *h, const char *exe)
{
	if (ss_write_at(fd, h, sizeof *h, 0) != 0)
		return -1;
	return ss_write_at(fd, exe, h->exe_len, sizeof *h);
}

int ss_block_write(int fd, uint64_t off, const struct ss_block_header *b, const void *payload)
{
	struct iovec iov[2] = {{(void *)b, sizeof *b}, {(void *)payload, b->payload_len}};
	size_t want = sizeof *b + b->payload_len;
	ssize_t w = pwritev(fd, iov, 2, (off_t)off);
	if (w < 0)
		return -1;
	if ((size_t)w == want)
		return 0;
	/* A short write (a file-size limit, a full disk): finish it, or learn the real
	 * reason it cannot be finished (EFBIG, ENOSPC) for the caller's log. */
	size_t done = (size_t)w, pdone = done > sizeof *b ? done - sizeof *b : 0;
	if (done < sizeof *b &&
	    ss_write_at(fd, (const char *)b + done, sizeof *b - done, off + done) != 0)
		return -1;
	return ss_write_at(fd, (const char *)payload + pdone, b->payload_len - pdone,
			   off + sizeof *b + pdone);
}

/*
 * segment_rewrite.c - changing a sealed segment without ever leaving a torn one
 * (see segment_write.h): the new file is built beside the old under a name no one
 * else can have planted, made durable, and renamed over it.
 */
#include "segment_write.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The rename is durable only once the directory holding the name is synced. */
static void sync_parent_dir(const char *path)
{
	char dir[4200];
	snprintf(dir, sizeof dir, "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = 0;
	int dfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
}

/* A fresh file beside path, opened as the writer opens segments (O_EXCL |
 * O_NOFOLLOW: never through a planted link) with the segment's mode. */
static int create_beside(const char *path, const char *tag, mode_t mode, char *tmp, size_t tmp_len)
{
	int out = -1;
	for (unsigned k = 0; k < 100 && out < 0; k++) {
		snprintf(tmp, tmp_len, "%s.%s-%ld.%u", path, tag, (long)getpid(), k);
		out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode & 0666);
		if (out < 0 && errno != EEXIST)
			break;
	}
	/* The umask may have taken bits the segment has: give them back. */
	if (out >= 0 && fchmod(out, mode & 07777) != 0) {
		int e = errno;
		close(out);
		unlink(tmp);
		errno = e;
		out = -1;
	}
	return out;
}

/* Copies [0, len) of in to out. */
static int copy_prefix(int in, int out, uint64_t len)
{
	uint8_t buf[1 << 16];
	for (uint64_t off = 0; off < len;) {
		size_t n = len - off < sizeof buf ? (size_t)(len - off) : sizeof buf;
		ssize_t got = pread(in, buf, n, (off_t)off);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			if (got == 0)
				errno = EIO; /* the file shrank under us */
			return -1;
		}
		if (ss_write_at(out, buf, (size_t)got, off) != 0)
			return -1;
		off += (uint64_t)got;
	}
	return 0;
}

int ss_segment_insert_block(const char *path, uint64_t footer_off, const void *payload, size_t len,
			    const char *tag, char *why, size_t why_len)
{
	if (len > SS_MAX_BLOCK_PAYLOAD) {
		snprintf(why, why_len, "a block of %zu bytes is larger than the format allows", len);
		return -1;
	}
	int in = open(path, O_RDONLY | O_CLOEXEC);
	if (in < 0) {
		snprintf(why, why_len, "%s", strerror(errno));
		return -1;
	}
	struct ss_block_header fh;
	struct ss_footer ft;
	if (pread(in, &fh, sizeof fh, (off_t)footer_off) != (ssize_t)sizeof fh ||
	    pread(in, &ft, sizeof ft, (off_t)(footer_off + sizeof fh)) != (ssize_t)sizeof ft) {
		close(in);
		snprintf(why, why_len, "cannot read the footer");
		return -1;
	}
	/* Only a plain footer can be re-sealed by changing its count. */
	if (ss_block_header_check(&fh) != NULL || fh.kind != SS_BLOCK_FOOTER ||
	    fh.flags != 0 || ss_crc32c(0, &ft, sizeof ft) != fh.payload_crc) {
		close(in);
		snprintf(why, why_len, "no intact uncompressed footer at offset %llu",
			 (unsigned long long)footer_off);
		return -1;
	}
	struct stat st;
	if (fstat(in, &st) != 0) {
		close(in);
		snprintf(why, why_len, "%s", strerror(errno));
		return -1;
	}
	char tmp[4200];
	int out = create_beside(path, tag, st.st_mode, tmp, sizeof tmp);
	if (out < 0) {
		snprintf(why, why_len, "creating the new file: %s", strerror(errno));
		close(in);
		return -1;
	}

	/* The new block takes the footer's place in the sequence; the footer moves
	 * one on and counts it. */
	struct ss_block_header nb = {.kind = SS_BLOCK_EVENTS, .block_seq = fh.block_seq};
	ss_block_frame(&nb, payload, len, NULL);
	fh.block_seq++;
	ft.blocks++;
	ss_block_frame(&fh, &ft, sizeof ft, NULL);
	uint64_t off = footer_off;
	int rc = copy_prefix(in, out, footer_off);
	if (rc == 0) {
		rc = ss_block_write(out, off, &nb, payload);
		off += sizeof nb + len;
	}
	if (rc == 0)
		rc = ss_block_write(out, off, &fh, &ft);
	if (rc == 0 && fsync(out) != 0)
		rc = -1;
	int e = errno;
	close(out);
	close(in);
	if (rc == 0 && rename(tmp, path) != 0) {
		e = errno;
		rc = -1;
	}
	if (rc != 0) {
		snprintf(why, why_len, "writing the new file: %s", strerror(e));
		unlink(tmp);
		return -1;
	}
	sync_parent_dir(path);
	return 0;
}

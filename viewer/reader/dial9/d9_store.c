/*
 * d9_store.c - see d9_store.h.
 */
#include "d9_store.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "d9_format.h"

#define CHUNK (256u << 10)

struct d9_store {
	/* the input */
	int fd;                 /* the file; -1 for a caller's buffer */
	const uint8_t *in_buf;
	uint64_t in_size, in_done;
	bool gzip;
	/* the decompressed stream: in memory (view), or read from data_fd */
	const uint8_t *view;
	int data_fd;            /* the raw file, or the temporary file of a spilled gzip */
	uint64_t have;          /* bytes of the stream available */
	/* inflation */
	z_stream z;
	bool z_init, z_done;
	bool member_ended;      /* a gzip member ended: another may follow */
	uint8_t *zin;           /* compressed input read from the file */
	uint8_t *mem;           /* inflated bytes while in memory */
	size_t mem_cap;
	uint8_t *stage;         /* inflated bytes on their way to the temporary file */
	uint64_t limit;
	char note[256];
};

enum d9_detect d9_detect(const uint8_t *p, size_t n)
{
	/* Any version: opening it then says which version it is. */
	if (n >= D9_HEADER_LEN && memcmp(p, D9_MAGIC, D9_MAGIC_LEN) == 0)
		return D9_DETECT_RAW;
	if (n < 2 || p[0] != 0x1f || p[1] != 0x8b)
		return D9_DETECT_NO;
	z_stream z;
	memset(&z, 0, sizeof z);
	if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
		return D9_DETECT_OTHER_GZIP;
	uint8_t out[16];
	z.next_in = (Bytef *)(uintptr_t)p;
	z.avail_in = (uInt)(n > UINT32_MAX ? UINT32_MAX : n);
	z.next_out = out;
	z.avail_out = sizeof out;
	int rc = inflate(&z, Z_SYNC_FLUSH);
	size_t got = sizeof out - z.avail_out;
	inflateEnd(&z);
	(void)rc;
	return got >= D9_HEADER_LEN && memcmp(out, D9_MAGIC, D9_MAGIC_LEN) == 0 ? D9_DETECT_GZIP : D9_DETECT_OTHER_GZIP;
}

enum d9_detect d9_detect_file(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return D9_DETECT_NO;
	uint8_t buf[4096];
	ssize_t n = pread(fd, buf, sizeof buf, 0);
	close(fd);
	return n > 0 ? d9_detect(buf, (size_t)n) : D9_DETECT_NO;
}

static struct d9_store *new_store(char *err, size_t errlen)
{
	struct d9_store *s = calloc(1, sizeof *s);
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->fd = s->data_fd = -1;
	return s;
}

/* Sets up inflation when the input starts with the gzip magic. */
static int start(struct d9_store *s, const uint8_t *first, size_t n, char *err, size_t errlen)
{
	if (n < 2 || first[0] != 0x1f || first[1] != 0x8b) {
		s->have = s->in_size;
		if (s->in_buf)
			s->view = s->in_buf;
		else
			s->data_fd = s->fd;
		return 0;
	}
	s->gzip = true;
	if (inflateInit2(&s->z, 16 + MAX_WBITS) != Z_OK) {
		snprintf(err, errlen, "cannot start decompressing (zlib)");
		return -1;
	}
	s->z_init = true;
	if (s->in_buf) {
		s->z.next_in = (Bytef *)(uintptr_t)s->in_buf;
		s->z.avail_in = (uInt)(s->in_size > UINT32_MAX ? UINT32_MAX : s->in_size);
		s->in_done = s->z.avail_in;
	} else if (!(s->zin = malloc(CHUNK))) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	uint64_t by_ratio = s->in_size * D9_MAX_RATIO;
	s->limit = by_ratio < (64u << 20) ? (64u << 20) : by_ratio;
	if (s->limit > D9_MAX_INFLATE)
		s->limit = D9_MAX_INFLATE;
	s->view = s->mem; /* NULL until the first bytes come */
	return 0;
}

struct d9_store *d9_store_open_file(const char *path, char *err, size_t errlen)
{
	struct d9_store *s = new_store(err, errlen);
	if (!s)
		return NULL;
	struct stat st;
	if ((s->fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 || fstat(s->fd, &st) != 0) {
		snprintf(err, errlen, "%s", strerror(errno));
		d9_store_close(s);
		return NULL;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "not a regular file");
		d9_store_close(s);
		return NULL;
	}
	/* The size now: a file still being written is read as it is at this moment. */
	s->in_size = (uint64_t)st.st_size;
	uint8_t first[2] = { 0, 0 };
	ssize_t n = pread(s->fd, first, sizeof first, 0);
	if (n < 0 || start(s, first, (size_t)n, err, errlen) != 0) {
		if (n < 0)
			snprintf(err, errlen, "%s", strerror(errno));
		d9_store_close(s);
		return NULL;
	}
	return s;
}

struct d9_store *d9_store_open_buffer(const void *buf, size_t len, char *err, size_t errlen)
{
	struct d9_store *s = new_store(err, errlen);
	if (!s)
		return NULL;
	s->in_buf = buf;
	s->in_size = len;
	if (start(s, buf, len, err, errlen) != 0) {
		d9_store_close(s);
		return NULL;
	}
	return s;
}

void d9_store_close(struct d9_store *s)
{
	if (!s)
		return;
	if (s->z_init)
		inflateEnd(&s->z);
	if (s->data_fd >= 0 && s->data_fd != s->fd)
		close(s->data_fd);
	if (s->fd >= 0)
		close(s->fd);
	free(s->zin);
	free(s->mem);
	free(s->stage);
	free(s);
}

__attribute__((format(printf, 2, 3))) static void stop(struct d9_store *s, const char *fmt, ...)
{
	if (!s->note[0]) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(s->note, sizeof s->note, fmt, ap);
		va_end(ap);
	}
	s->z_done = true;
}

#define ULL(x) ((unsigned long long)(x))

/* Moves the inflated bytes from memory to an unlinked temporary file. */
static int spill(struct d9_store *s)
{
	const char *dir = getenv("TMPDIR");
	char path[4096];
	snprintf(path, sizeof path, "%s/stallscope-dial9.XXXXXX", dir && *dir ? dir : "/tmp");
	int fd = mkostemp(path, O_CLOEXEC);
	if (fd < 0) {
		stop(s, "decompressed stream cut at %llu bytes: no temporary file (%s)", ULL(s->have), strerror(errno));
		return -1;
	}
	unlink(path);
	for (uint64_t done = 0; done < s->have;) {
		ssize_t w = pwrite(fd, s->mem + done, (size_t)(s->have - done), (off_t)done);
		if (w <= 0) {
			close(fd);
			stop(s, "decompressed stream cut at %llu bytes: cannot write the temporary file (%s)",
			     ULL(s->have), strerror(errno));
			return -1;
		}
		done += (uint64_t)w;
	}
	free(s->mem);
	s->mem = NULL;
	s->mem_cap = 0;
	s->view = NULL;
	s->data_fd = fd;
	if (!s->stage && !(s->stage = malloc(CHUNK))) {
		stop(s, "decompressed stream cut at %llu bytes: out of memory", ULL(s->have));
		return -1;
	}
	return 0;
}

/* Reads more compressed input; false at its end. */
static bool more_input(struct d9_store *s)
{
	if (s->in_buf)
		return false; /* all of it was given at once */
	ssize_t n = read(s->fd, s->zin, CHUNK);
	if (n < 0) {
		stop(s, "read error at compressed offset %llu: %s", ULL(s->in_done), strerror(errno));
		return false;
	}
	if (n == 0)
		return false;
	s->z.next_in = s->zin;
	s->z.avail_in = (uInt)n;
	s->in_done += (uint64_t)n;
	return true;
}

/* Inflates until at least `upto` bytes of the stream are there, or it ends. */
static void inflate_to(struct d9_store *s, uint64_t upto)
{
	while (s->gzip && !s->z_done && s->have < upto) {
		if (s->z.avail_in == 0 && !more_input(s)) {
			if (!s->z_done && !s->member_ended)
				stop(s, "gzip data ends early at compressed offset %llu (truncated)", ULL(s->in_done));
			s->z_done = true;
			break;
		}
		if (s->member_ended) {
			/* Concatenated members are one stream; anything else after a
			 * member is not gzip data. */
			if (s->z.next_in[0] != 0x1f) {
				stop(s, "bytes after the gzip data at compressed offset %llu were ignored",
				     ULL(s->in_done - s->z.avail_in));
				break;
			}
			inflateReset(&s->z);
			s->member_ended = false;
		}
		if (s->data_fd < 0 && s->have + CHUNK > D9_INFLATE_IN_MEMORY && spill(s) != 0)
			break;
		uint8_t *out;
		if (s->data_fd < 0) {
			if (s->have + CHUNK > s->mem_cap) {
				size_t nc = s->mem_cap ? s->mem_cap * 2 : CHUNK * 4;
				while (nc < s->have + CHUNK)
					nc *= 2;
				uint8_t *nm = realloc(s->mem, nc);
				if (!nm) {
					stop(s, "decompressed stream cut at %llu bytes: out of memory", ULL(s->have));
					break;
				}
				s->mem = nm;
				s->mem_cap = nc;
				s->view = nm;
			}
			out = s->mem + s->have;
		} else {
			out = s->stage;
		}
		s->z.next_out = out;
		s->z.avail_out = CHUNK;
		int rc = inflate(&s->z, Z_NO_FLUSH);
		size_t got = CHUNK - s->z.avail_out;
		if (got && s->data_fd >= 0) {
			for (size_t done = 0; done < got;) {
				ssize_t w = pwrite(s->data_fd, out + done, got - done, (off_t)(s->have + done));
				if (w <= 0) {
					stop(s, "decompressed stream cut at %llu bytes: cannot write the temporary file (%s)",
					     ULL(s->have + done), strerror(errno));
					got = done;
					break;
				}
				done += (size_t)w;
			}
		}
		s->have += got;
		if (rc == Z_STREAM_END) {
			s->member_ended = true;
			if (s->z.avail_in == 0 && !more_input(s)) {
				s->z_done = true; /* a clean end */
				break;
			}
		} else if (rc != Z_OK && rc != Z_BUF_ERROR) {
			stop(s, "gzip data corrupt at compressed offset %llu: %s", ULL(s->in_done - s->z.avail_in),
			     s->z.msg ? s->z.msg : "invalid data");
			break;
		} else if (rc == Z_BUF_ERROR && got == 0 && s->z.avail_in != 0) {
			stop(s, "gzip data corrupt at compressed offset %llu: no progress", ULL(s->in_done - s->z.avail_in));
			break;
		}
		if (s->have >= s->limit) {
			stop(s, "decompression stopped at %llu bytes (more than 1000 times the compressed size, or 16 GiB)",
			     ULL(s->have));
			break;
		}
	}
}

const uint8_t *d9_store_get(struct d9_store *s, struct d9_window *w, uint64_t off, size_t want, size_t *avail)
{
	*avail = 0;
	if (want > D9_MAX_FRAME)
		want = D9_MAX_FRAME;
	if (off + want > s->have)
		inflate_to(s, off + want);
	if (off >= s->have)
		return NULL;
	uint64_t left = s->have - off;
	if (s->view) {
		*avail = want < left ? want : (size_t)left;
		return s->view + off;
	}
	if (w->buf && off >= w->off && off - w->off <= w->len) {
		size_t in = w->len - (size_t)(off - w->off);
		if (in >= want || (uint64_t)in == left) {
			*avail = want < in ? want : in;
			return w->buf + (off - w->off);
		}
	}
	size_t need = want > CHUNK ? want : CHUNK;
	if (need > w->cap) {
		uint8_t *nb = realloc(w->buf, need);
		if (!nb)
			return NULL;
		w->buf = nb;
		w->cap = need;
	}
	size_t n = (size_t)(left < w->cap ? left : w->cap);
	ssize_t r = pread(s->data_fd, w->buf, n, (off_t)off);
	if (r <= 0) {
		if (!s->note[0])
			snprintf(s->note, sizeof s->note, "read error at offset %llu: %s", (unsigned long long)off,
				 r < 0 ? strerror(errno) : "the file got shorter");
		w->len = 0;
		return NULL;
	}
	w->off = off;
	w->len = (size_t)r;
	*avail = want < w->len ? want : w->len;
	return w->buf;
}

void d9_window_free(struct d9_window *w)
{
	free(w->buf);
	memset(w, 0, sizeof *w);
}

void d9_store_finish(struct d9_store *s)
{
	inflate_to(s, UINT64_MAX);
}

uint64_t d9_store_size(const struct d9_store *s)
{
	return s->have;
}

uint64_t d9_store_input_size(const struct d9_store *s)
{
	return s->in_size;
}

uint64_t d9_store_input_done(const struct d9_store *s)
{
	if (!s->gzip)
		return 0; /* the reader counts raw bytes itself */
	return s->in_done - s->z.avail_in;
}

bool d9_store_gzip(const struct d9_store *s)
{
	return s->gzip;
}

const char *d9_store_note(const struct d9_store *s)
{
	return s->note[0] ? s->note : NULL;
}

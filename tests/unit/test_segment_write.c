/*
 * test_segment_write.c - schema's writing library (schema/segment_write.h, what
 * the recorder's writer and `stallscope symbolize` frame blocks with) against the
 * independent segment builder (tests/fuzz/segment_builder.c):
 *   - a file header, raw and zstd blocks and the footer framed by the library are
 *     the builder's bytes, in memory and written to a file;
 *   - a block is compressed only when that makes it smaller, and a compressor too
 *     small for a block stores it (the writer's buffer may outgrow it);
 *   - a short write is finished, or fails with the file system's reason;
 *   - inserting a block before the footer of a sealed segment gives the bytes the
 *     builder makes for the same content, keeps the segment's mode under any
 *     umask, never writes through a link planted at the temporary name, and
 *     refuses (file untouched, nothing left behind) what is not a plain footer.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef STALLSCOPE_HAVE_ZSTD
#include <zstd.h>
#endif

#include "segment_builder.h"
#include "soft_check.h"
#include "segment_reader.h"
#include "segment_write.h"


#define T0 5000000000ull
#define TAG "test"

static const struct sb_header hdr = {
	.session_id = 0xabcdef0123456789ull, .segment_seq = 7, .pid = 99, .start_ts = T0,
	.anchor_mono_ns = T0 - 1000, .anchor_real_ns = 1700000000000000000ull,
	.exe = "/opt/app/bin/server",
	/* Full width: no terminator, as the format allows. */
	.hostname = "h23456789012345678901234567890123456789012345678901234567890123456789012",
	.boot_id = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
};

/* Events of two threads, definitions first: what a writer's first block holds. */
static void events_block(struct sb *b, uint64_t base, int n)
{
	sb_begin_block(b);
	sb_string(b, 1, "worker");
	sb_location(b, 2, 1, 42, 1);
	sb_thread_def(b, 1, 1001, "w0", 1, 0, SS_THREAD_F_WORKER);
	sb_thread_def(b, 2, 1002, "w1", 1, 1, SS_THREAD_F_WORKER);
	for (int t = 1; t <= 2; t++) {
		sb_thread(b, (uint64_t)t, base);
		for (int i = 0; i < n; i++) {
			uint64_t ts = base + (uint64_t)i * 1000 + (uint64_t)t;
			sb_event(b, SS_REC_POLL_BEGIN, ts, 2, (uint64_t)(i % 7), (uint64_t)2);
			sb_event(b, SS_REC_POLL_END, ts + 400, 0);
		}
	}
	sb_event(b, SS_REC_LOSS, base + (uint64_t)n * 1000, 3, (uint64_t)5, (uint64_t)10, (uint64_t)SS_LOSS_BUFFER_FULL);
}

/* A sealed segment: a raw block, a block the builder compresses, an empty one. */
static void build_sealed(struct sb *b, bool zstd)
{
	sb_init(b, &hdr);
	events_block(b, T0 + 100, 3);
	sb_end_block(b, false);
	events_block(b, T0 + 100000, 400);
	sb_end_block(b, zstd);
	sb_begin_block(b);
	sb_end_block(b, false);
	sb_footer(b, SS_SEALED_WRITER, 5);
}

/* Re-frames every part of the builder's file with the library and checks that
 * the bytes agree; `out` gets the library's file written through a descriptor. */
static void reframe_and_compare(const uint8_t *file, size_t len, const char *out_path, bool zstd)
{
	struct ss_file_header bh;
	CHECK(len >= sizeof bh, "in %s", __func__);
	memcpy(&bh, file, sizeof bh);
	const char *exe = (const char *)file + sizeof bh;

	/* Only what a writer knows about its recording; the library adds the rest. */
	struct ss_file_header h = {
		.session_id = bh.session_id, .segment_seq = bh.segment_seq, .pid = bh.pid,
		.start_ts = bh.start_ts, .anchor_mono_ns = bh.anchor_mono_ns,
		.anchor_real_ns = bh.anchor_real_ns,
	};
	memcpy(h.boot_id, bh.boot_id, sizeof h.boot_id);
	memcpy(h.hostname, bh.hostname, sizeof h.hostname);
	ss_file_header_finish(&h, exe, (uint32_t)strlen(hdr.exe));
	CHECK(memcmp(&h, file, sizeof h) == 0, "in %s", __func__);

	int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(fd >= 0, "in %s", __func__);
	CHECK(ss_file_header_write(fd, &h, exe) == 0, "in %s", __func__);

	struct ss_block_zstd z3;
	CHECK(ss_block_zstd_init(&z3, 1 << 20, 3) == 0, "in %s", __func__);
	size_t off = h.header_size;
	int blocks = 0, compressed = 0;
	while (off + sizeof(struct ss_block_header) <= len) {
		struct ss_block_header b;
		memcpy(&b, file + off, sizeof b);
		const uint8_t *stored = file + off + sizeof b;
		struct ss_block_header nb;
		const void *np;
		if (b.kind == SS_BLOCK_FOOTER) {
			struct ss_footer f;
			memcpy(&f, stored, sizeof f);
			ss_footer_frame(&nb, &f);
			CHECK(memcmp(&nb, &b, sizeof b) == 0, "in %s", __func__);
			CHECK(ss_block_write(fd, off, &nb, &f) == 0, "in %s", __func__);
		} else {
			const uint8_t *raw = stored;
			uint8_t *dec = NULL;
			if (b.flags & SS_BLOCK_F_ZSTD) {
#ifdef STALLSCOPE_HAVE_ZSTD
				dec = malloc(b.raw_len);
				CHECK(dec && ZSTD_decompress(dec, b.raw_len, stored, b.payload_len) == b.raw_len, "in %s", __func__);
				raw = dec;
				compressed++;
#endif
			}
			nb = (struct ss_block_header){
				.kind = b.kind, .record_count = b.record_count, .block_seq = b.block_seq,
				.first_ts = b.first_ts, .last_ts = b.last_ts,
			};
			np = ss_block_frame(&nb, raw, b.raw_len, (b.flags & SS_BLOCK_F_ZSTD) ? &z3 : NULL);
			CHECK(memcmp(&nb, &b, sizeof b) == 0, "in %s", __func__);
			CHECK(memcmp(np, stored, b.payload_len) == 0, "in %s", __func__);
			CHECK(ss_block_write(fd, off, &nb, np) == 0, "in %s", __func__);
			free(dec);
		}
		off += sizeof b + b.payload_len;
		blocks++;
	}
	CHECK(off == len, "in %s", __func__);
	CHECK(blocks == 4, "in %s", __func__);
#ifdef STALLSCOPE_HAVE_ZSTD
	CHECK(compressed == (zstd ? 1 : 0), "in %s", __func__);
#else
	(void)zstd;
#endif
	ss_block_zstd_free(&z3);
	close(fd);
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	uint8_t *buf = NULL;
	size_t n = 0, cap = 0;
	for (;;) {
		if (n == cap) {
			cap = cap ? cap * 2 : 65536;
			buf = realloc(buf, cap);
			if (!buf)
				abort();
		}
		size_t got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
	}
	fclose(f);
	*len = n;
	return buf;
}

static bool same_file(const char *path, const uint8_t *want, size_t want_len)
{
	size_t len;
	uint8_t *got = slurp(path, &len);
	bool same = got && len == want_len && memcmp(got, want, len) == 0;
	free(got);
	return same;
}

static void test_framing(const char *dir)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/framed.bin", dir);
	for (int zstd = 0; zstd < 2; zstd++) {
		struct sb b;
		build_sealed(&b, zstd);
		reframe_and_compare(b.buf, b.len, path, zstd);
		CHECK(same_file(path, b.buf, b.len), "in %s", __func__);
		sb_free(&b);
	}
	unlink(path);
	/* The CRC the format names. */
	CHECK(ss_crc32c(0, "123456789", 9) == 0xE3069283u, "in %s", __func__);
}

/* Compresses only what gets smaller; a block larger than the compressor was made
 * for is stored whole. */
static void test_compress_when_it_pays(void)
{
	uint8_t rep[8192], noise[8192];
	for (size_t i = 0; i < sizeof rep; i++)
		rep[i] = (uint8_t)(i % 13);
	uint64_t x = 0x9e3779b97f4a7c15ull;
	for (size_t i = 0; i < sizeof noise; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		noise[i] = (uint8_t)x;
	}
	struct ss_block_zstd z;
	CHECK(ss_block_zstd_init(&z, sizeof rep, 1) == 0, "in %s", __func__);
	struct ss_block_header b = {.kind = SS_BLOCK_EVENTS, .block_seq = 3};
	const void *p = ss_block_frame(&b, noise, sizeof noise, &z);
	CHECK(p == noise && b.flags == 0 && b.payload_len == sizeof noise && b.raw_len == sizeof noise, "in %s", __func__);
	CHECK(ss_block_header_check(&b) == NULL && b.payload_crc == ss_crc32c(0, noise, sizeof noise), "in %s", __func__);
	b = (struct ss_block_header){.kind = SS_BLOCK_EVENTS, .block_seq = 4};
	p = ss_block_frame(&b, rep, sizeof rep, &z);
#ifdef STALLSCOPE_HAVE_ZSTD
	CHECK(p == z.buf && b.flags == SS_BLOCK_F_ZSTD && b.payload_len < sizeof rep / 10, "in %s", __func__);
	uint8_t back[sizeof rep];
	CHECK(ZSTD_decompress(back, sizeof back, p, b.payload_len) == sizeof rep, "in %s", __func__);
	CHECK(memcmp(back, rep, sizeof rep) == 0, "in %s", __func__);
#endif
	CHECK(b.raw_len == sizeof rep && ss_block_header_check(&b) == NULL, "in %s", __func__);
	CHECK(b.payload_crc == ss_crc32c(0, p, b.payload_len), "in %s", __func__);
	ss_block_zstd_free(&z);

	/* Half noise: smaller compressed, but not small enough for the buffer. */
	uint8_t half[sizeof rep];
	memcpy(half, rep, sizeof half / 2);
	memcpy(half + sizeof half / 2, noise, sizeof half / 2);
	CHECK(ss_block_zstd_init(&z, 64, 1) == 0, "in %s", __func__);
	b = (struct ss_block_header){.kind = SS_BLOCK_EVENTS};
	p = ss_block_frame(&b, half, sizeof half, &z);
	CHECK(p == half && b.flags == 0 && b.payload_len == sizeof half, "in %s", __func__);
	ss_block_zstd_free(&z);
	CHECK(ss_block_zstd_init(&z, sizeof half, 1) == 0, "in %s", __func__);
	p = ss_block_frame(&b, half, sizeof half, &z);
#ifdef STALLSCOPE_HAVE_ZSTD
	CHECK(p == z.buf && b.flags == SS_BLOCK_F_ZSTD && b.payload_len < sizeof half, "in %s", __func__);
#endif
	ss_block_zstd_free(&z);
	ss_block_zstd_free(&z); /* twice is safe */
}

/* A file-size limit lets part of a block in: the rest is tried, and the reason
 * (EFBIG) comes back rather than a silent short write. */
static void test_short_write(const char *dir)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/short.bin", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(fd >= 0, "in %s", __func__);
	uint8_t payload[200];
	memset(payload, 0x5a, sizeof payload);
	struct ss_block_header b = {.kind = SS_BLOCK_EVENTS};
	ss_block_frame(&b, payload, sizeof payload, NULL);
	struct rlimit old, lim;
	CHECK(getrlimit(RLIMIT_FSIZE, &old) == 0, "in %s", __func__);
	lim = old;
	lim.rlim_cur = 100;
	signal(SIGXFSZ, SIG_IGN);
	CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0, "in %s", __func__);
	errno = 0;
	int rc = ss_block_write(fd, 0, &b, payload);
	int e = errno;
	CHECK(setrlimit(RLIMIT_FSIZE, &old) == 0, "in %s", __func__);
	CHECK(rc == -1 && e == EFBIG, "in %s", __func__);
	struct stat st;
	CHECK(fstat(fd, &st) == 0 && st.st_size == 100, "in %s", __func__);
	/* Without the limit the same call writes it whole. */
	CHECK(ss_block_write(fd, 0, &b, payload) == 0, "in %s", __func__);
	CHECK(fstat(fd, &st) == 0 && (size_t)st.st_size == sizeof b + sizeof payload, "in %s", __func__);
	close(fd);
	unlink(path);
}

static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	int n = 0;
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	if (d)
		closedir(d);
	return n;
}

static void write_file(const char *path, const void *p, size_t n, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	CHECK(fd >= 0 && write(fd, p, n) == (ssize_t)n, "in %s", __func__);
	CHECK(fchmod(fd, mode) == 0, "in %s", __func__);
	close(fd);
}

static void test_insert_block(const char *dir)
{
	char path[4096], link[4300], victim[4096];
	snprintf(path, sizeof path, "%s/ins.0.bin", dir);
	snprintf(victim, sizeof victim, "%s/victim", dir);

	/* The builder's segment, and the builder's idea of it with a symbol table. */
	struct sb s, e;
	build_sealed(&s, true);
	build_sealed(&e, true);
	uint64_t footer_off = s.len - sizeof(struct ss_block_header) - sizeof(struct ss_footer);
	e.len = footer_off; /* drop the footer, add the block, seal again */
	e.block_seq--;
	uint8_t sym[64];
	size_t n = 0;
	n += ss_put_varint(sym + n, 0x401000);
	n += ss_put_varint(sym + n, 0);
	n += ss_put_varint(sym + n, 17);
	n += ss_put_varint(sym + n, 4);
	memcpy(sym + n, "main", 4), n += 4;
	n += ss_put_varint(sym + n, 6);
	memcpy(sym + n, "main.c", 6), n += 6;
	sb_begin_block(&e);
	sb_ext(&e, SS_REC_SYMBOL, sym, n);
	uint8_t *payload = malloc(e.blk_len);
	memcpy(payload, e.blk, e.blk_len);
	size_t plen = e.blk_len;
	sb_end_block(&e, false);
	sb_footer(&e, SS_SEALED_WRITER, 5);

	/* A link where the first temporary name will be: it must not be followed. */
	const char victim_text[] = "not yours";
	write_file(victim, victim_text, sizeof victim_text, 0600);
	snprintf(link, sizeof link, "%s.%s-%ld.0", path, TAG, (long)getpid());
	CHECK(symlink(victim, link) == 0, "in %s", __func__);

	write_file(path, s.buf, s.len, 0640);
	mode_t old_mask = umask(077);
	char why[256] = "";
	int rc = ss_segment_insert_block(path, footer_off, payload, plen, TAG, why, sizeof why);
	umask(old_mask);
	if (rc != 0)
		fprintf(stderr, "insert: %s\n", why);
	CHECK(rc == 0, "in %s", __func__);
	CHECK(same_file(path, e.buf, e.len), "in %s", __func__);
	struct stat st;
	CHECK(lstat(path, &st) == 0 && (st.st_mode & 07777) == 0640 && S_ISREG(st.st_mode), "in %s", __func__);
	CHECK(same_file(victim, (const uint8_t *)victim_text, sizeof victim_text), "in %s", __func__);
	CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode), "in %s", __func__);
	CHECK(count_entries(dir) == 3, "in %s", __func__); /* segment, victim, link: no temporary left */

	/* The result is what a reader takes as sealed and whole. */
	struct ss_reader *r;
	char err[256];
	CHECK(ss_reader_open_file(&r, path, NULL, NULL, err, sizeof err) == 0, "in %s", __func__);
	struct ss_block_info bi;
	int blocks = 0;
	while (ss_reader_next_block(r, &bi))
		blocks++;
	CHECK(blocks == 5 && ss_reader_stats(r)->sealed, "in %s", __func__);
	CHECK(ss_reader_damage(r)->kind == SS_DAMAGE_NONE, "in %s", __func__);
	ss_reader_close(r);

	/* Refusals leave the file as it was and nothing beside it. */
	write_file(path, s.buf, s.len, 0640);
	uint64_t first_block = sizeof(struct ss_file_header) + strlen(hdr.exe);
	why[0] = 0;
	CHECK(ss_segment_insert_block(path, first_block, payload, plen, TAG, why, sizeof why) == -1, "in %s", __func__);
	CHECK(strstr(why, "footer") != NULL, "in %s", __func__);
	CHECK(ss_segment_insert_block(path, s.len, payload, plen, TAG, why, sizeof why) == -1, "in %s", __func__);
	CHECK(strcmp(why, "cannot read the footer") == 0, "in %s", __func__);
	/* A compressed footer (no writer makes one) cannot be re-sealed in place. */
	uint8_t *bad = malloc(s.len);
	memcpy(bad, s.buf, s.len);
	struct ss_block_header fh;
	memcpy(&fh, bad + footer_off, sizeof fh);
	fh.flags = SS_BLOCK_F_ZSTD;
	fh.header_crc = ss_block_header_crc(&fh);
	memcpy(bad + footer_off, &fh, sizeof fh);
	write_file(path, bad, s.len, 0640);
	CHECK(ss_segment_insert_block(path, footer_off, payload, plen, TAG, why, sizeof why) == -1, "in %s", __func__);
	CHECK(same_file(path, bad, s.len), "in %s", __func__);
	CHECK(count_entries(dir) == 3, "in %s", __func__);
	char missing[4200];
	snprintf(missing, sizeof missing, "%s/no-such-dir/x.bin", dir);
	CHECK(ss_segment_insert_block(missing, footer_off, payload, plen, TAG, why, sizeof why) == -1, "in %s", __func__);
	CHECK(strcmp(why, strerror(ENOENT)) == 0, "in %s", __func__);
	/* A directory that takes no new file: the old one stays. */
	write_file(path, s.buf, s.len, 0640);
	if (geteuid() != 0) {
		CHECK(chmod(dir, 0500) == 0, "in %s", __func__);
		CHECK(ss_segment_insert_block(path, footer_off, payload, plen, TAG, why, sizeof why) == -1, "in %s", __func__);
		CHECK(strncmp(why, "creating the new file: ", 23) == 0, "in %s", __func__);
		CHECK(chmod(dir, 0700) == 0, "in %s", __func__);
		CHECK(same_file(path, s.buf, s.len), "in %s", __func__);
	}

	free(bad);
	free(payload);
	unlink(link);
	unlink(victim);
	unlink(path);
	sb_free(&s);
	sb_free(&e);
}

int main(void)
{
	char dir[] = "/tmp/ss-segment-write-XXXXXX";
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_framing(dir);
	test_compress_when_it_pays();
	test_short_write(dir);
	test_insert_block(dir);
	rmdir(dir);
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("segment write: all checks passed\n");
	return 0;
}

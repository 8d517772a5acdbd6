/*
 * standalone_driver.c - runs the libFuzzer target without libFuzzer, for gcc
 * builds and CI: replays every corpus file, then a deterministic mutation loop
 * (bit flips, byte sets, truncations, insertions, deletions, splices, integer and
 * varint tweaks, optionally re-sealed with correct CRCs so the mutation reaches
 * the decoders) for a number of iterations or seconds.
 *
 *     standalone_driver [--seconds N] [--iterations N] [--seed N] PATH...
 *
 * PATH is a corpus directory or a file. When the process dies (sanitizer report or
 * signal) the input being run is written to ./crash-standalone-segment_reader so it
 * can be replayed with `standalone_driver --iterations 0 FILE`.
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fuzz_target.h"
#include "segment_format.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif

#define DRIVER_MAX_INPUT (256u << 10)
#define MAX_CORPUS 4096

struct input {
	uint8_t *data;
	size_t len;
};

static struct input corpus[MAX_CORPUS];
static size_t n_corpus;

static const uint8_t *cur_data;
static size_t cur_len;

static void save_current(void)
{
	static const char path[] = "crash-standalone-segment_reader";
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return;
	size_t off = 0;
	while (cur_data && off < cur_len) {
		ssize_t n = write(fd, cur_data + off, cur_len - off);
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	close(fd);
	static const char msg[] = "standalone_driver: input saved to crash-standalone-segment_reader\n";
	if (write(2, msg, sizeof msg - 1) < 0)
		return;
}

static void on_signal(int sig)
{
	save_current();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void add_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		exit(1);
	}
	uint8_t *buf = malloc(DRIVER_MAX_INPUT);
	if (!buf)
		abort();
	size_t n = fread(buf, 1, DRIVER_MAX_INPUT, f);
	fclose(f);
	if (n_corpus == MAX_CORPUS) {
		free(buf);
		return;
	}
	corpus[n_corpus].data = buf;
	corpus[n_corpus].len = n;
	n_corpus++;
}

static void add_path(const char *path)
{
	DIR *d = opendir(path);
	if (!d) {
		add_file(path);
		return;
	}
	struct dirent *e;
	char full[4096];
	/* Sorted order keeps runs reproducible across filesystems. */
	struct dirent **list;
	closedir(d);
	int n = scandir(path, &list, NULL, alphasort);
	for (int i = 0; i < n; i++) {
		e = list[i];
		if (e->d_name[0] != '.') {
			snprintf(full, sizeof full, "%s/%s", path, e->d_name);
			add_file(full);
		}
		free(e);
	}
	free(list);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	uint64_t x = rng_state;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng_state = x;
	return x * 0x2545f4914f6cdd1dull;
}

static size_t below(size_t n)
{
	return n ? (size_t)(rnd() % n) : 0;
}

static const uint32_t interesting[] = {
	0, 1, 2, 7, 0x7f, 0x80, 0xff, 0x100, 0xffff, 0x10000, 0x7fffffff, 0x80000000u,
	0xffffffffu, SS_MAX_BLOCK_PAYLOAD, SS_MAX_BLOCK_PAYLOAD + 1, SS_MAX_BLOCK_RAW,
	SS_MAX_EXE_LEN, SS_MAX_EXE_LEN + 1, 56, 72, 192,
};

/* Rewrites the file header and every walkable block with correct CRCs. */
static void reseal(uint8_t *b, size_t len)
{
	struct ss_file_header h;
	if (len < sizeof h)
		return;
	memcpy(&h, b, sizeof h);
	size_t off = sizeof h;
	if (h.exe_len <= SS_MAX_EXE_LEN && h.header_size == sizeof h + h.exe_len &&
	    len >= h.header_size) {
		h.header_crc = ss_file_header_crc(&h, (const char *)b + sizeof h);
		memcpy(b, &h, sizeof h);
		off = h.header_size;
	}
	while (len - off >= sizeof(struct ss_block_header)) {
		struct ss_block_header bh;
		memcpy(&bh, b + off, sizeof bh);
		size_t body = off + sizeof bh;
		if (bh.payload_len > len - body)
			break;
		bh.payload_crc = ss_crc32c(0, b + body, bh.payload_len);
		bh.header_crc = ss_block_header_crc(&bh);
		memcpy(b + off, &bh, sizeof bh);
		off = body + bh.payload_len;
	}
}

static size_t mutate(uint8_t *b, size_t len, size_t cap)
{
	int rounds = 1 + (int)below(4);
	for (int i = 0; i < rounds; i++) {
		switch (below(9)) {
		case 0: /* flip a bit */
			if (len)
				b[below(len)] ^= (uint8_t)(1u << below(8));
			break;
		case 1: /* set a byte */
			if (len)
				b[below(len)] = (uint8_t)rnd();
			break;
		case 2: /* truncate */
			len = below(len + 1);
			break;
		case 3: { /* insert random bytes */
			size_t n = 1 + below(16), at = below(len + 1);
			if (len + n > cap)
				break;
			memmove(b + at + n, b + at, len - at);
			for (size_t k = 0; k < n; k++)
				b[at + k] = (uint8_t)rnd();
			len += n;
			break;
		}
		case 4: { /* delete a range */
			if (!len)
				break;
			size_t at = below(len), n = 1 + below(len - at);
			memmove(b + at, b + at + n, len - at - n);
			len -= n;
			break;
		}
		case 5: { /* splice: the tail of another corpus entry */
			const struct input *o = &corpus[below(n_corpus)];
			size_t at = below(len + 1), from = below(o->len + 1);
			size_t n = o->len - from;
			if (at + n > cap)
				n = cap - at;
			memcpy(b + at, o->data + from, n);
			len = at + n;
			break;
		}
		case 6: { /* an interesting 32-bit value, e.g. over a length field */
			if (len < 4)
				break;
			uint32_t v = interesting[below(sizeof interesting / sizeof interesting[0])];
			if (below(4) == 0)
				v += (uint32_t)below(3) - 1u;
			memcpy(b + below(len - 3), &v, 4);
			break;
		}
		case 7: /* a long or unterminated varint */
			if (len)
				for (size_t at = below(len), k = 0; k < 1 + below(12) && at + k < len; k++)
					b[at + k] |= 0x80;
			break;
		case 8: { /* an unknown or extension type byte */
			if (len)
				b[below(len)] = (uint8_t)(below(2) ? 0x40 + below(0xc0) : below(0x40));
			break;
		}
		}
	}
	if (below(2))
		reseal(b, len);
	return len;
}

static void run_one(const uint8_t *data, size_t len)
{
	cur_data = data;
	cur_len = len;
	LLVMFuzzerTestOneInput(data, len);
}

int main(int argc, char **argv)
{
	double seconds = 0;
	long long iterations = -1;
	int i = 1;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (i + 1 >= argc)
			break;
		if (strcmp(argv[i], "--seconds") == 0)
			seconds = atof(argv[++i]);
		else if (strcmp(argv[i], "--iterations") == 0)
			iterations = atoll(argv[++i]);
		else if (strcmp(argv[i], "--seed") == 0)
			rng_state = strtoull(argv[++i], NULL, 0) | 1;
		else
			break;
	}
	if (i >= argc) {
		fprintf(stderr, "usage: %s [--seconds N] [--iterations N] [--seed N] PATH...\n", argv[0]);
		return 1;
	}
	for (; i < argc; i++)
		add_path(argv[i]);
	if (!n_corpus) {
		fprintf(stderr, "standalone_driver: empty corpus\n");
		return 1;
	}
	if (iterations < 0 && seconds <= 0)
		seconds = 10;

#if defined(__SANITIZE_ADDRESS__)
	__sanitizer_set_death_callback(save_current);
#endif
	signal(SIGSEGV, on_signal);
	signal(SIGABRT, on_signal);
	signal(SIGBUS, on_signal);
	signal(SIGFPE, on_signal);

	for (size_t k = 0; k < n_corpus; k++)
		run_one(corpus[k].data, corpus[k].len);

	uint8_t *buf = malloc(DRIVER_MAX_INPUT);
	if (!buf)
		abort();
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	long long done = 0;
	for (;;) {
		if (iterations >= 0 && done >= iterations)
			break;
		/* Every input: a slow one (a database read up to its time
		 * budget) must not carry the run far past --seconds. */
		if (seconds > 0) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			double el = (double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) / 1e9;
			if (el >= seconds)
				break;
		}
		const struct input *in = &corpus[below(n_corpus)];
		memcpy(buf, in->data, in->len);
		size_t len = mutate(buf, in->len, DRIVER_MAX_INPUT);
		run_one(buf, len);
		done++;
	}
	printf("standalone_driver: %zu corpus inputs replayed, %lld mutated inputs run, no crash\n",
	       n_corpus, done);
	free(buf);
	return 0;
}

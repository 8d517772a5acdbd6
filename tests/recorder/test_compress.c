/*
 * test_compress.c - which blocks the writer compresses: none under 8 KiB (a
 * light program's blocks, on which zstd saves a few hundred bytes for more CPU
 * than the rest of a writer cycle), and, with zstd in the build, the large
 * blocks of a burst, in a first session and again in a second one (the
 * process keeps one compressor across sessions). Every block reads back.
 */
#include <stallscope/stallscope.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "segment_format.h"
#include "trace_check.h"

#define SMALL_RAW 8192u

struct tally {
	int small, small_zstd, large, large_zstd;
};

/* Walks the blocks of every sealed segment in dir. */
static struct tally walk(const char *dir)
{
	struct tally t = {0};
	DIR *d = opendir(dir);
	CHECK(d != NULL, "opendir %s", dir);
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		size_t n = strlen(de->d_name);
		if (n < 4 || strcmp(de->d_name + n - 4, ".bin") != 0)
			continue;
		char path[1200];
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		FILE *f = fopen(path, "rb");
		CHECK(f != NULL, "open %s", path);
		struct ss_file_header h;
		CHECK(fread(&h, sizeof h, 1, f) == 1, "%s: header", path);
		CHECK(fseek(f, (long)h.header_size, SEEK_SET) == 0, "%s: seek", path);
		struct ss_block_header b;
		while (fread(&b, sizeof b, 1, f) == 1) {
			CHECK(b.magic == SS_BLOCK_MAGIC, "%s: block magic", path);
			if (b.kind == SS_BLOCK_EVENTS) {
				int z = (b.flags & SS_BLOCK_F_ZSTD) != 0;
				if (b.raw_len < SMALL_RAW) {
					t.small++;
					t.small_zstd += z;
				} else {
					t.large++;
					t.large_zstd += z;
				}
			}
			CHECK(fseek(f, (long)b.payload_len, SEEK_CUR) == 0, "%s: skip payload", path);
		}
		fclose(f);
	}
	closedir(d);
	return t;
}

static void session(const char *dir, int burst)
{
	struct stallscope_config cfg;
	stallscope_config_init(&cfg);
	cfg.output_dir = dir;
	cfg.file_prefix = "cz";
	cfg.cpu_sampling = 0;
	cfg.stall_threshold_ms = 0;
	CHECK(stallscope_start(&cfg) == 0, "start: %s", stallscope_last_error());
	stallscope_worker_begin("cz", 0);
	uint32_t loc = STALLSCOPE_LOCATION();
	for (uint64_t i = 0; i < (burst ? 20000u : 20u); i++) {
		stallscope_poll_begin(i + 1, loc);
		stallscope_poll_end();
	}
	stallscope_worker_end();
	CHECK(stallscope_stop() == 0, "stop: %s", stallscope_last_error());
	struct tc_trace tr;
	CHECK(tc_load_dir(&tr, dir, "cz", true) == 0, "load");
	for (size_t i = 0; i < tr.nsegs; i++)
		CHECK(tr.segs[i].damage == SS_DAMAGE_NONE, "damage: %s", tr.segs[i].damage_reason);
	uint64_t want = burst ? 20000u : 20u;
	CHECK(tr.by_type[SS_REC_POLL_BEGIN] == want && tr.by_type[SS_REC_POLL_END] == want,
	      "%llu poll begins, %llu ends read back (want %llu)",
	      (unsigned long long)tr.by_type[SS_REC_POLL_BEGIN],
	      (unsigned long long)tr.by_type[SS_REC_POLL_END], (unsigned long long)want);
	tc_free(&tr);
}

int main(void)
{
	for (int round = 0; round < 2; round++) {
		char *quiet = tc_tmpdir("compress-small");
		session(quiet, 0);
		struct tally a = walk(quiet);
		printf("round %d, 20 polls: %d small blocks (%d zstd), %d large\n", round, a.small,
		       a.small_zstd, a.large);
		CHECK(a.small >= 1 && a.large == 0, "%d small, %d large blocks", a.small, a.large);
		CHECK(a.small_zstd == 0, "%d blocks under %u bytes compressed", a.small_zstd, SMALL_RAW);
		tc_rmrf(quiet);
		free(quiet);

		char *busy = tc_tmpdir("compress-burst");
		session(busy, 1);
		struct tally b = walk(busy);
		printf("round %d, 20000 polls: %d small blocks (%d zstd), %d large (%d zstd)\n", round,
		       b.small, b.small_zstd, b.large, b.large_zstd);
		CHECK(b.small_zstd == 0, "%d blocks under %u bytes compressed", b.small_zstd, SMALL_RAW);
		CHECK(b.large >= 1, "20000 polls made no block of %u bytes or more", SMALL_RAW);
#ifdef STALLSCOPE_HAVE_ZSTD
		CHECK(b.large_zstd >= 1, "none of %d large blocks compressed", b.large);
#else
		CHECK(b.large_zstd == 0, "a block compressed in a build without zstd");
#endif
		tc_rmrf(busy);
		free(busy);
	}
	printf("compress: ok\n");
	return 0;
}

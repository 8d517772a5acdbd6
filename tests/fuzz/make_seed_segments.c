/*
 * make_seed_segments.c - writes the small valid segments of the fuzz seed corpus
 * (tests/fuzz/corpus/segment_reader/): every record type, compressed and not,
 * sealed and unsealed, so mutations start from inputs that reach every decoder.
 *
 *     make_seed_segments OUTDIR
 *
 * Output is deterministic, so regenerating leaves committed seeds unchanged.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "segment_builder.h"

#define T0 1000000000ull /* start_ts of every seed */

static void start(struct sb *b, uint64_t seq)
{
	struct sb_header h = {
		.session_id = 0x5eed5eed12345678ull,
		.segment_seq = seq,
		.pid = 4242,
		.start_ts = T0,
		.anchor_mono_ns = T0,
		.anchor_real_ns = 1714564800000000000ull, /* 2024-05-01 12:00:00 UTC */
		.exe = "/usr/bin/example-runtime",
		.hostname = "seedhost",
		.boot_id = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
	};
	sb_init(b, &h);
}

/* Definitions and one event of every type, on two workers and the process. */
static void every_record(struct sb *b, bool zstd)
{
	sb_begin_block(b);
	/* The vDSO form: the source and five zeros. */
	static const uint8_t clock_vdso[] = { 2, 0, 0, 0, 0, 0 };
	sb_ext(b, SS_REC_CLOCK, clock_vdso, sizeof clock_vdso);
	sb_meta(b, "version", "stallscope 0.1.0");
	sb_string(b, 1, "tokio");
	sb_string(b, 2, "src/server.c");
	sb_string(b, 3, "handle_request");
	sb_string(b, 4, "gc");
	sb_location(b, 1, 2, 42, 3);
	sb_thread_def(b, 1, 4711, "worker-0", 1, 0, SS_THREAD_F_WORKER);
	sb_thread_def(b, 2, 4712, "worker-1", 1, 1, SS_THREAD_F_WORKER);
	sb_thread(b, 1, T0 + 10);
	sb_event(b, SS_REC_WORKER_BEGIN, T0 + 10, 2, (uint64_t)1, (uint64_t)0);
	sb_event(b, SS_REC_SPAWN, T0 + 20, 2, (uint64_t)7, (uint64_t)1);
	sb_event(b, SS_REC_POLL_BEGIN, T0 + 30, 2, (uint64_t)7, (uint64_t)1);
	sb_event(b, SS_REC_WAKE, T0 + 35, 1, (uint64_t)8);
	sb_event(b, SS_REC_MARK, T0 + 36, 2, (uint64_t)4, ss_zigzag(-5));
	sb_event(b, SS_REC_SPAN_BEGIN, T0 + 37, 1, (uint64_t)4);
	sb_event(b, SS_REC_SPAN_END, T0 + 38, 1, (uint64_t)4);
	sb_event(b, SS_REC_POLL_END, T0 + 40, 0);
	sb_event(b, SS_REC_TERMINATE, T0 + 41, 1, (uint64_t)7);
	sb_event(b, SS_REC_QUEUE, T0 + 42, 2, (uint64_t)3, (uint64_t)9);
	sb_event(b, SS_REC_PARK, T0 + 50, 0);
	sb_thread(b, 2, T0 + 15);
	sb_event(b, SS_REC_UNPARK, T0 + 16, 0);
	sb_event(b, SS_REC_LOSS, T0 + 17, 3, (uint64_t)12, (uint64_t)100, (uint64_t)SS_LOSS_BUFFER_FULL);
	sb_thread(b, 0, T0 + 60);
	sb_event(b, SS_REC_LOSS, T0 + 60, 3, (uint64_t)5, (uint64_t)0, (uint64_t)SS_LOSS_NO_BUFFER);
	sb_end_block(b, zstd);

	sb_begin_block(b);
	/* A CLOCK record as the writer puts at the start of a block on the TSC:
	 * source 1, tsc 2^32, mono_ns T0 + 99, 2.5e9 ticks/s, 3 points, drift 17. */
	static const uint8_t clock_tsc[] = { 1, 0x80, 0x80, 0x80, 0x80, 0x10, 0xe3, 0x94, 0xeb, 0xdc, 0x03,
					     0x80, 0xf2, 0x8b, 0xa8, 0x09, 3, 17 };
	sb_ext(b, SS_REC_CLOCK, clock_tsc, sizeof clock_tsc);
	sb_thread(b, 1, T0 + 100);
	sb_event(b, SS_REC_UNPARK, T0 + 101, 0);
	sb_event(b, SS_REC_WORKER_END, T0 + 150, 0);
	sb_event(b, SS_REC_THREAD_EXIT, T0 + 151, 0);
	/* Sampling records: a stack, a sample using it, a switch, a thread name, a
	 * sampler loss and a mapping (bodies are varints; see segment_format.h). */
	static const uint8_t stack[] = { 7, 1, 3, 0x81, 0x80, 0x80, 0x80, 0x0f, 0x90, 0x20, 0x91, 0x21 };
	sb_ext(b, SS_REC_STACK, stack, sizeof stack);
	static const uint8_t sample[] = { 1, 42, 0xe4, 0x00, 2, 0x81, 0x84, 0x3d, 1, 7 };
	sb_ext(b, SS_REC_SAMPLE, sample, sizeof sample);
	static const uint8_t sw[] = { 1, 42, 0xe5, 0x00, 2, 1 };
	sb_ext(b, SS_REC_SWITCH, sw, sizeof sw);
	static const uint8_t comm[] = { 1, 42, 0xe6, 0x00, 4, 'w', 'r', 'k', '0' };
	sb_ext(b, SS_REC_COMM, comm, sizeof comm);
	static const uint8_t sloss[] = { 42, 0xe7, 0x00, 10, 3, 1 };
	sb_ext(b, SS_REC_SAMPLER_LOSS, sloss, sizeof sloss);
	static const uint8_t map[] = { 0, 0x80, 0x20, 0x80, 0x40, 0, 5, 2, 0xab, 0xcd, 4, '/', 'b', 'i', 'n' };
	sb_ext(b, SS_REC_MAPPING, map, sizeof map);
	/* Stall records: a capture using stack 7 with a reason, its end, and a task
	 * dump (thread 1, tid 42, task 7 at location 1, times near T0 + 0x64). */
	static const uint8_t stall[] = { 1, 42, 7, 1, 0xe4, 0x00, 0xe8, 0x00, 0, 1, 0, 7,
					 7, 'r', 'u', 'n', 'n', 'i', 'n', 'g' };
	sb_ext(b, SS_REC_STALL, stall, sizeof stall);
	static const uint8_t stall_blocked[] = { 1, 42, 7, 1, 0xe4, 0x00, 0xe9, 0x00, 1, 2, 1, 0, 0 };
	sb_ext(b, SS_REC_STALL, stall_blocked, sizeof stall_blocked);
	static const uint8_t stall_end[] = { 1, 42, 7, 0xe4, 0x00, 0xea, 0x00, 2 };
	sb_ext(b, SS_REC_STALL_END, stall_end, sizeof stall_end);
	static const uint8_t dump[] = { 7, 1, 42, 1, 0xe5, 0x00, 0x80, 0x80, 0x05, 7 };
	sb_ext(b, SS_REC_TASK_DUMP, dump, sizeof dump);
	sb_ext(b, 0x6f, "", 0);
	sb_end_block(b, zstd);
}

static int write_file(const char *dir, const char *name, const struct sb *b, size_t len)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(b->buf, 1, len, f) != len || fclose(f) != 0) {
		perror(path);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
		return 1;
	}
	const char *dir = argv[1];
	struct sb b;
	int rc = 0;

	start(&b, 0);
	every_record(&b, false);
	sb_footer(&b, SS_SEALED_WRITER, 17);
	rc |= write_file(dir, "sealed-raw.bin", &b, b.len);
	sb_free(&b);

	start(&b, 1);
	every_record(&b, true);
	sb_footer(&b, SS_SEALED_WRITER, 17);
	rc |= write_file(dir, "sealed-zstd.bin", &b, b.len);
	sb_free(&b);

	/* Still being written: no footer, and a tail cut inside the next block. */
	start(&b, 2);
	every_record(&b, false);
	size_t intact = b.len;
	sb_begin_block(&b);
	sb_thread(&b, 2, T0 + 200);
	sb_event(&b, SS_REC_PARK, T0 + 210, 0);
	sb_end_block(&b, false);
	rc |= write_file(dir, "active-unsealed.bin.active", &b, intact);
	rc |= write_file(dir, "active-partial-tail.bin.active", &b, b.len - 3);
	sb_free(&b);

	start(&b, 3);
	rc |= write_file(dir, "header-only.bin.active", &b, b.len);
	sb_begin_block(&b);
	sb_end_block(&b, false);
	sb_footer(&b, SS_SEALED_RECOVERY, 0);
	rc |= write_file(dir, "empty-block-recovered.bin", &b, b.len);
	sb_free(&b);

	/* Many small compressed blocks, alternating threads. */
	start(&b, 4);
	sb_begin_block(&b);
	sb_string(&b, 1, "rt");
	for (uint64_t t = 1; t <= 4; t++)
		sb_thread_def(&b, t, 100 + t, "w", 1, t - 1, SS_THREAD_F_WORKER);
	sb_end_block(&b, true);
	for (uint64_t blk = 0; blk < 6; blk++) {
		uint64_t base = T0 + 1000 * (blk + 1);
		sb_begin_block(&b);
		for (uint64_t t = 1; t <= 4; t++) {
			sb_thread(&b, t, base + t);
			sb_event(&b, SS_REC_POLL_BEGIN, base + t + 1, 2, blk * 10 + t, (uint64_t)0);
			sb_event(&b, SS_REC_POLL_END, base + t + 300, 0);
		}
		sb_end_block(&b, blk % 2 == 0);
	}
	sb_footer(&b, SS_SEALED_WRITER, 0);
	rc |= write_file(dir, "many-blocks.bin", &b, b.len);
	sb_free(&b);
	return rc ? 1 : 0;
}

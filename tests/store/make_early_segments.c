/*
 * make_early_segments.c - writes the two segments of a recording in which a CPU
 * sample reaches a segment before the poll it falls in, as the recorder writes
 * them when its per-CPU sample rings are drained after the worker's event ring
 * and the segment rotates between the two: segment 0 holds the worker's sample
 * at 2.5 s, segment 1 (begun at 2.6 s) the poll from 2 s to 3 s. test_pg_store
 * imports them one at a time into PostgreSQL and SQLite: the sample has no poll
 * after the first and belongs to the poll after the second, in both stores.
 * Built with the fuzzers' segment builder (a second implementation of the
 * format, independent of the recorder's writer).
 *
 * usage: make_early_segments DIR   (writes DIR/early.0.bin and DIR/early.1.bin)
 */
#include <stdio.h>
#include <stdlib.h>

#include "segment_builder.h"

static const uint64_t S = 1000000000ull;

static void defs(struct sb *b)
{
	sb_string(b, 1, "rt");
	sb_string(b, 3, "early.c");
	sb_string(b, 4, "early_task");
	sb_location(b, 2, 3, 42, 4);
	sb_thread_def(b, 1, 101, "worker-0", 1, 0, SS_THREAD_F_WORKER);
}

static int write_seg(const char *dir, int seq, struct sb *b)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/early.%d.bin", dir, seq);
	sb_footer(b, SS_SEALED_WRITER, 0);
	FILE *f = fopen(path, "wb");
	int ok = f && fwrite(b->buf, 1, b->len, f) == b->len;
	if (f && fclose(f) != 0)
		ok = 0;
	if (!ok)
		perror(path);
	sb_free(b);
	return ok;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	struct sb_header h = { .session_id = 4242, .pid = 4242, .exe = "/usr/bin/early", .hostname = "early-host",
			       .boot_id = "early-boot", .start_ts = 1 * S, .anchor_mono_ns = 1 * S,
			       .anchor_real_ns = 1700000000ull * S };
	struct sb b0, b1;
	h.segment_seq = 0;
	sb_init(&b0, &h);
	sb_begin_block(&b0);
	defs(&b0);
	sb_thread(&b0, 1, 1 * S);
	sb_event(&b0, SS_REC_POLL_BEGIN, 1 * S, 2, (uint64_t)7, (uint64_t)2);
	sb_event(&b0, SS_REC_POLL_END, 1 * S + S / 10, 0);
	sb_cpu_sample(&b0, 1, 101, 2 * S + S / 2, 0);
	sb_end_block(&b0, false);

	h.segment_seq = 1;
	h.start_ts = 2 * S + 6 * S / 10;
	sb_init(&b1, &h);
	sb_begin_block(&b1);
	defs(&b1);
	sb_thread(&b1, 1, 2 * S);
	sb_event(&b1, SS_REC_POLL_BEGIN, 2 * S, 2, (uint64_t)8, (uint64_t)2);
	sb_event(&b1, SS_REC_POLL_END, 3 * S, 0);
	sb_end_block(&b1, false);
	return write_seg(argv[1], 0, &b0) && write_seg(argv[1], 1, &b1) ? 0 : 1;
}

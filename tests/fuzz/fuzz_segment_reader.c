/*
 * fuzz_segment_reader.c - libFuzzer target: one input is one segment file, fed
 * through everything a reader does with it: header, blocks, records, definition
 * lookups and the full `stallscope dump` rendering.
 *
 * Each input runs twice: as a real reader sees it, and with CRC checks waived so
 * that mutations reach the record decoders behind the checksums (almost every
 * random mutation would otherwise stop at a CRC mismatch).
 *
 * The floors read ahead (ss_reader_floors) are checked against a full read:
 * one for every block the reader delivers, none above the earliest time of the
 * block's records that an importer orders by time, and the threads they say
 * are defined those of the THREAD_DEFs read, in order (abort otherwise).
 */
#include <stdio.h>
#include <stdlib.h>

#include "dump_format.h"
#include "fuzz_target.h"
#include "segment_reader.h"

static FILE *sink(void)
{
	static FILE *f;
	if (!f) {
		f = fopen("/dev/null", "w");
		if (!f)
			abort();
	}
	return f;
}

static bool timed(uint8_t type)
{
	return (type >= 0x10 && type < 0x40) || type == SS_REC_SAMPLE || type == SS_REC_SWITCH ||
	       type == SS_REC_COMM || type == SS_REC_SAMPLER_LOSS || type == SS_REC_STALL ||
	       type == SS_REC_STALL_END || type == SS_REC_TASK_DUMP;
}

static void check_floors(const uint8_t *data, size_t size, const struct ss_reader_options *o)
{
	struct ss_reader *r;
	char err[256];
	struct ss_floors f;
	if (ss_reader_open_buffer(&r, data, size, o, NULL, err, sizeof err) != 0)
		return;
	if (ss_reader_floors(r, &f) != 0) {
		ss_reader_close(r);
		return; /* out of memory */
	}
	/* The same reader kept to the blocks walked reads them all. */
	ss_reader_end_at(r, f.n, &f.damage);
	struct ss_block_info b;
	struct ss_record rec;
	size_t k = 0, defs = 0;
	for (; ss_reader_next_block(r, &b); k++) {
		if (k >= f.n)
			abort(); /* a block delivered that had no floor */
		while (ss_reader_next_record(r, &rec)) {
			if (timed(rec.type) && rec.ts < f.floor[k])
				abort(); /* a record earlier than its block's floor */
			if (rec.type == SS_REC_THREAD_DEF && !f.redefined &&
			    (defs >= f.n_threads || f.threads[defs++] != rec.u.thread_def.thread))
				abort(); /* a thread defined that the walk did not tell */
		}
	}
	/* Every thread told is defined in a block the read delivered, unless the
	 * read stopped short of them (at a CRC the walk does not check). */
	if (!f.redefined && k == f.n && !f.cut_short && defs != f.n_threads)
		abort();
	ss_floors_free(&f);
	ss_reader_close(r);
}

static void run(const uint8_t *data, size_t size, bool ignore_crc, bool summary_only)
{
	/* A small definition cap so the cap path is reached by fuzz-sized inputs. */
	struct ss_reader_options o = { .max_definition_bytes = 64 << 10, .ignore_crc = ignore_crc };
	struct ss_dump_options d = { .summary_only = summary_only };
	struct ss_reader *r;
	enum ss_damage_kind kind;
	char err[256];

	if (!summary_only)
		check_floors(data, size, &o);

	if (ss_reader_open_buffer(&r, data, size, &o, &kind, err, sizeof err) != 0) {
		ss_dump_header_damage(sink(), "fuzz", kind, err);
		return;
	}
	ss_dump_segment(sink(), sink(), "fuzz", r, &d);
	/* After the end, the reader must stay at the end. */
	struct ss_block_info b;
	struct ss_record rec;
	if (ss_reader_next_block(r, &b) || ss_reader_next_record(r, &rec))
		abort();
	ss_reader_close(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	run(data, size, false, false);
	run(data, size, true, false);
	run(data, size, true, true);
	return 0;
}

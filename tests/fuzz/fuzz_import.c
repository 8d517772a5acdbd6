/*
 * fuzz_import.c - libFuzzer target: one input is one segment file, imported into
 * an in-memory SQLite database through the whole importer (stitching, tasks,
 * stacks, summaries, indexes, sample links). Run twice per input: as a real
 * import sees it, and with CRC checks waived so mutations reach the decoders and
 * the importer's state machines behind the checksums.
 */
#include <stdio.h>
#include <stdlib.h>

#include "fuzz_target.h"
#include "import.h"

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	for (int pass = 0; pass < 2; pass++) {
		struct ss_import_options o = {
			.db_path = ":memory:",
			.log = sink(),
			.no_symbols = true,          /* no file system lookups per input */
			.max_summary_buckets = 4096, /* hostile timestamps stay cheap */
			.fuzz_ignore_crc = pass == 1,
		};
		struct ss_import_result res;
		int rc = ss_import_buffer(&o, data, size, &res);
		/* An in-memory database never fails to be written. */
		if (rc == SS_IMPORT_OUTPUT)
			abort();
	}
	return 0;
}

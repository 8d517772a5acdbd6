/*
 * cmd_dump.c - `stallscope dump [--summary] SEGMENT...`: argument handling and
 * exit codes; the rendering lives in dump_format.c.
 *
 * Exit codes: 0 every file read cleanly; 2 some file was damaged or truncated (its
 * intact part was still printed); 1 usage errors and files that cannot be opened.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "dump_format.h"
#include "segment_reader.h"

void cmd_dump_help(FILE *out)
{
	fputs("usage: stallscope dump [--summary] SEGMENT...\n"
	      "\n"
	      "Decode segment files (PREFIX.N.bin, or .bin.active while being written) and\n"
	      "print them: the file header (times also as wall clock), every block, every\n"
	      "record with its time relative to the segment start and absolute\n"
	      "CLOCK_MONOTONIC ns, the footer, and a summary.\n"
	      "\n"
	      "  -s, --summary   print only the header, the footer and the summary\n"
	      "  -h, --help      show this help\n"
	      "\n"
	      "Damage is reported on stderr as\n"
	      "  stallscope dump: FILE: damage at offset N (block K): REASON; M blocks intact\n"
	      "after everything intact has been printed.\n"
	      "\n"
	      "Exit status: 0 clean, 2 damaged or truncated input, 1 usage or I/O error.\n", out);
}

static int dump_one(const char *path, const struct ss_dump_options *opts)
{
	struct ss_reader *r;
	enum ss_damage_kind kind;
	char err[256];

	if (ss_reader_open_file(&r, path, NULL, &kind, err, sizeof err) != 0) {
		if (kind == SS_DAMAGE_IO) {
			fprintf(stderr, "stallscope dump: %s: %s\n", path, err);
			return SS_EXIT_USAGE;
		}
		ss_dump_header_damage(stderr, path, kind, err);
		return SS_EXIT_DAMAGE;
	}
	int rc = ss_dump_segment(stdout, stderr, path, r, opts);
	ss_reader_close(r);
	if (ferror(stdout)) {
		fprintf(stderr, "stallscope dump: error writing output\n");
		return SS_EXIT_USAGE;
	}
	return rc ? SS_EXIT_DAMAGE : SS_EXIT_OK;
}

int cmd_dump(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "summary", no_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct ss_dump_options opts = { 0 };
	int c;

	optind = 1;
	opterr = 0; /* getopt would name the program "dump" */
	while ((c = getopt_long(argc, argv, "+sh", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			opts.summary_only = true;
			break;
		case 'h':
			cmd_dump_help(stdout);
			return SS_EXIT_OK;
		default:
			fprintf(stderr, "stallscope dump: unknown option '%s'; see 'stallscope dump --help'\n",
				argv[optind - 1]);
			return SS_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		fputs("stallscope dump: no segment given; see 'stallscope dump --help'\n", stderr);
		return SS_EXIT_USAGE;
	}
	int rc = SS_EXIT_OK;
	for (int i = optind; i < argc; i++) {
		if (i > optind)
			fputc('\n', stdout);
		int one = dump_one(argv[i], &opts);
		/* IO/usage (1) and damage (2): report damage over usage so a script sees
		 * that data was lost. */
		if (one == SS_EXIT_DAMAGE || (one == SS_EXIT_USAGE && rc == SS_EXIT_OK))
			rc = one;
	}
	fflush(stdout);
	return rc;
}

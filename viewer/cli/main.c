/*
 * main.c - the `stallscope` command: dispatches to a subcommand from one table, and
 * answers --help, help CMD and --version. A subcommand that is not in the table
 * does not exist in this build and is refused with exit code 1.
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "record.h"
#include "segment_format.h"

_Static_assert((int)SS_RECORD_EXIT_OK == (int)SS_EXIT_OK &&
	       (int)SS_RECORD_EXIT_USAGE == (int)SS_EXIT_USAGE, "record's exit codes are the CLI's");

#ifndef STALLSCOPE_VERSION
#define STALLSCOPE_VERSION "unknown"
#endif

static const struct ss_command commands[] = {
	{ "dump", "print a segment file human-readably", cmd_dump, cmd_dump_help },
	{ "import", "import segments into SQLite (PATH... -o trace.db) or PostgreSQL (--db URL)", cmd_import,
	  cmd_import_help },
	{ "symbolize", "add symbol tables to sealed segments (run where they were recorded)", cmd_symbolize,
	  cmd_symbolize_help },
	{ "report", "summarise an imported trace: long polls, stalls, delays, findings", cmd_report_entry,
	  cmd_report_entry_help },
	{ "export", "write a trace as folded stacks, Chrome trace JSON (Perfetto) or pprof; pull recordings out of PostgreSQL",
	  cmd_export_entry, cmd_export_entry_help },
	{ "compare", "set two traces side by side: polls, CPU share, delays, findings", cmd_compare,
	  cmd_compare_help },
	{ "prune", "expire old recordings from PostgreSQL (--db URL --older-than AGE)", cmd_prune,
	  cmd_prune_help },
	{ "record", "run a program with recording on (-- CMD ARGS...)", cmd_record, cmd_record_help },
};

#define N_COMMANDS (sizeof commands / sizeof commands[0])

static const struct ss_command *find_command(const char *name)
{
	for (size_t i = 0; i < N_COMMANDS; i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

static void usage(FILE *out)
{
	fputs("usage: stallscope COMMAND [ARGS...]\n"
	      "       stallscope help COMMAND\n"
	      "       stallscope --version\n"
	      "\n"
	      "stallscope records and inspects runtime stall traces.\n"
	      "\n"
	      "commands:\n", out);
	for (size_t i = 0; i < N_COMMANDS; i++)
		fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fputs("\n'stallscope help COMMAND' or 'stallscope COMMAND --help' describes one.\n", out);
}

static int unknown_command(const char *name)
{
	fprintf(stderr, "stallscope: '%s' is not a command in this build; "
		"see 'stallscope --help'\n", name);
	return SS_EXIT_USAGE;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return SS_EXIT_USAGE;
	}
	const char *arg = argv[1];
	if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
		usage(stdout);
		return SS_EXIT_OK;
	}
	if (strcmp(arg, "--version") == 0 || strcmp(arg, "-V") == 0) {
		printf("stallscope %s (segment format %u)\n", STALLSCOPE_VERSION, SS_FORMAT_VERSION);
		return SS_EXIT_OK;
	}
	if (strcmp(arg, "help") == 0) {
		if (argc < 3) {
			usage(stdout);
			return SS_EXIT_OK;
		}
		const struct ss_command *c = find_command(argv[2]);
		if (!c)
			return unknown_command(argv[2]);
		c->help(stdout);
		return SS_EXIT_OK;
	}
	if (arg[0] == '-') {
		fprintf(stderr, "stallscope: unknown option '%s'; see 'stallscope --help'\n", arg);
		return SS_EXIT_USAGE;
	}
	const struct ss_command *c = find_command(arg);
	if (!c)
		return unknown_command(arg);
	return c->run(argc - 1, argv + 1);
}

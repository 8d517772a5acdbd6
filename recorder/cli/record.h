/*
 * record.h - `stallscope record` for the `stallscope` executable's command table
 * (viewer/cli/main.c): the only part of recorder/cli/ the viewer side sees.
 */
#ifndef STALLSCOPE_RECORD_H
#define STALLSCOPE_RECORD_H

#include <stdio.h>

/* Exit codes of record besides CMD's own status, the same as every subcommand's
 * (viewer/cli/main.c checks that they agree). */
enum {
	SS_RECORD_EXIT_OK = 0,
	SS_RECORD_EXIT_USAGE = 1, /* bad arguments, or nothing could be recorded */
};

/* Runs `stallscope record ARGS` (argv[0] is "record"); returns the exit status. */
int cmd_record(int argc, char **argv);
void cmd_record_help(FILE *out);

#endif /* STALLSCOPE_RECORD_H */

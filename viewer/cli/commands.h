/*
 * commands.h - the subcommands of the `stallscope` binary. Adding one is a
 * function pair here and one line in the table in main.c.
 */
#ifndef STALLSCOPE_COMMANDS_H
#define STALLSCOPE_COMMANDS_H

#include <stdio.h>

/* Exit codes shared by every subcommand. */
enum {
	SS_EXIT_OK = 0,
	SS_EXIT_USAGE = 1,   /* bad arguments, or a file that cannot be opened or read */
	SS_EXIT_DAMAGE = 2,  /* input damaged: what was intact was still processed */
};

struct ss_command {
	const char *name;
	const char *summary;               /* one line for `stallscope --help` */
	int (*run)(int argc, char **argv); /* argv[0] is the subcommand name */
	void (*help)(FILE *out);
};

int cmd_dump(int argc, char **argv);
void cmd_dump_help(FILE *out);

int cmd_import(int argc, char **argv);
void cmd_import_help(FILE *out);

int cmd_symbolize(int argc, char **argv);
void cmd_symbolize_help(FILE *out);

int cmd_report(int argc, char **argv);
void cmd_report_help(FILE *out);

int cmd_export(int argc, char **argv);
void cmd_export_help(FILE *out);

int cmd_compare(int argc, char **argv);
void cmd_compare_help(FILE *out);

/* `report`: plain files go to cmd_report, --db to the PostgreSQL store
 * (cmd_report_db.c). */
int cmd_report_entry(int argc, char **argv);
void cmd_report_name_as(const char *name);
void cmd_report_entry_help(FILE *out);

/* `export --db URL --recording ID -o local.db` (cmd_export_db.c). */
int cmd_export_entry(int argc, char **argv);
void cmd_export_entry_help(FILE *out);
int cmd_export_db(int argc, char **argv);
void cmd_export_db_help(FILE *out);

int cmd_prune(int argc, char **argv);
void cmd_prune_help(FILE *out);

/* `stallscope record` lives on the recorder side: recorder/cli/record.h. */

#endif /* STALLSCOPE_COMMANDS_H */

/*
 * record-private.h - what the files of `stallscope record` share.
 *
 *   record.c          options, starting the program or attaching, signals, exit
 *   record_program.c  what kind of program CMD is (dynamic, static, script,
 *                     setuid) and where the preload shim is
 *   record_summary.c  after the run: repair unsealed segments, say what the
 *                     recording holds and what could not be recorded
 */
#ifndef STALLSCOPE_RECORD_PRIVATE_H
#define STALLSCOPE_RECORD_PRIVATE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "stallscope/stallscope.h"

enum ss_prog_kind {
	SS_PROG_DYNAMIC = 1, /* has an ELF interpreter: LD_PRELOAD works */
	SS_PROG_STATIC,      /* no interpreter: the shim cannot load */
	SS_PROG_UNKNOWN,     /* not an ELF file we could read */
};

struct ss_prog_info {
	char path[4096];     /* what execvp would run */
	enum ss_prog_kind kind;
	int setuid;          /* set-user/group-id and not ours to preload into */
	char interp[4096];   /* a "#!" script's interpreter, when CMD is one */
};

/* Finds cmd as execvp would (PATH unless it has a '/') and inspects the ELF file
 * that will run (the interpreter of a "#!" script). 0, or -1 with errno set
 * (ENOENT, EACCES) when there is nothing to run. */
int ss_prog_inspect(const char *cmd, struct ss_prog_info *out);

/* Path of libstallscope_preload.so: beside the installed library (relative to
 * this executable), else in the build tree. 0, or -1 with the places tried. */
int ss_preload_find(char *out, size_t len, char *tried, size_t tried_len);

/* What one run wrote, from its segments. */
struct ss_run_summary {
	uint32_t recordings, segments, active_segments;
	uint64_t bytes;
	uint64_t threads, parks, polls, samples, switches, stalls, events;
	char sampler[1024];  /* the first recording's sampler metadata */
	char files[4200];    /* DIR/PREFIX.*.bin (and children's patterns) */
};

/* Seals the unsealed segments that a run left (its processes are gone), for the
 * prefix and followed children's PREFIX-PID prefixes, with the recorder's own
 * recovery: what was intact is kept. */
void ss_run_repair(const char *dir, const struct stallscope_config *cfg);

/* Reads the segments under dir whose prefix is prefix or prefix-PID and that
 * started at or after since_ns (CLOCK_MONOTONIC). */
void ss_run_summarise(const char *dir, const char *prefix, uint64_t since_ns,
		      struct ss_run_summary *out);

#endif /* STALLSCOPE_RECORD_PRIVATE_H */

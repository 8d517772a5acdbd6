/*
 * trace_check.h - what recorder tests share: load every segment of a directory
 * through the real reader into flat arrays, and fail loudly with file:line.
 */
#ifndef STALLSCOPE_TRACE_CHECK_H
#define STALLSCOPE_TRACE_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "segment_reader.h"

#define CHECK(cond, ...)                                                             \
	do {                                                                         \
		if (!(cond)) {                                                       \
			fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                                \
			fprintf(stderr, "\n");                                       \
			exit(1);                                                     \
		}                                                                    \
	} while (0)

#define SKIP(...)                                                                    \
	do {                                                                         \
		printf("SKIP: ");                                                    \
		printf(__VA_ARGS__);                                                 \
		printf("\n");                                                        \
		exit(77);                                                            \
	} while (0)

/* One decoded event. Field meaning by type: POLL_BEGIN/SPAWN a=task b=location;
 * TERMINATE/WAKE a=task; QUEUE a=local b=global; MARK a=name b=(uint64)value;
 * SPAN_* a=name; WORKER_BEGIN a=runtime b=index; LOSS a=count b=span c=reason. */
struct tc_event {
	uint64_t ts;
	uint64_t thread;
	uint64_t a, b, c;
	uint32_t segment; /* index into tc_trace.segs */
	uint8_t type;
};

struct tc_segment {
	char path[512];
	uint64_t seq;
	bool active;            /* name ends in .active */
	bool sealed;
	struct ss_segment_header header;
	struct ss_footer footer;
	enum ss_damage_kind damage;
	char damage_reason[192];
	uint64_t events;
	uint64_t bytes;         /* file size */
	uint64_t first_ts, last_ts;
};

struct tc_thread {
	uint64_t thread, tid, runtime, worker_index;
	char name[32];
	bool exited;
};

/* Sampling records, kept when keep_events is true. A STACK id means something only
 * within its segment, so a sample carries the index of its resolved stack in
 * tc_trace.stacks (TC_NO_STACK when its segment never defined that id). */
#define TC_NO_STACK SIZE_MAX

struct tc_sample {
	uint64_t ts, thread, tid;
	uint64_t cpu;           /* as in the file: cpu + 1, 0 = unknown */
	uint64_t weight, kind;  /* kind SS_SAMPLE_KIND_CPU / _OFFCPU */
	uint64_t stack_id;      /* the id in its segment */
	size_t stack;           /* index into tc_trace.stacks, or TC_NO_STACK */
	uint32_t segment;
};

struct tc_switch {
	uint64_t ts, thread, tid, cpu, flags; /* flags SS_SWITCH_F_* */
	uint32_t segment;
};

struct tc_stack {
	uint64_t id;
	uint32_t segment;
	uint32_t nkernel, nframes;
	uint64_t *frames;       /* leaf first; frames[0 .. nkernel) are kernel addresses */
};

struct tc_mapping {
	uint64_t ts, start, end, pgoff, prot;
	uint32_t segment;
	uint8_t build_id_len;
	uint8_t build_id[20];
	char *path;             /* NUL terminated copy */
};

struct tc_meta {
	uint32_t segment;
	char *key, *value;      /* NUL terminated copies */
};

struct tc_trace {
	struct tc_segment *segs;
	size_t nsegs;
	struct tc_event *events;
	size_t nevents, capevents;
	struct tc_thread *threads;
	size_t nthreads, capthreads;
	uint64_t by_type[256];
	uint64_t lost;                /* sum of LOSS counts */
	uint64_t lost_by_reason[8];
	uint64_t corrupt_segments;    /* damage kind CORRUPT or IO */
	uint64_t truncated_segments;  /* damage kind TRUNCATED */
	uint64_t header_failures;     /* files whose header could not be read */
	/* Last seen definitions (names by id) for tests that check strings. */
	char **strings;
	size_t nstrings;
	uint64_t *loc_func;           /* location id -> function string id */
	size_t nlocs;
	/* Sampling records (only with keep_events; counts are in by_type either way). */
	struct tc_sample *samples;
	size_t nsamples, capsamples;
	struct tc_switch *switches;
	size_t nswitches, capswitches;
	struct tc_stack *stacks;
	size_t nstacks, capstacks;
	struct tc_mapping *mappings;
	size_t nmappings, capmappings;
	struct tc_meta *metas;
	size_t nmetas, capmetas;
	uint64_t sampler_lost;            /* sum of SAMPLER_LOSS counts */
	uint64_t sampler_lost_by_reason[8];
	uint64_t unresolved_stacks;       /* samples whose stack id their segment lacks */
};

/* Loads PREFIX.N.bin and PREFIX.N.bin.active of dir, in N order. keep_events = false
 * keeps only counts (for very large traces). Returns 0; failures to open a file
 * count as header_failures. */
int tc_load_dir(struct tc_trace *t, const char *dir, const char *prefix, bool keep_events);
/* Calls fn for every record of the same files, in the same order: for what the
 * arrays above leave out (STALL records and their reasons, say). Returns the
 * files read, or -1 when dir cannot be opened. */
int tc_each_record(const char *dir, const char *prefix,
		   void (*fn)(const struct ss_record *rec, void *ctx), void *ctx);
void tc_free(struct tc_trace *t);

const struct tc_thread *tc_thread(const struct tc_trace *t, uint64_t thread);
const char *tc_string(const struct tc_trace *t, uint64_t id);
/* The stack of a sample, or NULL when it was not defined in the sample's segment. */
const struct tc_stack *tc_sample_stack(const struct tc_trace *t, const struct tc_sample *s);
/* The value of the first META record with this key (any segment), or NULL. */
const char *tc_meta(const struct tc_trace *t, const char *key);
/* Events that are not LOSS records. */
uint64_t tc_real_events(const struct tc_trace *t);

/* A fresh directory under $TMPDIR (or /tmp) that tc_rmrf removes. */
char *tc_tmpdir(const char *tag);
void tc_rmrf(const char *dir);
/* Number of open descriptors of this process, and its resident memory in KiB. */
int tc_fd_count(void);
long tc_rss_kib(void);

#endif

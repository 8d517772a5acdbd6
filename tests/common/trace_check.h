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
};

/* Loads PREFIX.N.bin and PREFIX.N.bin.active of dir, in N order. keep_events = false
 * keeps only counts (for very large traces). Returns 0; failures to open a file
 * count as header_failures. */
int tc_load_dir(struct tc_trace *t, const char *dir, const char *prefix, bool keep_events);
void tc_free(struct tc_trace *t);

const struct tc_thread *tc_thread(const struct tc_trace *t, uint64_t thread);
const char *tc_string(const struct tc_trace *t, uint64_t id);
/* Events that are not LOSS records. */
uint64_t tc_real_events(const struct tc_trace *t);

/* A fresh directory under $TMPDIR (or /tmp) that tc_rmrf removes. */
char *tc_tmpdir(const char *tag);
void tc_rmrf(const char *dir);
/* Number of open descriptors of this process, and its resident memory in KiB. */
int tc_fd_count(void);
long tc_rss_kib(void);

#endif

/*
 * sv_collect.h - reading a profile (sv_profile.h) for one scope of a stored
 * trace: the whole trace, a time range, a worker, a poll, a stall, a task or
 * a spawn location, through the store's named queries (read_queries.h).
 *
 * CPU profiles weigh each sample by its weight (the CPU time it stands for).
 * Off-CPU profiles weigh each time a thread was off a CPU (a 'blocked' or
 * 'preempted' cpu_intervals row) by how long it lasted inside the scope, and
 * give it the stack of the off-CPU sample taken as the thread switched out
 * (the last one in the interval before it); time off CPU with no such sample
 * is "[no stack]". Off-CPU stacks are frame-pointer chains, which lose the
 * caller of a libc function built without frame pointers (read() is called
 * from "the caller's caller"). A blocked stall capture taken during the same
 * interval saw the same user stack, unwound whole: when its leaf function is
 * the sample's, its user frames replace the sample's under the sample's
 * kernel frames. One address expanded into two inline levels of the same
 * function is one frame (the inner one, whose line is the precise one).
 *
 * Scopes are windows of (thread, [from, to)): polls are their worker's thread
 * over the poll; a task or a location is the set of its polls (one pass over
 * polls: there is no index on those columns). Every scope may be clipped to a
 * time range. Reads only; not thread-safe (one connection, one thread).
 */
#ifndef STALLSCOPE_SV_COLLECT_H
#define STALLSCOPE_SV_COLLECT_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sv_profile.h"

struct ss_callstacks;

enum sv_scope_kind {
	SV_SCOPE_TRACE,
	SV_SCOPE_RANGE,
	SV_SCOPE_WORKER,
	SV_SCOPE_POLL,
	SV_SCOPE_STALL,
	SV_SCOPE_TASK,
	SV_SCOPE_LOCATION,   /* the polls of one (spawn) location */
	SV_SCOPE_RECORDING,  /* every thread of one recording (a trace may hold several) */
};

struct sv_scope {
	enum sv_scope_kind kind;
	int64_t id;          /* the workers / polls / stalls / tasks / locations row id */
	int64_t t0, t1;      /* database ns: SV_SCOPE_RANGE's range, else a clip; t1 <= t0: none */
};

struct sv_collect_options {
	enum sv_kind kind;
	bool polls_only;     /* only samples (off-CPU time) inside a poll */
};

/* What was read, for the views' headings. */
struct sv_collect_info {
	size_t windows;      /* (thread, range) pieces the scope is made of */
	int64_t span;        /* ns those cover (0 for a whole trace) */
	int64_t spliced;     /* off-CPU intervals whose user stack came from a stall capture */
};

/* Reads the profile of scope into out (initialised here, free it with
 * sv_profile_free also on failure). stacks reads the frames (a cache that may
 * serve many calls on this connection); NULL makes one for this call.
 * info may be NULL. Returns 0, or -1 with a message in err: an unknown id, a
 * statement that failed or was interrupted, memory. */
int sv_collect(sqlite3 *db, struct ss_callstacks *stacks, const struct sv_scope *scope,
	       const struct sv_collect_options *o, struct sv_profile *out, struct sv_collect_info *info, char *err,
	       size_t errlen);

/* The same from the database at path, opened read-only for this call (a
 * baseline to diff against), with a time budget of seconds (0: none). */
int sv_collect_path(const char *path, const struct sv_scope *scope, const struct sv_collect_options *o,
		    double seconds, struct sv_profile *out, struct sv_collect_info *info, char *err, size_t errlen);

/* "trace", "range", "worker:ID", "poll:ID", "stall:ID", "task:ID",
 * "location:ID", "recording:ID" -> scope (t0 / t1 untouched). Returns 0, or -1. */
int sv_scope_parse(const char *text, struct sv_scope *out);
/* The scope in words: "the whole trace", "poll 12" ... */
void sv_scope_name(const struct sv_scope *s, char *buf, size_t len);

#endif /* STALLSCOPE_SV_COLLECT_H */

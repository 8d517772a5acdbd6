/*
 * model_private.h - the trackers' state, shared by the files of viewer/model/:
 * the recording being rebuilt (threads with their open poll, park, spans and CPU
 * state; live and just-ended tasks; mappings; stalls not ended), the current
 * unit's id translations, the database-wide deduplication maps, and the sink
 * every finished row goes to.
 */
#ifndef STALLSCOPE_MODEL_PRIVATE_H
#define STALLSCOPE_MODEL_PRIVATE_H

#include <stdlib.h>
#include <string.h>

#include "hmap.h"
#include "merge.h"
#include "model.h"
#include "summary.h"
#include "symbolize.h"
#include "symtab.h"

#define MDL_MAX_SPAN_DEPTH 64
/* Default memory bounds against hostile or runaway input (about 250 MB each
 * at most; ss_model_options.max_threads and max_live_tasks): events of threads
 * beyond the first MDL_MAX_THREADS of a recording are counted and left out;
 * past MDL_MAX_LIVE_TASKS live tasks, idle ones are written out and forgotten
 * (a task seen again then gets a second row). */
#define MDL_MAX_THREADS 500000
#define MDL_MAX_LIVE_TASKS 2000000
/* How long an ended task stays findable by number: as long as records may come
 * late (the merge window), so that a poll or wake of it that arrives after its
 * TERMINATE, or across the cut between two imports, finds its own row. */
#define MDL_GRAVE_NS SS_MERGE_WINDOW_NS
#define MDL_KCACHE 1024 /* entries of mdl_recording.kcache (a power of two) */

struct mdl_span {
	uint64_t ts;
	char *name;
	uint64_t id, parent;  /* the source's span ids (0: none) */
	char *fields;         /* JSON, or NULL */
	int64_t location_id;
};

/* One thread of the recording (a source thread number, or a tid seen only by
 * the sampler). */
struct mdl_thread {
	int64_t id;          /* threads.id */
	int64_t worker_id;   /* workers.id, 0 when not a worker */
	uint64_t tid;
	uint64_t last_ts;    /* latest event time seen on it */
	uint64_t seg_serial; /* the unit in which it last had an event */
	/* open poll */
	bool in_poll;
	uint64_t poll_ts, poll_task;
	int64_t poll_id, poll_task_id, poll_loc;
	uint64_t poll_raw_loc;
	/* open park, and the thread's CPU clock at it (when park_cpu_known) */
	bool parked, park_cpu_known;
	uint64_t park_ts, park_cpu;
	/* last queue depths reported (queue_unknown: SS_QUEUE_NO_*) */
	bool queue_known;
	uint8_t queue_unknown;
	uint64_t queue_local, queue_global;
	/* spans (allocated on the first SPAN_BEGIN: most threads have none) */
	unsigned n_spans, cap_spans;
	struct mdl_span *spans;
	/* CPU state from SWITCH: 0 unknown, 1 on-cpu, 2 blocked, 3 preempted */
	int cpu_state;
	uint64_t cpu_since;
	int64_t cpu_num;     /* cpu + 1 */
	/* level-of-detail accumulators, allocated for workers on their first
	 * summary: a thread costs about 200 bytes, not 2 KB, so a recording
	 * with a million threads still fits in memory */
	struct ss_summary_worker *summ;
};

static inline struct ss_summary_worker *mdl_summ(struct mdl_thread *t)
{
	if (!t->summ)
		t->summ = calloc(1, sizeof *t->summ);
	return t->summ;
}

/* A task of the recording that is alive (or whose row is not written yet), or
 * one that just ended (in the graveyard). */
struct mdl_task {
	int64_t id;
	uint64_t task;
	int64_t location_id, parent_id, spawn_thread_id;
	uint64_t spawn_ts;   /* 0 = before the data */
	uint64_t end_ts;     /* its TERMINATE, once it is in the graveyard */
	bool persisted;      /* its row already exists (an earlier import) */
	bool polling;        /* being polled now */
	/* the latest wake not yet followed by a poll */
	bool wake_pending, wake_in_poll;
	uint64_t wake_ts, wake_from;  /* wake_from: where the delay starts */
	int64_t waker_thread_id, waker_task_id;
	int64_t wake_handle;  /* the pending wake's row, written by an earlier import */
};

/* A task that ended a moment ago (grave.c). Its row is written, so this is
 * all a late record needs of it; the full task is made only when a late record
 * touches it. A dense trace keeps hundreds of thousands of these (2 s of
 * ended tasks), so they are small and not allocated one by one. */
struct mdl_ghost {
	uint64_t task, end_ts;
	int64_t id;
	struct mdl_task *full; /* NULL until a late record comes; then the ghost's state */
	bool polling;          /* it ended inside its own poll */
};

/* The ghosts in the order they ended (a ring), and an open-addressing index
 * from task number to the latest ghost of that number (grave.c; linear
 * probing, backward-shift deletion, at most half full). The index is built
 * lazily: only the oldest `indexed` ghosts are in it, the rest are added at the
 * next lookup (most recordings never look an ended task up, and every ended
 * task passes through here). */
struct mdl_grave {
	struct mdl_ghost *ring;
	size_t head, n, cap;   /* cap: a power of two or 0 */
	uint64_t *index;       /* NULL until the first lookup */
	size_t index_cap;      /* 2 * cap once allocated */
	size_t indexed;        /* ghosts head .. head + indexed - 1 are in the index */
};

/* The latest ghost of task number `task`, or NULL. */
struct mdl_ghost *mdl_grave_find(struct mdl_grave *g, uint64_t task);
/* Appends a ghost (it becomes the latest of its number); -1 when memory ran out. */
int mdl_grave_push(struct mdl_grave *g, const struct mdl_ghost *x);
/* The oldest ghost, or NULL; mdl_grave_pop forgets it (not its `full`). */
static inline struct mdl_ghost *mdl_grave_oldest(struct mdl_grave *g)
{
	return g->n ? &g->ring[g->head] : NULL;
}
void mdl_grave_pop(struct mdl_grave *g);
static inline struct mdl_ghost *mdl_grave_at(struct mdl_grave *g, size_t i)
{
	return &g->ring[(g->head + i) & (g->cap - 1)];
}
/* Frees the ring, the index and every ghost's full task. */
void mdl_grave_free(struct mdl_grave *g);

/* An executable mapping, for address lookups (sorted by start, no overlaps:
 * a newer mapping replaces what it overlaps). */
struct mdl_map {
	uint64_t start, end, pgoff;
	int64_t id;
	char *path;
	uint8_t *build_id;
	size_t build_id_len;
};

struct mdl_recording {
	int64_t id;
	uint64_t session_id;
	bool known;              /* the store held it before this import */
	bool same_machine;       /* boot id equals this machine's: kallsyms is usable */
	struct ss_hmap threads;  /* thread number -> struct mdl_thread * */
	struct ss_hmap sampler_threads; /* tid -> struct mdl_thread * */
	struct ss_hmap tasks;    /* task number -> struct mdl_task * */
	/* The live tasks looked up last, direct-mapped by number (tasks.c): most
	 * records name a task of the last few hundred, and a hit costs no probe
	 * of the map; an entry goes with its task's removal from the map. */
	struct { uint64_t task; struct mdl_task *k; } kcache[MDL_KCACHE];
	struct ss_hmap by_id;    /* threads.id -> struct mdl_thread *, while resuming */
	struct ss_hmap mappings; /* (hash of path+build id, start ^ pgoff) -> mappings.id */
	bool needs_resume;       /* in the store already; state not loaded yet */
	int64_t kernel_mapping, unknown_mapping;
	struct ss_hmap stalls;   /* (thread id, poll_ts) -> stalls.id of a stall not ended */
	struct mdl_grave grave;  /* tasks that ended within MDL_GRAVE_NS of the latest end */
	struct mdl_map *maps;
	size_t n_maps, cap_maps;
	uint64_t first_ts, last_ts;
	char arch[16];           /* the recording machine's, "" until a unit says */
	/* META "switches" says a worker's switches from its park to its unpark are
	 * not recorded: its CPU state is unknown over each park (stacks.c). */
	bool parks_unswitched;
};

struct ss_model {
	struct ss_model_options o;
	FILE *log;
	struct ss_sink sink;
	int64_t next_id[ID_COUNT];
	struct ss_summary summ;
	/* database-wide deduplication */
	struct ss_hmap locations; /* (hash of file+function, line) -> locations.id */
	struct ss_hmap frames;    /* (mapping id, rel_pc) -> first frames.id | count << 56 */
	struct ss_hmap callsites; /* (parent id, frame id) -> callsites.id */
	/* the recording being rebuilt */
	struct mdl_recording *rec;
	/* the unit being read */
	struct ss_source src;
	const struct ss_symtab *symtab;
	uint64_t seg_serial;
	bool skip_events;         /* a block already imported: definitions only */
	struct ss_hmap seg_locs;  /* unit location id -> locations.id */
	struct ss_hmap seg_stacks; /* unit stack id -> leaf callsites.id (0 = empty) */
	struct ss_merge merge;    /* the unit's events, back in time order */
	bool merge_elsewhere;     /* the pipe's producer thread runs the merge (pipe.c) */
	bool failed;              /* a store write failed: stop */
	uint64_t max_threads, max_live_tasks; /* the options, defaults applied */
	uint64_t over_thread_limit; /* events left out: their thread was past max_threads */
	bool warned_tasks;        /* max_live_tasks was reached (warned once) */
	uint64_t tcache_num;      /* the last thread looked up (most events repeat it) */
	struct mdl_thread *tcache;
	struct ss_sym_result *symres;
};

/* A store write failed: the model stops (the sink keeps the message). */
int mdl_fail(struct ss_model *m);

static inline int64_t mdl_new_id(struct ss_model *m, enum ss_idkind k)
{
	return m->next_id[k]++;
}

static inline struct ss_text mdl_text(const char *p, size_t n)
{
	return (struct ss_text){ p, n };
}

static inline struct ss_text mdl_cstr(const char *p)
{
	return (struct ss_text){ p, p ? strlen(p) : 0 };
}

/* Calls a sink function; a failure stops the model. */
#define MDL_SINK(m, fn, ...) ((m)->sink.fn((m)->sink.ctx, __VA_ARGS__) ? mdl_fail(m) : 0)

static inline const char *mdl_str(struct ss_model *m, uint64_t id, size_t *len)
{
	const char *s = id && m->src.string ? m->src.string(m->src.ctx, id, len) : NULL;
	if (!s)
		*len = 0;
	return s;
}

static inline uint64_t mdl_fnv(const void *p, size_t n, uint64_t h)
{
	return ss_hash_bytes(p, n, h);
}

/* Key of a mapping in mdl_recording.mappings (with start ^ pgoff << 1). */
static inline uint64_t mdl_mapping_key(const char *path, size_t path_len, const char *build_hex)
{
	uint64_t h = mdl_fnv(path ? path : "", path_len, SS_HASH_SEED);
	h = mdl_fnv("\0", 1, h);
	return mdl_fnv(build_hex ? build_hex : "", build_hex ? strlen(build_hex) : 0, h);
}

/* Key of a location in ss_model.locations. */
static inline uint64_t mdl_location_key(const char *file, size_t fl, bool file_null, const char *fn, size_t nl,
				       bool fn_null)
{
	uint64_t h = mdl_fnv(file ? file : "", fl, SS_HASH_SEED);
	h = mdl_fnv("\0", 1, h);
	h = mdl_fnv(fn ? fn : "", nl, h);
	return h ^ ((uint64_t)file_null << 1 | (uint64_t)fn_null);
}

/* threads.c */
struct mdl_thread *mdl_thread_get(struct ss_model *m, uint64_t thread);
struct mdl_thread *mdl_sampler_thread(struct ss_model *m, uint64_t thread, uint64_t tid);
struct mdl_thread *mdl_thread_by_id(struct ss_model *m, int64_t id);
int mdl_make_worker(struct ss_model *m, struct mdl_thread *t, const char *runtime, size_t rlen, uint64_t idx,
		    uint64_t ts);
void mdl_free_threads(struct mdl_recording *rc);

/* tasks.c */
/* A new live task of a number the live tasks do not hold. */
struct mdl_task *mdl_task_new(struct ss_model *m, uint64_t task);
struct mdl_task *mdl_task_find(struct ss_model *m, uint64_t task);
/* Takes k out of the live tasks (the caller frees or buries it). */
void mdl_task_remove(struct ss_model *m, struct mdl_task *k);
struct mdl_task *mdl_task_at(struct ss_model *m, uint64_t task, uint64_t ts);
int mdl_task_end(struct ss_model *m, uint64_t task, uint64_t ts);
int mdl_task_flush(struct ss_model *m, struct mdl_task *k, uint64_t end_ts);
int mdl_task_polled(struct ss_model *m, struct mdl_task *k, int64_t poll_id, uint64_t ts);
int mdl_task_woken(struct ss_model *m, struct mdl_task *k, uint64_t ts, int64_t waker_thread,
		   int64_t waker_task);
int mdl_bury(struct ss_model *m, struct mdl_task *k);
int mdl_tasks_end(struct ss_model *m);
int64_t mdl_location(struct ss_model *m, uint64_t seg_loc);

/* intervals.c */
int mdl_hook_event(struct ss_model *m, const struct ss_event *e);
int mdl_close_poll(struct ss_model *m, struct mdl_thread *t, uint64_t end, bool incomplete);
/* cpu_end, sched_wait < 0: unknown */
int mdl_close_park(struct ss_model *m, struct mdl_thread *t, uint64_t end, bool incomplete, int64_t cpu_end,
		   int64_t sched_wait);
int mdl_open_poll(struct ss_model *m, struct mdl_thread *t, uint64_t ts, uint64_t task, uint64_t raw_loc);
int mdl_push_span(struct ss_model *m, struct mdl_thread *t, uint64_t ts, const char *name, size_t len,
		  const struct mdl_span *extra);
int mdl_write_open_spans(struct ss_model *m, struct mdl_thread *t, uint64_t end);
int mdl_loss(struct ss_model *m, int64_t thread_id, uint64_t ts, uint64_t span, uint64_t count,
	     const char *source, const char *reason);

/* stacks.c */
int mdl_sampler_event(struct ss_model *m, const struct ss_event *e);
/* A worker's park began (parked) or ended at ts: where parks are unswitched,
 * its CPU state becomes unknown, or on-cpu (the thread runs its unpark). */
int mdl_cpu_park(struct ss_model *m, struct mdl_thread *t, uint64_t ts, bool parked);
int mdl_add_map(struct ss_model *m, int64_t id, uint64_t start, uint64_t end, uint64_t pgoff, const char *path,
		size_t path_len, const uint8_t *bid, size_t bid_len);
void mdl_free_maps(struct mdl_recording *rc);
int64_t mdl_stack_callsite(struct ss_model *m, const uint64_t *pcs, size_t n, size_t nkernel, bool truncated);
int64_t mdl_stack_of(struct ss_model *m, uint64_t seg_stack);

/* stalls.c */
int mdl_stall_event(struct ss_model *m, const struct ss_event *e);

#endif /* STALLSCOPE_MODEL_PRIVATE_H */

/*
 * import-private.h - the importer's state, shared by its files: the database,
 * the state of the recording being imported (threads with their open poll, park,
 * spans and CPU state; live tasks with a pending wake), the per-segment id
 * translations, and the database-wide deduplication maps.
 */
#ifndef STALLSCOPE_IMPORT_PRIVATE_H
#define STALLSCOPE_IMPORT_PRIVATE_H

#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "hmap.h"
#include "import.h"
#include "segment_reader.h"
#include "summary.h"
#include "symbolize.h"
#include "symtab.h"

#define IMP_MAX_SPAN_DEPTH 64
/* Default memory bounds against hostile or runaway input (about 250 MB each
 * at most; ss_import_options.max_threads and max_live_tasks): events of threads
 * beyond the first IMP_MAX_THREADS of a recording are counted and left out;
 * past IMP_MAX_LIVE_TASKS live tasks, idle ones are written out and forgotten
 * (a task seen again then gets a second row). */
#define IMP_MAX_THREADS 500000
#define IMP_MAX_LIVE_TASKS 2000000

struct imp_span {
	uint64_t ts;
	char *name;
};

/* One thread of the recording (a recorder thread number, or a tid seen only by
 * the sampler). */
struct imp_thread {
	int64_t id;          /* threads.id */
	int64_t worker_id;   /* workers.id, 0 when not a worker */
	uint64_t tid;
	uint64_t last_ts;    /* latest event time seen on it */
	uint64_t seg_serial; /* the segment in which it last had an event */
	/* open poll */
	bool in_poll;
	uint64_t poll_ts, poll_task;
	int64_t poll_id, poll_task_id, poll_loc;
	uint64_t poll_raw_loc;
	/* open park */
	bool parked;
	uint64_t park_ts;
	/* last queue depths reported */
	bool queue_known;
	uint64_t queue_local, queue_global;
	/* spans (allocated on the first SPAN_BEGIN: most threads have none) */
	unsigned n_spans, cap_spans;
	struct imp_span *spans;
	/* CPU state from SWITCH: 0 unknown, 1 on-cpu, 2 blocked, 3 preempted */
	int cpu_state;
	uint64_t cpu_since;
	int64_t cpu_num;     /* cpu + 1 */
	/* level-of-detail accumulators, allocated for workers on their first
	 * summary: a thread costs about 200 bytes, not 2 KB, so a recording
	 * with a million threads still fits in memory */
	struct ss_summary_worker *summ;
};

static inline struct ss_summary_worker *imp_summ(struct imp_thread *t)
{
	if (!t->summ)
		t->summ = calloc(1, sizeof *t->summ);
	return t->summ;
}

/* A task of the recording that is alive (or whose row is not written yet). */
struct imp_task {
	int64_t id;
	uint64_t task;
	int64_t location_id, parent_id, spawn_thread_id;
	uint64_t spawn_ts;   /* 0 = before the data */
	bool persisted;      /* its row already exists (an earlier import) */
	bool polling;        /* being polled now */
	/* the latest wake not yet followed by a poll */
	bool wake_pending, wake_in_poll;
	uint64_t wake_ts, wake_from;  /* wake_from: where the delay starts */
	int64_t waker_thread_id, waker_task_id;
	int64_t wake_rowid;  /* the pending wake's row, written by an earlier import */
};

/* An executable mapping, for address lookups (sorted by start, no overlaps:
 * a newer mapping replaces what it overlaps). */
struct imp_map {
	uint64_t start, end, pgoff;
	int64_t id;
	char *path;
	uint8_t *build_id;
	size_t build_id_len;
};

struct imp_recording {
	int64_t id;
	uint64_t session_id;
	bool same_machine;       /* boot id equals this machine's: kallsyms is usable */
	struct ss_hmap threads;  /* thread number -> struct imp_thread * */
	struct ss_hmap sampler_threads; /* tid -> struct imp_thread * */
	struct ss_hmap tasks;    /* task number -> struct imp_task * */
	struct ss_hmap mappings; /* (hash of path+build id, start ^ pgoff) -> mappings.id */
	bool needs_resume;       /* in the database already; state not loaded yet */
	int64_t kernel_mapping, unknown_mapping;
	struct ss_hmap stalls;   /* (thread id, poll_ts) -> stalls.id of a stall not ended */
	struct imp_map *maps;
	size_t n_maps, cap_maps;
	uint64_t first_ts, last_ts;
};

struct imp {
	const struct ss_import_options *o;
	FILE *log;
	struct ss_db db;
	struct ss_symbolizer *sym;
	struct ss_summary summ;
	struct ss_import_result *res;
	/* database-wide deduplication */
	struct ss_hmap locations; /* (hash of file+function, line) -> locations.id */
	struct ss_hmap frames;    /* (mapping id, rel_pc) -> first frames.id | count << 56 */
	struct ss_hmap callsites; /* (parent id, frame id) -> callsites.id */
	/* the recording being imported */
	struct imp_recording *rec;
	/* the segment being read */
	struct ss_reader *reader;
	uint64_t seg_serial;
	bool skip_events;         /* a block already imported: definitions only */
	struct ss_hmap seg_locs;  /* segment location id -> locations.id */
	struct ss_hmap seg_stacks; /* segment stack id -> leaf callsites.id (0 = empty) */
	uint64_t seg_events;
	int64_t first_sample_rowid;
	bool failed;              /* a database write failed: stop */
	uint64_t max_threads, max_live_tasks; /* the options, defaults applied */
	uint64_t over_thread_limit; /* events left out: their thread was past max_threads */
	bool warned_tasks;        /* IMP_MAX_LIVE_TASKS was reached (warned once) */
	uint64_t tcache_num;      /* the last thread looked up (most records repeat it) */
	struct imp_thread *tcache;
	struct ss_sym_result *symres;
	struct ss_symtab symtab;  /* the segment's own symbol table, if it has one */
};

/* recording.c */
int imp_recording_begin(struct imp *im, const struct ss_segment_header *h);
int imp_recording_end(struct imp *im);
int imp_recording_resume(struct imp *im);
struct imp_thread *imp_thread_get(struct imp *im, uint64_t thread);
struct imp_thread *imp_sampler_thread(struct imp *im, uint64_t thread, uint64_t tid);
int imp_thread_def(struct imp *im, const struct ss_thread_def *d);
int imp_make_worker(struct imp *im, struct imp_thread *t, const char *runtime, size_t rlen,
		    uint64_t idx, uint64_t ts);
struct imp_task *imp_task_get(struct imp *im, uint64_t task);
int imp_task_flush(struct imp *im, struct imp_task *k, uint64_t end_ts);
int64_t imp_location(struct imp *im, uint64_t seg_loc);
int imp_location_def(struct imp *im, const struct ss_location_def *l);

/* events.c */
int imp_event(struct imp *im, const struct ss_record *r);
int imp_close_poll(struct imp *im, struct imp_thread *t, uint64_t end, bool incomplete);
int imp_close_park(struct imp *im, struct imp_thread *t, uint64_t end, bool incomplete);
int imp_close_spans(struct imp *im, struct imp_thread *t);
int imp_open_poll(struct imp *im, struct imp_thread *t, uint64_t ts, uint64_t task, uint64_t raw_loc);

/* stacks.c */
int imp_sampling_record(struct imp *im, const struct ss_record *r);
int imp_add_map(struct imp *im, int64_t id, uint64_t start, uint64_t end, uint64_t pgoff,
		const char *path, size_t path_len, const uint8_t *bid, size_t bid_len);
void imp_free_maps(struct imp_recording *rc);
int imp_sampler_loss(struct imp *im, const struct ss_record *r);

/* stalls.c */
int imp_stall_record(struct imp *im, const struct ss_record *r);
int64_t imp_stack_callsite(struct imp *im, const uint64_t *pcs, size_t n, size_t nkernel, bool truncated);

/* helpers */
static inline const char *imp_str(struct imp *im, uint64_t id, size_t *len)
{
	const struct ss_string_def *s = id ? ss_reader_string(im->reader, id) : NULL;
	if (!s) {
		*len = 0;
		return NULL;
	}
	*len = s->len;
	return s->data;
}

static inline uint64_t imp_fnv(const void *p, size_t n, uint64_t h)
{
	const unsigned char *c = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ c[i]) * 0x100000001b3ull;
	return h;
}

int imp_fail(struct imp *im);

/* Key of a mapping in imp_recording.mappings (with start ^ pgoff << 1). */
static inline uint64_t ss_mapping_key(const char *path, size_t path_len, const char *build_hex)
{
	uint64_t h = imp_fnv(path ? path : "", path_len, 0xcbf29ce484222325ull);
	h = imp_fnv("\0", 1, h);
	return imp_fnv(build_hex ? build_hex : "", build_hex ? strlen(build_hex) : 0, h);
}

/* recording.c, used by events.c */
int imp_task_polled(struct imp *im, struct imp_task *k, int64_t poll_id, uint64_t ts);
int imp_task_woken(struct imp *im, struct imp_task *k, uint64_t ts, int64_t waker_thread,
		   int64_t waker_task);

#endif /* STALLSCOPE_IMPORT_PRIVATE_H */

/*
 * dial9_source.h - dial9 (Tokio) traces as a source of the trace model: the
 * events of a dial9-trace-format file (viewer/reader/dial9/) mapped onto the
 * model's definitions and events, the second of the model's sources beside
 * segment_source.c.
 *
 * The mapping (README "Opening dial9 traces" has the user's view):
 *  - lanes: dial9 worker ids name threads; worker w is the source thread w + 1,
 *    254 (tokio's blocking pool) and 255 (any other thread) are one thread each,
 *    with a worker lane only when they poll or park;
 *  - PollStart/PollEnd, WorkerPark/WorkerUnpark (with the thread CPU clock and
 *    scheduler wait), local queue depths, QueueSample (global depth), TaskSpawn,
 *    TaskTerminate, WakeEvent (its waker task and worker), CpuSample (source 0
 *    on-CPU, 1 off-CPU; threads by worker id, else by tid through the tids that
 *    parks report), TaskDump, the tracing layer's SpanEnter:/SpanExit:/
 *    SpanCloseEvent (names, ids, parents, fields as JSON, declaration site);
 *  - SegmentMetadataEvent into the recording's metadata ("runtime.NAME" also
 *    names the workers' runtime), the first ClockSyncEvent into its wall-clock
 *    anchor, SymbolTableEntry into the file's symbol table for its stacks;
 *  - any other event type into other_events, with its fields as JSON.
 * Events a stream wrote without a worker id (spawns, terminations, dumps) belong
 * to the worker whose events fill the same stream (one stream is one thread's
 * batch), else to the thread of worker 255.
 */
#ifndef STALLSCOPE_DIAL9_SOURCE_H
#define STALLSCOPE_DIAL9_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct d9_reader;
struct ss_model;

/* Which recording and segment a dial9 file is: the files of one directory with
 * one prefix are one recording (dial9 names them PREFIX.N.bin, .bin.gz while
 * sealed, .bin.active while written); seq is the N, 0 for any other name. */
struct ss_dial9_id {
	uint64_t session_id, seq;
	bool sealed;            /* the name does not end in .active */
};
void ss_dial9_identify(const char *path, struct ss_dial9_id *id);

struct ss_dial9_kept {
	char *name;             /* an event type kept in other_events */
	uint64_t count;
};

struct ss_dial9_run {
	uint64_t events;        /* events of the streams read past skip_batches */
	uint64_t new_batches;   /* those streams */
	uint64_t first_ts, last_ts; /* of the file's timestamped events (0: none) */
	struct ss_dial9_kept *kept; /* event types it did not map, with their counts */
	size_t n_kept;
	uint64_t no_worker;     /* events kept on the thread of worker 255 for want of one */
};
void ss_dial9_run_free(struct ss_dial9_run *run);

/* Reads every stream of the opened file r into the model (the recording the
 * file belongs to must be the model's current one): a scan in file order for
 * what the events need (symbols, clock, metadata, which thread each stream
 * is), then the events of the streams from skip_batches on, in time order.
 * progress (may be NULL) gets the input bytes and events done since its last
 * call. Returns 0, or -1 when a store write failed. */
int ss_dial9_source_run(struct ss_model *m, struct d9_reader *r, uint64_t skip_batches, struct ss_dial9_run *out,
			void (*progress)(void *ctx, uint64_t bytes, uint64_t events), void *ctx);

#endif /* STALLSCOPE_DIAL9_SOURCE_H */

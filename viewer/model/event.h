/*
 * event.h - the model's input: one timestamped event of a recording, in a form
 * no trace format owns. A source (the segment reader, the dial9 reader) turns
 * its records into these; the model puts them into time order (merge.h) and
 * rebuilds polls, parks, tasks, wakes, stalls and samples from them.
 *
 * References are the source's own ids, resolved by the model at delivery:
 * strings through the source's resolver (struct ss_source), locations and
 * stacks through the definitions the source gave (ss_model_location,
 * ss_model_stack). Inline bytes (a thread name, a stall's reason) are copied by
 * the model when it buffers the event.
 */
#ifndef STALLSCOPE_MODEL_EVENT_H
#define STALLSCOPE_MODEL_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum ss_ev_type {
	/* a thread's own events: thread is the source's thread number */
	SS_EV_POLL_BEGIN = 1,   /* task, location */
	SS_EV_POLL_END,
	SS_EV_PARK,             /* cpu_ns, flags */
	SS_EV_UNPARK,           /* cpu_ns, sched_wait_ns, flags */
	SS_EV_SPAWN,            /* task, location */
	SS_EV_TERMINATE,        /* task */
	SS_EV_WAKE,             /* task (the woken one), waker (0: the task this thread polls) */
	SS_EV_QUEUE,            /* local, global, unknown */
	SS_EV_MARK,             /* name (string id), value */
	SS_EV_SPAN_BEGIN,       /* name, id, parent, fields, location */
	SS_EV_SPAN_END,         /* name, id */
	SS_EV_WORKER_BEGIN,     /* runtime (string id), index */
	SS_EV_WORKER_END,
	SS_EV_THREAD_EXIT,
	SS_EV_LOSS,             /* count, span, reason (thread 0: the whole process) */
	/* the sampler's: thread (0 when unknown) and tid */
	SS_EV_SAMPLE,           /* cpu + 1, weight, kind, stack */
	SS_EV_SWITCH,           /* cpu + 1, flags */
	SS_EV_COMM,             /* name (inline) */
	SS_EV_SAMPLER_LOSS,     /* span, count, reason (tid 0: any thread) */
	/* the watchdog's: thread and tid */
	SS_EV_STALL,            /* capture at ts of the poll of task begun at poll_ts */
	SS_EV_STALL_END,        /* the stalled poll ended at ts */
	SS_EV_TASK_DUMP,        /* task yielded at ts and stayed idle idle_ns (SS_IDLE_UNKNOWN) */
	SS_EV_COUNT
};

/* park and unpark flags: which of the thread's figures the source has. */
enum {
	SS_PARK_F_CPU = 1,      /* cpu_ns: the thread's CPU clock (CLOCK_THREAD_CPUTIME_ID) */
	SS_PARK_F_SCHED = 2,    /* sched_wait_ns: time it waited for a CPU since the park */
};
/* queue: the depths the report does not carry. */
enum {
	SS_QUEUE_NO_LOCAL = 1,
	SS_QUEUE_NO_GLOBAL = 2,
};
/* task_dump.idle_ns when the source does not know how long the task stayed idle. */
#define SS_IDLE_UNKNOWN UINT64_MAX

/* Whether an event type is one of the sampler's or the watchdog's (they carry a
 * tid and come in streams of their own) rather than a thread's own. */
static inline bool ss_ev_is_hook(unsigned type)
{
	return type >= SS_EV_POLL_BEGIN && type <= SS_EV_LOSS;
}

struct ss_event {
	uint8_t type;                 /* enum ss_ev_type */
	uint64_t ts;                  /* CLOCK_MONOTONIC ns of the recording */
	uint64_t thread;              /* the source's thread number (0: none / process) */
	uint64_t tid;                 /* sampler and watchdog events: the kernel's thread id */
	union {
		struct { uint64_t task, location; } poll_begin, spawn;
		struct { uint64_t task; } terminate;
		struct { uint64_t task, waker; } wake;
		struct { uint64_t cpu_ns, flags; } park;
		struct { uint64_t cpu_ns, sched_wait_ns, flags; } unpark;
		struct { uint64_t local, global, unknown; } queue;
		struct { uint64_t name; int64_t value; } mark;
		/* id: the source's span id, which an end names when spans do not
		 * nest (0: the innermost ends); parent: the span id of its declared
		 * parent; fields: string id of a JSON object; location: the unit's
		 * location of its declaration (all 0: none) */
		struct { uint64_t name, id, parent, fields, location; } span;
		struct { uint64_t runtime, index; } worker_begin;
		struct { uint64_t count, span, reason; } loss;       /* reason: enum ss_loss_reason */
		struct { uint64_t cpu1, weight, kind, stack; } sample; /* kind: SS_SAMPLE_KIND_* */
		struct { uint64_t cpu1, flags; } switch_ev;          /* flags: SS_SWITCH_F_* */
		struct { const char *name; size_t len; } comm;
		struct { uint64_t span, count, reason; } sampler_loss;
		struct {
			uint64_t task, location, poll_ts, index, kind, syscall1, stack;
			const char *reason; size_t reason_len;
		} stall;                                             /* kind: enum ss_stall_kind_rec */
		struct { uint64_t task, poll_ts, captures; } stall_end;
		struct { uint64_t task, location, idle_ns, stack; } task_dump;
	} u;
};

#endif /* STALLSCOPE_MODEL_EVENT_H */

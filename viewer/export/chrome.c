/*
 * chrome.c - the Chrome trace event format (the JSON object form, with
 * "traceEvents" and "stackFrames") that the Perfetto UI and chrome://tracing
 * open. One process per recording (pid = recordings.id), one thread per
 * worker lane (tid = threads.id: OS tids are reused) and per other sampled
 * thread, each named by thread_name metadata; a worker's polls and parks are
 * complete ('X') slices on its lane, its blocked and preempted time slices on
 * a second lane below it; stall captures and samples are instant ('i')
 * events, with their stack as "sf" (a node of stackFrames, which
 * chrome://tracing shows) and as text in args (which Perfetto shows). Times
 * are microseconds since the first event of the trace, written with three
 * decimals, so nanoseconds survive.
 *
 * Streams: lane by lane, each table read in time order through its index.
 * What stays in memory is the stack tree of the samples and captures written
 * (one node per distinct frame path), for stackFrames at the end.
 *
 * Slices on one lane never overlap partially (the format's rule, which
 * Perfetto enforces by dropping slices): polls do not overlap and parks fall
 * between them, and a damaged trace's slice that would overlap the one before
 * is cut to begin where that one ends (args.clipped_ns says by how much).
 */
#include "export.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "hmap.h"
#include "json_out.h"
#include "read_queries.h"
#include "stacks.h"
#include "verdict.h"

/* Frames of a stack in args.stack, leaf first. */
#define ARGS_FRAMES 32
/* The CPU-state lane of thread id t. */
#define CPU_LANE(t) ((int64_t)((uint64_t)(t) + 1000000000u))

struct sf_node {
	int64_t parent;        /* sf id, 0 at the root */
	char *name, *category;
};

struct chrome {
	sqlite3 *db;
	const struct ss_export_opts *o;
	FILE *out;
	struct ss_export_stats *st;
	struct ss_callstacks *cs;
	struct ss_stack_frame *frames;
	struct ss_hmap node_of;    /* (parent sf, frame id) -> sf id */
	struct ss_hmap stack_of;   /* callsite id -> index in stacks */
	struct sf_node *nodes;     /* sf id i is nodes[i - 1] */
	size_t n_nodes, cap_nodes;
	struct { int64_t sf; char *text; const char *name; } *stacks;
	size_t n_stacks, cap_stacks;
	bool first;
	/* Nothing is written before the first event (an empty scope writes
	 * nothing at all); the processes' names wait here till then. */
	bool started;
	struct { int64_t id; char *name; } *procs;
	size_t n_procs;
	bool failed;
	char *err;
	size_t errlen;
};

static void fail(struct chrome *c, const char *what)
{
	if (c->failed)
		return;
	c->failed = true;
	if (what)
		ss_export_db_error(c->db, what, c->err, c->errlen);
	else
		snprintf(c->err, c->errlen, "chrome: out of memory");
}

/* ns since the origin as microseconds with three decimals; saturating. */
static void put_us(FILE *o, int64_t ns, int64_t origin)
{
	int64_t rel;
	if (__builtin_sub_overflow(ns, origin, &rel))
		rel = ns < origin ? INT64_MIN : INT64_MAX;
	uint64_t m = rel < 0 ? -(uint64_t)rel : (uint64_t)rel;
	fprintf(o, "%s%" PRIu64 ".%03u", rel < 0 ? "-" : "", m / 1000, (unsigned)(m % 1000));
}

static void put_dur(FILE *o, int64_t ns)
{
	put_us(o, ns > 0 ? ns : 0, 0);
}

static void meta(struct chrome *c, const char *what, int64_t pid, int64_t tid, const char *name, int64_t sort);

static void start(struct chrome *c)
{
	c->started = true;
	fputs("{\"traceEvents\":[", c->out);
	for (size_t i = 0; i < c->n_procs; i++)
		meta(c, "process_name", c->procs[i].id, 0, c->procs[i].name, c->procs[i].id);
}

/* The separator and the fields every event has. */
static void ev_begin(struct chrome *c, const char *ph, const char *cat, const char *name, int64_t pid, int64_t tid,
		     int64_t ts)
{
	if (!c->started)
		start(c);
	fputs(c->first ? "\n" : ",\n", c->out);
	c->first = false;
	fprintf(c->out, "{\"ph\":\"%s\",\"cat\":\"%s\",\"name\":", ph, cat);
	ss_json_escape(c->out, name ? name : "?");
	fprintf(c->out, ",\"pid\":%" PRId64 ",\"tid\":%" PRId64 ",\"ts\":", pid, tid);
	put_us(c->out, ts, c->o->scope.origin);
	c->st->events++;
	if (c->o->progress && c->st->events % 65536 == 0)
		c->o->progress(c->o->progress_ctx, c->st->events);
}

static void arg_str(struct chrome *c, const char *key, const char *v, bool *first)
{
	if (!v)
		return;
	fprintf(c->out, "%s\"%s\":", *first ? "" : ",", key);
	ss_json_escape(c->out, v);
	*first = false;
}

static void arg_int(struct chrome *c, const char *key, int64_t v, bool *first)
{
	fprintf(c->out, "%s\"%s\":%" PRId64, *first ? "" : ",", key, v);
	*first = false;
}

static void arg_us(struct chrome *c, const char *key, int64_t ns, bool *first)
{
	fprintf(c->out, "%s\"%s\":", *first ? "" : ",", key);
	put_dur(c->out, ns);
	*first = false;
}

static void meta(struct chrome *c, const char *what, int64_t pid, int64_t tid, const char *name, int64_t sort)
{
	fputs(c->first ? "\n" : ",\n", c->out);
	c->first = false;
	fprintf(c->out, "{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%" PRId64 ",\"tid\":%" PRId64 ",\"args\":{\"name\":",
		what, pid, tid);
	ss_json_escape(c->out, name);
	fputs("}},\n", c->out);
	fprintf(c->out, "{\"ph\":\"M\",\"name\":\"%s_sort_index\",\"pid\":%" PRId64 ",\"tid\":%" PRId64
		",\"args\":{\"sort_index\":%" PRId64 "}}", what[0] == 'p' ? "process" : "thread", pid, tid, sort);
}

static const char *col_text(sqlite3_stmt *st, int i)
{
	return (const char *)sqlite3_column_text(st, i);
}

/* ---- stacks ----------------------------------------------------------------- */

static const char *base_name(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;
	return s ? s + 1 : path ? path : "?";
}

/* The sf id, text and own-code function of a callsite's stack (cached);
 * index into c->stacks, or -1 (no stack, or out of memory). */
static int64_t stack_of(struct chrome *c, int64_t callsite)
{
	uint64_t v;
	if (callsite <= 0)
		return -1;
	if (ss_hmap_get(&c->stack_of, (uint64_t)callsite, 0, &v))
		return (int64_t)v;
	size_t n = ss_callstacks_get(c->cs, callsite, c->frames, SS_STACK_MAX);
	if (!n)
		return -1;
	int64_t sf = 0;
	for (size_t i = n; i-- > 0;) {
		uint64_t id;
		if (ss_hmap_get(&c->node_of, (uint64_t)sf, (uint64_t)c->frames[i].frame_id, &id)) {
			sf = (int64_t)id;
			continue;
		}
		if (c->n_nodes == c->cap_nodes) {
			size_t cap = c->cap_nodes ? c->cap_nodes * 2 : 256;
			struct sf_node *nn = realloc(c->nodes, cap * sizeof *nn);
			if (!nn)
				goto oom;
			c->nodes = nn;
			c->cap_nodes = cap;
		}
		char name[512];
		ss_callstacks_frame_name(&c->frames[i], name, sizeof name);
		struct sf_node *node = &c->nodes[c->n_nodes];
		node->parent = sf;
		node->name = strdup(name);
		node->category = strdup(base_name(c->frames[i].mapping));
		if (!node->name || !node->category ||
		    ss_hmap_put(&c->node_of, (uint64_t)sf, (uint64_t)c->frames[i].frame_id, c->n_nodes + 1) != 0) {
			free(node->name);
			free(node->category);
			goto oom;
		}
		sf = (int64_t)++c->n_nodes;
	}
	if (c->n_stacks == c->cap_stacks) {
		size_t cap = c->cap_stacks ? c->cap_stacks * 2 : 256;
		void *ns = realloc(c->stacks, cap * sizeof *c->stacks);
		if (!ns)
			goto oom;
		c->stacks = ns;
		c->cap_stacks = cap;
	}
	char text[4096];
	ss_callstacks_text(c->frames, n, ARGS_FRAMES, text, sizeof text);
	int own = ss_callstacks_own(c->cs, c->frames, n);
	/* The event's name: the code responsible, else the user-space leaf
	 * (what called into the kernel), else the leaf. */
	size_t pick = 0;
	if (own >= 0)
		pick = (size_t)own;
	else
		while (pick + 1 < n && c->frames[pick].kernel)
			pick++;
	if (c->frames[pick].kernel)
		pick = 0;
	c->stacks[c->n_stacks].sf = sf;
	c->stacks[c->n_stacks].text = strdup(text);
	if (!c->stacks[c->n_stacks].text || ss_hmap_put(&c->stack_of, (uint64_t)callsite, 0, c->n_stacks) != 0) {
		free(c->stacks[c->n_stacks].text);
		goto oom;
	}
	/* The node of frame `pick` is `n - 1 - pick` steps below the root. */
	int64_t at = sf;
	for (size_t k = 0; k < pick && at > 0; k++)
		at = c->nodes[at - 1].parent;
	c->stacks[c->n_stacks].name = at > 0 ? c->nodes[at - 1].name : "?";
	return (int64_t)c->n_stacks++;
oom:
	fail(c, NULL);
	return -1;
}

/* A stack's "sf" member (when it has one) and its text as args.stack. */
static void put_stack(struct chrome *c, int64_t idx, bool *first_arg)
{
	if (idx < 0)
		return;
	arg_str(c, "stack", c->stacks[idx].text, first_arg);
}

static void stack_frames(struct chrome *c)
{
	fputs("\"stackFrames\":{", c->out);
	for (size_t i = 0; i < c->n_nodes; i++) {
		const struct sf_node *n = &c->nodes[i];
		fprintf(c->out, "%s\n\"%zu\":{\"name\":", i ? "," : "", i + 1);
		ss_json_escape(c->out, n->name);
		fputs(",\"category\":", c->out);
		ss_json_escape(c->out, n->category);
		if (n->parent)
			fprintf(c->out, ",\"parent\":\"%" PRId64 "\"", n->parent);
		fputc('}', c->out);
	}
	fputs("}", c->out);
}

/* ---- a worker's lane ---------------------------------------------------------- */

/* The thread's CPU intervals in time order, for the split of its polls. */
struct cpu_cursor {
	sqlite3_stmt *st;
	bool have, done;
	const char *state;
	char state_buf[16];
	int64_t ts, end;
};

static void cpu_next(struct cpu_cursor *k)
{
	k->have = false;
	if (k->done || sqlite3_step(k->st) != SQLITE_ROW) {
		k->done = true;
		return;
	}
	const char *s = col_text(k->st, 0);
	snprintf(k->state_buf, sizeof k->state_buf, "%s", s ? s : "");
	k->state = k->state_buf;
	k->ts = sqlite3_column_int64(k->st, 1);
	int64_t dur = sqlite3_column_int64(k->st, 2);
	k->end = dur > 0 && k->ts <= INT64_MAX - dur ? k->ts + dur : k->ts;
	k->have = true;
}

struct split {
	int64_t on, blocked, preempted;
};

/* How [ts, end) split into on a CPU, blocked and preempted. Intervals that
 * end inside are used up; the one reaching past end stays for the next poll. */
static void cpu_split(struct cpu_cursor *k, int64_t ts, int64_t end, struct split *s)
{
	*s = (struct split){ 0 };
	while (k->have && k->end <= ts)
		cpu_next(k);
	while (k->have && k->ts < end) {
		int64_t lo = k->ts > ts ? k->ts : ts, hi = k->end < end ? k->end : end;
		if (hi > lo) {
			int64_t part = hi - lo;
			if (!strcmp(k->state, "on-cpu"))
				s->on += part;
			else if (!strcmp(k->state, "blocked"))
				s->blocked += part;
			else if (!strcmp(k->state, "preempted"))
				s->preempted += part;
		}
		if (k->end > end)
			break;
		cpu_next(k);
	}
}

/* The verdict's arithmetic multiplies by 5: scaled down for the values of a
 * damaged file. */
static enum ss_verdict verdict(int64_t dur, const struct split *s)
{
	int64_t on = s->on, bl = s->blocked;
	while (dur > INT64_MAX / 8 || on > INT64_MAX / 8 || bl > INT64_MAX / 8) {
		dur /= 8;
		on /= 8;
		bl /= 8;
	}
	return ss_verdict_of(dur, on, bl);
}

/* Keeps slices of one lane from overlapping partially: returns the start
 * to write (the slice's own, or where the one before ended). */
static int64_t lane_start(int64_t *last_end, int64_t ts, int64_t *end)
{
	if (*end < ts)
		*end = ts;
	if (ts < *last_end) {
		ts = *last_end;
		if (*end < ts)
			*end = ts;
	}
	*last_end = *end;
	return ts;
}

static int64_t end_of(int64_t ts, int64_t dur)
{
	return dur > 0 && ts <= INT64_MAX - dur ? ts + dur : ts;
}

static sqlite3_stmt *lane_query(struct chrome *c, enum ss_read_query q, int64_t lane)
{
	sqlite3_stmt *st = ss_read_prepare(c->db, q);
	if (!st) {
		fail(c, "query");
		return NULL;
	}
	ss_export_bind(st, c->o, lane);
	return st;
}

static void done(struct chrome *c, sqlite3_stmt *st, int rc, const char *what)
{
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		fail(c, what);
	sqlite3_finalize(st);
}

static void poll_event(struct chrome *c, sqlite3_stmt *p, int64_t pid, int64_t tid, int64_t *last_end,
		       struct cpu_cursor *k, bool has_cpu)
{
	int64_t ts = sqlite3_column_int64(p, 1), dur = sqlite3_column_int64(p, 2);
	int64_t end = end_of(ts, dur), orig = ts;
	struct split s = { 0 };
	if (has_cpu)
		cpu_split(k, ts, end, &s);
	int64_t at = lane_start(last_end, ts, &end);
	const char *fn = col_text(p, 6);
	ev_begin(c, "X", "poll", fn ? fn : "poll", pid, tid, at);
	fputs(",\"dur\":", c->out);
	put_dur(c->out, end - at);
	fputs(",\"args\":{", c->out);
	bool first = true;
	arg_int(c, "poll_id", sqlite3_column_int64(p, 0), &first);
	if (sqlite3_column_type(p, 4) != SQLITE_NULL)
		arg_int(c, "task", sqlite3_column_int64(p, 4), &first);
	if (sqlite3_column_type(p, 5) != SQLITE_NULL)
		arg_int(c, "task_id", sqlite3_column_int64(p, 5), &first);
	arg_str(c, "location", col_text(p, 7), &first);
	if (has_cpu) {
		arg_str(c, "verdict", ss_verdict_name(verdict(end_of(orig, dur) - orig, &s)), &first);
		arg_us(c, "on_cpu_us", s.on, &first);
		arg_us(c, "blocked_us", s.blocked, &first);
		arg_us(c, "preempted_us", s.preempted, &first);
	}
	if (sqlite3_column_int64(p, 3))
		arg_str(c, "incomplete", "no end in the data: a lower bound", &first);
	if (at != orig)
		arg_int(c, "clipped_ns", at - orig, &first);
	fputs("}}", c->out);
	c->st->polls++;
}

static void park_event(struct chrome *c, sqlite3_stmt *p, int64_t pid, int64_t tid, int64_t *last_end)
{
	int64_t ts = sqlite3_column_int64(p, 0), end = end_of(ts, sqlite3_column_int64(p, 1));
	int64_t at = lane_start(last_end, ts, &end);
	ev_begin(c, "X", "park", "park", pid, tid, at);
	fputs(",\"dur\":", c->out);
	put_dur(c->out, end - at);
	bool first = true;
	fputs(",\"args\":{", c->out);
	if (sqlite3_column_int64(p, 2))
		arg_str(c, "incomplete", "no end in the data: a lower bound", &first);
	if (at != ts)
		arg_int(c, "clipped_ns", at - ts, &first);
	fputs("}}", c->out);
}

/* Polls and parks in time order on the lane; returns the events written. */
static uint64_t polls_and_parks(struct chrome *c, int64_t worker, int64_t thread, int64_t pid, int64_t tid)
{
	uint64_t before = c->st->events;
	sqlite3_stmt *polls = lane_query(c, SS_Q_EXPORT_POLLS, worker);
	/* A task's lane shows its polls alone: parks belong to no task. */
	sqlite3_stmt *parks = c->o->has_task ? NULL : lane_query(c, SS_Q_EXPORT_PARKS, worker);
	struct cpu_cursor k = { .st = lane_query(c, SS_Q_EXPORT_CPU, thread) };
	sqlite3_stmt *has = ss_read_prepare(c->db, SS_Q_HAS_CPU);
	bool has_cpu = false;
	if (has) {
		sqlite3_bind_int64(has, 1, thread);
		has_cpu = sqlite3_step(has) == SQLITE_ROW && sqlite3_column_int64(has, 0);
		sqlite3_finalize(has);
	}
	if (!polls || (!parks && !c->o->has_task) || !k.st || c->failed) {
		sqlite3_finalize(polls);
		sqlite3_finalize(parks);
		sqlite3_finalize(k.st);
		fail(c, "polls");
		return 0;
	}
	cpu_next(&k);
	int64_t last_end = INT64_MIN;
	int rp = sqlite3_step(polls), rk = parks ? sqlite3_step(parks) : SQLITE_DONE;
	while ((rp == SQLITE_ROW || rk == SQLITE_ROW) && !c->failed) {
		bool take_poll = rp == SQLITE_ROW &&
				 (rk != SQLITE_ROW || sqlite3_column_int64(polls, 1) <= sqlite3_column_int64(parks, 0));
		if (take_poll) {
			poll_event(c, polls, pid, tid, &last_end, &k, has_cpu);
			rp = sqlite3_step(polls);
		} else {
			park_event(c, parks, pid, tid, &last_end);
			rk = sqlite3_step(parks);
		}
	}
	done(c, polls, rp, "polls");
	if (parks)
		done(c, parks, rk, "parks");
	sqlite3_finalize(k.st);
	return c->st->events - before;
}

/* Blocked and preempted time on the lane's CPU-state lane. */
static uint64_t cpu_states(struct chrome *c, int64_t thread, int64_t pid, int64_t tid)
{
	uint64_t before = c->st->events;
	sqlite3_stmt *st = lane_query(c, SS_Q_EXPORT_CPU, thread);
	if (!st)
		return 0;
	int rc;
	int64_t last_end = INT64_MIN;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW && !c->failed) {
		const char *state = col_text(st, 0);
		if (!state || !strcmp(state, "on-cpu"))
			continue;
		int64_t ts = sqlite3_column_int64(st, 1), end = end_of(ts, sqlite3_column_int64(st, 2));
		int64_t at = lane_start(&last_end, ts, &end);
		ev_begin(c, "X", "cpu", state, pid, tid, at);
		fputs(",\"dur\":", c->out);
		put_dur(c->out, end - at);
		fputs("}", c->out);
	}
	done(c, st, rc, "cpu intervals");
	return c->st->events - before;
}

/* An instant event on the thread, with the stack of index idx (-1: none), up
 * to the opening of its args. */
static void instant_begin(struct chrome *c, const char *cat, const char *name, int64_t pid, int64_t tid, int64_t ts,
			  int64_t idx)
{
	ev_begin(c, "i", cat, name, pid, tid, ts);
	fputs(",\"s\":\"t\"", c->out);
	if (idx >= 0)
		fprintf(c->out, ",\"sf\":\"%" PRId64 "\"", c->stacks[idx].sf);
	fputs(",\"args\":{", c->out);
}

static uint64_t stalls(struct chrome *c, int64_t worker, int64_t pid, int64_t tid)
{
	uint64_t before = c->st->events;
	sqlite3_stmt *st = lane_query(c, SS_Q_EXPORT_STALLS, worker);
	if (!st)
		return 0;
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW && !c->failed) {
		const char *kind = col_text(st, 2), *sc = col_text(st, 3);
		char name[128];
		if (kind && sc && !strcmp(kind, "blocked"))
			snprintf(name, sizeof name, "stall: blocked in %.64s", sc);
		else
			snprintf(name, sizeof name, "stall: %.64s", kind ? kind : "unknown");
		int64_t idx = stack_of(c, sqlite3_column_int64(st, 5));
		instant_begin(c, "stall", name, pid, tid, sqlite3_column_int64(st, 0), idx);
		bool first = true;
		arg_int(c, "stall_id", sqlite3_column_int64(st, 6), &first);
		arg_int(c, "capture", sqlite3_column_int64(st, 1), &first);
		arg_str(c, "kind", kind, &first);
		arg_str(c, "syscall", sc, &first);
		arg_str(c, "reason", col_text(st, 4), &first);
		if (sqlite3_column_type(st, 8) != SQLITE_NULL)
			arg_us(c, "poll_dur_us", sqlite3_column_int64(st, 8), &first);
		if (sqlite3_column_type(st, 9) != SQLITE_NULL)
			arg_int(c, "task", sqlite3_column_int64(st, 9), &first);
		arg_str(c, "location", col_text(st, 10), &first);
		put_stack(c, idx, &first);
		fputs("}}", c->out);
	}
	done(c, st, rc, "stalls");
	return c->st->events - before;
}

static uint64_t samples(struct chrome *c, int64_t thread, int64_t pid, int64_t tid)
{
	uint64_t before = c->st->events;
	sqlite3_stmt *st = lane_query(c, SS_Q_EXPORT_THREAD_SAMPLES, thread);
	if (!st)
		return 0;
	int rc;
	const char *cat = c->o->offcpu ? "offcpu-sample" : "cpu-sample";
	while ((rc = sqlite3_step(st)) == SQLITE_ROW && !c->failed) {
		int64_t idx = stack_of(c, sqlite3_column_int64(st, 1));
		instant_begin(c, cat, idx >= 0 ? c->stacks[idx].name : "[no stack]", pid, tid, sqlite3_column_int64(st, 0),
			      idx);
		bool first = true;
		if (c->o->offcpu)
			arg_us(c, "off_cpu_us", sqlite3_column_int64(st, 3), &first);
		else
			arg_us(c, "cpu_us", sqlite3_column_int64(st, 2), &first);
		if (sqlite3_column_type(st, 4) != SQLITE_NULL)
			arg_int(c, "poll_id", sqlite3_column_int64(st, 4), &first);
		put_stack(c, idx, &first);
		fputs("}}", c->out);
		c->st->samples++;
	}
	done(c, st, rc, "samples");
	return c->st->events - before;
}

/* ---- the whole trace ---------------------------------------------------------- */

static void processes(struct chrome *c)
{
	sqlite3_stmt *st = ss_read_prepare(c->db, SS_Q_SUM_RECORDINGS);
	if (!st) {
		fail(c, "recordings");
		return;
	}
	ss_scope_bind(st, &c->o->scope);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *exe = col_text(st, 1), *host = col_text(st, 2);
		char name[512];
		snprintf(name, sizeof name, "%.300s (pid %lld) on %.150s", exe ? base_name(exe) : "?",
			 (long long)sqlite3_column_int64(st, 3), host ? host : "?");
		void *np = realloc(c->procs, (c->n_procs + 1) * sizeof *c->procs);
		if (!np) {
			fail(c, NULL);
			break;
		}
		c->procs = np;
		c->procs[c->n_procs].id = sqlite3_column_int64(st, 0);
		if (!(c->procs[c->n_procs].name = strdup(name))) {
			fail(c, NULL);
			break;
		}
		c->n_procs++;
	}
	if (!c->failed)
		done(c, st, rc, "recordings");
	else
		sqlite3_finalize(st);
}

static void lanes(struct chrome *c)
{
	sqlite3_stmt *st = ss_read_prepare(c->db, SS_Q_EXPORT_THREADS);
	if (!st) {
		fail(c, "threads");
		return;
	}
	ss_export_bind(st, c->o, 0);
	int rc = SQLITE_DONE;
	int64_t order = 0;
	while (!c->failed && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t thread = sqlite3_column_int64(st, 0), pid = sqlite3_column_int64(st, 1);
		int64_t tid = thread;
		bool worker = sqlite3_column_type(st, 4) != SQLITE_NULL;
		int64_t worker_id = sqlite3_column_int64(st, 4);
		const char *tname = col_text(st, 3), *runtime = col_text(st, 5);
		char name[256];
		if (worker)
			snprintf(name, sizeof name, "%.100s#%lld (tid %lld)", runtime ? runtime : "?",
				 (long long)sqlite3_column_int64(st, 6), (long long)sqlite3_column_int64(st, 2));
		else
			snprintf(name, sizeof name, "%.100s (tid %lld)", tname ? tname : "thread",
				 (long long)sqlite3_column_int64(st, 2));
		uint64_t n = 0, n_cpu = 0;
		if (worker) {
			n += polls_and_parks(c, worker_id, thread, pid, tid);
			n += stalls(c, worker_id, pid, tid);
			if (!c->o->has_task)
				n_cpu = cpu_states(c, thread, pid, CPU_LANE(thread));
		}
		n += samples(c, thread, pid, tid);
		order += 2;
		if (n || n_cpu)
			meta(c, "thread_name", pid, tid, name, order);
		if (n_cpu) {
			char cpu[300];
			snprintf(cpu, sizeof cpu, "%s off CPU", name);
			meta(c, "thread_name", pid, CPU_LANE(thread), cpu, order + 1);
		}
	}
	if (!c->failed)
		done(c, st, rc, "threads");
	else
		sqlite3_finalize(st);
}

int ss_export_chrome(sqlite3 *db, const struct ss_export_opts *o, FILE *out, struct ss_export_stats *st,
		     char *err, size_t errlen)
{
	memset(st, 0, sizeof *st);
	struct chrome c = { .db = db, .o = o, .out = out, .st = st, .first = true, .err = err, .errlen = errlen };
	c.cs = ss_callstacks_new(db);
	c.frames = malloc(SS_STACK_MAX * sizeof *c.frames);
	if (!c.cs || !c.frames) {
		snprintf(err, errlen, "stacks: %s", c.cs ? "out of memory" : sqlite3_errmsg(db));
		c.failed = true;
	}
	if (!c.failed) {
		processes(&c);
		lanes(&c);
		if (!c.failed && !c.started) {
			ss_export_empty(o, o->has_task ? "polls, stalls or samples" : "polls, parks, stalls or samples",
					err, errlen);
			c.failed = true;
		}
	}
	if (!c.failed) {
		fputs("\n],\n", out);
		stack_frames(&c);
		fputs(",\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"exporter\":\"stallscope export --format chrome\",",
		      out);
		fputs("\"source\":", out);
		ss_json_escape(out, o->source ? o->source : "?");
		fprintf(out, ",\"origin_ns\":%" PRId64 ",\"time\":\"microseconds since origin_ns (CLOCK_MONOTONIC of the "
			"recording machine)\",\"samples\":\"%s\"}}\n", o->scope.origin, o->offcpu ? "offcpu" : "cpu");
	}
	for (size_t i = 0; i < c.n_procs; i++)
		free(c.procs[i].name);
	free(c.procs);
	for (size_t i = 0; i < c.n_nodes; i++) {
		free(c.nodes[i].name);
		free(c.nodes[i].category);
	}
	free(c.nodes);
	for (size_t i = 0; i < c.n_stacks; i++)
		free(c.stacks[i].text);
	free(c.stacks);
	ss_hmap_free(&c.node_of);
	ss_hmap_free(&c.stack_of);
	free(c.frames);
	ss_callstacks_free(c.cs);
	return c.failed ? -1 : 0;
}

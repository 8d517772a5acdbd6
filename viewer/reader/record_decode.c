/*
 * record_decode.c - turns the bytes of one record into a struct ss_record.
 *
 * Every length is checked against the bytes that remain before it is used, every
 * timestamp addition is checked for overflow, and a varint that would not fit 64
 * bits is rejected, so hostile payloads end in a message rather than in a wrong
 * value or undefined behaviour.
 */
#include "record_decode.h"

#include <string.h>

struct cursor {
	const uint8_t *p;
	size_t left;
	const char *why;
};

static inline int get_v(struct cursor *c, uint64_t *v)
{
	if (c->why)
		return 0;
	/* Most fields (deltas, ids, small counts) fit one byte. */
	if (c->left && c->p[0] < 0x80) {
		*v = c->p[0];
		c->p++;
		c->left--;
		return 1;
	}
	size_t n = ss_get_varint(c->p, c->left, v);
	if (n == 0) {
		c->why = c->left < 10 ? "record ends inside a varint" : "varint longer than 10 bytes";
		return 0;
	}
	/* The tenth byte may only carry the 64th bit; more would be silently lost. */
	if (n == 10 && c->p[9] > 1) {
		c->why = "varint overflows 64 bits";
		return 0;
	}
	c->p += n;
	c->left -= n;
	return 1;
}

static int get_s(struct cursor *c, const char **data, size_t *len)
{
	uint64_t l;
	if (!get_v(c, &l))
		return 0;
	if (l > c->left) {
		c->why = "string longer than its record";
		return 0;
	}
	*data = (const char *)c->p;
	*len = (size_t)l;
	c->p += l;
	c->left -= (size_t)l;
	return 1;
}

/* Advances the current thread's clock by dt; the event's absolute time. */
static int get_dt(struct cursor *c, struct ss_decode_state *st, struct ss_record *rec)
{
	uint64_t dt;
	if (!st->have_thread) {
		c->why = "event before any THREAD record in its block";
		return 0;
	}
	if (!get_v(c, &dt))
		return 0;
	if (dt > UINT64_MAX - st->clock) {
		c->why = "event timestamp overflows";
		return 0;
	}
	st->clock += dt;
	rec->ts = st->clock;
	rec->thread = st->thread;
	rec->is_event = true;
	return 1;
}

void ss_decode_begin(struct ss_decode_state *st)
{
	memset(st, 0, sizeof *st);
}

static int decode_thread_def(struct cursor *c, struct ss_thread_def *t)
{
	return get_v(c, &t->thread) && get_v(c, &t->tid) &&
	       get_s(c, &t->name, &t->name_len) && get_v(c, &t->runtime) &&
	       get_v(c, &t->worker_index) && get_v(c, &t->flags) &&
	       get_v(c, &t->open_task) && get_v(c, &t->open_location) &&
	       get_v(c, &t->open_since) && get_v(c, &t->parked_since);
}

/* Types 0x40 and above: a varint body length, then the body. Known ones are
 * decoded from inside the body only; trailing body bytes are allowed so that a
 * later version can append fields. */
static int decode_extension(struct cursor *c, uint8_t type, struct ss_record *rec)
{
	uint64_t body_len;
	if (!get_v(c, &body_len))
		return 0;
	if (body_len > c->left) {
		c->why = "record body longer than the block";
		return 0;
	}
	struct cursor body = { c->p, (size_t)body_len, NULL };
	c->p += body_len;
	c->left -= (size_t)body_len;

	if (type == SS_REC_META) {
		if (!get_s(&body, &rec->u.meta.key, &rec->u.meta.key_len) ||
		    !get_s(&body, &rec->u.meta.value, &rec->u.meta.value_len)) {
			c->why = body.why;
			return 0;
		}
		return 1;
	}
	int ok = 1;
	switch (type) {
	case SS_REC_SAMPLE:
		ok = get_v(&body, &rec->u.sample.thread) && get_v(&body, &rec->u.sample.tid) &&
		     get_v(&body, &rec->ts) && get_v(&body, &rec->u.sample.cpu) &&
		     get_v(&body, &rec->u.sample.weight) && get_v(&body, &rec->u.sample.kind) &&
		     get_v(&body, &rec->u.sample.stack);
		rec->thread = rec->u.sample.thread;
		break;
	case SS_REC_SWITCH:
		ok = get_v(&body, &rec->u.switch_rec.thread) && get_v(&body, &rec->u.switch_rec.tid) &&
		     get_v(&body, &rec->ts) && get_v(&body, &rec->u.switch_rec.cpu) &&
		     get_v(&body, &rec->u.switch_rec.flags);
		rec->thread = rec->u.switch_rec.thread;
		break;
	case SS_REC_COMM:
		ok = get_v(&body, &rec->u.comm.thread) && get_v(&body, &rec->u.comm.tid) &&
		     get_v(&body, &rec->ts) && get_s(&body, &rec->u.comm.name, &rec->u.comm.name_len);
		rec->thread = rec->u.comm.thread;
		break;
	case SS_REC_SAMPLER_LOSS:
		ok = get_v(&body, &rec->u.sampler_loss.tid) && get_v(&body, &rec->ts) &&
		     get_v(&body, &rec->u.sampler_loss.span) && get_v(&body, &rec->u.sampler_loss.count) &&
		     get_v(&body, &rec->u.sampler_loss.reason);
		if (ok && rec->u.sampler_loss.span > UINT64_MAX - rec->ts) {
			body.why = "SAMPLER_LOSS time range overflows";
			ok = 0;
		}
		break;
	case SS_REC_STACK: {
		ok = get_v(&body, &rec->u.stack.id) && get_v(&body, &rec->u.stack.nkernel) &&
		     get_v(&body, &rec->u.stack.nframes);
		if (ok && (rec->u.stack.nframes > SS_MAX_STACK_FRAMES ||
			   rec->u.stack.nkernel > rec->u.stack.nframes)) {
			body.why = "STACK with too many frames or kernel frames";
			ok = 0;
		}
		rec->u.stack.frames = body.p;
		/* Every frame must be a whole varint now, so ss_stack_frames cannot fail. */
		uint64_t addr;
		for (uint64_t i = 0; ok && i < rec->u.stack.nframes; i++)
			ok = get_v(&body, &addr);
		rec->u.stack.frames_len = ok ? (size_t)(body.p - rec->u.stack.frames) : 0;
		/* Appended later (FORMAT.md): absent means 0. */
		rec->u.stack.flags = 0;
		if (ok && body.left)
			ok = get_v(&body, &rec->u.stack.flags);
		break;
	}
	case SS_REC_MAPPING: {
		const char *bid = NULL;
		ok = get_v(&body, &rec->ts) && get_v(&body, &rec->u.mapping.start) &&
		     get_v(&body, &rec->u.mapping.end) && get_v(&body, &rec->u.mapping.pgoff) &&
		     get_v(&body, &rec->u.mapping.prot) &&
		     get_s(&body, &bid, &rec->u.mapping.build_id_len) &&
		     get_s(&body, &rec->u.mapping.path, &rec->u.mapping.path_len);
		rec->u.mapping.build_id = (const uint8_t *)bid;
		if (ok && rec->u.mapping.build_id_len > 64) {
			body.why = "MAPPING build id longer than 64 bytes";
			ok = 0;
		}
		break;
	}
	case SS_REC_STALL:
		ok = get_v(&body, &rec->u.stall.thread) && get_v(&body, &rec->u.stall.tid) &&
		     get_v(&body, &rec->u.stall.task) && get_v(&body, &rec->u.stall.location) &&
		     get_v(&body, &rec->u.stall.poll_ts) && get_v(&body, &rec->ts) &&
		     get_v(&body, &rec->u.stall.index) && get_v(&body, &rec->u.stall.kind) &&
		     get_v(&body, &rec->u.stall.syscall1) && get_v(&body, &rec->u.stall.stack) &&
		     get_s(&body, &rec->u.stall.reason, &rec->u.stall.reason_len);
		rec->thread = rec->u.stall.thread;
		break;
	case SS_REC_CLOCK:
		ok = get_v(&body, &rec->u.clock.source) && get_v(&body, &rec->u.clock.tsc) &&
		     get_v(&body, &rec->u.clock.mono_ns) && get_v(&body, &rec->u.clock.tsc_hz) &&
		     get_v(&body, &rec->u.clock.points) && get_v(&body, &rec->u.clock.drift_ns);
		break;
	case SS_REC_STALL_END:
		ok = get_v(&body, &rec->u.stall_end.thread) && get_v(&body, &rec->u.stall_end.tid) &&
		     get_v(&body, &rec->u.stall_end.task) && get_v(&body, &rec->u.stall_end.poll_ts) &&
		     get_v(&body, &rec->ts) && get_v(&body, &rec->u.stall_end.captures);
		rec->thread = rec->u.stall_end.thread;
		break;
	case SS_REC_TASK_DUMP:
		ok = get_v(&body, &rec->u.task_dump.task) && get_v(&body, &rec->u.task_dump.thread) &&
		     get_v(&body, &rec->u.task_dump.tid) && get_v(&body, &rec->u.task_dump.location) &&
		     get_v(&body, &rec->ts) && get_v(&body, &rec->u.task_dump.idle_ns) &&
		     get_v(&body, &rec->u.task_dump.stack);
		rec->thread = rec->u.task_dump.thread;
		break;
	default:
		rec->u.unknown.body = body.p;
		rec->u.unknown.len = body.left;
		return 1;
	}
	if (!ok) {
		c->why = body.why ? body.why : "malformed record";
		return 0;
	}
	return 1;
}

size_t ss_stack_frames(const struct ss_record *rec, uint64_t *out, size_t max)
{
	if (rec->type != SS_REC_STACK)
		return 0;
	struct cursor c = { rec->u.stack.frames, rec->u.stack.frames_len, NULL };
	size_t n = 0;
	for (; n < max && n < rec->u.stack.nframes; n++)
		if (!get_v(&c, &out[n]))
			break;
	return n;
}

static int decode_body(struct cursor *c, struct ss_decode_state *st, uint8_t type,
		       struct ss_record *rec)
{
	uint64_t v;

	if (type >= 0x40)
		return decode_extension(c, type, rec);

	switch (type) {
	case SS_REC_STRING:
		return get_v(c, &rec->u.string.id) &&
		       get_s(c, &rec->u.string.data, &rec->u.string.len);
	case SS_REC_LOCATION:
		return get_v(c, &rec->u.location.id) && get_v(c, &rec->u.location.file) &&
		       get_v(c, &rec->u.location.line) && get_v(c, &rec->u.location.function);
	case SS_REC_THREAD_DEF:
		return decode_thread_def(c, &rec->u.thread_def);
	case SS_REC_THREAD:
		if (!get_v(c, &rec->u.thread.thread) || !get_v(c, &v))
			return 0;
		st->thread = rec->u.thread.thread;
		st->clock = v;
		st->have_thread = 1;
		rec->ts = st->clock;
		rec->thread = st->thread;
		return 1;
	case SS_REC_POLL_BEGIN:
		return get_dt(c, st, rec) && get_v(c, &rec->u.poll_begin.task) &&
		       get_v(c, &rec->u.poll_begin.location);
	case SS_REC_SPAWN:
		return get_dt(c, st, rec) && get_v(c, &rec->u.spawn.task) &&
		       get_v(c, &rec->u.spawn.location);
	case SS_REC_POLL_END:
	case SS_REC_PARK:
	case SS_REC_UNPARK:
	case SS_REC_WORKER_END:
	case SS_REC_THREAD_EXIT:
		return get_dt(c, st, rec);
	case SS_REC_TERMINATE:
		return get_dt(c, st, rec) && get_v(c, &rec->u.terminate.task);
	case SS_REC_WAKE:
		return get_dt(c, st, rec) && get_v(c, &rec->u.wake.task);
	case SS_REC_QUEUE:
		return get_dt(c, st, rec) && get_v(c, &rec->u.queue.local) &&
		       get_v(c, &rec->u.queue.global);
	case SS_REC_MARK:
		if (!get_dt(c, st, rec) || !get_v(c, &rec->u.mark.name) || !get_v(c, &v))
			return 0;
		rec->u.mark.value = ss_unzigzag(v);
		return 1;
	case SS_REC_SPAN_BEGIN:
	case SS_REC_SPAN_END:
		return get_dt(c, st, rec) && get_v(c, &rec->u.span.name);
	case SS_REC_WORKER_BEGIN:
		return get_dt(c, st, rec) && get_v(c, &rec->u.worker_begin.runtime) &&
		       get_v(c, &rec->u.worker_begin.index);
	case SS_REC_LOSS:
		if (!get_dt(c, st, rec) || !get_v(c, &rec->u.loss.count) ||
		    !get_v(c, &rec->u.loss.span) || !get_v(c, &rec->u.loss.reason))
			return 0;
		if (rec->u.loss.span > UINT64_MAX - rec->ts) {
			c->why = "LOSS time range overflows";
			return 0;
		}
		return 1;
	default:
		/* Below 0x40 the reader cannot know the length of what it does not know. */
		c->why = "unknown record type below 0x40";
		return 0;
	}
}

size_t ss_decode_record(struct ss_decode_state *st, const uint8_t *p, size_t avail,
			struct ss_record *rec, const char **why)
{
	/* A copy of a zero record, not memset: GCC makes the memset of these 144
	 * bytes one `rep stosq`, whose start-up cost was 58% of this function's
	 * time (every record of an import is decoded here twice); the copy is
	 * nine 16-byte moves. */
	static const struct ss_record zero;
	*rec = zero;
	if (avail == 0) {
		*why = "empty record";
		return 0;
	}
	struct cursor c = { p + 1, avail - 1, NULL };
	rec->type = p[0];
	if (!decode_body(&c, st, rec->type, rec)) {
		*why = c.why ? c.why : "malformed record";
		return 0;
	}
	return avail - c.left;
}

bool ss_record_counts_as_event(uint8_t type)
{
	return type >= 0x10 && type < 0x40 && type != SS_REC_LOSS;
}

/* ---- the floor walk -------------------------------------------------------- */

/* Past one varint that get_v would take (the same bytes: at most ten). */
static inline bool walk_v(const uint8_t **p, const uint8_t *end)
{
	const uint8_t *q = *p;
	for (int i = 0; i < 10 && q < end; i++)
		if (!(*q++ & 0x80)) {
			*p = q;
			return true;
		}
	return false;
}

static inline bool walk_val(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	size_t n = ss_get_varint(*p, (size_t)(end - *p), v);
	*p += n;
	return n != 0;
}

/* Past a string: its length, then that many bytes. */
static inline bool walk_s(const uint8_t **p, const uint8_t *end)
{
	uint64_t l;
	if (!walk_val(p, end, &l) || l > (uint64_t)(end - *p))
		return false;
	*p += l;
	return true;
}

/* The fields of the types below 0x40 that decode_body knows, as varints
 * before a string, whether the string is there, and varints after it; 0xff
 * marks a type it refuses. THREAD is walked by itself (its time is read). */
static const uint8_t walk_layout[0x40][3] = {
	[0x00] = { 0xff, 0, 0 },
	[SS_REC_STRING] = { 1, 1, 0 },
	[SS_REC_LOCATION] = { 4, 0, 0 },
	[SS_REC_THREAD_DEF] = { 2, 1, 7 },
	[SS_REC_POLL_BEGIN] = { 3, 0, 0 },
	[SS_REC_POLL_END] = { 1, 0, 0 },
	[SS_REC_PARK] = { 1, 0, 0 },
	[SS_REC_UNPARK] = { 1, 0, 0 },
	[SS_REC_SPAWN] = { 3, 0, 0 },
	[SS_REC_TERMINATE] = { 2, 0, 0 },
	[SS_REC_WAKE] = { 2, 0, 0 },
	[SS_REC_QUEUE] = { 3, 0, 0 },
	[SS_REC_MARK] = { 3, 0, 0 },
	[SS_REC_SPAN_BEGIN] = { 2, 0, 0 },
	[SS_REC_SPAN_END] = { 2, 0, 0 },
	[SS_REC_WORKER_BEGIN] = { 3, 0, 0 },
	[SS_REC_WORKER_END] = { 1, 0, 0 },
	[SS_REC_THREAD_EXIT] = { 1, 0, 0 },
	[SS_REC_LOSS] = { 4, 0, 0 },
};

/* How many varints precede the time in the body of a type >= 0x40 that
 * carries its own (decode_extension's order), else -1. */
static int own_time_at(uint8_t type)
{
	switch (type) {
	case SS_REC_SAMPLE:
	case SS_REC_SWITCH:
	case SS_REC_COMM:
		return 2; /* thread, tid */
	case SS_REC_SAMPLER_LOSS:
		return 1; /* tid */
	case SS_REC_STALL:
		return 5; /* thread, tid, task, location, poll_ts */
	case SS_REC_STALL_END:
	case SS_REC_TASK_DUMP:
		return 4; /* thread, tid, task, poll_ts / task, thread, tid, location */
	default:
		return -1;
	}
}

/* Past n (1 to 8) varints that end within the next 8 bytes, at least 8 of
 * which are there: one load, and the n-th byte without its high bit. False
 * when they do not end there (the caller walks them one by one). */
static inline bool walk_8(const uint8_t **p, unsigned n)
{
	uint64_t w;
	memcpy(&w, *p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	w = __builtin_bswap64(w);
#endif
	uint64_t ends = ~w & 0x8080808080808080ull;
	while (--n && ends)
		ends &= ends - 1;
	if (!ends)
		return false;
	*p += ((unsigned)__builtin_ctzll(ends) >> 3) + 1;
	return true;
}

bool ss_walk_floor(const uint8_t *p, size_t len, uint64_t *floor,
		   void (*def)(void *ctx, uint8_t type, uint64_t id), void *ctx)
{
	const uint8_t *end = p + len;
	uint64_t lo = UINT64_MAX, v;
	while (p < end) {
		uint8_t type = *p++;
		/* Most records: an event of a few one- or two-byte varints. */
		if (type >= SS_REC_POLL_BEGIN && type < 0x40 && end - p >= 8 && walk_layout[type][0] &&
		    walk_layout[type][0] != 0xff && walk_8(&p, walk_layout[type][0]))
			continue;
		if (type >= 0x40) {
			uint64_t body_len;
			if (!walk_val(&p, end, &body_len) || body_len > (uint64_t)(end - p))
				return false;
			const uint8_t *b = p, *bend = p + body_len;
			p = bend;
			if (type == SS_REC_STACK && def) {
				if (!walk_val(&b, bend, &v))
					return false;
				def(ctx, type, v);
				continue;
			}
			int k = own_time_at(type);
			if (k < 0)
				continue;
			while (k-- > 0)
				if (!walk_v(&b, bend))
					return false;
			if (!walk_val(&b, bend, &v))
				return false;
			if (v < lo)
				lo = v;
			continue;
		}
		if (type == SS_REC_THREAD) {
			if (!walk_v(&p, end) || !walk_val(&p, end, &v))
				return false;
			if (v < lo)
				lo = v;
			continue;
		}
		const uint8_t *l = walk_layout[type];
		if (l[0] == 0 || l[0] == 0xff)
			return false;
		unsigned i = 0;
		if (type < SS_REC_THREAD && def) {
			/* STRING, LOCATION, THREAD_DEF: their id first */
			if (!walk_val(&p, end, &v))
				return false;
			def(ctx, type, v);
			i = 1;
		}
		for (; i < l[0]; i++)
			if (!walk_v(&p, end))
				return false;
		if (l[1] && !walk_s(&p, end))
			return false;
		for (i = 0; i < l[2]; i++)
			if (!walk_v(&p, end))
				return false;
	}
	*floor = lo;
	return true;
}

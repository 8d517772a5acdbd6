/*
 * writer.c - the background thread that turns thread rings into segment blocks.
 *
 * Every tick (10 ms, sooner when a thread exits) it drains each ring, encoding
 * events as compact records into the block being built, and writes the block when
 * it is big enough or older than the flush interval, so a SIGKILL loses at most
 * that interval. All the expensive work of recording happens here, never on the
 * hook path.
 *
 * Segments do not overlap in time: a rotation picks a boundary B, drains every ring
 * up to B into the old segment, seals it with end_ts = B, and starts the next one at
 * B. Each ring holds a thread's events in time order, so draining "up to B" is a
 * prefix of each ring. Rings are drained in time windows of a bounded number of
 * events per ring, and the size check runs between windows (B = the last window's
 * end), so however far the writer fell behind a segment never outgrows its limit.
 *
 * Every segment is self-contained: strings, locations and thread definitions (with
 * the poll or park a thread is in at the boundary) are written again in each new
 * segment before the first event that needs them. A block lost to a failed write
 * takes its definitions with it, so they are then written again too.
 *
 * Failures never stop recording for good: a failed write drops the block, counts
 * its events, and reports them as a LOSS record in the next block that is written;
 * a vanished directory is recreated; a segment that cannot be created is retried
 * once a second.
 */
#include "recorder-private.h"
#include "sampler.h"
#include "segment_format.h"
#include "stack_table.h"
#include "stall.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <fcntl.h>
#include <unistd.h>

#ifdef STALLSCOPE_HAVE_ZSTD
#include <zstd.h>
#endif

#define TICK_NS 10000000ull
#define RETRY_NS 1000000000ull
#define METRICS_PERIOD_NS 10000000000ull
#define MAX_EVENT_BYTES 64

struct writer {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int running;
	int kicked;
	struct ss_writer_config cfg;
	char *metrics_file;
	struct ss_segments *sg;

	/* block under construction */
	uint8_t *raw;
	size_t raw_len, block_target, raw_cap;
	uint32_t block_events;
	uint64_t block_first_ts, block_last_ts, block_opened_ns;
	uint32_t cur_thread;   /* THREAD context in the block, 0 = none yet */
	uint64_t cur_ts;
	uint8_t *zbuf;
	size_t zcap;
#ifdef STALLSCOPE_HAVE_ZSTD
	ZSTD_CCtx *zctx;
#endif

	/* active segment */
	uint64_t seg_seq1;     /* active segment's seq + 1; 0 = none */
	uint64_t seg_start_ts, seg_opened_ns, seg_limit;
	uint64_t retry_at_ns;
	struct ss_footer foot;
	uint32_t defs_emitted;
	uint64_t drained_to;     /* every event up to this time has left the rings */
	uint64_t window_events;  /* most events a drain window takes from one ring */

	/* events lost to failed writes, reported in the next block written */
	uint64_t lost_count, lost_first, lost_last;
	int failing;
	/* What the LOSS records of the block being built (blk_) and of the active
	 * segment's written blocks (seg_) report. When those bytes never reach the disk
	 * (a failed write, a vanished file) the footer forgets them and a write-failure
	 * loss they carried is reported again, so the trace still accounts for it. */
	uint64_t blk_dropped, blk_loss_records;
	uint64_t blk_lost_count, blk_lost_first, blk_lost_last;
	uint64_t seg_lost_count, seg_lost_first, seg_lost_last;

	uint64_t last_metrics_ns;
	char sampler_status[512];
	char stall_status[256];
	uint64_t sampler_lost;       /* samples that arrived with no segment to go to */
	_Atomic int sampling_on;     /* what stallscope_set_enabled() asked for */
	int sampling_applied;        /* what the sampler was last told */
};

static struct writer W;
static const struct ss_sample_sink sink; /* defined with the sampler callbacks below */

/* ---- encoding ---------------------------------------------------------------- */

static void put_u8(uint8_t v) { W.raw[W.raw_len++] = v; }
static void put_v(uint64_t v) { W.raw_len += ss_put_varint(W.raw + W.raw_len, v); }

static void put_bytes(const void *p, size_t n)
{
	put_v(n);
	memcpy(W.raw + W.raw_len, p, n);
	W.raw_len += n;
}

/* Room for n more bytes; definitions can be long, so the buffer grows for them. */
static int reserve(size_t n)
{
	if (W.raw_len + n <= W.raw_cap)
		return 0;
	size_t cap = W.raw_cap * 2;
	while (cap < W.raw_len + n)
		cap *= 2;
	uint8_t *r = realloc(W.raw, cap);
	if (!r)
		return -1;
	W.raw = r;
	W.raw_cap = cap;
	return 0;
}

static void set_thread(uint32_t thread, uint64_t ts)
{
	put_u8(SS_REC_THREAD);
	put_v(thread);
	put_v(ts);
	W.cur_thread = thread;
	W.cur_ts = ts;
}

static void put_dt(uint64_t ts)
{
	put_v(ts > W.cur_ts ? ts - W.cur_ts : 0);
	if (ts > W.cur_ts)
		W.cur_ts = ts;
}

static void note_event(uint64_t ts)
{
	if (!W.block_first_ts || ts < W.block_first_ts)
		W.block_first_ts = ts;
	if (ts > W.block_last_ts)
		W.block_last_ts = ts;
	W.block_events++;
}

static void put_meta(const char *key, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put_meta(const char *key, const char *fmt, ...)
{
	char val[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(val, sizeof val, fmt, ap);
	va_end(ap);
	size_t kl = strlen(key), vl = strlen(val);
	uint8_t body[600];
	size_t n = ss_put_varint(body, kl);
	memcpy(body + n, key, kl);
	n += kl;
	n += ss_put_varint(body + n, vl);
	memcpy(body + n, val, vl);
	n += vl;
	if (reserve(n + 16) != 0)
		return;
	put_u8(SS_REC_META);
	put_bytes(body, n);
}

static void put_session_meta(void)
{
	const struct stallscope_config *c = W.cfg.user;
	put_meta("recorder", "libstallscope 0.1.0");
	put_meta("clock", "CLOCK_MONOTONIC");
	put_meta("max_file_size", "%llu", (unsigned long long)c->max_file_size);
	put_meta("rotation_count", "%u", c->rotation_count);
	put_meta("rotation_period_s", "%u", c->rotation_period_s);
	put_meta("flush_interval_ms", "%u", c->flush_interval_ms);
	put_meta("buffer_events", "%u", c->buffer_events);
	put_meta("max_threads", "%u", c->max_threads);
	put_meta("compress", "%s", W.cfg.compress ? "zstd" : "none");
	put_meta("sampler", "%s", ss_writer_sampler_status());
	put_meta("stalls", "%s", W.stall_status[0] ? W.stall_status : "off");
	put_meta("task_dumps", c->task_dump_enabled ? "on: mean idle threshold %u ms" : "off",
		 c->task_dump_idle_threshold_ms);
}

/* Definitions interned since the last call (all of them at a segment start). */
static void put_new_defs(void)
{
	uint32_t n = ss_intern_count();
	for (; W.defs_emitted < n; W.defs_emitted++) {
		const struct ss_intern_entry *e = ss_intern_entry(W.defs_emitted);
		if (reserve((size_t)e->len + 48) != 0)
			return;
		if (e->kind == 1) {
			put_u8(SS_REC_STRING);
			put_v(e->id);
			put_bytes(e->str, e->len);
		} else {
			put_u8(SS_REC_LOCATION);
			put_v(e->id);
			put_v(e->file_id);
			put_v(e->line);
			put_v(e->func_id);
		}
	}
}

static void thread_name(int tid, char out[17])
{
	char path[64];
	snprintf(path, sizeof path, "/proc/self/task/%d/comm", tid);
	memset(out, 0, 17);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, out, 16);
	close(fd);
	if (n > 0)
		out[strcspn(out, "\n")] = 0;
	else
		out[0] = 0;
}

static void put_thread_def(struct ss_slot *s)
{
	char name[17];
	thread_name(s->tid, name);
	reserve(128);
	put_u8(SS_REC_THREAD_DEF);
	put_v(s->thread_id);
	put_v((uint64_t)(uint32_t)s->tid);
	put_bytes(name, strlen(name));
	put_v(s->w_runtime);
	put_v(s->w_worker_index);
	put_v(s->w_runtime ? SS_THREAD_F_WORKER : 0);
	put_v(s->w_open_since ? s->w_open_task : 0);
	put_v(s->w_open_since ? s->w_open_loc : 0);
	put_v(s->w_open_since);
	put_v(s->w_parked_since);
	s->w_defined_seg = W.seg_seq1;
	W.cur_thread = 0; /* a definition does not change the clock, but be explicit */
}

/* Encodes one ring entry of slot s and updates the writer's view of the thread. */
static void put_event(struct ss_slot *s, const struct ss_ev *e)
{
	if (W.raw_len + MAX_EVENT_BYTES > W.raw_cap && reserve(MAX_EVENT_BYTES) != 0)
		return;
	if (W.cur_thread != s->thread_id)
		set_thread(s->thread_id, e->ts);
	switch (e->kind) {
	case SS_EV_POLL_BEGIN:
		put_u8(SS_REC_POLL_BEGIN); put_dt(e->ts); put_v(e->a); put_v(e->b);
		s->w_open_task = e->a; s->w_open_loc = e->b; s->w_open_since = e->ts;
		ss_task_dump_polled(e->a, e->ts);
		break;
	case SS_EV_POLL_END:
		put_u8(SS_REC_POLL_END); put_dt(e->ts);
		s->w_open_since = 0;
		break;
	case SS_EV_PARK:
		put_u8(SS_REC_PARK); put_dt(e->ts);
		s->w_parked_since = e->ts;
		break;
	case SS_EV_UNPARK:
		put_u8(SS_REC_UNPARK); put_dt(e->ts);
		s->w_parked_since = 0;
		break;
	case SS_EV_SPAWN:
		put_u8(SS_REC_SPAWN); put_dt(e->ts); put_v(e->a); put_v(e->b);
		break;
	case SS_EV_TERMINATE:
		put_u8(SS_REC_TERMINATE); put_dt(e->ts); put_v(e->a);
		ss_task_dump_polled(e->a, e->ts);
		break;
	case SS_EV_WAKE:
		put_u8(SS_REC_WAKE); put_dt(e->ts); put_v(e->a);
		break;
	case SS_EV_QUEUE:
		put_u8(SS_REC_QUEUE); put_dt(e->ts); put_v(e->a); put_v(e->b);
		break;
	case SS_EV_MARK:
		put_u8(SS_REC_MARK); put_dt(e->ts); put_v(e->b); put_v(ss_zigzag((int64_t)e->a));
		break;
	case SS_EV_SPAN_BEGIN:
		put_u8(SS_REC_SPAN_BEGIN); put_dt(e->ts); put_v(e->b);
		break;
	case SS_EV_SPAN_END:
		put_u8(SS_REC_SPAN_END); put_dt(e->ts); put_v(e->b);
		break;
	case SS_EV_WORKER_BEGIN:
		put_u8(SS_REC_WORKER_BEGIN); put_dt(e->ts); put_v(e->a); put_v(e->b);
		s->w_runtime = (uint32_t)e->a; s->w_worker_index = e->b;
		break;
	case SS_EV_WORKER_END:
		put_u8(SS_REC_WORKER_END); put_dt(e->ts);
		s->w_runtime = 0; s->w_worker_index = 0;
		break;
	case SS_EV_LOSS:
		put_u8(SS_REC_LOSS); put_dt(e->ts); put_v(e->a);
		put_v(e->c > e->ts ? e->c - e->ts : 0); put_v(e->b);
		W.foot.dropped_events += e->a;
		W.foot.loss_records++;
		W.blk_dropped += e->a;
		W.blk_loss_records++;
		return; /* a loss is not an event of the thread */
	default:
		return;
	}
	note_event(e->ts);
}

/* ---- blocks and segments ------------------------------------------------------ */

static void reset_block(void)
{
	W.raw_len = 0;
	W.block_events = 0;
	W.block_first_ts = W.block_last_ts = 0;
	W.cur_thread = 0;
	W.block_opened_ns = 0;
}

/* Forget what the active segment has been told, so it is told again. */
static void forget_definitions(void)
{
	struct ss_pool *p = ss_pool_get();
	W.defs_emitted = 0;
	for (uint32_t i = 0; i < p->nslots; i++)
		p->slots[i].w_defined_seg = 0;
	ss_stacks_forget();
}

static void note_lost(uint64_t count, uint64_t first, uint64_t last)
{
	if (!count)
		return;
	if (!W.lost_count || first < W.lost_first)
		W.lost_first = first;
	if (last > W.lost_last)
		W.lost_last = last;
	W.lost_count += count;
	atomic_fetch_add(&ss_counters.events_lost_on_disk, count);
}

static void merge_range(uint64_t *count, uint64_t *first, uint64_t *last,
			uint64_t n, uint64_t n_first, uint64_t n_last)
{
	if (!n)
		return;
	if (!*count || n_first < *first)
		*first = n_first;
	if (!*count || n_last > *last)
		*last = n_last;
	*count += n;
}

/* The loss of earlier failed writes and of threads refused a buffer, as
 * process-wide LOSS records at the start of a block. */
static void put_process_losses(void)
{
	uint64_t n, first, last;
	if (ss_pool_take_no_slot_loss(&n, &first, &last)) {
		set_thread(0, first);
		put_u8(SS_REC_LOSS); put_dt(first); put_v(n); put_v(last - first);
		put_v(SS_LOSS_NO_BUFFER);
		W.foot.dropped_events += n;
		W.foot.loss_records++;
		W.blk_dropped += n;
		W.blk_loss_records++;
	}
	if (W.lost_count) {
		set_thread(0, W.lost_first);
		put_u8(SS_REC_LOSS); put_dt(W.lost_first); put_v(W.lost_count);
		put_v(W.lost_last - W.lost_first); put_v(SS_LOSS_WRITE_FAILED);
		W.foot.dropped_events += W.lost_count;
		W.foot.loss_records++;
		W.blk_dropped += W.lost_count;
		W.blk_loss_records++;
		merge_range(&W.blk_lost_count, &W.blk_lost_first, &W.blk_lost_last,
			    W.lost_count, W.lost_first, W.lost_last);
		W.lost_count = 0;
	}
}

/* The block being built will never be on disk: its LOSS records leave the footer,
 * and the write-failure loss it carried is reported again by a later block. */
static void unreport_block_losses(void)
{
	W.foot.dropped_events -= W.blk_dropped;
	W.foot.loss_records -= W.blk_loss_records;
	merge_range(&W.lost_count, &W.lost_first, &W.lost_last,
		    W.blk_lost_count, W.blk_lost_first, W.blk_lost_last);
	W.blk_dropped = W.blk_loss_records = W.blk_lost_count = 0;
}

static void set_failing(int failing, int err)
{
	if (failing && !W.failing)
		ss_log("cannot write segment data in %s: %s; dropping events until it works again",
		       W.cfg.seg.dir, strerror(err));
	else if (!failing && W.failing)
		ss_log("writing segments again in %s", W.cfg.seg.dir);
	if (failing)
		atomic_fetch_add(&ss_counters.errors, 1);
	W.failing = failing;
	atomic_store(&ss_counters.writer_healthy, failing ? 0u : 1u);
}

static void flush_block(void)
{
	if (!W.raw_len)
		return;
	struct ss_block_header b = {
		.magic = SS_BLOCK_MAGIC, .kind = SS_BLOCK_EVENTS, .raw_len = (uint32_t)W.raw_len,
		.record_count = W.block_events, .block_seq = W.foot.blocks,
		.first_ts = W.block_first_ts, .last_ts = W.block_last_ts,
	};
	const void *payload = W.raw;
	b.payload_len = (uint32_t)W.raw_len;
#ifdef STALLSCOPE_HAVE_ZSTD
	if (W.cfg.compress && W.zctx) {
		size_t z = ZSTD_compressCCtx(W.zctx, W.zbuf, W.zcap, W.raw, W.raw_len, 1);
		if (!ZSTD_isError(z) && z < W.raw_len) {
			payload = W.zbuf;
			b.payload_len = (uint32_t)z;
			b.flags = SS_BLOCK_F_ZSTD;
		}
	}
#endif
	b.payload_crc = ss_crc32c(0, payload, b.payload_len);
	b.header_crc = ss_block_header_crc(&b);

	if (W.seg_seq1 && ss_segments_append(W.sg, &b, payload) == 0) {
		W.foot.blocks++;
		W.foot.events += W.block_events;
		if (W.block_first_ts && (!W.foot.first_event_ts || W.block_first_ts < W.foot.first_event_ts))
			W.foot.first_event_ts = W.block_first_ts;
		if (W.block_last_ts > W.foot.last_event_ts)
			W.foot.last_event_ts = W.block_last_ts;
		atomic_fetch_add(&ss_counters.events_written, W.block_events);
		merge_range(&W.seg_lost_count, &W.seg_lost_first, &W.seg_lost_last,
			    W.blk_lost_count, W.blk_lost_first, W.blk_lost_last);
		W.blk_dropped = W.blk_loss_records = W.blk_lost_count = 0;
		set_failing(0, 0);
	} else {
		int e = errno;
		unreport_block_losses();
		note_lost(W.block_events, W.block_first_ts ? W.block_first_ts : ss_now(),
			  W.block_last_ts ? W.block_last_ts : ss_now());
		/* Whatever the lost block defined must be defined again. */
		forget_definitions();
		if (W.seg_seq1)
			set_failing(1, e);
	}
	reset_block();
}

static void begin_block_if_needed(void)
{
	if (W.raw_len)
		return;
	W.block_opened_ns = ss_now();
	if (W.seg_seq1)
		put_process_losses();
}

static uint64_t effective_max_size(void)
{
	uint64_t max = W.cfg.seg.max_file_size;
	struct rlimit rl;
	/* Rotating below the file-size limit avoids SIGXFSZ/EFBIG altogether. */
	if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < max)
		max = rl.rlim_cur;
	return max;
}

static void begin_segment(uint64_t start_ts)
{
	uint64_t now = ss_now();
	if (W.seg_seq1 || now < W.retry_at_ns)
		return;
	if (ss_segments_begin(W.sg, start_ts) != 0) {
		set_failing(1, errno);
		W.retry_at_ns = now + RETRY_NS;
		return;
	}
	W.seg_seq1 = ss_segments_active_seq(W.sg) + 1;
	W.seg_start_ts = start_ts;
	if (W.drained_to < start_ts)
		W.drained_to = start_ts;
	W.seg_opened_ns = now;
	W.seg_limit = effective_max_size();
	memset(&W.foot, 0, sizeof W.foot);
	W.foot.start_ts = start_ts;
	W.seg_lost_count = 0;
	forget_definitions();
	reset_block();
	begin_block_if_needed();
	put_session_meta();
	put_new_defs();
	if (ss_sampler_mode() != SS_SAMPLER_OFF)
		ss_sampler_mappings(&sink);
	set_failing(0, 0);
}

static void seal_segment(uint64_t end_ts)
{
	if (!W.seg_seq1)
		return;
	flush_block();
	W.foot.end_ts = end_ts;
	W.foot.sealed_by = SS_SEALED_WRITER;
	if (ss_segments_seal(W.sg, &W.foot) != 0) {
		ss_log("cannot seal segment %llu in %s: %s (left as .active; the next start recovers it)",
		       (unsigned long long)(W.seg_seq1 - 1), W.cfg.seg.dir, strerror(errno));
		atomic_fetch_add(&ss_counters.errors, 1);
	}
	W.seg_seq1 = 0;
	W.retry_at_ns = 0;
}


/* ---- samples, switches and mappings from the sampler -------------------------- */

/* The recorder's thread id for a kernel tid, 0 when the tid has no slot. The last
 * answer is cached: samples come in runs per thread. */
static uint32_t thread_of_tid(uint32_t tid)
{
	static uint32_t last_tid, last_thread;
	if (tid == last_tid && last_thread)
		return last_thread;
	struct ss_pool *p = ss_pool_get();
	for (uint32_t i = 0; i < p->nslots; i++) {
		struct ss_slot *s = &p->slots[i];
		uint32_t st = atomic_load_explicit(&s->state, memory_order_acquire);
		if ((st == SS_SLOT_OWNED || st == SS_SLOT_RETIRED) && s->session == W.cfg.session &&
		    (uint32_t)s->tid == tid) {
			last_tid = tid;
			last_thread = s->thread_id;
			return s->thread_id;
		}
	}
	return 0;
}

/* A length-prefixed record: the body is built in a scratch buffer first, since its
 * length precedes it. */
static void put_lp(uint8_t type, const uint8_t *body, size_t n)
{
	if (reserve(n + 16) != 0)
		return;
	put_u8(type);
	put_bytes(body, n);
}

static int sink_ready(void)
{
	if (!W.seg_seq1)
		return 0;
	begin_block_if_needed();
	return 1;
}

static void sink_flush_if_full(void)
{
	if (W.raw_len >= W.block_target)
		flush_block();
}

static void sink_sample(void *ctx, const struct ss_sample *sm)
{
	(void)ctx;
	if (!sink_ready()) {
		W.sampler_lost++;
		return;
	}
	uint32_t n = sm->nframes > SS_MAX_FRAMES ? SS_MAX_FRAMES : sm->nframes;
	int is_new;
	uint32_t stack = ss_stacks_intern(sm->frames, n, sm->nkernel, &is_new);
	uint8_t body[SS_MAX_FRAMES * 10 + 64];
	size_t k;
	if (is_new) {
		k = ss_put_varint(body, stack);
		k += ss_put_varint(body + k, sm->nkernel);
		k += ss_put_varint(body + k, n);
		for (uint32_t i = 0; i < n; i++)
			k += ss_put_varint(body + k, sm->frames[i]);
		put_lp(SS_REC_STACK, body, k);
	}
	k = ss_put_varint(body, thread_of_tid(sm->tid));
	k += ss_put_varint(body + k, sm->tid);
	k += ss_put_varint(body + k, sm->ts);
	k += ss_put_varint(body + k, sm->cpu == UINT32_MAX ? 0 : (uint64_t)sm->cpu + 1);
	k += ss_put_varint(body + k, sm->weight);
	k += ss_put_varint(body + k, sm->kind);
	k += ss_put_varint(body + k, stack);
	put_lp(SS_REC_SAMPLE, body, k);
	sink_flush_if_full();
}

static void sink_switch(void *ctx, const struct ss_switch *sw)
{
	(void)ctx;
	if (!sink_ready())
		return;
	uint8_t body[64];
	size_t k = ss_put_varint(body, thread_of_tid(sw->tid));
	k += ss_put_varint(body + k, sw->tid);
	k += ss_put_varint(body + k, sw->ts);
	k += ss_put_varint(body + k, sw->cpu == UINT32_MAX ? 0 : (uint64_t)sw->cpu + 1);
	k += ss_put_varint(body + k, (sw->out ? SS_SWITCH_F_OUT : 0) |
					  (sw->preempted ? SS_SWITCH_F_PREEMPT : 0));
	put_lp(SS_REC_SWITCH, body, k);
	sink_flush_if_full();
}

static void sink_mapping(void *ctx, const struct ss_mapping *m)
{
	(void)ctx;
	if (!sink_ready())
		return;
	size_t pl = m->path ? strlen(m->path) : 0;
	if (pl > 4096)
		pl = 4096;
	uint8_t body[4096 + 128];
	size_t k = ss_put_varint(body, m->ts);
	k += ss_put_varint(body + k, m->start);
	k += ss_put_varint(body + k, m->end);
	k += ss_put_varint(body + k, m->pgoff);
	k += ss_put_varint(body + k, m->prot);
	uint8_t bl = m->build_id_len > 20 ? 20 : m->build_id_len;
	k += ss_put_varint(body + k, bl);
	memcpy(body + k, m->build_id, bl);
	k += bl;
	k += ss_put_varint(body + k, pl);
	if (pl)
		memcpy(body + k, m->path, pl);
	k += pl;
	put_lp(SS_REC_MAPPING, body, k);
}

static void sink_comm(void *ctx, uint32_t tid, const char *name, uint64_t ts)
{
	(void)ctx;
	if (!sink_ready())
		return;
	size_t nl = strnlen(name, 64);
	uint8_t body[128];
	size_t k = ss_put_varint(body, thread_of_tid(tid));
	k += ss_put_varint(body + k, tid);
	k += ss_put_varint(body + k, ts);
	k += ss_put_varint(body + k, nl);
	memcpy(body + k, name, nl);
	k += nl;
	put_lp(SS_REC_COMM, body, k);
}

static void sink_lost(void *ctx, const struct ss_sampler_lost *l)
{
	(void)ctx;
	if (!sink_ready()) {
		W.sampler_lost += l->count;
		return;
	}
	uint8_t body[64];
	size_t k = ss_put_varint(body, l->tid);
	k += ss_put_varint(body + k, l->ts);
	k += ss_put_varint(body + k, l->ts_end > l->ts ? l->ts_end - l->ts : 0);
	k += ss_put_varint(body + k, l->count);
	k += ss_put_varint(body + k, l->reason);
	put_lp(SS_REC_SAMPLER_LOSS, body, k);
}

static const struct ss_sample_sink sink = {
	.sample = sink_sample, .switch_rec = sink_switch, .mapping = sink_mapping,
	.comm = sink_comm, .lost = sink_lost,
};

/* ---- stalls and task dumps (stall.h) ----------------------------------------- */

/* The STACK id of frames in the active segment, writing its definition when new;
 * 0 for no frames. */
static uint32_t put_stack(const uint64_t *frames, uint32_t n)
{
	if (!n)
		return 0;
	int is_new;
	uint32_t id = ss_stacks_intern(frames, n, 0, &is_new);
	if (is_new) {
		uint8_t body[SS_STALL_FRAMES * 10 + 32];
		size_t k = ss_put_varint(body, id);
		k += ss_put_varint(body + k, 0);
		k += ss_put_varint(body + k, n);
		for (uint32_t i = 0; i < n; i++)
			k += ss_put_varint(body + k, frames[i]);
		put_lp(SS_REC_STACK, body, k);
	}
	return id;
}

static void sink_stall(const struct ss_stall_msg *m)
{
	if (!sink_ready())
		return;
	uint8_t body[256];
	size_t k;
	if (m->is_end) {
		k = ss_put_varint(body, m->thread);
		k += ss_put_varint(body + k, m->tid);
		k += ss_put_varint(body + k, m->task);
		k += ss_put_varint(body + k, m->poll_ts);
		k += ss_put_varint(body + k, m->ts);
		k += ss_put_varint(body + k, m->index);
		put_lp(SS_REC_STALL_END, body, k);
		sink_flush_if_full();
		return;
	}
	uint32_t stack = put_stack(m->frames, m->nframes < SS_STALL_FRAMES ? m->nframes : SS_STALL_FRAMES);
	size_t rl = strnlen(m->reason, sizeof m->reason);
	k = ss_put_varint(body, m->thread);
	k += ss_put_varint(body + k, m->tid);
	k += ss_put_varint(body + k, m->task);
	k += ss_put_varint(body + k, m->location);
	k += ss_put_varint(body + k, m->poll_ts);
	k += ss_put_varint(body + k, m->ts);
	k += ss_put_varint(body + k, m->index);
	k += ss_put_varint(body + k, m->kind);
	k += ss_put_varint(body + k, m->syscall1);
	k += ss_put_varint(body + k, stack);
	k += ss_put_varint(body + k, rl);
	memcpy(body + k, m->reason, rl);
	k += rl;
	put_lp(SS_REC_STALL, body, k);
	sink_flush_if_full();
}

static void sink_task_dump(const struct ss_task_dump_msg *m)
{
	if (!sink_ready())
		return;
	uint32_t stack = put_stack(m->frames, m->nframes);
	uint8_t body[96];
	size_t k = ss_put_varint(body, m->task);
	k += ss_put_varint(body + k, m->thread);
	k += ss_put_varint(body + k, m->tid);
	k += ss_put_varint(body + k, m->location);
	k += ss_put_varint(body + k, m->pending_ts);
	k += ss_put_varint(body + k, m->idle_ns);
	k += ss_put_varint(body + k, stack);
	put_lp(SS_REC_TASK_DUMP, body, k);
	sink_flush_if_full();
}

static const struct ss_stall_sink stall_sink = { .stall = sink_stall, .dump = sink_task_dump };

static void drain_stalls(uint64_t now)
{
	ss_stall_drain(&stall_sink);
	ss_task_dump_emit(&stall_sink, now);
}

/* Starts or stops following a thread with the sampler as it becomes or stops
 * being a worker (or, with all-threads sampling, as it appears and exits). */
static void follow_thread(struct ss_slot *s, int exiting)
{
	int want = !exiting && (s->w_runtime || W.cfg.sample_all_threads);
	if (want && !s->w_sampled) {
		s->w_sampled = 1;
		ss_sampler_thread_add((uint32_t)s->tid, s->stack_lo, s->stack_hi);
	} else if (!want && s->w_sampled) {
		s->w_sampled = 0;
		ss_sampler_thread_remove((uint32_t)s->tid);
	}
}

SS_INTERNAL void ss_writer_set_sampling(int on)
{
	atomic_store(&W.sampling_on, on != 0);
	ss_writer_kick();
}

SS_INTERNAL const char *ss_writer_sampler_status(void)
{
	return W.sampler_status[0] ? W.sampler_status : "off";
}

/* ---- draining ------------------------------------------------------------------ */

/* Drops counted after a thread's last successful push have no later entry of that
 * thread to carry their LOSS record: write it here. Only where the owner cannot
 * race: the slot is retired (the thread is gone) or recording has stopped. */
static void put_pending_drops(struct ss_slot *s)
{
	uint64_t n = atomic_exchange_explicit(&s->drop_pending, 0, memory_order_acquire);
	if (!n)
		return;
	struct ss_ev e = {
		.ts = atomic_load_explicit(&s->drop_first_ts, memory_order_relaxed),
		.a = n, .b = SS_LOSS_BUFFER_FULL,
		.c = atomic_load_explicit(&s->drop_last_ts, memory_order_relaxed),
		.kind = SS_EV_LOSS,
	};
	if (!W.seg_seq1) {
		note_lost(n, e.ts, e.c);
		return;
	}
	begin_block_if_needed();
	if (s->w_defined_seg != W.seg_seq1)
		put_thread_def(s);
	put_event(s, &e);
}

/* Drains slot s up to time limit. Returns 1 when the slot was released. */
static int drain_slot(struct ss_slot *s, uint64_t limit)
{
	uint32_t state = atomic_load_explicit(&s->state, memory_order_acquire);
	if ((state != SS_SLOT_OWNED && state != SS_SLOT_RETIRED) || s->session != W.cfg.session)
		return 0;
	if (s->w_thread_id != s->thread_id)
		s->w_thread_id = s->thread_id;
	uint64_t head = atomic_load_explicit(&s->head, memory_order_acquire);
	uint64_t tail = atomic_load_explicit(&s->tail, memory_order_relaxed);

	if (W.seg_seq1 && tail != head) {
		begin_block_if_needed();
		/* After reading head: every id the drained events carry is published. */
		put_new_defs();
		if (s->w_defined_seg != W.seg_seq1)
			put_thread_def(s);
	}
	uint64_t taken = 0;
	for (; tail != head; tail++) {
		const struct ss_ev *e = &s->ring[tail & s->mask];
		if (e->ts > limit)
			break;
		taken += e->kind != SS_EV_LOSS;
		if (!W.seg_seq1) {
			/* No segment to write to: the event is lost, and said so later. */
			if (e->kind == SS_EV_LOSS)
				note_lost(e->a, e->ts, e->c);
			else
				note_lost(1, e->ts, e->ts);
			continue;
		}
		put_event(s, e);
		if (W.raw_len >= W.block_target) {
			flush_block();
			begin_block_if_needed();
			put_new_defs();
			if (s->w_defined_seg != W.seg_seq1)
				put_thread_def(s);
		}
	}
	atomic_store_explicit(&s->tail, tail, memory_order_release);
	atomic_fetch_add_explicit(&ss_counters.events_taken, taken, memory_order_relaxed);
	follow_thread(s, state == SS_SLOT_RETIRED);

	if (state == SS_SLOT_RETIRED && tail == head) {
		uint64_t ts = atomic_load_explicit(&s->retired_ts, memory_order_relaxed);
		if (ts <= limit)
			put_pending_drops(s);
		if (W.seg_seq1 && ts <= limit) {
			begin_block_if_needed();
			if (s->w_defined_seg != W.seg_seq1)
				put_thread_def(s);
			if (W.cur_thread != s->thread_id)
				set_thread(s->thread_id, ts);
			put_u8(SS_REC_THREAD_EXIT);
			put_dt(ts);
			note_event(ts);
		} else if (ts > limit) {
			return 0;
		}
		ss_watchdog_slot_released(s);
		ss_slot_release(s);
		return 1;
	}
	return 0;
}

/* Samples, switches and mappings gathered since the last cycle, into the segment
 * being written (they carry their own times). */
static void drain_sampler(void)
{
	if (ss_sampler_mode() != SS_SAMPLER_OFF)
		ss_sampler_drain(&sink);
}

static void drain_all(uint64_t limit)
{
	struct ss_pool *p = ss_pool_get();
	for (uint32_t i = 0; i < p->nslots; i++)
		drain_slot(&p->slots[i], limit);
}

/* The end of the next drain window: the latest time <= end at which no ring holds
 * more than k events not yet drained. *busy counts the rings with events <= end
 * (0: nothing to drain). */
static uint64_t window_end(uint64_t end, uint64_t k, uint32_t *busy)
{
	struct ss_pool *p = ss_pool_get();
	uint64_t lim = end, oldest = UINT64_MAX;
	uint32_t n = 0;
	for (uint32_t i = 0; i < p->nslots; i++) {
		struct ss_slot *s = &p->slots[i];
		uint32_t state = atomic_load_explicit(&s->state, memory_order_acquire);
		if ((state != SS_SLOT_OWNED && state != SS_SLOT_RETIRED) || s->session != W.cfg.session)
			continue;
		uint64_t head = atomic_load_explicit(&s->head, memory_order_acquire);
		uint64_t tail = atomic_load_explicit(&s->tail, memory_order_relaxed);
		if (head == tail || s->ring[tail & s->mask].ts > end)
			continue;
		n++;
		if (s->ring[tail & s->mask].ts < oldest)
			oldest = s->ring[tail & s->mask].ts;
		if (head - tail > k) {
			uint64_t tk = s->ring[(tail + k) & s->mask].ts;
			if (tk - 1 < lim)
				lim = tk - 1;
		}
	}
	*busy = n;
	/* Progress even when more than k events share one timestamp. */
	return n && lim < oldest ? oldest : lim;
}

/* Drains every ring up to time end, in windows that take at most window_events
 * events from each ring, and rotates by size between windows. At a window's end
 * every event up to that time has been drained and none after it, so it is a valid
 * segment boundary; and the size check before a window reserves room for all that
 * window can add, so a segment stays within its limit however far the writer fell
 * behind. */
static void drain_windows(uint64_t end)
{
	uint64_t k = W.window_events;
	for (;;) {
		uint32_t busy;
		uint64_t lim = window_end(end, k, &busy);
		uint64_t room = (uint64_t)busy * (k * MAX_EVENT_BYTES + 256) + 1024;
		if (busy && W.seg_seq1 && W.foot.blocks > 0 &&
		    ss_segments_active_bytes(W.sg) + W.raw_len + room > W.seg_limit) {
			uint64_t b = W.drained_to;
			seal_segment(b);
			begin_segment(b);
		}
		/* With no event left, this pass still retires exited threads. */
		drain_all(busy ? lim : end);
		if (!busy || lim >= end)
			break;
		W.drained_to = lim;
	}
	if (W.drained_to < end)
		W.drained_to = end;
}

static void cycle(int final)
{
	uint64_t now = ss_now();
	atomic_store_explicit(&ss_counters.last_cycle_ns, now, memory_order_relaxed);
	int want = atomic_load(&W.sampling_on);
	if (want != W.sampling_applied) {
		ss_sampler_set_enabled(want);
		W.sampling_applied = want;
	}

	if (W.seg_seq1 && ss_segments_lost(W.sg)) {
		ss_log("segment file %llu vanished (output directory removed?); starting a new one",
		       (unsigned long long)(W.seg_seq1 - 1));
		note_lost(W.foot.events + W.block_events,
			  W.foot.first_event_ts ? W.foot.first_event_ts : W.seg_start_ts, now);
		atomic_fetch_sub(&ss_counters.events_written, W.foot.events);
		/* The write-failure losses the vanished file reported are lost with it. */
		unreport_block_losses();
		merge_range(&W.lost_count, &W.lost_first, &W.lost_last,
			    W.seg_lost_count, W.seg_lost_first, W.seg_lost_last);
		W.seg_lost_count = 0;
		ss_segments_abandon(W.sg);
		atomic_fetch_add(&ss_counters.errors, 1);
		W.seg_seq1 = 0;
		W.retry_at_ns = 0;
		reset_block();
		begin_segment(W.seg_start_ts);
	}
	if (!W.seg_seq1)
		begin_segment(W.seg_start_ts ? W.seg_start_ts : now);

	/* Everything up to now, rotating by size on the way; events stamped after now
	 * wait for the next cycle, so a cycle's work is bounded by its start. Pending
	 * task stacks first: a task's next POLL_BEGIN must find its pending call. */
	ss_task_dump_collect();
	drain_windows(now);
	drain_sampler();
	drain_stalls(now);
	if (W.seg_seq1 && W.cfg.rotation_period_ns &&
	    now - W.seg_opened_ns >= W.cfg.rotation_period_ns) {
		seal_segment(now);
		begin_segment(now);
	}
	if (W.raw_len && (final || now - W.block_opened_ns >= W.cfg.flush_interval_ns))
		flush_block();

	if (W.metrics_file && now - W.last_metrics_ns >= METRICS_PERIOD_NS) {
		W.last_metrics_ns = now;
		ss_metrics_write_file(W.metrics_file);
	}
}

static void *writer_main(void *arg)
{
	(void)arg;
	/* The writer takes no signals: SIGXFSZ from a file-size limit then becomes a
	 * plain EFBIG instead of killing the host program, and no handler of the host
	 * ever runs on this thread. */
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);

	pthread_mutex_lock(&W.mu);
	while (W.running) {
		pthread_mutex_unlock(&W.mu);
		cycle(0);
		pthread_mutex_lock(&W.mu);
		if (!W.running)
			break;
		if (!W.kicked) {
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			uint64_t t = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + TICK_NS;
			ts.tv_sec = (time_t)(t / 1000000000u);
			ts.tv_nsec = (long)(t % 1000000000u);
			pthread_cond_timedwait(&W.cv, &W.mu, &ts);
		}
		W.kicked = 0;
	}
	pthread_mutex_unlock(&W.mu);

	/* Final: everything buffered goes to disk, the last segment is sealed. */
	cycle(1);
	uint64_t end = ss_now();
	ss_task_dump_collect();
	drain_all(UINT64_MAX);
	drain_sampler();
	drain_stalls(end);
	/* Hooks are off now: the trailing drops of live threads, and process-wide
	 * losses that no later block would carry, go into this last block. */
	struct ss_pool *p = ss_pool_get();
	for (uint32_t i = 0; i < p->nslots; i++) {
		struct ss_slot *s = &p->slots[i];
		uint32_t state = atomic_load_explicit(&s->state, memory_order_acquire);
		if ((state == SS_SLOT_OWNED || state == SS_SLOT_RETIRED) && s->session == W.cfg.session)
			put_pending_drops(s);
	}
	if (W.seg_seq1)
		begin_block_if_needed();
	flush_block();
	seal_segment(end);
	if (W.metrics_file)
		ss_metrics_write_file(W.metrics_file);
	return NULL;
}

SS_INTERNAL void ss_writer_kick(void)
{
	pthread_mutex_lock(&W.mu);
	W.kicked = 1;
	pthread_cond_signal(&W.cv);
	pthread_mutex_unlock(&W.mu);
}

SS_INTERNAL int ss_writer_start(const struct ss_writer_config *cfg, char *err, size_t errlen)
{
	memset(&W, 0, sizeof W);
	W.cfg = *cfg;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&W.cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&W.mu, NULL);

	/* Blocks stay small enough that four of them fit a segment many times over. */
	uint64_t t = cfg->seg.max_file_size / 16;
	W.block_target = t > (256u << 10) ? (256u << 10) : t < 4096 ? 4096 : (size_t)t;
	W.window_events = W.block_target / MAX_EVENT_BYTES;
	W.raw_cap = W.block_target + 4096;
	W.raw = malloc(W.raw_cap);
	W.metrics_file = cfg->metrics_file ? strdup(cfg->metrics_file) : NULL;
	W.cfg.metrics_file = W.metrics_file;
#ifdef STALLSCOPE_HAVE_ZSTD
	if (cfg->compress) {
		W.zcap = ZSTD_compressBound(W.raw_cap * 4);
		W.zbuf = malloc(W.zcap);
		W.zctx = ZSTD_createCCtx();
	}
#endif
	if (!W.raw || (cfg->compress && !W.zbuf && W.zcap)) {
		snprintf(err, errlen, "out of memory for the writer's buffers");
		goto fail;
	}
	W.sg = ss_segments_open(&cfg->seg, err, errlen);
	if (!W.sg)
		goto fail;
	struct ss_sampler_config sc = {
		.mode = !cfg->user->cpu_sampling ? SS_SAMPLER_OFF : (enum ss_sampler_mode)cfg->user->sampler,
		.offcpu = (enum ss_offcpu_mode)cfg->user->offcpu_stacks,
		.hz = cfg->user->sample_hz,
		.all_threads = cfg->user->sample_all_threads,
	};
	ss_sampler_start(&sc, W.sampler_status, sizeof W.sampler_status);
	ss_watchdog_start(cfg->user, cfg->session, W.stall_status, sizeof W.stall_status);
	ss_task_dump_start(cfg->user, cfg->session, ss_pool_get()->slots, ss_pool_get()->nslots);
	atomic_store(&W.sampling_on, 1);
	W.sampling_applied = 1;
	W.seg_start_ts = ss_now();
	begin_segment(W.seg_start_ts);
	if (!W.seg_seq1) {
		snprintf(err, errlen, "cannot create a segment file in %s: %s", cfg->seg.dir,
			 strerror(errno));
		goto fail;
	}
	atomic_store(&ss_counters.writer_healthy, 1u);
	W.running = 1;
	if (pthread_create(&W.thread, NULL, writer_main, NULL) != 0) {
		snprintf(err, errlen, "cannot start the writer thread");
		ss_segments_abandon(W.sg);
		goto fail;
	}
	return 0;
fail:
	ss_watchdog_stop();
	ss_watchdog_free();
	ss_task_dump_disarm();
	ss_task_dump_free();
	ss_sampler_stop();
	ss_stacks_free();
	if (W.sg) {
		ss_segments_abandon(W.sg);
		ss_segments_close(W.sg);
	}
	free(W.raw);
	free(W.zbuf);
	free(W.metrics_file);
#ifdef STALLSCOPE_HAVE_ZSTD
	ZSTD_freeCCtx(W.zctx);
#endif
	memset(&W, 0, sizeof W);
	return -1;
}

SS_INTERNAL int ss_writer_stop(void)
{
	/* Before the writer's last cycle, which writes what they left behind. */
	ss_watchdog_stop();
	ss_task_dump_disarm();
	pthread_mutex_lock(&W.mu);
	W.running = 0;
	pthread_cond_signal(&W.cv);
	pthread_mutex_unlock(&W.mu);
	pthread_join(W.thread, NULL);
	ss_watchdog_free();
	ss_task_dump_free();
	ss_sampler_stop();
	ss_stacks_free();
	int healthy = !W.failing;
	atomic_store(&ss_counters.writer_healthy, 0u);
	ss_segments_close(W.sg);
	free(W.raw);
	free(W.zbuf);
	free(W.metrics_file);
#ifdef STALLSCOPE_HAVE_ZSTD
	ZSTD_freeCCtx(W.zctx);
#endif
	pthread_mutex_destroy(&W.mu);
	pthread_cond_destroy(&W.cv);
	memset(&W, 0, sizeof W);
	return healthy ? 0 : -1;
}

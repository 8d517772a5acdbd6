/*
 * writer_blocks.c - blocks and segments: a block is flushed (zstd when it pays,
 * CRC'd) into the active segment, segments are begun, sealed and rotated, and
 * every event that could not reach the disk is counted and reported as a LOSS
 * record in the next block that does. Writer thread only.
 */
#include "writer-private.h"
#include "clock.h"
#include "stack_table.h"

#include <errno.h>
#include <stdio.h>
#include <sys/resource.h>

/* ---- blocks and segments ------------------------------------------------------ */

SS_INTERNAL void reset_block(void)
{
	wr.raw_len = 0;
	wr.block_events = 0;
	wr.block_first_ts = wr.block_last_ts = 0;
	wr.cur_thread = 0;
	wr.block_opened_ns = 0;
}

/* Forget what the active segment has been told, so it is told again. */
static void forget_definitions(void)
{
	struct ss_pool *p = ss_pool_get();
	wr.defs_emitted = 0;
	for (uint32_t i = 0, span = ss_pool_span(p); i < span; i++)
		p->slots[i].w_defined_seg = 0;
	ss_stacks_forget();
}

SS_INTERNAL void note_lost(uint64_t count, uint64_t first, uint64_t last)
{
	if (!count)
		return;
	if (!wr.lost_count || first < wr.lost_first)
		wr.lost_first = first;
	if (last > wr.lost_last)
		wr.lost_last = last;
	wr.lost_count += count;
	atomic_fetch_add(&ss_counters.events_lost_on_disk, count);
}

SS_INTERNAL void merge_range(uint64_t *count, uint64_t *first, uint64_t *last,
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
		wr.foot.dropped_events += n;
		wr.foot.loss_records++;
		wr.blk_dropped += n;
		wr.blk_loss_records++;
	}
	if (wr.lost_count) {
		set_thread(0, wr.lost_first);
		put_u8(SS_REC_LOSS); put_dt(wr.lost_first); put_v(wr.lost_count);
		put_v(wr.lost_last - wr.lost_first); put_v(SS_LOSS_WRITE_FAILED);
		wr.foot.dropped_events += wr.lost_count;
		wr.foot.loss_records++;
		wr.blk_dropped += wr.lost_count;
		wr.blk_loss_records++;
		merge_range(&wr.blk_lost_count, &wr.blk_lost_first, &wr.blk_lost_last,
			    wr.lost_count, wr.lost_first, wr.lost_last);
		wr.lost_count = 0;
	}
}

/* The block being built will never be on disk: its LOSS records leave the footer,
 * and the write-failure loss it carried is reported again by a later block. */
SS_INTERNAL void unreport_block_losses(void)
{
	wr.foot.dropped_events -= wr.blk_dropped;
	wr.foot.loss_records -= wr.blk_loss_records;
	merge_range(&wr.lost_count, &wr.lost_first, &wr.lost_last,
		    wr.blk_lost_count, wr.blk_lost_first, wr.blk_lost_last);
	wr.blk_dropped = wr.blk_loss_records = wr.blk_lost_count = 0;
}

static void set_failing(int failing, int err)
{
	if (failing && !wr.failing)
		ss_log("cannot write segment data in %s: %s; dropping events until it works again",
		       wr.cfg.seg.dir, strerror(err));
	else if (!failing && wr.failing)
		ss_log("writing segments again in %s", wr.cfg.seg.dir);
	if (failing)
		atomic_fetch_add(&ss_counters.errors, 1);
	wr.failing = failing;
	atomic_store(&ss_counters.writer_healthy, failing ? 0u : 1u);
}

/* zstd only for blocks of at least this many raw bytes. A light program's
 * blocks (one a flush interval) hold 0.5-3 KB, its first one (with the
 * definitions) about 4.5 KB, on which zstd saves 10-40% of a few hundred bytes
 * to a KB, while the compressor's first use costs about 0.3 ms of
 * CPU on this VM (its code and work space faulted in) and every later block
 * some 20 us: more than the rest of the writer's cycle. The block's flags say
 * which it is, and every reader reads both. */
#define ZSTD_MIN_RAW 8192u

/* One compressor for the process: made at the first block worth compressing,
 * kept across sessions (a new one would pay its first use again), grown when a
 * session's blocks may be larger. Only the running session's writer thread
 * uses it (sessions are serialised), so it needs no lock. */
static struct ss_block_zstd proc_z;
static size_t proc_z_max; /* the raw size it was made for; 0: not made */

static struct ss_block_zstd *compressor(void)
{
	if (!wr.cfg.compress || wr.raw_len < ZSTD_MIN_RAW)
		return NULL;
	if (proc_z_max < wr.zstd_max_raw) {
		ss_block_zstd_free(&proc_z);
		proc_z_max = wr.zstd_max_raw;
		/* Refused (out of memory): blocks are stored as they are. */
		if (ss_block_zstd_init(&proc_z, proc_z_max, 1) != 0 || !proc_z.cctx)
			ss_log("cannot set up the zstd compressor (out of memory?); blocks are "
			       "stored uncompressed");
	}
	return proc_z.cctx ? &proc_z : NULL;
}

SS_INTERNAL void flush_block(void)
{
	if (!wr.raw_len)
		return;
	struct ss_block_header b = {
		.kind = SS_BLOCK_EVENTS, .record_count = wr.block_events, .block_seq = wr.foot.blocks,
		.first_ts = wr.block_first_ts, .last_ts = wr.block_last_ts,
	};
	const void *payload = ss_block_frame(&b, wr.raw, wr.raw_len, compressor());

	uint64_t t0 = ss_writer_io_begin(0);
	int written = wr.seg_seq1 && ss_segments_append(wr.sg, &b, payload) == 0;
	ss_writer_io_end(t0);
	if (written) {
		/* Whether the file is still there (its directory removed?), asked
		 * right after the write, which leaves the inode and the system-call
		 * path warm: 1 us, against 7-18 us at the start of a cycle after a
		 * sleep. The next cycle starts a new segment (writer.c); this
		 * block's events are lost with the file and counted so. */
		if (ss_segments_lost(wr.sg))
			wr.seg_vanished = 1;
		wr.seg_checked = 1;
		wr.foot.blocks++;
		wr.foot.events += wr.block_events;
		if (wr.block_first_ts && (!wr.foot.first_event_ts || wr.block_first_ts < wr.foot.first_event_ts))
			wr.foot.first_event_ts = wr.block_first_ts;
		if (wr.block_last_ts > wr.foot.last_event_ts)
			wr.foot.last_event_ts = wr.block_last_ts;
		atomic_fetch_add(&ss_counters.events_written, wr.block_events);
		merge_range(&wr.seg_lost_count, &wr.seg_lost_first, &wr.seg_lost_last,
			    wr.blk_lost_count, wr.blk_lost_first, wr.blk_lost_last);
		wr.blk_dropped = wr.blk_loss_records = wr.blk_lost_count = 0;
		set_failing(0, 0);
	} else {
		int e = errno;
		unreport_block_losses();
		note_lost(wr.block_events, wr.block_first_ts ? wr.block_first_ts : ss_now(),
			  wr.block_last_ts ? wr.block_last_ts : ss_now());
		/* Whatever the lost block defined must be defined again. */
		forget_definitions();
		if (wr.seg_seq1)
			set_failing(1, e);
	}
	reset_block();
}

SS_INTERNAL void begin_block_if_needed(void)
{
	if (wr.raw_len)
		return;
	wr.block_opened_ns = ss_now();
	if (wr.seg_seq1) {
		/* Each block says how its times were taken and how well the TSC kept to
		 * CLOCK_MONOTONIC so far (FORMAT.md, CLOCK). */
		uint8_t body[SS_CLOCK_BODY_MAX];
		put_lp(SS_REC_CLOCK, body, ss_clock_record(body));
		put_process_losses();
	}
}

static uint64_t effective_max_size(void)
{
	uint64_t max = wr.cfg.seg.max_file_size;
	struct rlimit rl;
	/* Rotating below the file-size limit avoids SIGXFSZ/EFBIG altogether. */
	if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < max)
		max = rl.rlim_cur;
	return max;
}

SS_INTERNAL void begin_segment(uint64_t start_ts)
{
	uint64_t now = ss_now();
	if (wr.seg_seq1 || now < wr.retry_at_ns)
		return;
	uint64_t t0 = ss_writer_io_begin(0);
	int rc = ss_segments_begin(wr.sg, start_ts);
	ss_writer_io_end(t0);
	if (rc != 0) {
		set_failing(1, errno);
		wr.retry_at_ns = now + RETRY_NS;
		return;
	}
	wr.seg_seq1 = ss_segments_active_seq(wr.sg) + 1;
	wr.seg_vanished = 0;
	wr.seg_start_ts = start_ts;
	if (wr.drained_to < start_ts)
		wr.drained_to = start_ts;
	wr.seg_opened_ns = now;
	wr.seg_limit = effective_max_size();
	memset(&wr.foot, 0, sizeof wr.foot);
	wr.foot.start_ts = start_ts;
	wr.seg_lost_count = 0;
	ss_clock_segment_begin();
	forget_definitions();
	reset_block();
	begin_block_if_needed();
	put_session_meta();
	put_new_defs();
	/* Every segment names its code, whatever takes stacks (samples, stall
	 * captures, task dumps): without mappings no stack can be symbolized. */
	ss_sampler_mappings(&sink);
	set_failing(0, 0);
}

/* The active segment's file is gone (its directory was removed): everything it
 * held, and the write-failure losses it reported, are lost and said so in the
 * next block written. */
SS_INTERNAL void account_vanished_segment(uint64_t now)
{
	note_lost(wr.foot.events + wr.block_events,
		  wr.foot.first_event_ts ? wr.foot.first_event_ts : wr.seg_start_ts, now);
	atomic_fetch_sub(&ss_counters.events_written, wr.foot.events);
	unreport_block_losses();
	merge_range(&wr.lost_count, &wr.lost_first, &wr.lost_last,
		    wr.seg_lost_count, wr.seg_lost_first, wr.seg_lost_last);
	wr.seg_lost_count = 0;
}

SS_INTERNAL void seal_segment(uint64_t end_ts)
{
	if (!wr.seg_seq1)
		return;
	flush_block();
	wr.foot.end_ts = end_ts;
	wr.foot.sealed_by = SS_SEALED_WRITER;
	/* A directory removed just before the seal: the file is already gone (or the
	 * rename finds no directory), so its events are lost, not sealed. */
	int vanished = ss_segments_lost(wr.sg), rc = 0;
	if (!vanished) {
		uint64_t t0 = ss_writer_io_begin(1);
		rc = ss_segments_seal(wr.sg, &wr.foot);
		ss_writer_io_end(t0);
	}
	if (vanished || rc != 0) {
		if (vanished || errno == ENOENT) {
			ss_log("segment file %llu vanished (output directory removed?); starting a new one",
			       (unsigned long long)(wr.seg_seq1 - 1));
			account_vanished_segment(end_ts);
			if (vanished)
				ss_segments_abandon(wr.sg);
		} else {
			ss_log("cannot seal segment %llu in %s: %s (left as .active; the next start "
			       "recovers it)", (unsigned long long)(wr.seg_seq1 - 1), wr.cfg.seg.dir,
			       strerror(errno));
		}
		atomic_fetch_add(&ss_counters.errors, 1);
	} else {
		ss_archive_kick();
	}
	wr.seg_seq1 = 0;
	wr.retry_at_ns = 0;
}

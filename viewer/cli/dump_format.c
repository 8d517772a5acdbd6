/*
 * dump_format.c - renders a segment as text: header, blocks, one line per record
 * with absolute and segment-relative times, the footer and a summary.
 *
 * Every string from the file is printed escaped (quotes, backslashes, control and
 * non-ASCII bytes as \xNN) and length-capped, so a hostile segment cannot inject
 * terminal escapes or flood a terminal with one record.
 */
#include "dump_format.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_PRINTED_STRING 512

/* The MAPPING records seen so far in the segment (the snapshot at its start, then
 * dlopen()s), so STACK frames print as file offsets. Sorted by start and without
 * overlaps: a new mapping replaces what it covers, as mmap does. Capped, so a
 * hostile segment cannot make the table large or a lookup slow. */
#define MAX_MAPPINGS 4096
#define MAPPING_NAME 96

struct dump_mapping {
	uint64_t start, end, pgoff;
	size_t name_len;            /* bytes kept of the path's last component */
	char name[MAPPING_NAME];
};

struct dump {
	FILE *out;
	struct ss_reader *r;
	const struct ss_segment_header *h;
	const struct ss_dump_options *opts;
	struct dump_mapping *maps;
	size_t nmaps, capmaps;
	uint64_t maps_not_kept;     /* MAPPING records past MAX_MAPPINGS */
};

static void put_bytes(FILE *out, const char *s, size_t len, bool quoted)
{
	size_t n = len < MAX_PRINTED_STRING ? len : MAX_PRINTED_STRING;
	if (quoted)
		fputc('"', out);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(out, "\\x%02x", c);
		else
			fputc(c, out);
	}
	if (quoted)
		fputc('"', out);
	if (n < len)
		fprintf(out, "...(%zu bytes)", len);
}

static void put_escaped(FILE *out, const char *s, size_t len)
{
	put_bytes(out, s, len, true);
}

static void put_string_id(struct dump *d, uint64_t id)
{
	const struct ss_string_def *s = ss_reader_string(d->r, id);
	if (s)
		put_escaped(d->out, s->data, s->len);
	else
		fprintf(d->out, "str#%" PRIu64, id);
}

/* Segment-relative time, signed: an event may precede start_ts in a damaged or
 * hand-made file and must still print sensibly. */
static void put_rel(FILE *out, uint64_t ts, uint64_t start)
{
	uint64_t d = ts >= start ? ts - start : start - ts;
	fprintf(out, "%c%" PRIu64 ".%09" PRIu64, ts >= start ? '+' : '-',
		d / 1000000000u, d % 1000000000u);
}

/* Monotonic ns to wall-clock text through the header's anchor pair. */
static void put_wall(FILE *out, const struct ss_segment_header *h, uint64_t ts)
{
	if (!h->anchor_real_ns) {
		fputs("(no wall-clock anchor)", out);
		return;
	}
	uint64_t real = ts >= h->anchor_mono_ns ? h->anchor_real_ns + (ts - h->anchor_mono_ns)
						: h->anchor_real_ns - (h->anchor_mono_ns - ts);
	time_t sec = (time_t)(real / 1000000000u);
	struct tm tm;
	char buf[64];
	if (!gmtime_r(&sec, &tm) || !strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm)) {
		fputs("(wall clock out of range)", out);
		return;
	}
	fprintf(out, "%s.%09" PRIu64 " UTC", buf, real % 1000000000u);
}

static void put_location(struct dump *d, uint64_t id)
{
	fprintf(d->out, "loc#%" PRIu64, id);
	const struct ss_location_def *l = ss_reader_location(d->r, id);
	if (!l)
		return;
	const struct ss_string_def *file = ss_reader_string(d->r, l->file);
	const struct ss_string_def *fn = ss_reader_string(d->r, l->function);
	fputs(" (", d->out);
	if (file)
		put_bytes(d->out, file->data, file->len, false);
	else
		fprintf(d->out, "str#%" PRIu64, l->file);
	fprintf(d->out, ":%" PRIu64 " ", l->line);
	if (fn)
		put_bytes(d->out, fn->data, fn->len, false);
	else
		fprintf(d->out, "str#%" PRIu64, l->function);
	fputc(')', d->out);
}

static void print_header(struct dump *d, const char *name)
{
	const struct ss_segment_header *h = d->h;
	FILE *o = d->out;
	fprintf(o, "segment %s\n", name);
	fprintf(o, "  format     version %u, header %u bytes, flags 0x%x\n", h->version,
		h->header_size, h->flags);
	fprintf(o, "  session    %016" PRIx64 "  segment seq %" PRIu64 "\n", h->session_id,
		h->segment_seq);
	fprintf(o, "  process    pid %" PRIu64 "  exe ", h->pid);
	put_escaped(o, h->exe, h->exe_len);
	fputs("\n  host       ", o);
	put_escaped(o, h->hostname, strlen(h->hostname));
	fputs("  boot ", o);
	put_escaped(o, h->boot_id, strlen(h->boot_id));
	fprintf(o, "\n  start      %" PRIu64 " ns = ", h->start_ts);
	put_wall(o, h, h->start_ts);
	fprintf(o, "\n  anchor     mono %" PRIu64 " ns = real %" PRIu64 " ns\n", h->anchor_mono_ns,
		h->anchor_real_ns);
}

static void print_block(struct dump *d, const struct ss_block_info *b)
{
	FILE *o = d->out;
	if (b->kind == SS_BLOCK_FOOTER)
		return; /* printed by print_footer */
	fprintf(o, "block %" PRIu64 " at offset %" PRIu64 ": events seq %" PRIu64 ", ", b->index,
		b->offset, b->block_seq);
	if (b->flags & SS_BLOCK_F_ZSTD)
		fprintf(o, "zstd %u -> %u bytes", b->payload_len, b->raw_len);
	else
		fprintf(o, "raw %u bytes", b->raw_len);
	fprintf(o, ", %u events", b->record_count);
	if (b->first_ts || b->last_ts) {
		fputs(", ts ", o);
		put_rel(o, b->first_ts, d->h->start_ts);
		fputs(" .. ", o);
		put_rel(o, b->last_ts, d->h->start_ts);
	}
	fputc('\n', o);
	if (b->unreadable)
		fputs("  !!! compressed block: this build has no zstd, its records are skipped\n", o);
}

static void put_thread_label(struct dump *d, const struct ss_record *rec)
{
	if (rec->thread_def)
		fprintf(d->out, "T%" PRIu64 "/%" PRIu64, rec->thread, rec->thread_def->tid);
	else
		fprintf(d->out, "T%" PRIu64, rec->thread);
}

static void print_thread_def(struct dump *d, const struct ss_thread_def *t)
{
	FILE *o = d->out;
	fprintf(o, "thread=%" PRIu64 " tid=%" PRIu64 " name=", t->thread, t->tid);
	put_escaped(o, t->name, t->name_len);
	if (t->flags & SS_THREAD_F_WORKER) {
		fputs(" worker runtime=", o);
		put_string_id(d, t->runtime);
		fprintf(o, " index=%" PRIu64, t->worker_index);
	}
	fprintf(o, " flags=0x%" PRIx64, t->flags);
	if (t->open_since) {
		fprintf(o, " open_task=%" PRIu64 " at ", t->open_task);
		put_location(d, t->open_location);
		fputs(" since ", o);
		put_rel(o, t->open_since, d->h->start_ts);
	}
	if (t->parked_since) {
		fputs(" parked_since ", o);
		put_rel(o, t->parked_since, d->h->start_ts);
	}
}

static void print_event_fields(struct dump *d, const struct ss_record *rec)
{
	FILE *o = d->out;
	switch (rec->type) {
	case SS_REC_POLL_BEGIN:
		fprintf(o, " task=%" PRIu64 " ", rec->u.poll_begin.task);
		put_location(d, rec->u.poll_begin.location);
		break;
	case SS_REC_SPAWN:
		fprintf(o, " task=%" PRIu64 " ", rec->u.spawn.task);
		put_location(d, rec->u.spawn.location);
		break;
	case SS_REC_TERMINATE:
		fprintf(o, " task=%" PRIu64, rec->u.terminate.task);
		break;
	case SS_REC_WAKE:
		fprintf(o, " task=%" PRIu64, rec->u.wake.task);
		break;
	case SS_REC_QUEUE:
		fprintf(o, " local=%" PRIu64 " global=%" PRIu64, rec->u.queue.local, rec->u.queue.global);
		break;
	case SS_REC_MARK:
		fputs(" name=", o);
		put_string_id(d, rec->u.mark.name);
		fprintf(o, " value=%" PRId64, rec->u.mark.value);
		break;
	case SS_REC_SPAN_BEGIN:
	case SS_REC_SPAN_END:
		fputs(" name=", o);
		put_string_id(d, rec->u.span.name);
		break;
	case SS_REC_WORKER_BEGIN:
		fputs(" runtime=", o);
		put_string_id(d, rec->u.worker_begin.runtime);
		fprintf(o, " index=%" PRIu64, rec->u.worker_begin.index);
		break;
	case SS_REC_LOSS:
		fprintf(o, " %" PRIu64 " EVENTS LOST over %" PRIu64 " ns (%s, reason %" PRIu64 ")%s",
			rec->u.loss.count, rec->u.loss.span, ss_loss_reason_name(rec->u.loss.reason),
			rec->u.loss.reason, rec->thread == 0 ? " process-wide" : "");
		break;
	default:
		break;
	}
}

/* Index of the first mapping whose end is above addr (maps are sorted, disjoint). */
static size_t map_upper(const struct dump *d, uint64_t addr)
{
	size_t lo = 0, hi = d->nmaps;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (d->maps[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void keep_mapping(struct dump *d, const struct ss_record *rec)
{
	uint64_t start = rec->u.mapping.start, end = rec->u.mapping.end;
	if (end <= start)
		return;
	/* The mappings it overlaps form one run [first, last). */
	size_t first = map_upper(d, start), last = first;
	while (last < d->nmaps && d->maps[last].start < end)
		last++;
	if (last == first && d->nmaps >= MAX_MAPPINGS) {
		d->maps_not_kept++;
		return;
	}
	if (last == first && d->nmaps == d->capmaps) {
		size_t ncap = d->capmaps ? d->capmaps * 2 : 64;
		if (ncap > MAX_MAPPINGS)
			ncap = MAX_MAPPINGS;
		struct dump_mapping *nm = realloc(d->maps, ncap * sizeof *nm);
		if (!nm) {
			d->maps_not_kept++;
			return;
		}
		d->maps = nm;
		d->capmaps = ncap;
	}
	/* Replace the run by one slot. */
	size_t keep_from = last == first ? first : first + 1;
	memmove(d->maps + keep_from + (last == first), d->maps + last,
		(d->nmaps - last) * sizeof *d->maps);
	d->nmaps = d->nmaps - (last - first) + 1;
	struct dump_mapping *m = &d->maps[first];
	m->start = start;
	m->end = end;
	m->pgoff = rec->u.mapping.pgoff;
	const char *p = rec->u.mapping.path;
	size_t len = rec->u.mapping.path_len, base = len;
	while (base > 0 && p[base - 1] != '/')
		base--;
	m->name_len = len - base < MAPPING_NAME ? len - base : MAPPING_NAME;
	memcpy(m->name, p + base, m->name_len);
}

/* " 0xADDR (name+0xOFFSET)", the offset in the file: addr - start + pgoff. */
static void put_user_frame(struct dump *d, uint64_t addr)
{
	fprintf(d->out, " 0x%" PRIx64, addr);
	size_t i = map_upper(d, addr);
	if (i >= d->nmaps || d->maps[i].start > addr)
		return;
	const struct dump_mapping *m = &d->maps[i];
	fputs(" (", d->out);
	if (m->name_len)
		put_bytes(d->out, m->name, m->name_len, false);
	else
		fputs("[anon]", d->out);
	fprintf(d->out, "+0x%" PRIx64 ")", addr - m->start + m->pgoff);
}

/* SAMPLE, SWITCH, COMM, SAMPLER_LOSS, STACK and MAPPING; returns 0 for others. */
static int print_sampling_record(struct dump *d, const struct ss_record *rec, const char *tname)
{
	FILE *o = d->out;
	switch (rec->type) {
	case SS_REC_SAMPLE:
	case SS_REC_SWITCH:
	case SS_REC_COMM:
	case SS_REC_SAMPLER_LOSS:
		fputs(rec->type == SS_REC_SAMPLER_LOSS ? "!!! " : "    ", o);
		put_rel(o, rec->ts, d->h->start_ts);
		fprintf(o, " %" PRIu64 " ", rec->ts);
		break;
	case SS_REC_STACK:
	case SS_REC_MAPPING:
		fprintf(o, "    def %s", tname);
		break;
	default:
		return 0;
	}
	switch (rec->type) {
	case SS_REC_SAMPLE:
		fprintf(o, "T%" PRIu64 "/%" PRIu64 " SAMPLE %s", rec->u.sample.thread, rec->u.sample.tid,
			rec->u.sample.kind == SS_SAMPLE_KIND_OFFCPU ? "off-cpu" :
			rec->u.sample.kind == SS_SAMPLE_KIND_CPU ? "cpu" : "kind?");
		if (rec->u.sample.cpu)
			fprintf(o, " cpu=%" PRIu64, rec->u.sample.cpu - 1);
		fprintf(o, " weight=%" PRIu64 "ns stack#%" PRIu64 "\n", rec->u.sample.weight,
			rec->u.sample.stack);
		break;
	case SS_REC_SWITCH:
		fprintf(o, "T%" PRIu64 "/%" PRIu64 " SWITCH %s", rec->u.switch_rec.thread,
			rec->u.switch_rec.tid,
			!(rec->u.switch_rec.flags & SS_SWITCH_F_OUT) ? "in" :
			(rec->u.switch_rec.flags & SS_SWITCH_F_PREEMPT) ? "out preempted" : "out blocked");
		if (rec->u.switch_rec.cpu)
			fprintf(o, " cpu=%" PRIu64, rec->u.switch_rec.cpu - 1);
		fputc('\n', o);
		break;
	case SS_REC_COMM:
		fprintf(o, "T%" PRIu64 "/%" PRIu64 " COMM ", rec->u.comm.thread, rec->u.comm.tid);
		put_escaped(o, rec->u.comm.name, rec->u.comm.name_len);
		fputc('\n', o);
		break;
	case SS_REC_SAMPLER_LOSS:
		fprintf(o, "tid %" PRIu64 " SAMPLER_LOSS %" PRIu64 " LOST over %" PRIu64 " ns (%s)\n",
			rec->u.sampler_loss.tid, rec->u.sampler_loss.count, rec->u.sampler_loss.span,
			ss_sampler_loss_reason_name(rec->u.sampler_loss.reason));
		break;
	case SS_REC_STACK: {
		uint64_t f[SS_MAX_STACK_FRAMES];
		size_t n = ss_stack_frames(rec, f, SS_MAX_STACK_FRAMES);
		fprintf(o, " #%" PRIu64 " %zu frames (%" PRIu64 " kernel):", rec->u.stack.id, n,
			rec->u.stack.nkernel);
		for (size_t i = 0; i < n; i++) {
			if (i < rec->u.stack.nkernel)
				fprintf(o, " k:0x%" PRIx64, f[i]);
			else
				put_user_frame(d, f[i]);
		}
		if (rec->u.stack.flags & SS_STACK_F_CFI)
			fputs(" [cfi]", o);
		if (rec->u.stack.flags & SS_STACK_F_TRUNCATED)
			fputs(" [truncated]", o);
		if (rec->u.stack.flags & ~(uint64_t)(SS_STACK_F_CFI | SS_STACK_F_TRUNCATED))
			fprintf(o, " [flags 0x%" PRIx64 "]", rec->u.stack.flags);
		fputc('\n', o);
		break;
	}
	case SS_REC_MAPPING:
		keep_mapping(d, rec);
		fprintf(o, " 0x%" PRIx64 "-0x%" PRIx64 " off 0x%" PRIx64 " %c%c%c", rec->u.mapping.start,
			rec->u.mapping.end, rec->u.mapping.pgoff, rec->u.mapping.prot & 1 ? 'r' : '-',
			rec->u.mapping.prot & 2 ? 'w' : '-', rec->u.mapping.prot & 4 ? 'x' : '-');
		if (rec->ts)
			fprintf(o, " at %" PRIu64, rec->ts);
		fputs(" build-id ", o);
		if (!rec->u.mapping.build_id_len)
			fputs("none", o);
		for (size_t i = 0; i < rec->u.mapping.build_id_len; i++)
			fprintf(o, "%02x", rec->u.mapping.build_id[i]);
		fputc(' ', o);
		put_escaped(o, rec->u.mapping.path, rec->u.mapping.path_len);
		fputc('\n', o);
		break;
	}
	return 1;
}

/* STALL, STALL_END and TASK_DUMP; returns 0 for others. Stalls stand out like
 * losses: they are what a reader of the dump looks for. */
static int print_stall_record(struct dump *d, const struct ss_record *rec)
{
	FILE *o = d->out;
	if (rec->type != SS_REC_STALL && rec->type != SS_REC_STALL_END &&
	    rec->type != SS_REC_TASK_DUMP)
		return 0;
	fputs(rec->type == SS_REC_TASK_DUMP ? "    " : "!!! ", o);
	put_rel(o, rec->ts, d->h->start_ts);
	fprintf(o, " %" PRIu64 " ", rec->ts);
	switch (rec->type) {
	case SS_REC_STALL: {
		uint64_t age = rec->ts >= rec->u.stall.poll_ts ? rec->ts - rec->u.stall.poll_ts : 0;
		fprintf(o, "T%" PRIu64 "/%" PRIu64 " STALL #%" PRIu64 " %s task=%" PRIu64 " ",
			rec->u.stall.thread, rec->u.stall.tid, rec->u.stall.index,
			ss_stall_kind_name(rec->u.stall.kind), rec->u.stall.task);
		put_location(d, rec->u.stall.location);
		fprintf(o, " polling for %" PRIu64 ".%06" PRIu64 " ms", age / 1000000u, age % 1000000u);
		if (rec->u.stall.syscall1)
			fprintf(o, " syscall=%" PRIu64, rec->u.stall.syscall1 - 1);
		if (rec->u.stall.stack)
			fprintf(o, " stack#%" PRIu64, rec->u.stall.stack);
		else
			fputs(" no-stack", o);
		fputs(" reason=", o);
		put_escaped(o, rec->u.stall.reason, rec->u.stall.reason_len);
		break;
	}
	case SS_REC_STALL_END: {
		uint64_t dur = rec->ts >= rec->u.stall_end.poll_ts ? rec->ts - rec->u.stall_end.poll_ts : 0;
		fprintf(o, "T%" PRIu64 "/%" PRIu64 " STALL_END task=%" PRIu64 " poll lasted %" PRIu64
			".%06" PRIu64 " ms, %" PRIu64 " captures", rec->u.stall_end.thread,
			rec->u.stall_end.tid, rec->u.stall_end.task, dur / 1000000u, dur % 1000000u,
			rec->u.stall_end.captures);
		break;
	}
	default:
		fprintf(o, "T%" PRIu64 "/%" PRIu64 " TASK_DUMP task=%" PRIu64 " ", rec->u.task_dump.thread,
			rec->u.task_dump.tid, rec->u.task_dump.task);
		put_location(d, rec->u.task_dump.location);
		fprintf(o, " idle %" PRIu64 ".%06" PRIu64 " ms", rec->u.task_dump.idle_ns / 1000000u,
			rec->u.task_dump.idle_ns % 1000000u);
		if (rec->u.task_dump.stack)
			fprintf(o, " stack#%" PRIu64, rec->u.task_dump.stack);
		else
			fputs(" no-stack", o);
		break;
	}
	fputc('\n', o);
	return 1;
}

static void print_record(struct dump *d, const struct ss_record *rec)
{
	FILE *o = d->out;
	const char *tname = ss_record_type_name(rec->type);
	char unknown[16];
	if (!tname) {
		snprintf(unknown, sizeof unknown, "TYPE_0x%02x", rec->type);
		tname = unknown;
	}

	if (rec->is_event || rec->type == SS_REC_THREAD) {
		/* Losses stand out: a reader of the dump must not miss a gap. */
		fputs(rec->type == SS_REC_LOSS ? "!!! " : "    ", o);
		put_rel(o, rec->ts, d->h->start_ts);
		fprintf(o, " %" PRIu64 " ", rec->ts);
		put_thread_label(d, rec);
		fprintf(o, " %s", tname);
		if (rec->type == SS_REC_THREAD) {
			const struct ss_thread_def *t = ss_reader_thread(d->r, rec->u.thread.thread);
			if (t) {
				fprintf(o, " tid=%" PRIu64 " name=", t->tid);
				put_escaped(o, t->name, t->name_len);
			} else if (rec->u.thread.thread == 0) {
				fputs(" (process-wide)", o);
			}
		} else {
			print_event_fields(d, rec);
		}
		fputc('\n', o);
		return;
	}

	if (rec->type == SS_REC_META) {
		fputs("    meta ", o);
		put_escaped(o, rec->u.meta.key, rec->u.meta.key_len);
		fputs(" = ", o);
		put_escaped(o, rec->u.meta.value, rec->u.meta.value_len);
		fputc('\n', o);
		return;
	}
	if (rec->type == SS_REC_CLOCK) {
		uint64_t source = rec->u.clock.source;
		if (source == SS_CLOCK_TSC)
			fprintf(o, "    clock tsc %.3f MHz, calibrated at tsc %" PRIu64 " = %" PRIu64
				" ns, %" PRIu64 " points in this segment, largest drift %" PRIu64 " ns\n",
				(double)rec->u.clock.tsc_hz / 1e6, rec->u.clock.tsc, rec->u.clock.mono_ns,
				rec->u.clock.points, rec->u.clock.drift_ns);
		else if (source == SS_CLOCK_VDSO)
			fputs("    clock vdso (clock_gettime in every hook)\n", o);
		else
			fprintf(o, "    clock source %" PRIu64 " (unknown to this reader)\n", source);
		return;
	}
	if (print_sampling_record(d, rec, tname) || print_stall_record(d, rec))
		return;
	if (rec->type >= 0x40) {
		fprintf(o, "    skip %s (%zu bytes, extension this reader does not know)\n", tname,
			rec->u.unknown.len);
		return;
	}
	fprintf(o, "    def %s", tname);
	switch (rec->type) {
	case SS_REC_STRING:
		fprintf(o, " #%" PRIu64 " ", rec->u.string.id);
		put_escaped(o, rec->u.string.data, rec->u.string.len);
		break;
	case SS_REC_LOCATION:
		fprintf(o, " #%" PRIu64 " ", rec->u.location.id);
		put_location(d, rec->u.location.id);
		break;
	case SS_REC_THREAD_DEF:
		fputc(' ', o);
		print_thread_def(d, &rec->u.thread_def);
		break;
	default:
		break;
	}
	fputc('\n', o);
}

static void print_footer(struct dump *d)
{
	const struct ss_reader_stats *s = ss_reader_stats(d->r);
	const struct ss_footer *f = &s->footer;
	FILE *o = d->out;
	if (!s->sealed) {
		fputs("footer     none: not sealed (still being written, or the writer stopped "
		      "before sealing it)\n", o);
		return;
	}
	if (!f->sealed_by && !f->end_ts && s->unreadable_blocks) {
		fputs("footer     present (sealed) but compressed, and this build has no zstd\n", o);
		return;
	}
	fprintf(o, "footer     sealed by %s\n",
		f->sealed_by == SS_SEALED_WRITER ? "the writer" :
		f->sealed_by == SS_SEALED_RECOVERY ? "recovery at the next start" : "unknown");
	fputs("  range      ", o);
	put_rel(o, f->start_ts, d->h->start_ts);
	fputs(" .. ", o);
	put_rel(o, f->end_ts, d->h->start_ts);
	fputs(" (", o);
	put_wall(o, d->h, f->end_ts);
	fputs(")\n  events     ", o);
	fprintf(o, "%" PRIu64 " in %" PRIu64 " blocks, first ", f->events, f->blocks);
	put_rel(o, f->first_event_ts, d->h->start_ts);
	fputs(" last ", o);
	put_rel(o, f->last_event_ts, d->h->start_ts);
	fprintf(o, "\n  %s  %" PRIu64 " events dropped, %" PRIu64 " LOSS records\n",
		f->dropped_events ? "!!! loss" : "loss    ", f->dropped_events, f->loss_records);
}

/* Threads in id order, for a stable summary. */
struct thread_list {
	const struct ss_thread_def **v;
	size_t n, cap;
};

static int collect_thread(void *ctx, const struct ss_thread_def *t)
{
	struct thread_list *l = ctx;
	if (l->n == l->cap) {
		size_t ncap = l->cap ? l->cap * 2 : 16;
		const struct ss_thread_def **nv = realloc(l->v, ncap * sizeof *nv);
		if (!nv)
			return 1;
		l->v = nv;
		l->cap = ncap;
	}
	l->v[l->n++] = t;
	return 0;
}

static int cmp_thread(const void *a, const void *b)
{
	const struct ss_thread_def *x = *(const struct ss_thread_def *const *)a;
	const struct ss_thread_def *y = *(const struct ss_thread_def *const *)b;
	return x->thread < y->thread ? -1 : x->thread > y->thread;
}

static void print_threads(struct dump *d)
{
	struct thread_list l = { 0 };
	FILE *o = d->out;
	ss_reader_foreach_thread(d->r, collect_thread, &l);
	if (l.n > 1)
		qsort(l.v, l.n, sizeof *l.v, cmp_thread);
	size_t workers = 0;
	for (size_t i = 0; i < l.n; i++)
		workers += (l.v[i]->flags & SS_THREAD_F_WORKER) || l.v[i]->became_worker;
	fprintf(o, "  threads    %zu defined, %zu workers\n", l.n, workers);
	for (size_t i = 0; i < l.n; i++) {
		const struct ss_thread_def *t = l.v[i];
		fprintf(o, "    T%-4" PRIu64 " tid %-7" PRIu64 " %8" PRIu64 " events  ", t->thread, t->tid,
			t->events);
		put_escaped(o, t->name, t->name_len);
		if ((t->flags & SS_THREAD_F_WORKER) || t->became_worker) {
			fputs("  worker ", o);
			put_string_id(d, t->runtime);
			fprintf(o, "#%" PRIu64, t->worker_index);
		}
		if (t->flags & SS_THREAD_F_EXITED)
			fputs("  (exited)", o);
		fputc('\n', o);
	}
	free(l.v);
	const struct ss_reader_stats *s = ss_reader_stats(d->r);
	if (s->process_events)
		fprintf(o, "    T0    process-wide %" PRIu64 " events\n", s->process_events);
}

static void print_summary(struct dump *d)
{
	const struct ss_reader_stats *s = ss_reader_stats(d->r);
	const struct ss_damage *dmg = ss_reader_damage(d->r);
	FILE *o = d->out;

	fputs("summary\n", o);
	fprintf(o, "  blocks     %" PRIu64 " intact (%" PRIu64 " event, %" PRIu64 " compressed",
		s->blocks, s->event_blocks, s->compressed_blocks);
	if (s->unreadable_blocks)
		fprintf(o, ", !!! %" PRIu64 " unreadable without zstd", s->unreadable_blocks);
	fprintf(o, "), %" PRIu64 " -> %" PRIu64 " bytes\n", s->payload_bytes, s->raw_bytes);
	fprintf(o, "  records    %" PRIu64 ": %" PRIu64 " events, %" PRIu64 " LOSS, %" PRIu64
		" definitions, %" PRIu64 " unknown skipped\n", s->records, s->events, s->loss_records,
		s->definitions, s->unknown_records);
	fputs("  by type   ", o);
	if (!s->records)
		fputs(" (no records)", o);
	for (unsigned t = 0; t < 256; t++) {
		if (!s->by_type[t])
			continue;
		const char *n = ss_record_type_name((uint8_t)t);
		if (n)
			fprintf(o, " %s %" PRIu64, n, s->by_type[t]);
		else
			fprintf(o, " 0x%02x %" PRIu64, t, s->by_type[t]);
	}
	fputc('\n', o);
	if (s->events) {
		fputs("  time       first event ", o);
		put_rel(o, s->first_event_ts, d->h->start_ts);
		fputs(" last ", o);
		put_rel(o, s->last_event_ts, d->h->start_ts);
		fputc('\n', o);
	}
	print_threads(d);
	if (s->events_no_thread_def)
		fprintf(o, "  note       %" PRIu64 " events on threads without a THREAD_DEF\n",
			s->events_no_thread_def);
	if (s->loss_records || (s->sealed && s->footer.dropped_events)) {
		fprintf(o, "  !!! losses %" PRIu64 " LOSS records, %" PRIu64 " events lost", s->loss_records,
			s->lost_events);
		for (unsigned i = 1; i < 5; i++)
			if (s->lost_by_reason[i])
				fprintf(o, ", %s %" PRIu64, ss_loss_reason_name(i), s->lost_by_reason[i]);
		if (s->lost_by_reason[0])
			fprintf(o, ", unknown reason %" PRIu64, s->lost_by_reason[0]);
		if (s->sealed)
			fprintf(o, "; footer counts %" PRIu64 " dropped", s->footer.dropped_events);
		fputc('\n', o);
	} else {
		fputs("  losses     none\n", o);
	}
	if (s->defs_not_kept)
		fprintf(o, "  note       %" PRIu64 " definitions not kept (memory cap)\n", s->defs_not_kept);
	if (s->note[0])
		fprintf(o, "  note       %s\n", s->note);
	fprintf(o, "  status     %s", s->sealed ? "sealed" : "not sealed");
	if (dmg->kind != SS_DAMAGE_NONE)
		fprintf(o, ", %s at offset %" PRIu64 ": %s", ss_damage_kind_name(dmg->kind), dmg->offset,
			dmg->reason);
	fputc('\n', o);
}

void ss_dump_header_damage(FILE *err, const char *name, enum ss_damage_kind kind, const char *why)
{
	fprintf(err, "stallscope dump: %s: %s at offset 0 (file header): %s; 0 blocks intact\n", name,
		kind == SS_DAMAGE_TRUNCATED ? "truncated" : "damage", why);
}

int ss_dump_segment(FILE *out, FILE *err, const char *name, struct ss_reader *r,
		    const struct ss_dump_options *opts)
{
	struct dump d = { out, r, ss_reader_header(r), opts, NULL, 0, 0, 0 };
	struct ss_block_info b;
	struct ss_record rec;

	print_header(&d, name);
	while (ss_reader_next_block(r, &b)) {
		if (opts->summary_only)
			continue;
		print_block(&d, &b);
		while (ss_reader_next_record(r, &rec))
			print_record(&d, &rec);
	}
	print_footer(&d);
	print_summary(&d);
	if (d.maps_not_kept)
		fprintf(out, "  note       %" PRIu64 " mappings past the dump's table of %u: frames in "
			"them print without a file offset\n", d.maps_not_kept, MAX_MAPPINGS);
	free(d.maps);

	const struct ss_reader_stats *s = ss_reader_stats(r);
	const struct ss_damage *dmg = ss_reader_damage(r);
	int rc = 0;
	if (dmg->kind != SS_DAMAGE_NONE) {
		char where[48];
		if (dmg->block == UINT64_MAX)
			snprintf(where, sizeof where, "file header");
		else
			snprintf(where, sizeof where, "block %" PRIu64, dmg->block);
		fprintf(err, "stallscope dump: %s: %s at offset %" PRIu64 " (%s): %s; %" PRIu64
			" blocks intact\n", name,
			dmg->kind == SS_DAMAGE_TRUNCATED ? "incomplete tail (truncated)" :
			dmg->kind == SS_DAMAGE_IO ? "read error" : "damage",
			dmg->offset, where, dmg->reason, s->blocks);
		rc = 2;
	}
	if (s->unreadable_blocks) {
		fprintf(err, "stallscope dump: %s: %" PRIu64 " compressed blocks unreadable: this build "
			"has no zstd\n", name, s->unreadable_blocks);
		rc = 2;
	}
	fflush(out);
	return rc;
}

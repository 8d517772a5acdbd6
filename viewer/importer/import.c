/*
 * import.c - the import driver: finds the segment files among the given paths,
 * tells stallscope segments from dial9 traces by their content, orders them by
 * recording and sequence number (so polls and parks that cross a rotation are
 * stitched), skips what the store already holds, and runs every intact block
 * (or dial9 stream) through its source (segment_source.c, dial9_source.c) into
 * the model, whose rows go to the SQLite store; records damage in `segments`,
 * and finishes with indexes and the sample-to-poll links, all in one
 * transaction.
 *
 * viewer/importer/ is the pipeline that joins sources (segment_source.c, and
 * the readers under viewer/reader/), the model (viewer/model/) and the store
 * (viewer/store/sqlite/); the CLI and the viewer call it through import.h.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "d9_reader.h"
#include "d9_store.h"
#include "dial9_source.h"
#include "import.h"
#include "merge.h"
#include "model.h"
#include "progress.h"
#include "segment_source.h"
#include "sqlite_store.h"
#include "symbolize.h"
#include "symtab.h"
#include "target.h"

/* The driver's state for one import. */
struct imp {
	const struct ss_import_options *o;
	FILE *log;
	struct ss_import_result *res;
	const char *target;       /* the database as the user named it */
	struct ss_target *tg;     /* where it is written (NULL: a buffer's import) */
	bool fresh_target;        /* it is being built under a temporary name */
	struct ss_sqlite_store *store;
	struct ss_model *model;
	struct ss_symbolizer *sym;
	struct ss_symtab symtab;  /* the segment's own symbol table, if it has one */
	struct ss_progress *pg;
	uint64_t prev_end;        /* file offset up to which progress was counted */
	struct ss_dial9_kept *kept; /* dial9 event types kept in other_events, all files */
	size_t n_kept;
};

struct input {
	char *path;
	uint64_t session, seq, size;
	bool dial9;
};

struct inputs {
	struct input *v;
	size_t n, cap;
};

static bool is_segment_name(const char *name)
{
	size_t n = strlen(name);
	return (n > 4 && strcmp(name + n - 4, ".bin") == 0) ||
	       (n > 11 && strcmp(name + n - 11, ".bin.active") == 0) ||
	       (n > 7 && strcmp(name + n - 7, ".bin.gz") == 0); /* dial9's sealed segments */
}

static int add_input(struct inputs *in, const char *path, uint64_t size)
{
	if (in->n == in->cap) {
		size_t nc = in->cap ? in->cap * 2 : 64;
		struct input *nv = realloc(in->v, nc * sizeof *nv);
		if (!nv)
			return -1;
		in->v = nv;
		in->cap = nc;
	}
	in->v[in->n++] = (struct input){ strdup(path), 0, 0, size, false };
	return in->v[in->n - 1].path ? 0 : -1;
}

/* depth: directories are searched this many levels down (a directory of
 * recordings, each a directory of segments). */
static void expand(struct imp *im, struct inputs *in, const char *path, int depth);

/* A path the user gave: says so when it holds no segment at all. */
static void expand_arg(struct imp *im, struct inputs *in, const char *path)
{
	size_t before = in->n;
	uint64_t unreadable = im->res->unreadable;
	expand(im, in, path, 2);
	struct stat st;
	if (in->n == before && im->res->unreadable == unreadable && stat(path, &st) == 0 &&
	    S_ISDIR(st.st_mode) && !im->o->quiet)
		fprintf(im->log, "stallscope import: no segments found in %s (PREFIX.N.bin, PREFIX.N.bin.active"
			" or dial9's PREFIX.N.bin.gz files)\n", path);
}

static void expand(struct imp *im, struct inputs *in, const char *path, int depth)
{
	struct stat st;
	if (stat(path, &st) != 0) {
		fprintf(im->log, "stallscope import: %s: %s\n", path, strerror(errno));
		im->res->unreadable++;
		return;
	}
	if (!S_ISDIR(st.st_mode)) {
		add_input(in, path, (uint64_t)st.st_size);
		return;
	}
	DIR *d = opendir(path);
	if (!d) {
		fprintf(im->log, "stallscope import: %s: %s\n", path, strerror(errno));
		im->res->unreadable++;
		return;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char *p = NULL;
		if (asprintf(&p, "%s/%s", path, e->d_name) < 0)
			continue;
		if (stat(p, &st) == 0 && S_ISREG(st.st_mode) && is_segment_name(e->d_name))
			add_input(in, p, (uint64_t)st.st_size);
		else if (depth > 0 && S_ISDIR(st.st_mode))
			expand(im, in, p, depth - 1);
		free(p);
	}
	closedir(d);
}

static int cmp_input(const void *a, const void *b)
{
	const struct input *x = a, *y = b;
	if (x->session != y->session)
		return x->session < y->session ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	/* The same segment twice (a copy, or .active beside its sealed self): the
	 * bigger file first; the smaller is then "unchanged". */
	return x->size > y->size ? -1 : x->size < y->size;
}

/* ---- setup ---------------------------------------------------------------- */

static int setup(struct imp *im, const struct ss_import_options *o, struct ss_import_result *res)
{
	memset(im, 0, sizeof *im);
	im->o = o;
	im->res = res;
	im->log = o->log ? o->log : stderr;
	char err[600];
	im->store = ss_sqlite_open(o->db_path, strcmp(o->db_path, ":memory:") != 0, err, sizeof err);
	if (!im->store) {
		if (!o->quiet)
			fprintf(im->log, "stallscope import: %s\n", err);
		return -1;
	}
	if (o->stage && ss_sqlite_set_stage(im->store, o->stage) != 0) {
		if (!o->quiet)
			fprintf(im->log, "stallscope import: %s\n", ss_sqlite_error(im->store));
		return -1;
	}
	if (!o->no_symbols)
		im->sym = ss_sym_new(o->debug_dirs, o->n_debug_dirs);
	struct ss_sink sink;
	ss_sqlite_sink(im->store, &sink);
	struct ss_model_options mo = {
		.log = im->log, .quiet = o->quiet, .sym = im->sym, .max_threads = o->max_threads,
		.max_live_tasks = o->max_live_tasks, .max_summary_buckets = o->max_summary_buckets,
	};
	im->model = ss_model_new(&mo, &sink, err, sizeof err);
	if (!im->model) {
		if (!o->quiet)
			fprintf(im->log, "stallscope import: %s\n", err);
		return -1;
	}
	return 0;
}

static void free_kept(struct imp *im)
{
	for (size_t i = 0; i < im->n_kept; i++)
		free(im->kept[i].name);
	free(im->kept);
	im->kept = NULL;
	im->n_kept = 0;
}

static void teardown(struct imp *im)
{
	if (im->model)
		ss_model_recording_end(im->model);
	ss_model_free(im->model);
	ss_symtab_clear(&im->symtab);
	if (im->sym)
		ss_sym_free(im->sym);
	ss_sqlite_close(im->store);
	im->model = NULL;
	im->store = NULL;
}

static void phase(void *ctx, const char *what)
{
	ss_progress_phase(ctx, what);
}

/* Ends the recording, then indexes, links and the commit. */
static int finish(struct imp *im, struct ss_progress *pg)
{
	if (im->tg)
		ss_target_writeback(im->tg); /* the rows are nearly all written */
	if (ss_model_recording_end(im->model) != 0 || ss_model_failed(im->model))
		return -1;
	if (ss_model_over_thread_limit(im->model) && !im->o->quiet)
		fprintf(im->log, "stallscope import: warning: %llu events of threads past the first %llu of a"
			" recording were left out\n", (unsigned long long)ss_model_over_thread_limit(im->model),
			(unsigned long long)ss_model_max_threads(im->model));
	bool timing = getenv("STALLSCOPE_IMPORT_TIMING") != NULL;
	if (timing) {
		/* This thread's own CPU beside the wall time: with the inserting thread on
		 * the other CPU, the larger of the two sets the pace of the load. */
		struct timespec ts;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
		fprintf(im->log, "import: records %.2f s, model thread CPU %.2f s\n", ss_progress_now() - pg->start,
			(double)ts.tv_sec + (double)ts.tv_nsec / 1e9);
	}
	if (ss_sqlite_finish(im->store, phase, pg, timing, im->log) != 0) {
		if (!im->o->quiet)
			fprintf(im->log, "stallscope import: database write failed: %s\n", ss_sqlite_error(im->store));
		return -1;
	}
	return 0;
}

/* ---- one segment ---------------------------------------------------------- */

struct src {
	int fd;
	const uint8_t *buf;
	size_t len;
};

static int read_at(void *ctx, uint64_t off, void *out, size_t n)
{
	const struct src *s = ctx;
	if (s->buf) {
		if (off > s->len || n > s->len - off)
			return -1;
		memcpy(out, s->buf + off, n);
		return 0;
	}
	return pread(s->fd, out, n, (off_t)off) == (ssize_t)n ? 0 : -1;
}

/* Loads the symbol table a sealed segment may carry (`stallscope symbolize`). */
static void load_symtab(struct imp *im, const char *path, const uint8_t *buf, size_t len,
			const struct ss_segment_header *h)
{
	struct src s = { -1, buf, len };
	if (!buf && (s.fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		ss_symtab_clear(&im->symtab);
		return;
	}
	ss_symtab_load(&im->symtab, read_at, &s, h->header_size);
	if (s.fd >= 0)
		close(s.fd);
}

static void block_done(void *ctx, const struct ss_block_info *b, bool skipped)
{
	struct imp *im = ctx;
	uint64_t end = b->offset + sizeof(struct ss_block_header) + b->payload_len;
	ss_progress_update(im->pg, end > im->prev_end ? end - im->prev_end : 0, skipped ? 0 : b->record_count);
	im->prev_end = end;
}

/* Reads one opened segment (from path, or buf when not NULL) into the store. */
static int import_segment(struct imp *im, struct ss_reader *rd, const char *path, const uint8_t *buf,
			  uint64_t size, struct ss_progress *pg)
{
	const struct ss_segment_header *h = ss_reader_header(rd);
	struct ss_recording_info info = {
		h->session_id, h->pid, h->exe, strnlen(h->exe, h->exe_len), h->hostname, h->boot_id,
		h->anchor_mono_ns, h->anchor_real_ns,
	};
	if (ss_model_recording(im->model, &info) != 0)
		return -1;
	int64_t rid = ss_model_recording_id(im->model);
	struct ss_segment_info row = { 0 };
	bool known = ss_model_recording_known(im->model) && ss_sqlite_segment_find(im->store, rid, h->segment_seq, &row);
	if (known && row.sealed) {
		im->res->unchanged++;
		ss_progress_update(pg, size, 0);
		return 0;
	}
	load_symtab(im, path, buf, (size_t)size, h);
	im->pg = pg;
	im->prev_end = h->header_size;
	struct ss_segment_run run;
	if (ss_segment_source_run(im->model, rd, &im->symtab, known ? row.blocks : 0, &run,
				  block_done, im) != 0)
		return -1;
	const struct ss_reader_stats *st = ss_reader_stats(rd);
	const struct ss_damage *dmg = ss_reader_damage(rd);
	ss_progress_update(pg, size > im->prev_end ? size - im->prev_end : 0, 0);
	if (dmg->kind != SS_DAMAGE_NONE) {
		im->res->damaged++;
		if (!im->o->quiet) {
			ss_progress_end(pg);
			fprintf(im->log, "stallscope import: %s: %s at offset %llu", path,
				ss_damage_kind_name(dmg->kind), (unsigned long long)dmg->offset);
			if (dmg->block != UINT64_MAX)
				fprintf(im->log, " (block %llu)", (unsigned long long)dmg->block);
			fprintf(im->log, ": %s; imported the %llu intact blocks before it\n", dmg->reason,
				(unsigned long long)st->blocks);
		}
	}
	im->res->events += run.events;
	/* Nothing new (or the file even shrank): keep the row as it is, so the blocks
	 * already imported are never counted as new later. */
	if (known && run.new_blocks == 0 && !st->sealed) {
		im->res->unchanged++;
		return 0;
	}
	im->res->imported++;
	uint64_t end = st->sealed ? st->footer.end_ts : st->last_event_ts;
	struct ss_segment_info g = {
		.id = known ? row.id : ss_model_new_id(im->model, ID_SEGMENT), .recording_id = rid, .file = path,
		.seq = h->segment_seq, .start_ts = h->start_ts, .end_ts = end, .sealed = st->sealed,
		.blocks = st->blocks, .bytes = size, .intact_bytes = st->intact_end, .events = st->events,
		.damage = dmg->kind != SS_DAMAGE_NONE ? ss_damage_kind_name(dmg->kind) : NULL,
		.damage_offset = dmg->offset, .damage_block = dmg->block != UINT64_MAX ? (int64_t)dmg->block : -1,
		.damage_reason = dmg->reason, .note = st->note,
	};
	if (ss_sqlite_segment_write(im->store, &g) != 0) {
		if (!im->o->quiet)
			fprintf(im->log, "stallscope import: database write failed: %s\n", ss_sqlite_error(im->store));
		return -1;
	}
	return 0;
}

/* ---- one dial9 file -------------------------------------------------------------- */

static void d9_progress(void *ctx, uint64_t bytes, uint64_t events)
{
	struct imp *im = ctx;
	ss_progress_update(im->pg, bytes, events);
}

static void keep_counts(struct imp *im, const struct ss_dial9_run *run)
{
	for (size_t i = 0; i < run->n_kept; i++) {
		size_t j = 0;
		while (j < im->n_kept && strcmp(im->kept[j].name, run->kept[i].name) != 0)
			j++;
		if (j == im->n_kept) {
			struct ss_dial9_kept *nk = realloc(im->kept, (im->n_kept + 1) * sizeof *nk);
			char *name = strdup(run->kept[i].name);
			if (!nk || !name) {
				free(name);
				if (nk)
					im->kept = nk;
				return;
			}
			im->kept = nk;
			im->kept[im->n_kept++] = (struct ss_dial9_kept){ name, 0 };
		}
		im->kept[j].count += run->kept[i].count;
	}
}

/* What ended a stream, in the words of the segments table. */
static const char *d9_damage_kind(const char *reason)
{
	return strstr(reason, "truncated") || strstr(reason, "ends early") ? "truncated"
	       : strstr(reason, "read error") || strstr(reason, "temporary file") ? "io"
										   : "corrupt";
}

/* Reads one dial9 trace (from path, or buf when not NULL) into the store. */
static int import_dial9(struct imp *im, const char *path, const uint8_t *buf, size_t len, uint64_t size,
			struct ss_progress *pg)
{
	struct ss_dial9_id id = { 0x6469616c39627566ull, 0, true }; /* a buffer: one recording of its own */
	if (!buf)
		ss_dial9_identify(path, &id);
	struct ss_recording_info info = { .session_id = id.session_id };
	if (ss_model_recording(im->model, &info) != 0)
		return -1;
	int64_t rid = ss_model_recording_id(im->model);
	struct ss_segment_info row = { 0 };
	bool known = ss_model_recording_known(im->model) && ss_sqlite_segment_find(im->store, rid, id.seq, &row);
	if (known && row.sealed) {
		im->res->unchanged++;
		ss_progress_update(pg, size, 0);
		return 0;
	}
	char err[256];
	struct d9_reader *r = buf ? d9_open_buffer(buf, len, err, sizeof err) : d9_open_file(path, err, sizeof err);
	if (!r) {
		if (!im->o->quiet)
			fprintf(im->log, "stallscope import: %s: %s; skipped\n", path, err);
		im->res->unreadable++;
		ss_progress_update(pg, size, 0);
		return 0;
	}
	im->pg = pg;
	struct ss_dial9_run run;
	if (ss_dial9_source_run(im->model, r, known ? row.blocks : 0, &run, d9_progress, im) != 0) {
		ss_dial9_run_free(&run);
		d9_close(r);
		return -1;
	}
	const struct d9_stats *st = d9_stats(r);
	const char *problem = d9_store_problem(r);
	size_t nd = d9_damage_count(r);
	if (nd || problem) {
		im->res->damaged++;
		if (!im->o->quiet) {
			ss_progress_end(pg);
			for (size_t i = 0; i < nd && i < 8; i++) {
				const struct d9_damage *d = d9_damage_at(r, i);
				fprintf(im->log, "stallscope import: %s: stream %u damaged at offset %llu%s: %s; %s\n", path,
					d->batch, (unsigned long long)d->offset, st->gzip ? " of the decompressed data" : "",
					d->reason, "what came before it is imported, reading goes on at the next stream");
			}
			if (st->damaged > 8)
				fprintf(im->log, "stallscope import: %s: %llu more damaged streams\n", path,
					(unsigned long long)(st->damaged - 8));
			if (problem)
				fprintf(im->log, "stallscope import: %s: %s; the data before it is imported\n", path, problem);
		}
	}
	if (st->unresolved && !im->o->quiet)
		fprintf(im->log, "stallscope import: %s: %llu references to strings or stacks the stream did not"
			" define (left empty)\n", path, (unsigned long long)st->unresolved);
	im->res->events += run.events;
	keep_counts(im, &run);
	bool nothing_new = known && run.new_batches == 0 && !id.sealed;
	char note[160] = "";
	if (st->tables_full || st->unindexed)
		snprintf(note, sizeof note, "%s%s", st->tables_full ? "more distinct strings, stacks or schemas than"
								       " the import keeps: some left unresolved; " : "",
			 st->unindexed ? "more streams than the import orders by time: the rest in file order" : "");
	const struct d9_damage *first = nd ? d9_damage_at(r, 0) : NULL;
	struct ss_segment_info g = {
		.id = known ? row.id : ss_model_new_id(im->model, ID_SEGMENT), .recording_id = rid, .file = path,
		.seq = id.seq, .start_ts = run.first_ts, .end_ts = run.last_ts, .sealed = id.sealed,
		.blocks = st->batches, .bytes = size, .intact_bytes = st->intact_end, .events = st->events,
		.damage = first ? d9_damage_kind(first->reason) : problem ? d9_damage_kind(problem) : NULL,
		.damage_offset = first ? first->offset : st->bytes,
		.damage_block = first ? (int64_t)first->batch : -1,
		.damage_reason = first ? first->reason : problem, .note = note[0] ? note : NULL,
	};
	ss_dial9_run_free(&run);
	int rc = 0;
	if (nothing_new) {
		im->res->unchanged++;
	} else {
		im->res->imported++;
		/* g points into the reader: written before it is closed */
		if ((rc = ss_sqlite_segment_write(im->store, &g)) != 0 && !im->o->quiet)
			fprintf(im->log, "stallscope import: database write failed: %s\n", ss_sqlite_error(im->store));
	}
	d9_close(r);
	return rc ? -1 : 0;
}

static struct ss_reader_options reader_opts(const struct ss_import_options *o)
{
	return (struct ss_reader_options){ .ignore_crc = o->fuzz_ignore_crc,
					   .max_definition_bytes = o->fuzz_ignore_crc ? 64u << 10 : 0 };
}

static bool failed(const struct imp *im)
{
	return !im->model || ss_model_failed(im->model);
}

static bool cancelled(const struct ss_import_options *o)
{
	return o->cancel && *o->cancel;
}

static void report(struct imp *im, struct ss_progress *pg, int rc)
{
	struct ss_import_result *res = im->res;
	res->seconds = ss_progress_now() - pg->start;
	res->bytes = pg->done_bytes;
	if (im->o->quiet)
		return;
	if (rc != SS_IMPORT_OK) {
		/* No summary of what was read: none of it is in the database. */
		if (rc == SS_IMPORT_CANCELLED)
			fprintf(im->log, "stallscope import: cancelled: %s %s\n", im->target,
				im->fresh_target ? "was not created" : "keeps the segments imported so far");
		else if (rc == SS_IMPORT_OUTPUT)
			fprintf(im->log, "stallscope import: nothing was imported: %s %s\n", im->target,
				im->fresh_target ? "was not created" : "is as it was before");
		else
			fprintf(im->log, "stallscope import: nothing to import (%llu files, %llu unreadable)%s\n",
				(unsigned long long)res->files, (unsigned long long)res->unreadable,
				im->fresh_target ? "; no database was created" : "");
		return;
	}
	if (im->n_kept) {
		uint64_t all = 0;
		for (size_t i = 0; i < im->n_kept; i++)
			all += im->kept[i].count;
		fprintf(im->log, "stallscope import: dial9: %llu events of %zu type%s not mapped to the schema were kept"
			" in other_events:", (unsigned long long)all, im->n_kept, im->n_kept == 1 ? "" : "s");
		for (size_t i = 0; i < im->n_kept; i++)
			fprintf(im->log, "%s %s (%llu)", i ? "," : "", im->kept[i].name,
				(unsigned long long)im->kept[i].count);
		fprintf(im->log, "\n");
	}
	/* With the blocks' floors a record comes late only past what the merge
	 * holds; without them (merge.h), past the window too. */
	if (res->late)
		fprintf(im->log, "stallscope import: warning: %llu records came after later ones of other threads"
			" had been passed on (the merge holds up to %u records, and %.1f s of trace time where"
			" blocks' time floors are not known: dial9 traces, segments that define an id twice):"
			" they were taken in file order, and links between threads near them (wakes, task"
			" ends) may be off\n",
			(unsigned long long)res->late, SS_MERGE_MAX_BUFFERED, (double)SS_MERGE_WINDOW_NS / 1e9);
	fprintf(im->log, "stallscope import: %llu segment%s imported, %llu unchanged, %llu damaged, "
		"%llu unreadable; %llu events in %.2f s (%.2fM events/s) -> %s\n",
		(unsigned long long)res->imported, res->imported == 1 ? "" : "s",
		(unsigned long long)res->unchanged, (unsigned long long)res->damaged,
		(unsigned long long)res->unreadable, (unsigned long long)res->events, res->seconds,
		res->seconds > 0 ? (double)res->events / res->seconds / 1e6 : 0.0, im->target);
}

bool ss_import_is_trace_file(const char *path)
{
	char head[sizeof SS_FILE_MAGIC - 1];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, head, sizeof head);
	close(fd);
	if (n == (ssize_t)sizeof head && memcmp(head, SS_FILE_MAGIC, sizeof head) == 0)
		return true;
	return d9_detect_file(path) != D9_DETECT_NO;
}

int ss_import_paths(const struct ss_import_options *user_o, const char *const *paths, size_t n,
		    struct ss_import_result *res)
{
	struct imp im;
	struct inputs in = { 0 };
	struct ss_target tg;
	memset(res, 0, sizeof *res);
	FILE *log = user_o->log ? user_o->log : stderr;
	if (ss_target_begin(&tg, user_o->db_path, log, user_o->quiet) != 0) {
		if (!user_o->quiet)
			fprintf(log, "stallscope import: %s\n", tg.err);
		return SS_IMPORT_OUTPUT;
	}
	/* Rows go to the temporary file of a new database (target.c). */
	struct ss_import_options wo = *user_o;
	wo.db_path = tg.write_path;
	const struct ss_import_options *o = &wo;
	if (setup(&im, o, res) != 0) {
		teardown(&im);
		ss_target_abort(&tg);
		return SS_IMPORT_OUTPUT;
	}
	im.target = o->target_name ? o->target_name : tg.path;
	im.tg = &tg;
	im.fresh_target = tg.building && !o->target_name;
	for (size_t i = 0; i < n; i++)
		expand_arg(&im, &in, paths[i]);
	res->files = in.n;
	struct ss_reader_options ro = reader_opts(o);
	uint64_t total = 0;
	/* Read every header first: the order of import is recording, then sequence. */
	size_t w = 0;
	for (size_t i = 0; i < in.n; i++) {
		struct ss_reader *rd;
		enum ss_damage_kind kind;
		char err[256];
		enum d9_detect dk = d9_detect_file(in.v[i].path);
		if (dk == D9_DETECT_RAW || dk == D9_DETECT_GZIP) {
			struct ss_dial9_id id;
			ss_dial9_identify(in.v[i].path, &id);
			in.v[i].session = id.session_id;
			in.v[i].seq = id.seq;
			in.v[i].dial9 = true;
			total += in.v[i].size;
			in.v[w++] = in.v[i];
			continue;
		}
		if (dk == D9_DETECT_OTHER_GZIP) {
			if (!o->quiet)
				fprintf(im.log, "stallscope import: %s: gzip data that is not a dial9 trace; skipped\n",
					in.v[i].path);
			res->unreadable++;
			free(in.v[i].path);
			continue;
		}
		if (ss_reader_open_file(&rd, in.v[i].path, &ro, &kind, err, sizeof err) != 0) {
			if (!o->quiet)
				fprintf(im.log, "stallscope import: %s: %s (%s); skipped\n", in.v[i].path, err,
					ss_damage_kind_name(kind));
			res->unreadable++;
			free(in.v[i].path);
			continue;
		}
		in.v[i].session = ss_reader_header(rd)->session_id;
		in.v[i].seq = ss_reader_header(rd)->segment_seq;
		ss_reader_close(rd);
		total += in.v[i].size;
		in.v[w++] = in.v[i];
	}
	in.n = w;
	qsort(in.v, in.n, sizeof *in.v, cmp_input);
	struct ss_progress pg;
	ss_progress_start(&pg, im.log, o->progress && !o->quiet, total);
	for (size_t i = 0; i < in.n && !failed(&im) && !cancelled(o); i++) {
		if (in.v[i].dial9) {
			import_dial9(&im, in.v[i].path, NULL, 0, in.v[i].size, &pg);
			continue;
		}
		struct ss_reader *rd;
		enum ss_damage_kind kind;
		char err[256];
		if (ss_reader_open_file(&rd, in.v[i].path, &ro, &kind, err, sizeof err) != 0) {
			res->unreadable++;
			continue;
		}
		import_segment(&im, rd, in.v[i].path, NULL, in.v[i].size, &pg);
		ss_reader_close(rd);
	}
	for (size_t i = 0; i < in.n; i++)
		free(in.v[i].path);
	free(in.v);
	int rc = SS_IMPORT_OK;
	if (cancelled(o)) {
		/* In place, what was read is finished as any import is, so the
		 * database stays whole; a new one is thrown away below. */
		if (!im.fresh_target && !failed(&im))
			finish(&im, &pg);
		rc = SS_IMPORT_CANCELLED;
	} else if (res->imported + res->unchanged == 0 && !failed(&im))
		rc = SS_IMPORT_NOTHING;
	else if (failed(&im) || finish(&im, &pg) != 0)
		rc = SS_IMPORT_OUTPUT;
	ss_progress_end(&pg);
	res->late = ss_model_late(im.model);
	teardown(&im);
	if (rc == SS_IMPORT_OK && ss_target_commit(&tg) != 0) {
		if (!o->quiet)
			fprintf(im.log, "stallscope import: %s\n", tg.err);
		rc = SS_IMPORT_OUTPUT;
	}
	if (rc != SS_IMPORT_OK)
		ss_target_abort(&tg);
	report(&im, &pg, rc);
	free_kept(&im);
	return rc;
}

int ss_import_buffer(const struct ss_import_options *o, const void *buf, size_t len,
		     struct ss_import_result *res)
{
	struct imp im;
	memset(res, 0, sizeof *res);
	if (setup(&im, o, res) != 0) {
		teardown(&im);
		return SS_IMPORT_OUTPUT;
	}
	struct ss_reader_options ro = reader_opts(o);
	struct ss_reader *rd;
	enum ss_damage_kind kind;
	char err[256];
	struct ss_progress pg;
	ss_progress_start(&pg, im.log, false, len);
	im.target = o->db_path;
	res->files = 1;
	int rc = SS_IMPORT_OK;
	enum d9_detect dk = d9_detect(buf, len < 65536 ? len : 65536);
	if (dk == D9_DETECT_RAW || dk == D9_DETECT_GZIP) {
		import_dial9(&im, "<buffer>", buf, len, len, &pg);
		if (res->imported + res->unchanged == 0 && !failed(&im))
			rc = SS_IMPORT_NOTHING;
	} else if (ss_reader_open_buffer(&rd, buf, len, &ro, &kind, err, sizeof err) != 0) {
		res->unreadable++;
		rc = SS_IMPORT_NOTHING;
	} else {
		import_segment(&im, rd, "<buffer>", buf, len, &pg);
		ss_reader_close(rd);
	}
	if (failed(&im) || finish(&im, &pg) != 0)
		rc = SS_IMPORT_OUTPUT;
	res->late = ss_model_late(im.model);
	report(&im, &pg, rc);
	teardown(&im);
	free_kept(&im);
	return rc;
}

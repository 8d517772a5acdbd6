/*
 * import.c - the import driver: finds the segment files among the given paths,
 * orders them by recording and sequence number (so polls and parks that cross a
 * rotation are stitched), skips what the database already holds, feeds every
 * intact block through the per-table writers, records damage in `segments`, and
 * finishes with indexes and the sample-to-poll links, all in one transaction.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "import-private.h"
#include "progress.h"
#include "target.h"

struct input {
	char *path;
	uint64_t session, seq, size;
};

struct inputs {
	struct input *v;
	size_t n, cap;
};

static bool is_segment_name(const char *name)
{
	size_t n = strlen(name);
	return (n > 4 && strcmp(name + n - 4, ".bin") == 0) ||
	       (n > 11 && strcmp(name + n - 11, ".bin.active") == 0);
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
	in->v[in->n++] = (struct input){ strdup(path), 0, 0, size };
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
		fprintf(im->log, "stallscope import: no segments found in %s (PREFIX.N.bin or"
			" PREFIX.N.bin.active files)\n", path);
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

static int deliver(void *ctx, const struct ss_record *r);

/* ---- database-wide maps ----------------------------------------------------- */

static int load_global(struct imp *im)
{
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(im->db.db, "SELECT id, file, line, function FROM locations", -1, &s, NULL))
		return -1;
	while (sqlite3_step(s) == SQLITE_ROW) {
		const char *file = (const char *)sqlite3_column_blob(s, 1), *fn;
		size_t fl = (size_t)sqlite3_column_bytes(s, 1);
		fn = (const char *)sqlite3_column_blob(s, 3);
		size_t nl = (size_t)sqlite3_column_bytes(s, 3);
		bool fnull = sqlite3_column_type(s, 1) == SQLITE_NULL, nnull = sqlite3_column_type(s, 3) == SQLITE_NULL;
		uint64_t h = imp_fnv(file ? file : "", fl, 0xcbf29ce484222325ull);
		h = imp_fnv("\0", 1, h);
		h = imp_fnv(fn ? fn : "", nl, h);
		h ^= (uint64_t)fnull << 1 | (uint64_t)nnull;
		ss_hmap_put(&im->locations, h, (uint64_t)sqlite3_column_int64(s, 2),
			    (uint64_t)sqlite3_column_int64(s, 0));
	}
	sqlite3_finalize(s);
	if (sqlite3_prepare_v2(im->db.db, "SELECT mapping_id, rel_pc, min(id), count(*) FROM frames"
			       " GROUP BY mapping_id, rel_pc", -1, &s, NULL))
		return -1;
	while (sqlite3_step(s) == SQLITE_ROW)
		ss_hmap_put(&im->frames, (uint64_t)sqlite3_column_int64(s, 0), (uint64_t)sqlite3_column_int64(s, 1),
			    (uint64_t)sqlite3_column_int64(s, 2) | (uint64_t)sqlite3_column_int64(s, 3) << 56);
	sqlite3_finalize(s);
	if (sqlite3_prepare_v2(im->db.db, "SELECT coalesce(parent_id, 0), frame_id, id FROM callsites", -1, &s, NULL))
		return -1;
	while (sqlite3_step(s) == SQLITE_ROW)
		ss_hmap_put(&im->callsites, (uint64_t)sqlite3_column_int64(s, 0), (uint64_t)sqlite3_column_int64(s, 1),
			    (uint64_t)sqlite3_column_int64(s, 2));
	sqlite3_finalize(s);
	return 0;
}

static int setup(struct imp *im, const struct ss_import_options *o, struct ss_import_result *res)
{
	memset(im, 0, sizeof *im);
	im->o = o;
	im->res = res;
	im->log = o->log ? o->log : stderr;
	im->symres = malloc(sizeof *im->symres);
	if (!im->symres)
		return -1;
	if (ss_db_open(&im->db, o->db_path) != 0 || ss_db_prepare(&im->db, strcmp(o->db_path, ":memory:") != 0) != 0 || load_global(im) != 0) {
		if (!o->quiet)
			fprintf(im->log, "stallscope import: %s\n", im->db.err[0] ? im->db.err : "cannot load database");
		return -1;
	}
	ss_merge_init(&im->merge, deliver, im);
	im->summ.db = &im->db;
	im->summ.max_buckets = o->max_summary_buckets ? o->max_summary_buckets : 2000000;
	im->max_threads = o->max_threads ? o->max_threads : IMP_MAX_THREADS;
	im->max_live_tasks = o->max_live_tasks ? o->max_live_tasks : IMP_MAX_LIVE_TASKS;
	if (!o->no_symbols)
		im->sym = ss_sym_new(o->debug_dirs, o->n_debug_dirs);
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(im->db.db, "SELECT coalesce(max(rowid), 0) + 1 FROM samples", -1, &s, NULL) == 0) {
		if (sqlite3_step(s) == SQLITE_ROW)
			im->first_sample_rowid = sqlite3_column_int64(s, 0);
		sqlite3_finalize(s);
	}
	return 0;
}

static void teardown(struct imp *im)
{
	imp_recording_end(im);
	ss_hmap_free(&im->locations);
	ss_hmap_free(&im->frames);
	ss_hmap_free(&im->callsites);
	ss_hmap_free(&im->seg_locs);
	ss_hmap_free(&im->seg_stacks);
	ss_symtab_clear(&im->symtab);
	ss_merge_free(&im->merge);
	if (im->sym)
		ss_sym_free(im->sym);
	free(im->symres);
	ss_db_close(&im->db);
}

/* Indexes, then what needs them: each sample's poll. Then commit. */
static int finish(struct imp *im, struct ss_progress *pg)
{
	if (im->failed || ss_db_flush(&im->db) != 0)
		return imp_fail(im);
	if (im->over_thread_limit && !im->o->quiet)
		fprintf(im->log, "stallscope import: warning: %llu events of threads past the first %llu of a"
			" recording were left out\n", (unsigned long long)im->over_thread_limit,
			(unsigned long long)im->max_threads);
	bool timing = getenv("STALLSCOPE_IMPORT_TIMING") != NULL;
	double t0 = ss_progress_now();
	if (timing)
		fprintf(im->log, "import: records %.2f s\n", t0 - pg->start);
	ss_progress_phase(pg, "creating indexes");
	if (ss_db_create_indexes(&im->db) != 0)
		return imp_fail(im);
	if (timing)
		fprintf(im->log, "import: indexes %.2f s\n", ss_progress_now() - t0);
	t0 = ss_progress_now();
	ss_progress_phase(pg, "linking samples to polls");
	char *sql = sqlite3_mprintf(
		"UPDATE samples SET poll_id = (SELECT id FROM (SELECT id, ts, dur FROM polls p"
		" WHERE p.worker_id = samples.worker_id AND p.ts <= samples.ts ORDER BY p.ts DESC LIMIT 1)"
		" WHERE ts + dur > samples.ts) WHERE rowid >= %lld AND worker_id IS NOT NULL",
		(long long)im->first_sample_rowid);
	int rc = sql ? ss_db_exec(&im->db, sql) : -1;
	sqlite3_free(sql);
	if (rc == 0)
		rc = ss_db_exec(&im->db, "UPDATE stalls SET poll_id = (SELECT p.id FROM polls p WHERE"
				" p.worker_id = stalls.worker_id AND p.ts = stalls.ts) WHERE poll_id IS NULL");
	if (timing)
		fprintf(im->log, "import: links %.2f s\n", ss_progress_now() - t0);
	t0 = ss_progress_now();
	if (rc != 0 || ss_db_exec(&im->db, "COMMIT") != 0)
		return imp_fail(im);
	if (timing)
		fprintf(im->log, "import: commit %.2f s\n", ss_progress_now() - t0);
	ss_db_exec(&im->db, "PRAGMA optimize");
	return 0;
}

/* ---- one segment ---------------------------------------------------------- */

struct seg_row {
	int64_t id;
	uint64_t blocks, events;
	bool sealed;
};

static bool find_segment(struct imp *im, uint64_t seq, struct seg_row *row)
{
	sqlite3_stmt *s;
	bool found = false;
	if (ss_db_sync(&im->db) != 0)
		return false;
	if (sqlite3_prepare_v2(im->db.db, "SELECT id, blocks, sealed, events FROM segments"
			       " WHERE recording_id = ? AND seq = ?", -1, &s, NULL) != SQLITE_OK)
		return false;
	sqlite3_bind_int64(s, 1, im->rec->id);
	sqlite3_bind_int64(s, 2, (int64_t)seq);
	if (sqlite3_step(s) == SQLITE_ROW) {
		found = true;
		row->id = sqlite3_column_int64(s, 0);
		row->blocks = (uint64_t)sqlite3_column_int64(s, 1);
		row->sealed = sqlite3_column_int64(s, 2) != 0;
		row->events = (uint64_t)sqlite3_column_int64(s, 3);
	}
	sqlite3_finalize(s);
	return found;
}

static int write_segment(struct imp *im, const char *path, uint64_t size, int64_t id,
			 const struct ss_segment_header *h, const struct ss_reader_stats *st,
			 const struct ss_damage *dmg)
{
	sqlite3_stmt *s;
	if (ss_db_sync(&im->db) != 0)
		return imp_fail(im);
	if (sqlite3_prepare_v2(im->db.db,
			       "INSERT OR REPLACE INTO segments(id, recording_id, file, seq, start_ts, end_ts, sealed,"
			       " blocks, bytes, intact_bytes, events, damage, damage_offset, damage_block,"
			       " damage_reason, note) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", -1, &s, NULL))
		return -1;
	sqlite3_bind_int64(s, 1, id);
	sqlite3_bind_int64(s, 2, im->rec->id);
	sqlite3_bind_text(s, 3, path, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 4, (int64_t)h->segment_seq);
	sqlite3_bind_int64(s, 5, (int64_t)h->start_ts);
	uint64_t end = st->sealed ? st->footer.end_ts : st->last_event_ts;
	if (end)
		sqlite3_bind_int64(s, 6, (int64_t)end);
	sqlite3_bind_int(s, 7, st->sealed);
	sqlite3_bind_int64(s, 8, (int64_t)st->blocks);
	sqlite3_bind_int64(s, 9, (int64_t)size);
	sqlite3_bind_int64(s, 10, (int64_t)st->intact_end);
	sqlite3_bind_int64(s, 11, (int64_t)st->events);
	if (dmg->kind != SS_DAMAGE_NONE) {
		sqlite3_bind_text(s, 12, ss_damage_kind_name(dmg->kind), -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 13, (int64_t)dmg->offset);
		if (dmg->block != UINT64_MAX)
			sqlite3_bind_int64(s, 14, (int64_t)dmg->block);
		sqlite3_bind_text(s, 15, dmg->reason, -1, SQLITE_STATIC);
	}
	if (st->note[0])
		sqlite3_bind_text(s, 16, st->note, -1, SQLITE_STATIC);
	int rc = sqlite3_step(s) == SQLITE_DONE ? 0 : -1;
	if (rc)
		snprintf(im->db.err, sizeof im->db.err, "%s", sqlite3_errmsg(im->db.db));
	sqlite3_finalize(s);
	return rc ? imp_fail(im) : 0;
}

static int dispatch(struct imp *im, const struct ss_record *r)
{
	switch (r->type) {
	case SS_REC_LOCATION:
		return imp_location_def(im, &r->u.location);
	case SS_REC_THREAD_DEF:
		return imp_thread_def(im, &r->u.thread_def);
	case SS_REC_STRING:
	case SS_REC_THREAD:
		return 0;
	default:
		break;
	}
	if (ss_merge_wants(r)) {
		if (im->skip_events)
			return 0;
		if (r->is_event && ss_record_counts_as_event(r->type))
			im->seg_events++;
		/* -1 without a failed write: memory ran out; that record is lost. */
		return ss_merge_push(&im->merge, r);
	}
	return imp_sampling_record(im, r);
}

/* The merge hands records back in time order. Only a failed database write
 * stops it: any other error loses that one record. */
static int deliver(void *ctx, const struct ss_record *r)
{
	struct imp *im = ctx;
	if (r->is_event)
		imp_event(im, r);
	else if (r->type >= 0x60 && r->type <= 0x6f)
		imp_stall_record(im, r);
	else
		imp_sampling_record(im, r);
	return im->failed ? -1 : 0;
}

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

/* Reads one opened segment (from path, or buf when not NULL) into the database. */
static int import_segment(struct imp *im, struct ss_reader *rd, const char *path, const uint8_t *buf,
			  uint64_t size, struct ss_progress *pg)
{
	const struct ss_segment_header *h = ss_reader_header(rd);
	if (!im->rec || im->rec->session_id != h->session_id) {
		if (imp_recording_end(im) != 0 || imp_recording_begin(im, h) != 0)
			return -1;
	}
	struct seg_row row = { 0 };
	bool known = find_segment(im, h->segment_seq, &row);
	if (known && row.sealed) {
		im->res->unchanged++;
		ss_progress_update(pg, size, 0);
		return 0;
	}
	if (imp_recording_resume(im) != 0)
		return -1;
	load_symtab(im, path, buf, (size_t)size, h);
	im->reader = rd;
	im->seg_serial++;
	im->seg_events = 0;
	ss_hmap_clear(&im->seg_locs);
	ss_hmap_clear(&im->seg_stacks);
	struct ss_block_info b;
	struct ss_record r;
	uint64_t prev_end = h->header_size, new_blocks = 0;
	while (!im->failed && ss_reader_next_block(rd, &b)) {
		im->skip_events = known && b.index < row.blocks;
		new_blocks += !im->skip_events;
		while (ss_reader_next_record(rd, &r))
			if (dispatch(im, &r) != 0 && im->failed)
				break;
		if (!im->failed)
			ss_merge_release(&im->merge);
		uint64_t end = b.offset + sizeof(struct ss_block_header) + b.payload_len;
		ss_progress_update(pg, end > prev_end ? end - prev_end : 0, im->skip_events ? 0 : b.record_count);
		prev_end = end;
	}
	im->skip_events = false;
	/* Definitions the records refer to are this reader's. */
	if (!im->failed)
		ss_merge_drain(&im->merge);
	im->reader = NULL;
	if (im->failed)
		return -1;
	const struct ss_reader_stats *st = ss_reader_stats(rd);
	const struct ss_damage *dmg = ss_reader_damage(rd);
	ss_progress_update(pg, size > prev_end ? size - prev_end : 0, 0);
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
	im->res->events += im->seg_events;
	/* Nothing new (or the file even shrank): keep the row as it is, so the blocks
	 * already imported are never counted as new later. */
	if (known && new_blocks == 0 && !st->sealed) {
		im->res->unchanged++;
		return 0;
	}
	im->res->imported++;
	return write_segment(im, path, size, known ? row.id : ss_db_new_id(&im->db, ID_SEGMENT), h, st, dmg);
}

static struct ss_reader_options reader_opts(const struct ss_import_options *o)
{
	return (struct ss_reader_options){ .ignore_crc = o->fuzz_ignore_crc,
					   .max_definition_bytes = o->fuzz_ignore_crc ? 64u << 10 : 0 };
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
		if (rc == SS_IMPORT_OUTPUT)
			fprintf(im->log, "stallscope import: nothing was imported: %s %s\n", im->target,
				im->fresh_target ? "was not created" : "is as it was before");
		else
			fprintf(im->log, "stallscope import: nothing to import (%llu files, %llu unreadable)%s\n",
				(unsigned long long)res->files, (unsigned long long)res->unreadable,
				im->fresh_target ? "; no database was created" : "");
		return;
	}
	if (res->late)
		fprintf(im->log, "stallscope import: warning: %llu records came more than %.1f s (or %zu records)"
			" after later ones of other threads: they were taken in file order, and links between"
			" threads near them (wakes, task ends) may be off\n", (unsigned long long)res->late,
			(double)im->merge.window_ns / 1e9, im->merge.max_buffered);
	fprintf(im->log, "stallscope import: %llu segment%s imported, %llu unchanged, %llu damaged, "
		"%llu unreadable; %llu events in %.2f s (%.2fM events/s) -> %s\n",
		(unsigned long long)res->imported, res->imported == 1 ? "" : "s",
		(unsigned long long)res->unchanged, (unsigned long long)res->damaged,
		(unsigned long long)res->unreadable, (unsigned long long)res->events, res->seconds,
		res->seconds > 0 ? (double)res->events / res->seconds / 1e6 : 0.0, im->target);
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
	im.target = tg.path;
	im.fresh_target = tg.building;
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
	for (size_t i = 0; i < in.n && !im.failed; i++) {
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
	if (res->imported + res->unchanged == 0 && !im.failed)
		rc = SS_IMPORT_NOTHING;
	else if (imp_recording_end(&im) != 0 || finish(&im, &pg) != 0)
		rc = SS_IMPORT_OUTPUT;
	ss_progress_end(&pg);
	res->late = im.merge.late;
	teardown(&im);
	if (rc == SS_IMPORT_OK && ss_target_commit(&tg) != 0) {
		if (!o->quiet)
			fprintf(im.log, "stallscope import: %s\n", tg.err);
		rc = SS_IMPORT_OUTPUT;
	}
	if (rc != SS_IMPORT_OK)
		ss_target_abort(&tg);
	report(&im, &pg, rc);
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
	if (ss_reader_open_buffer(&rd, buf, len, &ro, &kind, err, sizeof err) != 0) {
		res->unreadable++;
		rc = SS_IMPORT_NOTHING;
	} else {
		import_segment(&im, rd, "<buffer>", buf, len, &pg);
		ss_reader_close(rd);
	}
	if (imp_recording_end(&im) != 0 || finish(&im, &pg) != 0)
		rc = SS_IMPORT_OUTPUT;
	res->late = im.merge.late;
	report(&im, &pg, rc);
	teardown(&im);
	return rc;
}

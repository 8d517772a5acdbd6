/*
 * stacks.c - the sampler's records into rows: mappings, frames (symbolized once
 * per distinct address), callsites (a prefix tree shared by every stack of the
 * database), samples, on/off-CPU intervals from context switches, thread names,
 * sampler loss and session metadata.
 */
#include <stdlib.h>
#include <string.h>

#include "import-private.h"

/* ---- mappings -------------------------------------------------------------- */

void imp_free_maps(struct imp_recording *rc)
{
	for (size_t i = 0; i < rc->n_maps; i++) {
		free(rc->maps[i].path);
		free(rc->maps[i].build_id);
	}
	free(rc->maps);
	rc->maps = NULL;
	rc->n_maps = rc->cap_maps = 0;
}

int imp_add_map(struct imp *im, int64_t id, uint64_t start, uint64_t end, uint64_t pgoff,
		const char *path, size_t path_len, const uint8_t *bid, size_t bid_len)
{
	struct imp_recording *rc = im->rec;
	if (end <= start)
		return 0;
	/* Drop what the new mapping overlaps: the process remapped that range. */
	size_t w = 0;
	for (size_t i = 0; i < rc->n_maps; i++) {
		struct imp_map *m = &rc->maps[i];
		if (m->start < end && start < m->end) {
			free(m->path);
			free(m->build_id);
			continue;
		}
		rc->maps[w++] = *m;
	}
	rc->n_maps = w;
	if (rc->n_maps == rc->cap_maps) {
		size_t nc = rc->cap_maps ? rc->cap_maps * 2 : 32;
		struct imp_map *nm = realloc(rc->maps, nc * sizeof *nm);
		if (!nm)
			return -1;
		rc->maps = nm;
		rc->cap_maps = nc;
	}
	size_t pos = rc->n_maps;
	while (pos > 0 && rc->maps[pos - 1].start > start)
		pos--;
	memmove(&rc->maps[pos + 1], &rc->maps[pos], (rc->n_maps - pos) * sizeof *rc->maps);
	struct imp_map *m = &rc->maps[pos];
	*m = (struct imp_map){ start, end, pgoff, id, strndup(path ? path : "", path_len),
			       bid_len ? malloc(bid_len) : NULL, bid_len };
	if (m->build_id)
		memcpy(m->build_id, bid, bid_len);
	else
		m->build_id_len = 0;
	rc->n_maps++;
	return 0;
}

static const struct imp_map *find_map(const struct imp_recording *rc, uint64_t addr)
{
	size_t lo = 0, hi = rc->n_maps;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (rc->maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || addr >= rc->maps[lo - 1].end)
		return NULL;
	return &rc->maps[lo - 1];
}

static int64_t special_mapping(struct imp *im, int64_t *slot, const char *name)
{
	if (*slot)
		return *slot;
	int64_t id = ss_db_new_id(&im->db, ID_MAPPING);
	struct ss_row *s = ss_row(&im->db, ST_INS_MAPPING);
	ss_bind_i(s, 1, id);
	ss_bind_i(s, 2, im->rec->id);
	ss_bind_st(s, 3, name);
	ss_bind_st(s, 4, "");
	ss_bind_i(s, 5, 0);
	ss_bind_i(s, 6, -1);
	ss_bind_i(s, 7, 0);
	if (ss_db_step(&im->db, ST_INS_MAPPING) != 0)
		return imp_fail(im);
	return *slot = id;
}

static int mapping(struct imp *im, const struct ss_record *r)
{
	struct { const char *path; size_t path_len; const uint8_t *build_id; size_t build_id_len;
		 uint64_t start, end, pgoff; } m0 = {
		r->u.mapping.path, r->u.mapping.path_len, r->u.mapping.build_id, r->u.mapping.build_id_len,
		r->u.mapping.start, r->u.mapping.end, r->u.mapping.pgoff }, *mp = &m0;
	char hex[2 * 64 + 1];
	size_t blen = mp->build_id_len > 64 ? 64 : mp->build_id_len;
	ss_sym_hex(mp->build_id, blen, hex);
	uint64_t key = ss_mapping_key(mp->path, mp->path_len, hex), id;
	uint64_t key2 = mp->start ^ (mp->pgoff << 1);
	if (!ss_hmap_get(&im->rec->mappings, key, key2, &id)) {
		id = (uint64_t)ss_db_new_id(&im->db, ID_MAPPING);
		struct ss_row *s = ss_row(&im->db, ST_INS_MAPPING);
		ss_bind_i(s, 1, (int64_t)id);
		ss_bind_i(s, 2, im->rec->id);
		ss_bind_t(s, 3, mp->path, mp->path_len);
		ss_bind_st(s, 4, hex);
		ss_bind_i(s, 5, (int64_t)mp->start);
		ss_bind_i(s, 6, (int64_t)mp->end);
		ss_bind_i(s, 7, (int64_t)mp->pgoff);
		if (ss_db_step(&im->db, ST_INS_MAPPING) != 0)
			return imp_fail(im);
		if (ss_hmap_put(&im->rec->mappings, key, key2, id) != 0)
			return -1;
	}
	const struct imp_map *cur = find_map(im->rec, mp->start);
	if (cur && cur->id == (int64_t)id && cur->start == mp->start && cur->end == mp->end)
		return 0;
	return imp_add_map(im, (int64_t)id, mp->start, mp->end, mp->pgoff, mp->path, mp->path_len,
			   mp->build_id, blen);
}

/* ---- frames and callsites ------------------------------------------------- */

/* The frame rows of one address: first id and count (inline chain length). */
static int frames_of(struct imp *im, bool kernel, uint64_t pc, int64_t *first, int *count)
{
	const struct imp_map *m = kernel ? NULL : find_map(im->rec, pc);
	int64_t mid;
	uint64_t rel;
	if (kernel) {
		mid = special_mapping(im, &im->rec->kernel_mapping, "[kernel]");
		rel = pc;
	} else if (m) {
		mid = m->id;
		rel = pc - m->start + m->pgoff;
	} else {
		mid = special_mapping(im, &im->rec->unknown_mapping, "[unknown]");
		rel = pc;
	}
	if (mid < 0)
		return -1;
	uint64_t v;
	if (ss_hmap_get(&im->frames, (uint64_t)mid, rel, &v)) {
		*first = (int64_t)(v & ((1ull << 56) - 1));
		*count = (int)(v >> 56);
		return 0;
	}
	struct ss_sym_result *res = im->symres;
	memset(res, 0, sizeof *res);
	res->n = 1;
	/* Symbols from this machine first (libdw, kallsyms); the segment's own table
	 * (`stallscope symbolize` on the recording machine) when those are missing. */
	if (kernel) {
		if (im->rec->same_machine && im->sym)
			ss_sym_kernel(im->sym, pc, res);
		else if (!ss_symtab_lookup(&im->symtab, pc, res))
			snprintf(res->f[0].function, SS_SYM_TEXT, "[kernel]");
	} else if (m && im->sym) {
		struct ss_sym_mapping sm = { m->path, m->build_id, m->build_id_len, m->start, m->end, m->pgoff };
		ss_sym_user(im->sym, m->id, &sm, pc, res);
		if (res->note[0] && !res->f[0].file[0])
			ss_symtab_lookup(&im->symtab, pc, res);
	} else if (!ss_symtab_lookup(&im->symtab, pc, res)) {
		snprintf(res->note, SS_SYM_TEXT, "%s", m ? "not symbolized" : "no mapping");
	}
	if (res->n < 1 || res->n > SS_SYM_MAX_INLINE)
		res->n = 1;
	*first = im->db.next_id[ID_FRAME];
	*count = (int)res->n;
	for (size_t i = 0; i < res->n; i++) {
		int64_t id = ss_db_new_id(&im->db, ID_FRAME);
		struct ss_row *s = ss_row(&im->db, ST_INS_FRAME);
		ss_bind_i(s, 1, id);
		ss_bind_i(s, 2, mid);
		ss_bind_i(s, 3, (int64_t)rel);
		ss_bind_st(s, 4, res->f[i].function[0] ? res->f[i].function : NULL);
		ss_bind_st(s, 5, res->f[i].file[0] ? res->f[i].file : NULL);
		ss_bind_z(s, 6, res->f[i].line);
		ss_bind_i(s, 7, (int64_t)i);
		ss_bind_st(s, 8, res->note[0] ? res->note : NULL);
		ss_bind_st(s, 9, res->f[i].mangled[0] ? res->f[i].mangled : NULL);
		if (ss_db_step(&im->db, ST_INS_FRAME) != 0)
			return imp_fail(im);
	}
	return ss_hmap_put(&im->frames, (uint64_t)mid, rel, (uint64_t)*first | (uint64_t)*count << 56);
}

/* The root of a stack the recorder's unwinder could not follow to its end
 * (STACK flag truncated): one frame in the '[unknown]' mapping at rel_pc -1,
 * which no address can have. */
static int truncated_frame(struct imp *im, int64_t *frame)
{
	int64_t mid = special_mapping(im, &im->rec->unknown_mapping, "[unknown]");
	if (mid < 0)
		return -1;
	uint64_t v;
	if (ss_hmap_get(&im->frames, (uint64_t)mid, UINT64_MAX, &v)) {
		*frame = (int64_t)(v & ((1ull << 56) - 1));
		return 0;
	}
	*frame = ss_db_new_id(&im->db, ID_FRAME);
	struct ss_row *s = ss_row(&im->db, ST_INS_FRAME);
	ss_bind_i(s, 1, *frame);
	ss_bind_i(s, 2, mid);
	ss_bind_i(s, 3, -1);
	ss_bind_st(s, 4, "[truncated]");
	ss_bind_null(s, 5);
	ss_bind_null(s, 6);
	ss_bind_i(s, 7, 0);
	ss_bind_st(s, 8, "the recorder's unwinder could not get past the next frame");
	ss_bind_null(s, 9);
	if (ss_db_step(&im->db, ST_INS_FRAME) != 0)
		return imp_fail(im);
	return ss_hmap_put(&im->frames, (uint64_t)mid, UINT64_MAX, (uint64_t)*frame | 1ull << 56);
}

static int64_t callsite(struct imp *im, int64_t parent, int64_t frame, int64_t depth)
{
	uint64_t v;
	if (ss_hmap_get(&im->callsites, (uint64_t)parent, (uint64_t)frame, &v))
		return (int64_t)v;
	int64_t id = ss_db_new_id(&im->db, ID_CALLSITE);
	struct ss_row *s = ss_row(&im->db, ST_INS_CALLSITE);
	ss_bind_i(s, 1, id);
	ss_bind_z(s, 2, parent);
	ss_bind_i(s, 3, frame);
	ss_bind_i(s, 4, depth);
	if (ss_db_step(&im->db, ST_INS_CALLSITE) != 0)
		return imp_fail(im);
	if (ss_hmap_put(&im->callsites, (uint64_t)parent, (uint64_t)frame, (uint64_t)id) != 0)
		return -1;
	return id;
}

/* The leaf callsite of a leaf-first address list (0 for an empty stack), below a
 * '[truncated]' root when the stack ends early. */
int64_t imp_stack_callsite(struct imp *im, const uint64_t *pcs, size_t n, size_t nkernel, bool truncated)
{
	int64_t parent = 0, depth = 0;
	if (truncated && n) {
		int64_t marker;
		if (truncated_frame(im, &marker) != 0 || (parent = callsite(im, 0, marker, depth++)) < 0)
			return -1;
	}
	for (size_t k = n; k-- > 0;) {
		/* Every frame but the leaf is a return address: the call is before it. */
		uint64_t pc = k == 0 || pcs[k] == 0 ? pcs[k] : pcs[k] - 1;
		int64_t first;
		int count;
		if (frames_of(im, k < nkernel, pc, &first, &count) != 0)
			return -1;
		for (int i = 0; i < count; i++) {
			parent = callsite(im, parent, first + i, depth++);
			if (parent < 0)
				return -1;
		}
	}
	return parent;
}

static int stack(struct imp *im, const struct ss_record *r)
{
	uint64_t pcs[SS_MAX_STACK_FRAMES];
	size_t n = ss_stack_frames(r, pcs, SS_MAX_STACK_FRAMES);
	size_t nk = r->u.stack.nkernel < n ? (size_t)r->u.stack.nkernel : n;
	int64_t leaf = imp_stack_callsite(im, pcs, n, nk, r->u.stack.flags & SS_STACK_F_TRUNCATED);
	if (leaf < 0)
		return -1;
	return ss_hmap_put(&im->seg_stacks, r->u.stack.id, 0, (uint64_t)leaf);
}

/* ---- samples and switches ------------------------------------------------- */

static int sample(struct imp *im, const struct ss_record *r)
{
	struct imp_thread *t = imp_sampler_thread(im, r->u.sample.thread, r->u.sample.tid);
	if (!t)
		return im->failed ? -1 : 0; /* past the thread limit: left out */
	uint64_t cs = 0;
	ss_hmap_get(&im->seg_stacks, r->u.sample.stack, 0, &cs);
	struct ss_row *s = ss_row(&im->db, ST_INS_SAMPLE);
	ss_bind_i(s, 1, (int64_t)r->ts);
	ss_bind_i(s, 2, t->id);
	ss_bind_z(s, 3, t->worker_id);
	ss_bind_z(s, 4, (int64_t)cs);
	ss_bind_i(s, 5, (int64_t)r->u.sample.weight);
	ss_bind_st(s, 6, r->u.sample.kind == SS_SAMPLE_KIND_OFFCPU ? "offcpu" : "cpu");
	if (r->u.sample.cpu)
		ss_bind_i(s, 7, (int64_t)r->u.sample.cpu - 1);
	else
		ss_bind_null(s, 7);
	return ss_db_step(&im->db, ST_INS_SAMPLE) ? imp_fail(im) : 0;
}

static const char *const cpu_state_name[4] = { NULL, "on-cpu", "blocked", "preempted" };

static int switch_rec(struct imp *im, const struct ss_record *r)
{
	struct imp_thread *t = imp_sampler_thread(im, r->u.switch_rec.thread, r->u.switch_rec.tid);
	if (!t)
		return im->failed ? -1 : 0; /* past the thread limit: left out */
	bool out = r->u.switch_rec.flags & SS_SWITCH_F_OUT;
	int next = out ? (r->u.switch_rec.flags & SS_SWITCH_F_PREEMPT ? 3 : 2) : 1;
	if (t->cpu_state && (t->cpu_state == 1) == out) {
		uint64_t dur = r->ts > t->cpu_since ? r->ts - t->cpu_since : 0;
		struct ss_row *s = ss_row(&im->db, ST_INS_CPU);
		ss_bind_i(s, 1, t->id);
		ss_bind_i(s, 2, (int64_t)t->cpu_since);
		ss_bind_i(s, 3, (int64_t)dur);
		ss_bind_st(s, 4, cpu_state_name[t->cpu_state]);
		if (t->cpu_num)
			ss_bind_i(s, 5, t->cpu_num - 1);
		else
			ss_bind_null(s, 5);
		if (ss_db_step(&im->db, ST_INS_CPU) != 0)
			return imp_fail(im);
		if (t->cpu_state != 1 && t->worker_id &&
		    (!imp_summ(t) || ss_summary_add(&im->summ, t->summ, t->worker_id, SS_SUM_OFFCPU, t->cpu_since, dur) != 0))
			return imp_fail(im);
	}
	t->cpu_state = next;
	t->cpu_since = r->ts;
	t->cpu_num = (int64_t)r->u.switch_rec.cpu;
	return 0;
}

static int comm(struct imp *im, const struct ss_record *r)
{
	struct imp_thread *t = imp_sampler_thread(im, r->u.comm.thread, r->u.comm.tid);
	if (!t)
		return im->failed ? -1 : 0; /* past the thread limit: left out */
	struct ss_row *s = ss_row(&im->db, ST_UPD_THREAD_NAME);
	ss_bind_i(s, 1, t->id);
	ss_bind_t(s, 2, r->u.comm.name, r->u.comm.name_len);
	ss_bind_i(s, 3, (int64_t)r->u.comm.tid);
	return ss_db_step(&im->db, ST_UPD_THREAD_NAME) ? imp_fail(im) : 0;
}

static int meta(struct imp *im, const struct ss_record *r)
{
	struct ss_row *s = ss_row(&im->db, ST_INS_META);
	ss_bind_i(s, 1, im->rec->id);
	ss_bind_t(s, 2, r->u.meta.key, r->u.meta.key_len);
	ss_bind_t(s, 3, r->u.meta.value, r->u.meta.value_len);
	return ss_db_step(&im->db, ST_INS_META) ? imp_fail(im) : 0;
}

int imp_sampling_record(struct imp *im, const struct ss_record *r)
{
	switch (r->type) {
	case SS_REC_MAPPING:
		return mapping(im, r);
	case SS_REC_STACK:
		return stack(im, r);
	case SS_REC_META:
		return im->skip_events ? 0 : meta(im, r);
	default:
		break;
	}
	if (im->skip_events)
		return 0;
	switch (r->type) {
	case SS_REC_SAMPLE:
		return sample(im, r);
	case SS_REC_SWITCH:
		return switch_rec(im, r);
	case SS_REC_COMM:
		return comm(im, r);
	case SS_REC_SAMPLER_LOSS:
		return imp_sampler_loss(im, r);
	default:
		return 0;
	}
}

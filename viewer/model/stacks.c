/*
 * stacks.c - the sampler's side: mappings, frames (symbolized once per
 * distinct address), callsites (a prefix tree shared by every stack of the
 * store), samples, on/off-CPU intervals from context switches, thread names,
 * sampler loss and session metadata.
 */
#include "model_private.h"
#include "segment_reader.h" /* names of sampler loss reasons */

/* ---- mappings -------------------------------------------------------------- */

void mdl_free_maps(struct mdl_recording *rc)
{
	for (size_t i = 0; i < rc->n_maps; i++) {
		free(rc->maps[i].path);
		free(rc->maps[i].build_id);
	}
	free(rc->maps);
	rc->maps = NULL;
	rc->n_maps = rc->cap_maps = 0;
}

int mdl_add_map(struct ss_model *m, int64_t id, uint64_t start, uint64_t end, uint64_t pgoff, const char *path,
		size_t path_len, const uint8_t *bid, size_t bid_len)
{
	struct mdl_recording *rc = m->rec;
	if (end <= start)
		return 0;
	/* Drop what the new mapping overlaps: the process remapped that range. */
	size_t w = 0;
	for (size_t i = 0; i < rc->n_maps; i++) {
		struct mdl_map *mp = &rc->maps[i];
		if (mp->start < end && start < mp->end) {
			free(mp->path);
			free(mp->build_id);
			continue;
		}
		rc->maps[w++] = *mp;
	}
	rc->n_maps = w;
	if (rc->n_maps == rc->cap_maps) {
		size_t nc = rc->cap_maps ? rc->cap_maps * 2 : 32;
		struct mdl_map *nm = realloc(rc->maps, nc * sizeof *nm);
		if (!nm)
			return mdl_fail(m);
		rc->maps = nm;
		rc->cap_maps = nc;
	}
	size_t pos = rc->n_maps;
	while (pos > 0 && rc->maps[pos - 1].start > start)
		pos--;
	memmove(&rc->maps[pos + 1], &rc->maps[pos], (rc->n_maps - pos) * sizeof *rc->maps);
	struct mdl_map *mp = &rc->maps[pos];
	*mp = (struct mdl_map){ start, end, pgoff, id, strndup(path ? path : "", path_len),
				bid_len ? malloc(bid_len) : NULL, bid_len };
	if (mp->build_id)
		memcpy(mp->build_id, bid, bid_len);
	else
		mp->build_id_len = 0;
	rc->n_maps++;
	return 0;
}

static const struct mdl_map *find_map(const struct mdl_recording *rc, uint64_t addr)
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

static int64_t special_mapping(struct ss_model *m, int64_t *slot, const char *name)
{
	if (*slot)
		return *slot;
	int64_t id = mdl_new_id(m, ID_MAPPING);
	struct ss_mapping_row r = { id, m->rec->id, mdl_cstr(name), "", 0, -1, 0 };
	if (MDL_SINK(m, mapping, &r) != 0)
		return -1;
	return *slot = id;
}

int ss_model_mapping(struct ss_model *m, uint64_t start, uint64_t end, uint64_t pgoff, const char *path,
		     size_t path_len, const uint8_t *build_id, size_t build_id_len)
{
	if (m->failed || !m->rec)
		return -1;
	char hex[2 * 64 + 1];
	size_t blen = build_id_len > 64 ? 64 : build_id_len;
	ss_sym_hex(build_id, blen, hex);
	uint64_t key = mdl_mapping_key(path, path_len, hex), id;
	uint64_t key2 = start ^ (pgoff << 1);
	if (!ss_hmap_get(&m->rec->mappings, key, key2, &id)) {
		id = (uint64_t)mdl_new_id(m, ID_MAPPING);
		struct ss_mapping_row r = { (int64_t)id, m->rec->id, mdl_text(path, path_len), hex, (int64_t)start,
					    (int64_t)end, (int64_t)pgoff };
		if (MDL_SINK(m, mapping, &r) != 0)
			return -1;
		if (ss_hmap_put(&m->rec->mappings, key, key2, id) != 0)
			return mdl_fail(m);
	}
	const struct mdl_map *cur = find_map(m->rec, start);
	if (cur && cur->id == (int64_t)id && cur->start == start && cur->end == end)
		return 0;
	return mdl_add_map(m, (int64_t)id, start, end, pgoff, path, path_len, build_id, blen);
}

int ss_model_restore_mapping(struct ss_model *m, int64_t id, const char *path, size_t path_len,
			     const char *hex, int64_t start, int64_t end, int64_t offset)
{
	if (path && strcmp(path, "[kernel]") == 0) {
		m->rec->kernel_mapping = id;
		return 0;
	}
	if (path && strcmp(path, "[unknown]") == 0) {
		m->rec->unknown_mapping = id;
		return 0;
	}
	/* Back from hex to the raw build id the symbolizer compares. */
	uint8_t bid[64];
	size_t blen = 0;
	while (hex && hex[2 * blen] && hex[2 * blen + 1] && blen < sizeof bid) {
		unsigned byte;
		if (sscanf(hex + 2 * blen, "%2x", &byte) != 1)
			break;
		bid[blen++] = (uint8_t)byte;
	}
	if (mdl_add_map(m, id, (uint64_t)start, (uint64_t)end, (uint64_t)offset, path, path_len, bid, blen) != 0)
		return -1;
	uint64_t key = mdl_mapping_key(path, path_len, hex);
	return ss_hmap_put(&m->rec->mappings, key, (uint64_t)start ^ ((uint64_t)offset << 1), (uint64_t)id) != 0
		       ? mdl_fail(m)
		       : 0;
}

/* ---- frames and callsites ------------------------------------------------- */

/* The frame rows of one address: first id and count (inline chain length). */
static int frames_of(struct ss_model *m, bool kernel, uint64_t pc, int64_t *first, int *count)
{
	const struct mdl_map *mp = kernel ? NULL : find_map(m->rec, pc);
	int64_t mid;
	uint64_t rel;
	if (kernel) {
		mid = special_mapping(m, &m->rec->kernel_mapping, "[kernel]");
		rel = pc;
	} else if (mp) {
		mid = mp->id;
		rel = pc - mp->start + mp->pgoff;
	} else {
		mid = special_mapping(m, &m->rec->unknown_mapping, "[unknown]");
		rel = pc;
	}
	if (mid < 0)
		return -1;
	uint64_t v;
	if (ss_hmap_get(&m->frames, (uint64_t)mid, rel, &v)) {
		*first = (int64_t)(v & ((1ull << 56) - 1));
		*count = (int)(v >> 56);
		return 0;
	}
	struct ss_sym_result *res = m->symres;
	memset(res, 0, sizeof *res);
	res->n = 1;
	/* Symbols from this machine first (libdw, kallsyms); the unit's own table
	 * (`stallscope symbolize` on the recording machine) when those are missing. */
	struct ss_symtab *tab = (struct ss_symtab *)m->symtab;
	if (kernel) {
		if (m->rec->same_machine && m->o.sym)
			ss_sym_kernel(m->o.sym, pc, res);
		else if (!tab || !ss_symtab_lookup(tab, pc, res))
			snprintf(res->f[0].function, SS_SYM_TEXT, "[kernel]");
	} else if (mp && m->o.sym) {
		struct ss_sym_mapping sm = { mp->path, mp->build_id, mp->build_id_len, mp->start, mp->end, mp->pgoff };
		ss_sym_user(m->o.sym, mp->id, &sm, pc, res);
		if (res->note[0] && !res->f[0].file[0] && tab)
			ss_symtab_lookup(tab, pc, res);
	} else if (!tab || !ss_symtab_lookup(tab, pc, res)) {
		snprintf(res->note, SS_SYM_TEXT, "%s", mp ? "not symbolized" : "no mapping");
	}
	if (res->n < 1 || res->n > SS_SYM_MAX_INLINE)
		res->n = 1;
	*first = m->next_id[ID_FRAME];
	*count = (int)res->n;
	for (size_t i = 0; i < res->n; i++) {
		struct ss_frame_row r = {
			mdl_new_id(m, ID_FRAME), mid, (int64_t)rel,
			res->f[i].function[0] ? res->f[i].function : NULL,
			res->f[i].file[0] ? res->f[i].file : NULL,
			res->f[i].line, (int64_t)i, res->note[0] ? res->note : NULL,
			res->f[i].mangled[0] ? res->f[i].mangled : NULL,
		};
		if (MDL_SINK(m, frame, &r) != 0)
			return -1;
	}
	return ss_hmap_put(&m->frames, (uint64_t)mid, rel, (uint64_t)*first | (uint64_t)*count << 56) != 0
		       ? mdl_fail(m)
		       : 0;
}

/* The root of a stack the recorder's unwinder could not follow to its end
 * (STACK flag truncated): one frame in the '[unknown]' mapping at rel_pc -1,
 * which no address can have. */
static int truncated_frame(struct ss_model *m, int64_t *frame)
{
	int64_t mid = special_mapping(m, &m->rec->unknown_mapping, "[unknown]");
	if (mid < 0)
		return -1;
	uint64_t v;
	if (ss_hmap_get(&m->frames, (uint64_t)mid, UINT64_MAX, &v)) {
		*frame = (int64_t)(v & ((1ull << 56) - 1));
		return 0;
	}
	*frame = mdl_new_id(m, ID_FRAME);
	struct ss_frame_row r = { *frame, mid, -1, "[truncated]", NULL, 0, 0,
				  "the recorder's unwinder could not get past the next frame", NULL };
	if (MDL_SINK(m, frame, &r) != 0)
		return -1;
	return ss_hmap_put(&m->frames, (uint64_t)mid, UINT64_MAX, (uint64_t)*frame | 1ull << 56) != 0 ? mdl_fail(m)
												       : 0;
}

static int64_t callsite(struct ss_model *m, int64_t parent, int64_t frame, int64_t depth)
{
	uint64_t v;
	if (ss_hmap_get(&m->callsites, (uint64_t)parent, (uint64_t)frame, &v))
		return (int64_t)v;
	int64_t id = mdl_new_id(m, ID_CALLSITE);
	struct ss_callsite_row r = { id, parent, frame, depth };
	if (MDL_SINK(m, callsite, &r) != 0)
		return -1;
	if (ss_hmap_put(&m->callsites, (uint64_t)parent, (uint64_t)frame, (uint64_t)id) != 0)
		return mdl_fail(m);
	return id;
}

/* The leaf callsite of a leaf-first address list (0 for an empty stack), below a
 * '[truncated]' root when the stack ends early. */
int64_t mdl_stack_callsite(struct ss_model *m, const uint64_t *pcs, size_t n, size_t nkernel, bool truncated)
{
	int64_t parent = 0, depth = 0;
	if (truncated && n) {
		int64_t marker;
		if (truncated_frame(m, &marker) != 0 || (parent = callsite(m, 0, marker, depth++)) < 0)
			return -1;
	}
	for (size_t k = n; k-- > 0;) {
		uint64_t pc = ss_stack_lookup_pc(pcs, k, nkernel);
		int64_t first;
		int count;
		if (frames_of(m, k < nkernel, pc, &first, &count) != 0)
			return -1;
		for (int i = 0; i < count; i++) {
			parent = callsite(m, parent, first + i, depth++);
			if (parent < 0)
				return -1;
		}
	}
	return parent;
}

int ss_model_stack(struct ss_model *m, uint64_t id, const uint64_t *pcs, size_t n, size_t nkernel, bool truncated)
{
	if (m->failed || !m->rec)
		return -1;
	int64_t leaf = mdl_stack_callsite(m, pcs, n, nkernel < n ? nkernel : n, truncated);
	if (leaf < 0)
		return -1;
	return ss_hmap_put(&m->seg_stacks, id, 0, (uint64_t)leaf) != 0 ? mdl_fail(m) : 0;
}

int64_t mdl_stack_of(struct ss_model *m, uint64_t seg_stack)
{
	uint64_t cs = 0;
	if (seg_stack)
		ss_hmap_get(&m->seg_stacks, seg_stack, 0, &cs);
	return (int64_t)cs;
}

int ss_model_known_frame(struct ss_model *m, int64_t mapping_id, int64_t rel_pc, int64_t first_id, int count)
{
	return ss_hmap_put(&m->frames, (uint64_t)mapping_id, (uint64_t)rel_pc,
			   (uint64_t)first_id | (uint64_t)count << 56) != 0
		       ? mdl_fail(m)
		       : 0;
}

int ss_model_known_callsite(struct ss_model *m, int64_t parent_id, int64_t frame_id, int64_t id)
{
	return ss_hmap_put(&m->callsites, (uint64_t)parent_id, (uint64_t)frame_id, (uint64_t)id) != 0 ? mdl_fail(m)
													: 0;
}

/* ---- samples and switches ------------------------------------------------- */

static int sample(struct ss_model *m, const struct ss_event *e)
{
	struct mdl_thread *t = mdl_sampler_thread(m, e->thread, e->tid);
	if (!t)
		return m->failed ? -1 : 0; /* past the thread limit: left out */
	struct ss_sample_row r = {
		(int64_t)e->ts, t->id, t->worker_id, mdl_stack_of(m, e->u.sample.stack), (int64_t)e->u.sample.weight,
		e->u.sample.kind == SS_SAMPLE_KIND_OFFCPU ? "offcpu" : "cpu",
		e->u.sample.cpu1 ? (int64_t)e->u.sample.cpu1 - 1 : -1,
	};
	return MDL_SINK(m, sample, &r);
}

static const char *const cpu_state_name[4] = { NULL, "on-cpu", "blocked", "preempted" };

/* The thread's CPU state since cpu_since ends at ts: its row. */
static int cpu_row_end(struct ss_model *m, struct mdl_thread *t, uint64_t ts)
{
	uint64_t dur = ts > t->cpu_since ? ts - t->cpu_since : 0;
	struct ss_cpu_row r = { t->id, (int64_t)t->cpu_since, (int64_t)dur, cpu_state_name[t->cpu_state],
				t->cpu_num ? t->cpu_num - 1 : -1 };
	if (MDL_SINK(m, cpu, &r) != 0)
		return -1;
	if (t->cpu_state != 1 && t->worker_id &&
	    (!mdl_summ(t) || ss_summary_add(&m->summ, t->summ, t->worker_id, SS_SUM_OFFCPU, t->cpu_since, dur) != 0))
		return mdl_fail(m);
	return 0;
}

static int switch_ev(struct ss_model *m, const struct ss_event *e)
{
	struct mdl_thread *t = mdl_sampler_thread(m, e->thread, e->tid);
	if (!t)
		return m->failed ? -1 : 0; /* past the thread limit: left out */
	/* Unswitched parks: a record inside one is a leftover of its edges (the
	 * hooks' stamp and their store into the in-poll cell are two steps). */
	if (t->parked && m->rec->parks_unswitched)
		return 0;
	bool out = e->u.switch_ev.flags & SS_SWITCH_F_OUT;
	int next = out ? (e->u.switch_ev.flags & SS_SWITCH_F_PREEMPT ? 3 : 2) : 1;
	if (t->cpu_state && (t->cpu_state == 1) == out && cpu_row_end(m, t, e->ts) != 0)
		return -1;
	t->cpu_state = next;
	t->cpu_since = e->ts;
	t->cpu_num = (int64_t)e->u.switch_ev.cpu1;
	return 0;
}

int mdl_cpu_park(struct ss_model *m, struct mdl_thread *t, uint64_t ts, bool parked)
{
	if (!m->rec->parks_unswitched)
		return 0;
	if (t->cpu_state && cpu_row_end(m, t, ts) != 0)
		return -1;
	/* Parking, it was on a CPU until now; unparking, it is on one again. */
	t->cpu_state = parked ? 0 : 1;
	t->cpu_since = ts;
	t->cpu_num = 0;
	return 0;
}

static int comm(struct ss_model *m, const struct ss_event *e)
{
	struct mdl_thread *t = mdl_sampler_thread(m, e->thread, e->tid);
	if (!t)
		return m->failed ? -1 : 0; /* past the thread limit: left out */
	return MDL_SINK(m, thread_name, t->id, mdl_text(e->u.comm.name, e->u.comm.len), e->tid);
}

static int sampler_loss(struct ss_model *m, const struct ss_event *e)
{
	int64_t tid = 0;
	if (e->tid) {
		struct mdl_thread *t = mdl_sampler_thread(m, 0, e->tid);
		tid = t ? t->id : 0;
	}
	return mdl_loss(m, tid, e->ts, e->u.sampler_loss.span, e->u.sampler_loss.count, "samples",
			ss_sampler_loss_reason_name(e->u.sampler_loss.reason));
}

int ss_model_restore_arch(struct ss_model *m, const char *arch)
{
	snprintf(m->rec->arch, sizeof m->rec->arch, "%s", arch ? arch : "");
	return 0;
}

int ss_model_meta(struct ss_model *m, const char *key, size_t key_len, const char *value, size_t value_len)
{
	if (m->failed || !m->rec)
		return -1;
	if (key_len == strlen(SS_META_SWITCHES) && !memcmp(key, SS_META_SWITCHES, key_len))
		m->rec->parks_unswitched = value_len >= strlen(SS_SWITCHES_NOT_PARKED) &&
					   !memcmp(value, SS_SWITCHES_NOT_PARKED, strlen(SS_SWITCHES_NOT_PARKED));
	/* The architecture names the system calls of stall captures. */
	if (key_len == 4 && !memcmp(key, "arch", 4) && value_len < sizeof m->rec->arch &&
	    strncmp(m->rec->arch, value, value_len) != 0) {
		snprintf(m->rec->arch, sizeof m->rec->arch, "%.*s", (int)value_len, value);
		if (MDL_SINK(m, recording_arch, m->rec->id, m->rec->arch) != 0)
			return -1;
	}
	if (m->skip_events)
		return 0;
	return MDL_SINK(m, meta, m->rec->id, mdl_text(key, key_len), mdl_text(value, value_len));
}

int mdl_sampler_event(struct ss_model *m, const struct ss_event *e)
{
	switch (e->type) {
	case SS_EV_SAMPLE:
		return sample(m, e);
	case SS_EV_SWITCH:
		return switch_ev(m, e);
	case SS_EV_COMM:
		return comm(m, e);
	case SS_EV_SAMPLER_LOSS:
		return sampler_loss(m, e);
	default:
		return 0;
	}
}

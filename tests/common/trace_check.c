/*
 * trace_check.c - loading a recorded directory for assertions (see the header).
 */
#include "trace_check.h"

#include <dirent.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	CHECK(q, "out of memory");
	return q;
}

static struct tc_thread *thread_slot(struct tc_trace *t, uint64_t thread)
{
	for (size_t i = 0; i < t->nthreads; i++)
		if (t->threads[i].thread == thread)
			return &t->threads[i];
	if (t->nthreads == t->capthreads) {
		t->capthreads = t->capthreads ? t->capthreads * 2 : 64;
		t->threads = xrealloc(t->threads, t->capthreads * sizeof *t->threads);
	}
	struct tc_thread *th = &t->threads[t->nthreads++];
	memset(th, 0, sizeof *th);
	th->thread = thread;
	return th;
}

static void set_string(struct tc_trace *t, uint64_t id, const char *s, size_t len)
{
	if (id > 10000000)
		return;
	if (id >= t->nstrings) {
		size_t n = (size_t)id + 1;
		t->strings = xrealloc(t->strings, n * sizeof *t->strings);
		memset(t->strings + t->nstrings, 0, (n - t->nstrings) * sizeof *t->strings);
		t->nstrings = n;
	}
	free(t->strings[id]);
	t->strings[id] = strndup(s, len);
}

static void set_loc(struct tc_trace *t, uint64_t id, uint64_t func)
{
	if (id > 10000000)
		return;
	if (id >= t->nlocs) {
		size_t n = (size_t)id + 1;
		t->loc_func = xrealloc(t->loc_func, n * sizeof *t->loc_func);
		memset(t->loc_func + t->nlocs, 0, (n - t->nlocs) * sizeof *t->loc_func);
		t->nlocs = n;
	}
	t->loc_func[id] = func;
}

/* Grows an array of elements of size sz when n == *cap. */
static void *grow(void *p, size_t n, size_t *cap, size_t sz, size_t first)
{
	if (n < *cap)
		return p;
	*cap = *cap ? *cap * 2 : first;
	return xrealloc(p, *cap * sz);
}

/* The stack ids of the segment being loaded -> index in t->stacks. */
struct seg_stacks {
	size_t *by_id;
	size_t n;
};

#define MAX_STACK_ID (1u << 22)

static void keep_stack(struct tc_trace *t, struct seg_stacks *ss, const struct ss_record *rec,
		       uint32_t idx)
{
	uint64_t id = rec->u.stack.id;
	if (id >= MAX_STACK_ID)
		return;
	if (id >= ss->n) {
		size_t n = ss->n ? ss->n : 256;
		while (n <= id)
			n *= 2;
		ss->by_id = xrealloc(ss->by_id, n * sizeof *ss->by_id);
		for (size_t i = ss->n; i < n; i++)
			ss->by_id[i] = TC_NO_STACK;
		ss->n = n;
	}
	t->stacks = grow(t->stacks, t->nstacks, &t->capstacks, sizeof *t->stacks, 1024);
	struct tc_stack *st = &t->stacks[t->nstacks];
	uint64_t nf = rec->u.stack.nframes;
	st->id = id;
	st->segment = idx;
	st->frames = xrealloc(NULL, (nf ? nf : 1) * sizeof *st->frames);
	st->nframes = (uint32_t)ss_stack_frames(rec, st->frames, nf);
	st->nkernel = (uint32_t)(rec->u.stack.nkernel < st->nframes ? rec->u.stack.nkernel
								 : st->nframes);
	ss->by_id[id] = t->nstacks++;
}

/* SAMPLE, SWITCH, STACK, MAPPING, META and SAMPLER_LOSS records. */
static void keep_sampling(struct tc_trace *t, struct seg_stacks *ss, const struct ss_record *rec,
			  uint32_t idx, bool keep)
{
	if (rec->type == SS_REC_SAMPLER_LOSS) {
		uint64_t r = rec->u.sampler_loss.reason;
		t->sampler_lost += rec->u.sampler_loss.count;
		t->sampler_lost_by_reason[r < 8 ? r : 0] += rec->u.sampler_loss.count;
		return;
	}
	if (!keep)
		return;
	switch (rec->type) {
	case SS_REC_SAMPLE: {
		t->samples = grow(t->samples, t->nsamples, &t->capsamples, sizeof *t->samples, 4096);
		struct tc_sample *s = &t->samples[t->nsamples++];
		s->ts = rec->ts;
		s->thread = rec->u.sample.thread;
		s->tid = rec->u.sample.tid;
		s->cpu = rec->u.sample.cpu;
		s->weight = rec->u.sample.weight;
		s->kind = rec->u.sample.kind;
		s->stack_id = rec->u.sample.stack;
		s->segment = idx;
		s->stack = s->stack_id < ss->n ? ss->by_id[s->stack_id] : TC_NO_STACK;
		if (s->stack == TC_NO_STACK)
			t->unresolved_stacks++;
		break;
	}
	case SS_REC_SWITCH: {
		t->switches = grow(t->switches, t->nswitches, &t->capswitches, sizeof *t->switches, 1024);
		struct tc_switch *w = &t->switches[t->nswitches++];
		w->ts = rec->ts;
		w->thread = rec->u.switch_rec.thread;
		w->tid = rec->u.switch_rec.tid;
		w->cpu = rec->u.switch_rec.cpu;
		w->flags = rec->u.switch_rec.flags;
		w->segment = idx;
		break;
	}
	case SS_REC_STACK:
		keep_stack(t, ss, rec, idx);
		break;
	case SS_REC_MAPPING: {
		t->mappings = grow(t->mappings, t->nmappings, &t->capmappings, sizeof *t->mappings, 64);
		struct tc_mapping *m = &t->mappings[t->nmappings++];
		memset(m, 0, sizeof *m);
		m->ts = rec->ts;
		m->start = rec->u.mapping.start;
		m->end = rec->u.mapping.end;
		m->pgoff = rec->u.mapping.pgoff;
		m->prot = rec->u.mapping.prot;
		m->segment = idx;
		m->build_id_len = (uint8_t)(rec->u.mapping.build_id_len < 20 ? rec->u.mapping.build_id_len
									   : 20);
		memcpy(m->build_id, rec->u.mapping.build_id, m->build_id_len);
		m->path = strndup(rec->u.mapping.path, rec->u.mapping.path_len);
		CHECK(m->path, "out of memory");
		break;
	}
	case SS_REC_META: {
		t->metas = grow(t->metas, t->nmetas, &t->capmetas, sizeof *t->metas, 64);
		struct tc_meta *m = &t->metas[t->nmetas++];
		m->segment = idx;
		m->key = strndup(rec->u.meta.key, rec->u.meta.key_len);
		m->value = strndup(rec->u.meta.value, rec->u.meta.value_len);
		CHECK(m->key && m->value, "out of memory");
		break;
	}
	default:
		break;
	}
}

struct file_ent {
	uint64_t seq;
	bool active;
	char name[256];
};

static int cmp_file(const void *a, const void *b)
{
	const struct file_ent *x = a, *y = b;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void load_one(struct tc_trace *t, struct tc_segment *sg, uint32_t idx, bool keep)
{
	struct ss_reader *r;
	char err[256];
	enum ss_damage_kind kind = SS_DAMAGE_NONE;
	struct stat st;
	if (stat(sg->path, &st) == 0)
		sg->bytes = (uint64_t)st.st_size;
	if (ss_reader_open_file(&r, sg->path, NULL, &kind, err, sizeof err) != 0) {
		t->header_failures++;
		sg->damage = kind ? kind : SS_DAMAGE_IO;
		snprintf(sg->damage_reason, sizeof sg->damage_reason, "%.180s", err);
		return;
	}
	sg->header = *ss_reader_header(r);
	struct seg_stacks stacks = { NULL, 0 };
	struct ss_block_info b;
	while (ss_reader_next_block(r, &b)) {
		struct ss_record rec;
		while (ss_reader_next_record(r, &rec)) {
			t->by_type[rec.type]++;
			switch (rec.type) {
			case SS_REC_STRING:
				set_string(t, rec.u.string.id, rec.u.string.data, rec.u.string.len);
				continue;
			case SS_REC_LOCATION:
				set_loc(t, rec.u.location.id, rec.u.location.function);
				continue;
			case SS_REC_THREAD_DEF: {
				struct tc_thread *th = thread_slot(t, rec.u.thread_def.thread);
				th->tid = rec.u.thread_def.tid;
				th->runtime = rec.u.thread_def.runtime;
				th->worker_index = rec.u.thread_def.worker_index;
				snprintf(th->name, sizeof th->name, "%.*s", (int)rec.u.thread_def.name_len,
					 rec.u.thread_def.name);
				continue;
			}
			case SS_REC_SAMPLE:
			case SS_REC_SWITCH:
			case SS_REC_STACK:
			case SS_REC_MAPPING:
			case SS_REC_META:
			case SS_REC_SAMPLER_LOSS:
				keep_sampling(t, &stacks, &rec, idx, keep);
				continue;
			default:
				break;
			}
			if (!rec.is_event)
				continue;
			struct tc_event e = {.ts = rec.ts, .thread = rec.thread, .type = rec.type,
					     .segment = idx};
			switch (rec.type) {
			case SS_REC_POLL_BEGIN: e.a = rec.u.poll_begin.task; e.b = rec.u.poll_begin.location; break;
			case SS_REC_SPAWN: e.a = rec.u.spawn.task; e.b = rec.u.spawn.location; break;
			case SS_REC_TERMINATE: e.a = rec.u.terminate.task; break;
			case SS_REC_WAKE: e.a = rec.u.wake.task; break;
			case SS_REC_QUEUE: e.a = rec.u.queue.local; e.b = rec.u.queue.global; break;
			case SS_REC_MARK: e.a = rec.u.mark.name; e.b = (uint64_t)rec.u.mark.value; break;
			case SS_REC_SPAN_BEGIN:
			case SS_REC_SPAN_END: e.a = rec.u.span.name; break;
			case SS_REC_WORKER_BEGIN: e.a = rec.u.worker_begin.runtime; e.b = rec.u.worker_begin.index; break;
			case SS_REC_LOSS:
				e.a = rec.u.loss.count; e.b = rec.u.loss.span; e.c = rec.u.loss.reason;
				t->lost += rec.u.loss.count;
				t->lost_by_reason[rec.u.loss.reason < 8 ? rec.u.loss.reason : 0] += rec.u.loss.count;
				break;
			case SS_REC_THREAD_EXIT:
				thread_slot(t, rec.thread)->exited = true;
				break;
			default: break;
			}
			if (rec.type != SS_REC_LOSS) {
				sg->events++;
				if (!sg->first_ts || rec.ts < sg->first_ts)
					sg->first_ts = rec.ts;
				if (rec.ts > sg->last_ts)
					sg->last_ts = rec.ts;
			}
			if (!keep)
				continue;
			if (t->nevents == t->capevents) {
				t->capevents = t->capevents ? t->capevents * 2 : 4096;
				t->events = xrealloc(t->events, t->capevents * sizeof *t->events);
			}
			t->events[t->nevents++] = e;
		}
	}
	free(stacks.by_id);
	const struct ss_reader_stats *rs = ss_reader_stats(r);
	sg->sealed = rs->sealed;
	if (rs->sealed)
		sg->footer = rs->footer;
	const struct ss_damage *d = ss_reader_damage(r);
	sg->damage = d->kind;
	snprintf(sg->damage_reason, sizeof sg->damage_reason, "%s", d->reason);
	if (d->kind == SS_DAMAGE_TRUNCATED)
		t->truncated_segments++;
	else if (d->kind != SS_DAMAGE_NONE)
		t->corrupt_segments++;
	ss_reader_close(r);
}

/* PREFIX.N.bin and PREFIX.N.bin.active of dir, in N order (*n of them); NULL
 * with *n = (size_t)-1 when dir cannot be opened. */
static struct file_ent *list_files(const char *dir, const char *prefix, size_t *np)
{
	DIR *d = opendir(dir);
	if (!d) {
		*np = (size_t)-1;
		return NULL;
	}
	struct file_ent *files = NULL;
	size_t n = 0, cap = 0, pl = strlen(prefix);
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, prefix, pl) != 0 || de->d_name[pl] != '.')
			continue;
		char *end;
		unsigned long long seq = strtoull(de->d_name + pl + 1, &end, 10);
		if (end == de->d_name + pl + 1)
			continue;
		bool active = !strcmp(end, ".bin.active");
		if (!active && strcmp(end, ".bin") != 0)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			files = xrealloc(files, cap * sizeof *files);
		}
		files[n].seq = seq;
		files[n].active = active;
		snprintf(files[n].name, sizeof files[n].name, "%s", de->d_name);
		n++;
	}
	closedir(d);
	if (n)
		qsort(files, n, sizeof *files, cmp_file);
	*np = n;
	return files;
}

int tc_load_dir(struct tc_trace *t, const char *dir, const char *prefix, bool keep_events)
{
	memset(t, 0, sizeof *t);
	size_t n;
	struct file_ent *files = list_files(dir, prefix, &n);
	if (n == (size_t)-1)
		return -1;
	t->segs = calloc(n ? n : 1, sizeof *t->segs);
	t->nsegs = n;
	for (size_t i = 0; i < n; i++) {
		struct tc_segment *sg = &t->segs[i];
		snprintf(sg->path, sizeof sg->path, "%s/%s", dir, files[i].name);
		sg->seq = files[i].seq;
		sg->active = files[i].active;
		load_one(t, sg, (uint32_t)i, keep_events);
	}
	free(files);
	return 0;
}

int tc_each_record(const char *dir, const char *prefix,
		   void (*fn)(const struct ss_record *rec, void *ctx), void *ctx)
{
	size_t n;
	struct file_ent *files = list_files(dir, prefix, &n);
	if (n == (size_t)-1)
		return -1;
	int read = 0;
	for (size_t i = 0; i < n; i++) {
		char path[1024], err[256];
		snprintf(path, sizeof path, "%s/%s", dir, files[i].name);
		struct ss_reader *r;
		if (ss_reader_open_file(&r, path, NULL, NULL, err, sizeof err) != 0)
			continue;
		read++;
		struct ss_block_info b;
		struct ss_record rec;
		while (ss_reader_next_block(r, &b))
			while (ss_reader_next_record(r, &rec))
				fn(&rec, ctx);
		ss_reader_close(r);
	}
	free(files);
	return read;
}

void tc_free(struct tc_trace *t)
{
	free(t->segs);
	free(t->events);
	free(t->threads);
	for (size_t i = 0; i < t->nstrings; i++)
		free(t->strings[i]);
	free(t->strings);
	free(t->loc_func);
	free(t->samples);
	free(t->switches);
	for (size_t i = 0; i < t->nstacks; i++)
		free(t->stacks[i].frames);
	free(t->stacks);
	for (size_t i = 0; i < t->nmappings; i++)
		free(t->mappings[i].path);
	free(t->mappings);
	for (size_t i = 0; i < t->nmetas; i++) {
		free(t->metas[i].key);
		free(t->metas[i].value);
	}
	free(t->metas);
	memset(t, 0, sizeof *t);
}

const struct tc_stack *tc_sample_stack(const struct tc_trace *t, const struct tc_sample *s)
{
	return s->stack < t->nstacks ? &t->stacks[s->stack] : NULL;
}

const char *tc_meta(const struct tc_trace *t, const char *key)
{
	for (size_t i = 0; i < t->nmetas; i++)
		if (!strcmp(t->metas[i].key, key))
			return t->metas[i].value;
	return NULL;
}

const struct tc_thread *tc_thread(const struct tc_trace *t, uint64_t thread)
{
	for (size_t i = 0; i < t->nthreads; i++)
		if (t->threads[i].thread == thread)
			return &t->threads[i];
	return NULL;
}

const char *tc_string(const struct tc_trace *t, uint64_t id)
{
	return id < t->nstrings ? t->strings[id] : NULL;
}

uint64_t tc_real_events(const struct tc_trace *t)
{
	uint64_t n = 0;
	for (int i = 0x10; i < 0x40; i++)
		if (i != SS_REC_LOSS)
			n += t->by_type[i];
	return n;
}

char *tc_tmpdir(const char *tag)
{
	const char *base = getenv("TMPDIR");
	char *p = malloc(512);
	CHECK(p, "out of memory");
	snprintf(p, 512, "%s/stallscope-%s-XXXXXX", base && *base ? base : "/tmp", tag);
	CHECK(mkdtemp(p), "mkdtemp %s", p);
	return p;
}

static void rmrf_inner(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		char p[1024];
		snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
		struct stat st;
		if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
			rmrf_inner(p);
		else
			unlink(p);
	}
	closedir(d);
	rmdir(dir);
}

void tc_rmrf(const char *dir)
{
	if (dir && *dir && strcmp(dir, "/") != 0)
		rmrf_inner(dir);
}

int tc_fd_count(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n - 3; /* ".", ".." and the directory's own descriptor */
}

long tc_rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kib = -1;
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

/*
 * folded.c - folded stacks, the format of Brendan Gregg's stackcollapse
 * scripts that flamegraph.pl, inferno and speedscope read: one line per
 * distinct stack, its frames from the root to the leaf joined by ';', a
 * space, and a count. Frames are named by function, an unknown one by its
 * file and offset (libfoo.so+0x1234), a sample without a stack "[no stack]".
 * Two callsites whose frames have the same names (two addresses in one
 * function) are one line.
 */
#include "export.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "hmap.h"
#include "stacks.h"

struct line {
	char *text;
	uint64_t value;
};

struct text {
	char *s;
	size_t len, cap;
};

static int text_add(struct text *t, const char *s, size_t n)
{
	if (t->len + n + 1 > t->cap) {
		size_t cap = t->cap ? t->cap : 256;
		while (cap < t->len + n + 1)
			cap *= 2;
		char *ns = realloc(t->s, cap);
		if (!ns)
			return -1;
		t->s = ns;
		t->cap = cap;
	}
	memcpy(t->s + t->len, s, n);
	t->len += n;
	t->s[t->len] = 0;
	return 0;
}

/* A frame's name as a folded line can hold it: ';' separates frames and the
 * last space the count, so ';' becomes ':' and control characters '?'. */
static void clean(char *s)
{
	for (; *s; s++)
		if (*s == ';')
			*s = ':';
		else if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

static uint64_t fnv(const char *s, uint64_t h)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static int by_text(const void *a, const void *b)
{
	return strcmp(((const struct line *)a)->text, ((const struct line *)b)->text);
}

/* The root-first line of a callsite's stack into t. */
static int stack_text(struct ss_callstacks *cs, int64_t callsite, struct ss_stack_frame *frames, struct text *t)
{
	t->len = 0;
	size_t n = callsite ? ss_callstacks_get(cs, callsite, frames, SS_STACK_MAX) : 0;
	if (!n)
		return text_add(t, "[no stack]", 10);
	for (size_t i = n; i-- > 0;) {
		char name[512];
		ss_callstacks_frame_name(&frames[i], name, sizeof name);
		clean(name);
		if ((i + 1 < n && text_add(t, ";", 1) != 0) || text_add(t, name, strlen(name)) != 0)
			return -1;
	}
	return 0;
}

int ss_export_folded(sqlite3 *db, const struct ss_export_opts *o, FILE *out, struct ss_export_stats *st,
		     char *err, size_t errlen)
{
	memset(st, 0, sizeof *st);
	struct ss_export_agg agg;
	if (ss_export_aggregate(db, o, &agg, err, errlen) != 0)
		return -1;
	struct ss_callstacks *cs = ss_callstacks_new(db);
	struct ss_stack_frame *frames = malloc(SS_STACK_MAX * sizeof *frames);
	struct line *lines = NULL;
	size_t n_lines = 0;
	struct ss_hmap index = { 0 }; /* two hashes of a line's text -> its index */
	struct text t = { 0 };
	int rc = -1;
	if (!cs || !frames) {
		snprintf(err, errlen, "stacks: %s", cs ? "out of memory" : sqlite3_errmsg(db));
		goto out;
	}
	lines = calloc(agg.n, sizeof *lines);
	if (!lines) {
		snprintf(err, errlen, "folded: out of memory");
		goto out;
	}
	for (size_t i = 0; i < agg.n; i++) {
		if (stack_text(cs, agg.rows[i].callsite_id, frames, &t) != 0) {
			snprintf(err, errlen, "folded: out of memory");
			goto out;
		}
		uint64_t v = ss_export_row_value(o, &agg.rows[i]);
		uint64_t h1 = fnv(t.s, 1469598103934665603ull), h2 = fnv(t.s, 0x9e3779b97f4a7c15ull), at;
		if (ss_hmap_get(&index, h1, h2, &at)) {
			lines[at].value = lines[at].value > UINT64_MAX - v ? UINT64_MAX : lines[at].value + v;
			continue;
		}
		lines[n_lines].text = strdup(t.s);
		if (!lines[n_lines].text || ss_hmap_put(&index, h1, h2, n_lines) != 0) {
			free(lines[n_lines].text);
			snprintf(err, errlen, "folded: out of memory");
			goto out;
		}
		lines[n_lines++].value = v;
	}
	qsort(lines, n_lines, sizeof *lines, by_text);
	for (size_t i = 0; i < n_lines; i++) {
		fprintf(out, "%s %" PRIu64 "\n", lines[i].text, lines[i].value);
		st->value = st->value > UINT64_MAX - lines[i].value ? UINT64_MAX : st->value + lines[i].value;
	}
	st->samples = agg.samples;
	st->stacks = n_lines;
	rc = 0;
out:
	for (size_t i = 0; lines && i < n_lines; i++)
		free(lines[i].text);
	free(lines);
	free(t.s);
	free(frames);
	ss_hmap_free(&index);
	ss_callstacks_free(cs);
	ss_export_agg_free(&agg);
	return rc;
}

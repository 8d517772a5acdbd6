/*
 * findings.c - see findings.h.
 */
#include "findings.h"

#include <stdlib.h>
#include <string.h>

const char *ss_severity_name(enum ss_severity s)
{
	return s == SS_SEV_CRITICAL ? "critical" : s == SS_SEV_WARNING ? "warning" : "info";
}

int ss_severity_parse(const char *name)
{
	if (!strcmp(name, "critical"))
		return SS_SEV_CRITICAL;
	if (!strcmp(name, "warning"))
		return SS_SEV_WARNING;
	if (!strcmp(name, "info"))
		return SS_SEV_INFO;
	return -1;
}

static char *dup_or_null(const char *s, int *oom)
{
	if (!s)
		return NULL;
	char *d = strdup(s);
	if (!d)
		*oom = 1;
	return d;
}

static void finding_free(struct ss_finding *f)
{
	free(f->message);
	free(f->worker);
	free(f->location);
	free(f->syscall);
	free(f->sql);
	for (size_t i = 0; i < f->n_frames; i++) {
		free(f->frames[i].function);
		free(f->frames[i].file);
	}
	free(f->frames);
}

struct ss_finding *ss_findings_add(struct ss_findings *l, const struct ss_finding *f)
{
	if (l->n == l->cap) {
		size_t nc = l->cap ? l->cap * 2 : 16;
		struct ss_finding *nv = realloc(l->v, nc * sizeof *nv);
		if (!nv)
			return NULL;
		l->v = nv;
		l->cap = nc;
	}
	struct ss_finding *d = &l->v[l->n];
	int oom = 0;
	*d = *f;
	d->message = dup_or_null(f->message, &oom);
	d->worker = dup_or_null(f->worker, &oom);
	d->location = dup_or_null(f->location, &oom);
	d->syscall = dup_or_null(f->syscall, &oom);
	d->sql = dup_or_null(f->sql, &oom);
	d->frames = NULL;
	d->n_frames = 0;
	if (f->n_frames) {
		d->frames = calloc(f->n_frames, sizeof *d->frames);
		if (!d->frames)
			oom = 1;
		for (size_t i = 0; d->frames && i < f->n_frames; i++) {
			d->frames[i].function = dup_or_null(f->frames[i].function, &oom);
			d->frames[i].file = dup_or_null(f->frames[i].file, &oom);
			d->frames[i].line = f->frames[i].line;
			d->n_frames = i + 1;
		}
	}
	if (oom) {
		finding_free(d);
		return NULL;
	}
	l->n++;
	return d;
}

void ss_findings_sort(struct ss_findings *l)
{
	/* Insertion sort: stable, and lists are short. */
	for (size_t i = 1; i < l->n; i++) {
		struct ss_finding x = l->v[i];
		size_t j = i;
		while (j > 0 && l->v[j - 1].severity < x.severity) {
			l->v[j] = l->v[j - 1];
			j--;
		}
		l->v[j] = x;
	}
}

void ss_findings_free(struct ss_findings *l)
{
	for (size_t i = 0; i < l->n; i++)
		finding_free(&l->v[i]);
	free(l->v);
	memset(l, 0, sizeof *l);
}

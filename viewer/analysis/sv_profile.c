/*
 * sv_profile.c - see sv_profile.h. Strings are interned by a 64-bit hash and
 * a collision number (two names with one hash get keys (h, 0) and (h, 1)),
 * so a lookup never trusts the hash alone.
 */
#include "sv_profile.h"

#include <stdlib.h>
#include <string.h>

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* Grows *arr (of elem-sized items) to hold one more than *n; -1 on failure. */
static int reserve(void **arr, size_t *cap, size_t n, size_t elem)
{
	if (n < *cap)
		return 0;
	size_t nc = *cap ? *cap * 2 : 64;
	void *na = realloc(*arr, nc * elem);
	if (!na)
		return -1;
	*arr = na;
	*cap = nc;
	return 0;
}

void sv_profile_init(struct sv_profile *p, enum sv_kind kind)
{
	memset(p, 0, sizeof *p);
	p->kind = kind;
	if (reserve((void **)&p->strings, &p->cap_strings, 0, sizeof *p->strings) == 0 && (p->strings[0] = strdup("")))
		p->n_strings = 1;
	else
		p->failed = true;
}

void sv_profile_free(struct sv_profile *p)
{
	for (size_t i = 0; i < p->n_strings; i++)
		free(p->strings[i]);
	free(p->strings);
	ss_hmap_free(&p->string_index);
	free(p->frames);
	ss_hmap_free(&p->frame_index);
	free(p->refs);
	free(p->stacks);
	memset(p, 0, sizeof *p);
}

uint32_t sv_profile_intern(struct sv_profile *p, const char *s)
{
	if (!s || !*s)
		return 0;
	uint64_t h = hash_str(s), v;
	uint64_t k = 0;
	for (; ss_hmap_get(&p->string_index, h, k, &v); k++)
		if (strcmp(p->strings[v], s) == 0)
			return (uint32_t)v;
	if (p->n_strings >= UINT32_MAX ||
	    reserve((void **)&p->strings, &p->cap_strings, p->n_strings, sizeof *p->strings) != 0)
		goto fail;
	char *copy = strdup(s);
	if (!copy)
		goto fail;
	if (ss_hmap_put(&p->string_index, h, k, p->n_strings) != 0) {
		free(copy);
		goto fail;
	}
	p->strings[p->n_strings] = copy;
	return (uint32_t)p->n_strings++;
fail:
	p->failed = true;
	return 0;
}

int64_t sv_profile_frame(struct sv_profile *p, const char *function, const char *file, int32_t line,
			 enum sv_frame_kind kind)
{
	uint32_t fn = sv_profile_intern(p, function && *function ? function : "?");
	uint32_t fi = sv_profile_intern(p, file);
	if (p->failed)
		return -1;
	uint64_t a = (uint64_t)fn << 32 | fi, b = (uint64_t)(uint32_t)line << 8 | (uint64_t)kind, v;
	if (ss_hmap_get(&p->frame_index, a, b, &v))
		return (int64_t)v;
	if (reserve((void **)&p->frames, &p->cap_frames, p->n_frames, sizeof *p->frames) != 0 ||
	    ss_hmap_put(&p->frame_index, a, b, p->n_frames) != 0) {
		p->failed = true;
		return -1;
	}
	p->frames[p->n_frames] = (struct sv_frame){ fn, fi, line, (uint8_t)kind };
	return (int64_t)p->n_frames++;
}

int sv_profile_add(struct sv_profile *p, const uint32_t *frames, size_t n, int64_t count, int64_t weight)
{
	if (p->failed)
		return -1;
	while (p->n_refs + n > p->cap_refs) {
		size_t nc = p->cap_refs ? p->cap_refs * 2 : 1024;
		uint32_t *nr = realloc(p->refs, nc * sizeof *nr);
		if (!nr)
			goto fail;
		p->refs = nr;
		p->cap_refs = nc;
	}
	if (reserve((void **)&p->stacks, &p->cap_stacks, p->n_stacks, sizeof *p->stacks) != 0)
		goto fail;
	if (n)
		memcpy(p->refs + p->n_refs, frames, n * sizeof *frames);
	p->stacks[p->n_stacks++] = (struct sv_stack){ p->n_refs, (uint32_t)n, count, weight };
	p->n_refs += n;
	p->total_weight = sv_add_sat(p->total_weight, weight);
	p->total_count = sv_add_sat(p->total_count, count);
	return 0;
fail:
	p->failed = true;
	return -1;
}

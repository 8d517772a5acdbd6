/*
 * hist.c - see hist.h.
 *
 * A report over a 20M-event trace sorts a few million delays (each once per
 * location and once overall); qsort with a comparison callback took half a
 * second of it. An LSD radix sort by 11-bit digits does only the passes the
 * largest value needs (three for delays under 8.6 s) and skips a pass whose
 * digit is the same in every value.
 */
#include "hist.h"

#include <stdlib.h>
#include <string.h>

int ss_hist_add(struct ss_hist *h, uint64_t v)
{
	if (h->n == h->cap) {
		size_t nc = h->cap ? h->cap * 2 : 64;
		uint64_t *nv = realloc(h->v, nc * sizeof *nv);
		if (!nv)
			return -1;
		h->v = nv;
		h->cap = nc;
	}
	h->v[h->n++] = v;
	h->sorted = false;
	if (v > h->max)
		h->max = v;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

#define DIGIT_BITS 11
#define DIGITS (1u << DIGIT_BITS)
/* Below this many values qsort is as quick, and needs no scratch. */
#define RADIX_MIN 512

void ss_sort_u64(uint64_t *v, size_t n)
{
	if (n < 2)
		return;
	uint64_t *tmp = n >= RADIX_MIN ? malloc(n * sizeof *tmp) : NULL;
	if (!tmp) {
		qsort(v, n, sizeof *v, cmp_u64);
		return;
	}
	uint64_t max = 0;
	for (size_t i = 0; i < n; i++)
		if (v[i] > max)
			max = v[i];
	uint64_t *src = v, *dst = tmp;
	size_t count[DIGITS];
	for (unsigned shift = 0; shift < 64 && (max >> shift) != 0; shift += DIGIT_BITS) {
		memset(count, 0, sizeof count);
		for (size_t i = 0; i < n; i++)
			count[(src[i] >> shift) & (DIGITS - 1)]++;
		if (count[(src[0] >> shift) & (DIGITS - 1)] == n)
			continue; /* one digit for all: this pass would not move anything */
		size_t at = 0;
		for (unsigned d = 0; d < DIGITS; d++) {
			size_t c = count[d];
			count[d] = at;
			at += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[count[(src[i] >> shift) & (DIGITS - 1)]++] = src[i];
		uint64_t *t = src;
		src = dst;
		dst = t;
	}
	if (src != v)
		memcpy(v, src, n * sizeof *v);
	free(tmp);
}

double ss_hist_quantile(struct ss_hist *h, unsigned pct)
{
	if (!h->n)
		return -1;
	if (!h->sorted) {
		ss_sort_u64(h->v, (size_t)h->n);
		h->sorted = true;
	}
	if (pct > 100)
		pct = 100;
	/* ceil(pct * n / 100) without floating point: the README's SQL does the
	 * same comparison in integers (rn * 100 >= pct * n). */
	uint64_t rank = (pct * h->n + 99) / 100;
	if (rank < 1)
		rank = 1;
	return (double)h->v[rank - 1];
}

void ss_hist_free(struct ss_hist *h)
{
	free(h->v);
	memset(h, 0, sizeof *h);
}

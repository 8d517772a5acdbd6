/*
 * test_hist.c - the report scan's exact arithmetic (viewer/analysis):
 *   - ss_sort_u64 (a radix sort above a few hundred values) orders any
 *     values as qsort does: small and large arrays, duplicates, one value
 *     repeated, values that use the top bits, a digit the same everywhere;
 *   - ss_hist_quantile is the nearest-rank quantile (rank ceil(p * n)), and
 *     the values added after a quantile was asked for are sorted in again;
 *   - ss_scope_overlaps and ss_scope_holds keep what the read queries' SQL
 *     kept ("ts < to AND ts + dur >= from", the sum past int64 in doubles;
 *     "ts >= from AND ts < to"), checked against SQLite itself.
 */
#include <sqlite3.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hist.h"
#include "scope.h"
#include "soft_check.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void sort_case(const char *what, size_t n, uint64_t (*gen)(size_t i))
{
	uint64_t *v = malloc((n ? n : 1) * sizeof *v), *w = malloc((n ? n : 1) * sizeof *w);
	for (size_t i = 0; i < n; i++)
		v[i] = w[i] = gen(i);
	ss_sort_u64(v, n);
	qsort(w, n, sizeof *w, cmp);
	CHECK(!n || !memcmp(v, w, n * sizeof *v), "%s, %zu values: not in qsort's order", what, n);
	free(v);
	free(w);
}

static uint64_t g_any(size_t i) { (void)i; return next(); }
static uint64_t g_small(size_t i) { (void)i; return next() % 1000; }
static uint64_t g_delay(size_t i) { (void)i; return next() % 80000000; }
static uint64_t g_same(size_t i) { (void)i; return 42; }
static uint64_t g_top(size_t i) { return (next() & 0xff00000000000000ull) | (i & 1); }
static uint64_t g_desc(size_t i) { return ~(uint64_t)i; }
/* The low 11 bits the same everywhere: that pass is skipped. */
static uint64_t g_skip(size_t i) { (void)i; return (next() % 100000) << 11 | 5; }

static void check_sort(void)
{
	uint64_t (*gens[])(size_t) = { g_any, g_small, g_delay, g_same, g_top, g_desc, g_skip };
	const char *names[] = { "any", "small", "delays", "one value", "top bits", "descending", "constant digit" };
	const size_t sizes[] = { 0, 1, 2, 7, 511, 512, 513, 4096, 100000 };
	for (size_t g = 0; g < sizeof gens / sizeof gens[0]; g++)
		for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
			sort_case(names[g], sizes[s], gens[g]);
}

static void check_quantiles(void)
{
	struct ss_hist h = { 0 };
	CHECK(ss_hist_quantile(&h, 50) == -1, "an empty hist has no quantile");
	/* 1000 values 1..1000, shuffled: the p-quantile is p * 10. */
	uint64_t v[1000];
	for (int i = 0; i < 1000; i++)
		v[i] = (uint64_t)i + 1;
	for (int i = 999; i > 0; i--) {
		int j = (int)(next() % (uint64_t)(i + 1));
		uint64_t t = v[i];
		v[i] = v[j];
		v[j] = t;
	}
	for (int i = 0; i < 1000; i++)
		CHECK(ss_hist_add(&h, v[i]) == 0, "add");
	CHECK(ss_hist_quantile(&h, 50) == 500, "p50 of 1..1000: %g", ss_hist_quantile(&h, 50));
	CHECK(ss_hist_quantile(&h, 99) == 990, "p99 of 1..1000: %g", ss_hist_quantile(&h, 99));
	CHECK(ss_hist_quantile(&h, 100) == 1000, "p100 of 1..1000: %g", ss_hist_quantile(&h, 100));
	CHECK(h.max == 1000, "max %llu", (unsigned long long)h.max);
	/* One more value, the smallest: ranks move. 1001 values, p50 at rank 501. */
	CHECK(ss_hist_add(&h, 0) == 0, "add");
	CHECK(ss_hist_quantile(&h, 50) == 500, "p50 after adding 0: %g", ss_hist_quantile(&h, 50));
	CHECK(ss_hist_quantile(&h, 1) == 10, "p1 of 0..1000 (rank 11): %g", ss_hist_quantile(&h, 1));
	ss_hist_free(&h);
	CHECK(h.n == 0 && !h.v, "freed");
}

/* What SQLite says of the same values, as the read queries bound them. */
static int sql_overlaps(sqlite3 *db, int64_t ts, int64_t dur, int64_t from, int64_t to)
{
	sqlite3_stmt *st;
	sqlite3_prepare_v2(db, "SELECT ?1 < ?4 AND ?1 + ?2 >= ?3, ?1 >= ?3 AND ?1 < ?4", -1, &st, NULL);
	sqlite3_bind_int64(st, 1, ts);
	sqlite3_bind_int64(st, 2, dur);
	sqlite3_bind_int64(st, 3, from);
	sqlite3_bind_int64(st, 4, to);
	int r = -1;
	if (sqlite3_step(st) == SQLITE_ROW)
		r = sqlite3_column_int(st, 0) | sqlite3_column_int(st, 1) << 1;
	sqlite3_finalize(st);
	return r;
}

static void check_window(void)
{
	sqlite3 *db;
	if (sqlite3_open(":memory:", &db) != SQLITE_OK) {
		CHECK(0, "sqlite");
		return;
	}
	const int64_t vals[] = { INT64_MIN, INT64_MIN + 1, -1000, -1, 0, 1, 999, 1000, 1001, 5000,
				 INT64_MAX - 1, INT64_MAX };
	const size_t n = sizeof vals / sizeof vals[0];
	const struct { int64_t from, to; } windows[] = {
		{ INT64_MIN, INT64_MAX }, { 1000, 5000 }, { INT64_MIN, 1000 }, { 1000, INT64_MAX }, { -1, 0 },
	};
	for (size_t w = 0; w < sizeof windows / sizeof windows[0]; w++) {
		struct ss_scope sc = { .from = windows[w].from, .to = windows[w].to };
		for (size_t i = 0; i < n; i++)
			for (size_t j = 0; j < n; j++) {
				int64_t ts = vals[i], dur = vals[j];
				int want = sql_overlaps(db, ts, dur, sc.from, sc.to);
				int got = ss_scope_overlaps(&sc, ts, dur) | ss_scope_holds(&sc, ts) << 1;
				CHECK(got == want, "ts %lld dur %lld in [%lld, %lld): C says %d, SQLite %d",
				      (long long)ts, (long long)dur, (long long)sc.from, (long long)sc.to, got, want);
			}
	}
	sqlite3_close(db);
}

int main(void)
{
	check_sort();
	check_quantiles();
	check_window();
	if (failures)
		fprintf(stderr, "%d checks failed\n", failures);
	return failures ? 1 : 0;
}

/*
 * test_hmap.c - the importer's hash map (viewer/model/hmap.c):
 *   - many keys (sequential and clustered first keys, several second keys)
 *     are all found with their values, and keys never put are not;
 *   - deleting most of them, in an order that breaks probe runs in the
 *     middle, keeps every lookup exact, and the table shrinks to a size
 *     fitting what is left (the task map's case: a burst, then few);
 *   - growing again after shrinking, replacing values, and foreach seeing
 *     exactly the keys held.
 */
#include <stdint.h>
#include <stdlib.h>

#include "hmap.h"
#include "soft_check.h"

#define N 200000u

static uint64_t key_a(uint32_t i) { return i < N / 2 ? i + 1 : (uint64_t)i << 32; }
static uint64_t key_b(uint32_t i) { return i % 3; }

struct count { size_t n, bad; };

static void count_cb(void *ctx, uint64_t a, uint64_t b, uint64_t val)
{
	struct count *c = ctx;
	c->n++;
	if (val != (a ^ b) * 3)
		c->bad++;
}

/* Keys i with keep(i) are held, the others are not. */
static size_t check_all(const struct ss_hmap *m, int (*keep)(uint32_t))
{
	size_t bad = 0;
	for (uint32_t i = 0; i < N; i++) {
		uint64_t v = 0;
		bool found = ss_hmap_get(m, key_a(i), key_b(i), &v);
		if (found != (keep(i) != 0) || (found && v != (key_a(i) ^ key_b(i)) * 3))
			bad++;
	}
	return bad;
}

static int all(uint32_t i) { (void)i; return 1; }
static int few(uint32_t i) { return i % 2000 == 7; }
static int none(uint32_t i) { (void)i; return 0; }

int main(void)
{
	struct ss_hmap m = { 0 };
	for (uint32_t i = 0; i < N; i++)
		CHECK(ss_hmap_put(&m, key_a(i), key_b(i), 1) == 0, "put %u", i);
	for (uint32_t i = 0; i < N; i++)
		CHECK(ss_hmap_put(&m, key_a(i), key_b(i), (key_a(i) ^ key_b(i)) * 3) == 0, "replace %u", i);
	CHECK(m.len == N, "%zu keys held, want %u", m.len, N);
	size_t big = m.cap;
	CHECK(big >= 2 * N, "cap %zu for %u keys", big, N);
	CHECK(check_all(&m, all) == 0, "%zu lookups wrong when full", check_all(&m, all));
	CHECK(!ss_hmap_get(&m, 0, 0, &(uint64_t){ 0 }) && !ss_hmap_get(&m, 1, 7, &(uint64_t){ 0 }),
	      "a key never put is found");

	/* Every other key first (holes in every probe run), then the rest of
	 * those not kept. */
	for (uint32_t i = 0; i < N; i += 2)
		if (!few(i))
			CHECK(ss_hmap_del(&m, key_a(i), key_b(i)), "del %u", i);
	for (uint32_t i = 1; i < N; i += 2)
		if (!few(i))
			CHECK(ss_hmap_del(&m, key_a(i), key_b(i)), "del %u", i);
	CHECK(!ss_hmap_del(&m, key_a(0), key_b(0)), "a deleted key deleted again");
	CHECK(m.len == N / 2000, "%zu keys held, want %u", m.len, N / 2000);
	CHECK(check_all(&m, few) == 0, "%zu lookups wrong after deleting", check_all(&m, few));
	CHECK(m.cap <= 16 * m.len && m.cap >= 2 * m.len, "cap %zu for %zu keys (was %zu)", m.cap, m.len, big);
	struct count c = { 0, 0 };
	ss_hmap_foreach(&m, count_cb, &c);
	CHECK(c.n == m.len && c.bad == 0, "foreach saw %zu keys (%zu wrong), %zu held", c.n, c.bad, m.len);

	/* Grows again from the small table. */
	for (uint32_t i = 0; i < N; i++)
		CHECK(ss_hmap_put(&m, key_a(i), key_b(i), (key_a(i) ^ key_b(i)) * 3) == 0, "put again %u", i);
	CHECK(m.len == N && check_all(&m, all) == 0, "%zu keys held, %zu lookups wrong after growing again", m.len,
	      check_all(&m, all));
	for (uint32_t i = 0; i < N; i++)
		ss_hmap_del(&m, key_a(i), key_b(i));
	CHECK(m.len == 0 && m.cap == 64 && check_all(&m, none) == 0, "emptied: %zu keys, cap %zu", m.len, m.cap);
	ss_hmap_free(&m);
	if (!failures)
		printf("hmap: ok\n");
	return failures ? 1 : 0;
}

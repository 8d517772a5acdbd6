/*
 * fuzz_dial9_reader.c - libFuzzer target: one input is one dial9 trace file
 * (raw or gzip), fed through everything the dial9 reader does with it: the
 * scan, every value's accessors (strings, stacks, JSON), and the time-order
 * merge twice (from the first stream and from the second), checking that the
 * merge returns no more events than the scan saw and that nothing is read
 * after the end.
 */
#include <stdlib.h>
#include <string.h>

#include "d9_reader.h"
#include "fuzz_target.h"

struct ctx {
	struct d9_reader *r;
	struct d9_buf json;
	uint64_t sum;
};

static void touch(struct ctx *c, const struct d9_event *e)
{
	d9_event_json(c->r, e, &c->json);
	for (uint16_t i = 0; i < e->schema->n_fields; i++) {
		const struct d9_value *v = &e->v[i];
		size_t n;
		if (v->type == D9_POOLED_STRING) {
			const char *s = d9_string(c->r, (uint32_t)v->u, &n);
			if (s && n)
				c->sum += (unsigned char)s[n - 1];
		}
		uint32_t k = d9_value_stack(c->r, v);
		const uint64_t *a = k ? d9_stack(c->r, k, &n) : NULL;
		if (a && n)
			c->sum += a[n - 1];
		if ((v->type == D9_STRING || v->type == D9_BYTES) && v->len)
			c->sum += v->p[v->len - 1];
	}
}

static int scan_cb(void *ctx, const struct d9_event *e)
{
	touch(ctx, e);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];
	struct ctx c = { 0 };
	if (!(c.r = d9_open_buffer(data, size, err, sizeof err)))
		return 0;
	d9_scan(c.r, scan_cb, &c);
	uint64_t scanned = d9_stats(c.r)->events;
	for (uint32_t from = 0; from < 2; from++) {
		if (d9_merge_begin(c.r, from) != 0)
			abort();
		struct d9_event e;
		uint64_t n = 0;
		while (d9_merge_next(c.r, &e)) {
			touch(&c, &e);
			n++;
		}
		/* the merge decodes what the scan decoded, never more */
		if (n > scanned || d9_merge_next(c.r, &e))
			abort();
	}
	for (size_t i = 0; i < d9_damage_count(c.r); i++)
		c.sum += strlen(d9_damage_at(c.r, i)->reason);
	d9_buf_free(&c.json);
	d9_close(c.r);
	return c.sum == 42 ? 0 : 0;
}

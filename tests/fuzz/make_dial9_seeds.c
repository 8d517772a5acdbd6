/*
 * make_dial9_seeds.c - writes the seed corpus of the dial9 fuzz targets
 * (tests/fuzz/corpus/dial9/): the synthetic Tokio-like trace raw and gzip, a
 * stream with every field type, several streams reusing type and pool ids,
 * and damaged variants.
 *
 *     make_dial9_seeds DIR
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "d9_builder.h"
#include "d9_synthetic.h"

static void put(const char *dir, const char *name, const uint8_t *p, size_t n)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

enum { I64 = 1, F64, BOOL, STR, BYTES, PSTK, PSTR, STK, VAR, SMAP, U8, U16, U32, LIST, MAP, OPT = 0x80 };

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: make_dial9_seeds DIR\n");
		return 2;
	}
	const char *dir = argv[1];
	struct d9b b = { 0 };
	d9_synthetic(&b, D9S_BATCHES);
	put(dir, "synthetic.bin", b.buf, b.len);
	uint8_t *z;
	size_t zl;
	d9b_gzip(b.buf, b.len, &z, &zl);
	put(dir, "synthetic.bin.gz", z, zl);
	free(z);
	/* damaged: cut, and a stray tag in the middle */
	put(dir, "synthetic-cut.bin", b.buf, b.len * 2 / 3);
	struct d9b bad = { 0 };
	d9b_bytes(&bad, b.buf, b.len / 2);
	d9b_u8(&bad, 0x42);
	d9b_bytes(&bad, b.buf + b.len / 2, b.len - b.len / 2);
	put(dir, "synthetic-stray-tag.bin", bad.buf, bad.len);
	d9b_free(&bad);
	d9b_free(&b);

	/* every field type, optional ones present and absent, nested containers */
	static const struct d9b_field f[] = {
		{ "i", I64 }, { "f", F64 }, { "b", BOOL }, { "s", STR }, { "by", BYTES }, { "ps", PSTK },
		{ "pstr", PSTR }, { "stk", STK }, { "v", VAR }, { "m", SMAP }, { "u8", U8 }, { "u16", U16 },
		{ "u32", U32 }, { "l", LIST }, { "dm", MAP }, { "o", VAR | OPT },
	};
	d9b_header(&b);
	d9b_schema(&b, 1, "All", true, f, sizeof f / sizeof f[0]);
	d9b_annotation(&b, 1, 0, "unit", "ns");
	uint32_t ids[2] = { 1, 2 };
	const char *strs[2] = { "one", "two" };
	d9b_string_pool(&b, 2, ids, strs);
	uint64_t pcs[3] = { 0x1000, 0x2000, 0x3000 };
	d9b_stack_pool(&b, 3, pcs, 3);
	d9b_ts_reset(&b, 1u << 30);
	for (int k = 0; k < 2; k++) {
		d9b_event(&b, 1, true, 100);
		d9b_u64(&b, 7);
		d9b_u64(&b, 0x3ff0000000000000ull);
		d9b_u8(&b, 1);
		d9b_v_string(&b, "text");
		d9b_v_string(&b, "\x00\x01");
		d9b_u32(&b, 3);
		d9b_u32(&b, 1);
		d9b_v_stack(&b, pcs, 2);
		d9b_varint(&b, 1u << 20);
		const char *mk[1] = { "k" }, *mv[1] = { "v" };
		d9b_v_string_map(&b, 1, mk, mv);
		d9b_u8(&b, 1);
		d9b_u16(&b, 2);
		d9b_u32(&b, 3);
		d9b_u32(&b, 2);
		d9b_u8(&b, PSTR);
		d9b_u32(&b, 2);
		d9b_u8(&b, MAP);
		d9b_u32(&b, 1);
		d9b_u8(&b, VAR);
		d9b_varint(&b, 5);
		d9b_u8(&b, STK);
		d9b_v_stack(&b, pcs, 1);
		d9b_u32(&b, 1);
		d9b_u8(&b, STR);
		d9b_v_string(&b, "key");
		d9b_u8(&b, LIST);
		d9b_u32(&b, 0);
		d9b_u8(&b, (uint8_t)k);
		if (k)
			d9b_varint(&b, 99);
	}
	/* a second stream reusing the type id and pool ids for other things */
	static const struct d9b_field g[] = { { "x", PSTR } };
	d9b_header(&b);
	d9b_schema(&b, 1, "Other", false, g, 1);
	d9b_string_pool(&b, 1, ids, strs + 1);
	d9b_event(&b, 1, false, 0);
	d9b_u32(&b, 1);
	put(dir, "every-type.bin", b.buf, b.len);
	d9b_free(&b);
	return 0;
}

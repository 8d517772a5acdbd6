/*
 * make_btf_seeds.c - writes the seed corpus of fuzz_btf.c: small BTF images
 * (include/uapi/linux/btf.h) that the scan answers in each of its ways.
 *
 *     ninja -C BUILD tests/fuzz/make_btf_seeds &&
 *     BUILD/tests/fuzz/make_btf_seeds tests/fuzz/corpus/btf
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct img {
	uint8_t types[1024], strs[256];
	size_t nt, ns;
};

static void u32(struct img *g, uint32_t v)
{
	memcpy(g->types + g->nt, &v, 4);
	g->nt += 4;
}

static uint32_t str(struct img *g, const char *s)
{
	uint32_t at = (uint32_t)g->ns;
	memcpy(g->strs + g->ns, s, strlen(s) + 1);
	g->ns += strlen(s) + 1;
	return at;
}

/* A type's head: name, info (kind << 24 | vlen, kind_flag bit 31), size/type. */
static void head(struct img *g, uint32_t name, uint32_t kind, uint32_t vlen, int kflag, uint32_t size)
{
	u32(g, name);
	u32(g, kind << 24 | vlen | (kflag ? 1u << 31 : 0));
	u32(g, size);
}

/* task_struct of 8 members; pid and tgid at bit offsets pid_bits, tgid_bits
 * (a bitfield's size in the top byte where kflag). */
static void task(struct img *g, uint32_t pid_bits, uint32_t tgid_bits, int kflag)
{
	head(g, str(g, "task_struct"), 4, 8, kflag, 4096);
	const char *names[8] = { "state", "stack", "usage", "flags", "pid", "tgid", "comm", "mm" };
	for (uint32_t i = 0; i < 8; i++) {
		u32(g, str(g, names[i]));
		u32(g, 1);
		u32(g, i == 4 ? pid_bits : i == 5 ? tgid_bits : i * 64);
	}
}

static void others(struct img *g)
{
	head(g, str(g, "int"), 1, 0, 0, 4);
	u32(g, 0x01000020);                /* INT: signed, 32 bits */
	head(g, 0, 2, 0, 0, 1);            /* PTR to int */
	head(g, 0, 3, 0, 0, 0);            /* ARRAY */
	u32(g, 1), u32(g, 1), u32(g, 16);
	head(g, str(g, "e"), 6, 1, 0, 4);  /* ENUM */
	u32(g, str(g, "E0")), u32(g, 0);
	head(g, 0, 13, 1, 0, 1);           /* FUNC_PROTO(int) returning int */
	u32(g, 0), u32(g, 1);
	head(g, str(g, "u"), 5, 1, 0, 8);  /* UNION */
	u32(g, str(g, "pid")), u32(g, 1), u32(g, 0);
}

static int put(const char *dir, const char *name, struct img *g)
{
	uint8_t out[2048];
	uint32_t h[6] = { 0x0001eB9Fu, 24, 0, (uint32_t)g->nt, (uint32_t)g->nt, (uint32_t)g->ns };
	memcpy(out, h, 24);
	memcpy(out + 24, g->types, g->nt);
	memcpy(out + 24 + g->nt, g->strs, g->ns);
	char path[512];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(out, 1, 24 + g->nt + g->ns, f) != 24 + g->nt + g->ns || fclose(f) != 0) {
		perror(path);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: make_btf_seeds DIR\n");
		return 2;
	}
	struct img g;
	int bad = 0;
	/* found: pid and tgid adjacent, after types of every skipped kind */
	memset(&g, 0, sizeof g), str(&g, "");
	others(&g), task(&g, 0x4a0 * 8, 0x4a4 * 8, 0);
	bad |= put(argv[1], "task-adjacent", &g);
	/* found, not adjacent, with kind_flag offsets */
	memset(&g, 0, sizeof g), str(&g, "");
	task(&g, 0x500 * 8, 0x600 * 8, 1);
	bad |= put(argv[1], "task-kflag", &g);
	/* refused: pid a bitfield, tgid not byte-aligned */
	memset(&g, 0, sizeof g), str(&g, "");
	others(&g), task(&g, 3u << 24 | 64, 65, 1);
	bad |= put(argv[1], "task-bitfields", &g);
	/* refused: a kind the scan does not know before task_struct */
	memset(&g, 0, sizeof g), str(&g, "");
	head(&g, 0, 30, 0, 0, 0), task(&g, 0, 32, 0);
	bad |= put(argv[1], "kind-unknown", &g);
	return bad;
}

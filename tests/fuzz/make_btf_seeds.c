/*
 * make_btf_seeds.c - writes the seed corpus of fuzz_btf.c: small BTF images
 * (tests/common/btf_image.h) that the scan answers in each of its ways.
 *
 *     ninja -C BUILD tests/fuzz/make_btf_seeds &&
 *     BUILD/tests/fuzz/make_btf_seeds tests/fuzz/corpus/btf
 */
#include <stdio.h>

#include "btf_image.h"

static int put(const char *dir, const char *name, const struct btf_img *g)
{
	uint8_t out[4096];
	size_t n = bi_bytes(g, out, sizeof out);
	char path[512];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	if (!n || !f || fwrite(out, 1, n, f) != n || fclose(f) != 0) {
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
	struct btf_img g;
	int bad = 0;
	/* found: pid and tgid adjacent, after types of every skipped kind, and
	 * sched_switch with prev_state */
	bi_init(&g), bi_others(&g), bi_tracepoint(&g, "sched_switch", 4);
	bi_task(&g, 0x4a0 * 8, 0x4a4 * 8, 0, "__state");
	bad |= put(argv[1], "task-adjacent", &g);
	/* found, not adjacent, with kind_flag offsets and an old `state`;
	 * sched_switch before 5.18 */
	bi_init(&g), bi_task(&g, 0x500 * 8, 0x600 * 8, 1, "state"), bi_tracepoint(&g, "sched_switch", 3);
	bad |= put(argv[1], "task-kflag", &g);
	/* refused: pid a bitfield, tgid not byte-aligned */
	bi_init(&g), bi_others(&g), bi_task(&g, 3u << 24 | 64, 65, 1, "__state");
	bad |= put(argv[1], "task-bitfields", &g);
	/* refused: a kind the scan does not know before task_struct (no state) */
	bi_init(&g), bi_head(&g, 0, 30, 0, 0, 0), bi_task(&g, 0, 32, 0, "stat");
	bad |= put(argv[1], "kind-unknown", &g);
	return bad;
}

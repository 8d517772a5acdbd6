/*
 * btf_image.h - small BTF images (include/uapi/linux/btf.h) for tests of the
 * recorder's BTF scan (recorder/src/sampler_btf.c): a struct task_struct, types
 * of the kinds the scan skips, and a raw tracepoint's btf_trace_ typedef. Used
 * by make_btf_seeds (the fuzz seeds) and test_parked_switches (a kernel BTF
 * bind-mounted in place of the real one).
 */
#ifndef STALLSCOPE_TESTS_BTF_IMAGE_H
#define STALLSCOPE_TESTS_BTF_IMAGE_H

#include <stdint.h>
#include <string.h>

struct btf_img {
	uint8_t types[2048], strs[512];
	size_t nt, ns;
	uint32_t ntypes; /* the last type's id */
};

static inline void bi_u32(struct btf_img *g, uint32_t v)
{
	memcpy(g->types + g->nt, &v, 4);
	g->nt += 4;
}

static inline uint32_t bi_str(struct btf_img *g, const char *s)
{
	uint32_t at = (uint32_t)g->ns;
	memcpy(g->strs + g->ns, s, strlen(s) + 1);
	g->ns += strlen(s) + 1;
	return at;
}

static inline void bi_init(struct btf_img *g)
{
	memset(g, 0, sizeof *g);
	bi_str(g, "");
}

/* A type's head: name, info (kind << 24 | vlen, kind_flag bit 31), size/type;
 * its id. */
static inline uint32_t bi_head(struct btf_img *g, uint32_t name, uint32_t kind, uint32_t vlen, int kflag,
			       uint32_t size)
{
	bi_u32(g, name);
	bi_u32(g, kind << 24 | vlen | (kflag ? 1u << 31 : 0));
	bi_u32(g, size);
	return ++g->ntypes;
}

/* task_struct of 8 members; pid and tgid at bit offsets pid_bits, tgid_bits (a
 * bitfield's size in the top byte where kflag), the first named state (the
 * state's name: "__state", "state", or another). */
static inline void bi_task(struct btf_img *g, uint32_t pid_bits, uint32_t tgid_bits, int kflag,
			   const char *state)
{
	bi_head(g, bi_str(g, "task_struct"), 4, 8, kflag, 4096);
	const char *names[8] = { state, "stack", "usage", "flags", "pid", "tgid", "comm", "mm" };
	for (uint32_t i = 0; i < 8; i++) {
		bi_u32(g, bi_str(g, names[i]));
		bi_u32(g, 1);
		bi_u32(g, i == 4 ? pid_bits : i == 5 ? tgid_bits : i * 64);
	}
}

/* An INT, a PTR, an ARRAY, an ENUM, a FUNC_PROTO and a UNION with a pid. */
static inline void bi_others(struct btf_img *g)
{
	uint32_t i = bi_head(g, bi_str(g, "int"), 1, 0, 0, 4);
	bi_u32(g, 0x01000020);                         /* signed, 32 bits */
	bi_head(g, 0, 2, 0, 0, i);
	bi_head(g, 0, 3, 0, 0, 0);
	bi_u32(g, i), bi_u32(g, i), bi_u32(g, 16);
	bi_head(g, bi_str(g, "e"), 6, 1, 0, 4);
	bi_u32(g, bi_str(g, "E0")), bi_u32(g, 0);
	bi_head(g, 0, 13, 1, 0, i);
	bi_u32(g, 0), bi_u32(g, i);
	bi_head(g, bi_str(g, "u"), 5, 1, 0, 8);
	bi_u32(g, bi_str(g, "pid")), bi_u32(g, i), bi_u32(g, 0);
}

/* typedef btf_trace_<tp>: a pointer to a FUNC_PROTO(void *, nargs x int). */
static inline void bi_tracepoint(struct btf_img *g, const char *tp, uint32_t nargs)
{
	char name[96] = "btf_trace_";
	strncat(name, tp, sizeof name - strlen(name) - 1);
	uint32_t i = bi_head(g, bi_str(g, "int"), 1, 0, 0, 4);
	bi_u32(g, 0x01000020);
	uint32_t proto = bi_head(g, 0, 13, nargs + 1, 0, i);
	for (uint32_t k = 0; k <= nargs; k++)
		bi_u32(g, 0), bi_u32(g, i);
	uint32_t ptr = bi_head(g, 0, 2, 0, 0, proto);
	bi_head(g, bi_str(g, name), 8, 0, 0, ptr);
}

/* The image: header, types, strings; its size (at most cap). */
static inline size_t bi_bytes(const struct btf_img *g, uint8_t *out, size_t cap)
{
	uint32_t h[6] = { 0x0001eB9Fu, 24, 0, (uint32_t)g->nt, (uint32_t)g->nt, (uint32_t)g->ns };
	size_t n = 24 + g->nt + g->ns;
	if (n > cap)
		return 0;
	memcpy(out, h, 24);
	memcpy(out + 24, g->types, g->nt);
	memcpy(out + 24 + g->nt, g->strs, g->ns);
	return n;
}

#endif /* STALLSCOPE_TESTS_BTF_IMAGE_H */

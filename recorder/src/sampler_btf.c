/*
 * sampler_btf.c - where `pid`, `tgid` and the state lie in the running
 * kernel's struct task_struct, and how many arguments its sched_switch
 * tracepoint has, from its BTF (/sys/kernel/btf/vmlinux), for the sched_switch
 * program (sampler_swtp.c), which reads them from the tasks switched (the
 * state, before Linux 5.18, as the tracepoint has no prev_state argument).
 *
 * The layout differs between kernels and builds (configuration, randomized
 * structures), and BTF describes the one running. The file (5 MB here) is mapped
 * read-only where the kernel allows it (6.16 and later), read otherwise, and
 * scanned once per process: only a STRUCT named task_struct is looked at
 * closely. Any surprise (no BTF, an unknown type kind, no such members, a
 * member that is a bitfield) is an answer of -1 with the reason, never a guess:
 * the caller then keeps the perf events' switch records. The scan reads outside
 * data and is fuzzed (tests/fuzz/fuzz_btf.c). Writer thread only.
 */
#include "sampler-private.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define BTF_PATH "/sys/kernel/btf/vmlinux"
#define BTF_MAGIC 0xeB9F
#define KIND_PTR 2
#define KIND_STRUCT 4
#define KIND_TYPEDEF 8      /* then VOLATILE, CONST, RESTRICT: 9 to 11 */
#define KIND_FUNC_PROTO 13

struct btf_hdr {
	uint16_t magic;
	uint8_t version, flags;
	uint32_t hdr_len, type_off, type_len, str_off, str_len;
};

/* Bytes that follow a type's 12-byte head, by kind (include/uapi/linux/btf.h):
 * -1 for a kind this code does not know, whose size it cannot skip. */
static long extra_bytes(uint32_t kind, uint32_t vlen)
{
	switch (kind) {
	case 1: return 4;                  /* INT */
	case 3: return 12;                 /* ARRAY */
	case 4: case 5: return 12l * vlen; /* STRUCT, UNION: members */
	case 6: return 8l * vlen;          /* ENUM */
	case 13: return 8l * vlen;         /* FUNC_PROTO: params */
	case 14: return 4;                 /* VAR */
	case 15: return 12l * vlen;        /* DATASEC */
	case 17: return 4;                 /* DECL_TAG */
	case 19: return 12l * vlen;        /* ENUM64 */
	case 2: case 7: case 8: case 9: case 10: case 11: case 12: case 16: case 18:
		return 0;                  /* PTR, FWD, TYPEDEF, modifiers, FUNC, FLOAT, TYPE_TAG */
	}
	return -1;
}

/* The members' byte offsets in the STRUCT at t (vlen members), -1 when absent
 * or a bitfield. The state is `__state` (Linux 5.14 on) or `state`. */
static void members(const unsigned char *t, uint32_t info, const char *str, uint32_t str_len,
		    struct ss_btf_task *o)
{
	uint32_t vlen = info & 0xffff;
	for (uint32_t i = 0; i < vlen; i++) {
		const unsigned char *m = t + 12 + 12 * (size_t)i;
		uint32_t name, off;
		memcpy(&name, m, 4);
		memcpy(&off, m + 8, 4);
		if (info >> 31) { /* kind_flag: a bitfield's size in the top byte */
			if (off >> 24)
				continue;
			off &= 0xffffff;
		}
		if (name >= str_len || off % 8)
			continue;
		const char *s = str + name;
		size_t room = str_len - name;
		if (strnlen(s, room) == room)
			continue;
		if (!strcmp(s, "pid"))
			o->pid = off / 8;
		else if (!strcmp(s, "tgid"))
			o->tgid = off / 8;
		else if (!strcmp(s, "__state") || !strcmp(s, "state"))
			o->state = off / 8;
	}
}

/* The image's types and strings, checked to lie inside its n bytes. */
struct btf_view {
	const unsigned char *t0, *end;
	const char *str;
	uint32_t str_len;
};

static int view(const unsigned char *b, size_t n, struct btf_view *v, char *why, size_t len)
{
	struct btf_hdr h;
	if (n < sizeof h) {
		snprintf(why, len, BTF_PATH ": %zu bytes, not BTF", n);
		return -EINVAL;
	}
	memcpy(&h, b, sizeof h);
	if (h.magic != BTF_MAGIC || h.hdr_len < sizeof h ||
	    (uint64_t)h.hdr_len + h.type_off + h.type_len > n ||
	    (uint64_t)h.hdr_len + h.str_off + h.str_len > n) {
		snprintf(why, len, BTF_PATH ": not BTF of this byte order");
		return -EINVAL;
	}
	v->t0 = b + h.hdr_len + h.type_off;
	v->end = v->t0 + h.type_len;
	v->str = (const char *)b + h.hdr_len + h.str_off;
	v->str_len = h.str_len;
	return 0;
}

static uint32_t kind_of(uint32_t info)
{
	return (info >> 24) & 0x1f;
}

/* The type at t: its name, info and the bytes it takes; 0 at the end of the
 * section, -1 for a kind not understood or cut short. */
static long type_at(const struct btf_view *v, const unsigned char *t, uint32_t *name, uint32_t *info)
{
	if (v->end - t < 12)
		return 0;
	memcpy(name, t, 4);
	memcpy(info, t + 4, 4);
	long extra = extra_bytes(kind_of(*info), *info & 0xffff);
	return extra < 0 || v->end - t - 12 < extra ? -1 : 12 + extra;
}

static int named(const struct btf_view *v, uint32_t name, const char *s)
{
	size_t n = strlen(s) + 1;
	return name < v->str_len && v->str_len - name >= n && memcmp(v->str + name, s, n) == 0;
}

SS_INTERNAL int ss_btf_scan(const unsigned char *b, size_t n, struct ss_btf_task *o, char *why, size_t len)
{
	struct btf_view v;
	int r = view(b, n, &v, why, len);
	if (r)
		return r;
	uint32_t name, info;
	long sz;
	for (const unsigned char *t = v.t0; (sz = type_at(&v, t, &name, &info)) > 0; t += sz) {
		/* task_struct has hundreds of members: a cheap test before the name's */
		if (kind_of(info) == KIND_STRUCT && (info & 0xffff) >= 8 && named(&v, name, "task_struct")) {
			o->pid = o->tgid = o->state = -1;
			members(t, info, v.str, v.str_len, o);
			if (o->pid < 0 || o->tgid < 0) {
				snprintf(why, len, BTF_PATH ": struct task_struct without byte-aligned "
					 "pid and tgid");
				return -ENOENT;
			}
			return 0;
		}
	}
	if (sz < 0) {
		snprintf(why, len, BTF_PATH ": type kind %u not understood", kind_of(info));
		return -EINVAL;
	}
	snprintf(why, len, BTF_PATH ": no struct task_struct");
	return -ENOENT;
}

/* The type whose id is id (the section's first is 1), NULL where none is. */
static const unsigned char *type_by_id(const struct btf_view *v, uint32_t id, uint32_t *info)
{
	uint32_t name, i = 1;
	long sz;
	for (const unsigned char *t = v->t0; (sz = type_at(v, t, &name, info)) > 0; t += sz, i++)
		if (i == id)
			return t;
	return NULL;
}

SS_INTERNAL int ss_btf_tp_args(const unsigned char *b, size_t n, const char *tp)
{
	struct btf_view v;
	char why[8], want[96];
	if (view(b, n, &v, why, sizeof why) != 0)
		return -1;
	snprintf(want, sizeof want, "btf_trace_%s", tp);
	uint32_t name, info, id = 0;
	long sz;
	for (const unsigned char *t = v.t0; !id && (sz = type_at(&v, t, &name, &info)) > 0; t += sz)
		if (kind_of(info) == KIND_TYPEDEF && named(&v, name, want))
			memcpy(&id, t + 8, 4);
	/* typedef -> pointer (maybe through modifiers) -> FUNC_PROTO(void *, args) */
	for (int hop = 0; id && hop < 8; hop++) {
		const unsigned char *t = type_by_id(&v, id, &info);
		uint32_t kind = t ? kind_of(info) : 0;
		if (kind == KIND_FUNC_PROTO)
			return (info & 0xffff) ? (int)(info & 0xffff) - 1 : -1;
		if (kind != KIND_PTR && kind != KIND_TYPEDEF && (kind < 9 || kind > 11))
			return -1;
		memcpy(&id, t + 8, 4);
	}
	return -1;
}

/* Once per process: the kernel does not change under it. */
static int looked, rc_saved;
static struct ss_btf_task task_saved = { -1, -1, -1 };
static char why_saved[160];
static int sched_switch_args = -1;

static void look(void)
{
	looked = 1;
	int fd = open(BTF_PATH, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		rc_saved = -errno;
		snprintf(why_saved, sizeof why_saved, BTF_PATH ": %s", ss_errno_name(-rc_saved));
		if (fd >= 0)
			close(fd);
		return;
	}
	size_t n = (size_t)st.st_size;
	if (!n) {
		close(fd);
		rc_saved = -ENODATA;
		snprintf(why_saved, sizeof why_saved, BTF_PATH ": empty");
		return;
	}
	void *map = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
	unsigned char *buf = NULL;
	if (map == MAP_FAILED) {
		/* Kernels before 6.16 do not map it: read it whole. */
		buf = malloc(n);
		size_t got = 0;
		for (ssize_t r = 1; buf && got < n && r > 0; got += r > 0 ? (size_t)r : 0)
			r = pread(fd, buf + got, n - got, (off_t)got);
		n = buf ? got : 0;
	}
	close(fd);
	const unsigned char *b = map != MAP_FAILED ? map : buf;
	if (!b) {
		rc_saved = -ENOMEM;
		snprintf(why_saved, sizeof why_saved, BTF_PATH ": out of memory");
	} else {
		rc_saved = ss_btf_scan(b, n, &task_saved, why_saved, sizeof why_saved);
		sched_switch_args = ss_btf_tp_args(b, n, "sched_switch");
	}
	if (map != MAP_FAILED)
		munmap(map, (size_t)st.st_size);
	free(buf);
}

SS_INTERNAL int ss_btf_task(struct ss_btf_task *o, char *why, size_t len)
{
	if (!looked)
		look();
	*o = task_saved;
	if (rc_saved)
		snprintf(why, len, "%s", why_saved);
	return rc_saved;
}

SS_INTERNAL int ss_btf_sched_switch_args(void)
{
	if (!looked)
		look();
	return sched_switch_args;
}

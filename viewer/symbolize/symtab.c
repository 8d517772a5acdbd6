/*
 * symtab.c - see symtab.h.
 */
#include "symtab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "segment_format.h"

void ss_symtab_clear(struct ss_symtab *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free(t->v[i].function);
		free(t->v[i].file);
		free(t->v[i].mangled);
	}
	free(t->v);
	ss_hmap_free(&t->index);
	ss_hmap_free(&t->levels);
	memset(t, 0, sizeof *t);
}

struct cur {
	const uint8_t *p;
	size_t left;
	bool bad;
};

static uint64_t get_v(struct cur *c)
{
	uint64_t v = 0;
	size_t n = c->bad ? 0 : ss_get_varint(c->p, c->left, &v);
	if (!n) {
		c->bad = true;
		return 0;
	}
	c->p += n;
	c->left -= n;
	return v;
}

static char *get_s(struct cur *c)
{
	uint64_t n = get_v(c);
	if (c->bad || n > c->left) {
		c->bad = true;
		return NULL;
	}
	char *s = strndup((const char *)c->p, (size_t)n);
	c->p += n;
	c->left -= (size_t)n;
	return s;
}

static void parse(struct ss_symtab *t, const uint8_t *p, size_t len)
{
	struct cur c = { p, len, false };
	while (c.left && !c.bad) {
		uint8_t type = *c.p;
		c.p++, c.left--;
		if (type < 0x40)
			return; /* only length-prefixed records belong in a symbol block */
		uint64_t blen = get_v(&c);
		if (c.bad || blen > c.left)
			return;
		struct cur body = { c.p, (size_t)blen, false };
		c.p += blen;
		c.left -= (size_t)blen;
		if (type != SS_REC_SYMBOL)
			continue;
		uint64_t addr = get_v(&body), depth = get_v(&body), line = get_v(&body);
		char *fn = get_s(&body), *file = get_s(&body);
		/* Appended later (FORMAT.md): older tables end here. */
		char *mangled = !body.bad && body.left ? get_s(&body) : NULL;
		int rc = body.bad ? 0 : ss_symtab_add(t, addr, depth, line, fn, file, mangled);
		free(fn);
		free(file);
		free(mangled);
		if (rc != 0)
			return;
	}
}

int ss_symtab_add(struct ss_symtab *t, uint64_t addr, uint64_t depth, uint64_t line, const char *function,
		  const char *file, const char *mangled)
{
	if (depth >= SS_SYM_MAX_INLINE)
		return 0;
	if (t->n == t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 256;
		struct ss_symtab_entry *nv = realloc(t->v, nc * sizeof *nv);
		if (!nv)
			return -1;
		t->v = nv;
		t->cap = nc;
	}
	if (mangled && !mangled[0])
		mangled = NULL;
	char *fn = function ? strdup(function) : NULL, *fl = file ? strdup(file) : NULL;
	char *mg = mangled ? strdup(mangled) : NULL;
	if ((function && !fn) || (file && !fl) || (mangled && !mg) || ss_hmap_put(&t->index, addr, depth, t->n) != 0) {
		free(fn);
		free(fl);
		free(mg);
		return -1;
	}
	t->v[t->n] = (struct ss_symtab_entry){ fn, fl, mg, line > UINT32_MAX ? 0 : (uint32_t)line };
	uint64_t lv = 0;
	ss_hmap_get(&t->levels, addr, 0, &lv);
	if (depth + 1 > lv)
		ss_hmap_put(&t->levels, addr, 0, depth + 1);
	t->n++;
	return 0;
}

size_t ss_symtab_load(struct ss_symtab *t, ss_symtab_read_fn rd, void *ctx, uint64_t first_block)
{
	ss_symtab_clear(t);
	uint64_t off = first_block, last_events = UINT64_MAX;
	struct ss_block_header bh, last = { 0 };
	/* Walk the headers only; a damaged one ends the walk (no table then). */
	for (int i = 0; i < 1 << 20; i++) {
		if (rd(ctx, off, &bh, sizeof bh) != 0 || ss_block_header_check(&bh) != NULL)
			return 0;
		if (bh.kind == SS_BLOCK_FOOTER)
			break;
		if (bh.kind == SS_BLOCK_EVENTS) {
			last_events = off;
			last = bh;
		}
		off += sizeof bh + bh.payload_len;
	}
	if (last_events == UINT64_MAX || last.flags != 0 || last.payload_len == 0 ||
	    last.payload_len > SS_MAX_BLOCK_PAYLOAD)
		return 0;
	uint8_t first;
	if (rd(ctx, last_events + sizeof last, &first, 1) != 0 || first != SS_REC_SYMBOL)
		return 0;
	uint8_t *p = malloc(last.payload_len);
	if (!p)
		return 0;
	if (rd(ctx, last_events + sizeof last, p, last.payload_len) == 0 &&
	    ss_crc32c(0, p, last.payload_len) == last.payload_crc)
		parse(t, p, last.payload_len);
	free(p);
	return t->n;
}

bool ss_symtab_lookup(const struct ss_symtab *t, uint64_t address, struct ss_sym_result *out)
{
	uint64_t levels, idx;
	if (!ss_hmap_get(&t->levels, address, 0, &levels) || levels == 0)
		return false;
	memset(out, 0, sizeof *out);
	out->n = (size_t)levels;
	for (uint64_t d = 0; d < levels; d++) {
		struct ss_sym_frame *f = &out->f[d];
		if (!ss_hmap_get(&t->index, address, d, &idx))
			continue;
		snprintf(f->function, sizeof f->function, "%s", t->v[idx].function ? t->v[idx].function : "");
		snprintf(f->mangled, sizeof f->mangled, "%s", t->v[idx].mangled ? t->v[idx].mangled : "");
		snprintf(f->file, sizeof f->file, "%s", t->v[idx].file ? t->v[idx].file : "");
		f->line = (int)t->v[idx].line;
		/* A table written before names were demangled holds them mangled. */
		ss_sym_readable(f);
	}
	snprintf(out->note, sizeof out->note, "from the segment's symbol table");
	return true;
}

static int put_v(uint8_t *p, size_t *n, uint64_t v)
{
	*n += ss_put_varint(p + *n, v);
	return 0;
}

int ss_symtab_put(uint8_t **buf, size_t *len, size_t *cap, uint64_t address, uint64_t depth,
		  uint64_t line, const char *function, const char *file, const char *mangled)
{
	size_t fl = function ? strlen(function) : 0, sl = file ? strlen(file) : 0;
	size_t ml = mangled ? strlen(mangled) : 0;
	size_t body = 60 + fl + sl + ml, need = *len + body + 11;
	if (need > *cap) {
		size_t nc = *cap ? *cap : 4096;
		while (nc < need)
			nc *= 2;
		uint8_t *nb = realloc(*buf, nc);
		if (!nb)
			return -1;
		*buf = nb;
		*cap = nc;
	}
	uint8_t tmp[64];
	size_t n = 0;
	put_v(tmp, &n, address);
	put_v(tmp, &n, depth);
	put_v(tmp, &n, line);
	size_t blen = n + (size_t)ss_put_varint((uint8_t[10]){ 0 }, fl) + fl +
		      (size_t)ss_put_varint((uint8_t[10]){ 0 }, sl) + sl +
		      (ml ? (size_t)ss_put_varint((uint8_t[10]){ 0 }, ml) + ml : 0);
	uint8_t *p = *buf + *len;
	size_t k = 0;
	p[k++] = SS_REC_SYMBOL;
	k += ss_put_varint(p + k, blen);
	memcpy(p + k, tmp, n);
	k += n;
	k += ss_put_varint(p + k, fl);
	memcpy(p + k, function ? function : "", fl);
	k += fl;
	k += ss_put_varint(p + k, sl);
	memcpy(p + k, file ? file : "", sl);
	k += sl;
	if (ml) {
		k += ss_put_varint(p + k, ml);
		memcpy(p + k, mangled, ml);
		k += ml;
	}
	*len += k;
	return 0;
}

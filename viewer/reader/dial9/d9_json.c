/*
 * d9_json.c - an event's fields as a JSON object (d9_event_json, see
 * d9_reader.h), for events a consumer keeps as they are. Nested lists and maps
 * are rendered from their bytes, which the decoder has already checked; the
 * bounds are checked again here all the same.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "d9_reader.h"

uint64_t d9_pool_string(const void *priv, uint32_t id);
uint64_t d9_pool_stack(const void *priv, uint32_t id);

void d9_buf_free(struct d9_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof *b);
}

void d9_buf_put(struct d9_buf *b, const char *s, size_t n)
{
	if (!b || b->failed)
		return;
	if (b->len + n + 1 > D9_MAX_JSON) {
		b->failed = true;
		return;
	}
	if (b->len + n + 1 > b->cap) {
		size_t nc = b->cap ? b->cap * 2 : 256;
		while (nc < b->len + n + 1)
			nc *= 2;
		char *np = realloc(b->p, nc);
		if (!np) {
			b->failed = true;
			return;
		}
		b->p = np;
		b->cap = nc;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
}

static void put(struct d9_buf *b, const char *s, size_t n)
{
	d9_buf_put(b, s, n);
}

static void puts_(struct d9_buf *b, const char *s)
{
	put(b, s, strlen(s));
}

__attribute__((format(printf, 2, 3))) static void putf(struct d9_buf *b, const char *fmt, ...)
{
	char tmp[64];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (n > 0)
		put(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* Length of the valid UTF-8 sequence at s (0: invalid). */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t k;
	uint32_t cp;
	if (c < 0x80)
		return 1;
	if ((c & 0xe0) == 0xc0) {
		k = 2;
		cp = c & 0x1f;
	} else if ((c & 0xf0) == 0xe0) {
		k = 3;
		cp = c & 0x0f;
	} else if ((c & 0xf8) == 0xf0) {
		k = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (k > n)
		return 0;
	for (size_t i = 1; i < k; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	static const uint32_t min[5] = { 0, 0, 0x80, 0x800, 0x10000 };
	if (cp < min[k] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return k;
}

void d9_json_string(struct d9_buf *b, const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;
	put(b, "\"", 1);
	size_t run = 0;
	for (size_t i = 0; i < len && !b->failed;) {
		unsigned char c = s[i];
		size_t k = c >= 0x20 && c != '"' && c != '\\' ? utf8_len(s + i, len - i) : 0;
		if (k) {
			i += k;
			run += k;
			continue;
		}
		put(b, (const char *)s + i - run, run);
		run = 0;
		if (c == '"' || c == '\\') {
			char e[2] = { '\\', (char)c };
			put(b, e, 2);
			i++;
		} else if (c < 0x20) {
			putf(b, "\\u%04x", c);
			i++;
		} else {
			puts_(b, "\\ufffd");
			i++;
		}
	}
	put(b, (const char *)s + len - run, run);
	put(b, "\"", 1);
}

static void string_id(struct d9_buf *b, struct d9_reader *r, uint64_t id)
{
	size_t len;
	const char *s = id ? d9_string(r, (uint32_t)id, &len) : NULL;
	if (s)
		d9_json_string(b, s, len);
	else
		puts_(b, "null");
}

static void addresses(struct d9_buf *b, const uint64_t *a, size_t n)
{
	put(b, "[", 1);
	for (size_t i = 0; i < n; i++)
		putf(b, "%s\"0x%llx\"", i ? "," : "", (unsigned long long)a[i]);
	put(b, "]", 1);
}

static void stack_id(struct d9_buf *b, struct d9_reader *r, uint64_t id)
{
	size_t n;
	const uint64_t *a = id ? d9_stack(r, (uint32_t)id, &n) : NULL;
	if (a)
		addresses(b, a, n);
	else
		puts_(b, "null");
}

static void number(struct d9_buf *b, uint8_t t, uint64_t u)
{
	if (t == D9_I64) {
		putf(b, "%lld", (long long)u);
	} else if (t == D9_F64) {
		double f;
		memcpy(&f, &u, sizeof f);
		if (isfinite(f))
			putf(b, "%.17g", f);
		else
			puts_(b, "null");
	} else if (t == D9_BOOL) {
		puts_(b, u ? "true" : "false");
	} else {
		putf(b, "%llu", (unsigned long long)u);
	}
}

static void hex(struct d9_buf *b, const uint8_t *p, size_t n)
{
	put(b, "\"", 1);
	for (size_t i = 0; i < n; i++)
		putf(b, "%02x", p[i]);
	put(b, "\"", 1);
}

static void string_map(struct d9_buf *b, const uint8_t *p, size_t len, uint32_t count)
{
	put(b, "{", 1);
	size_t at = 0;
	for (uint32_t i = 0; i < count; i++) {
		for (int kv = 0; kv < 2; kv++) {
			uint32_t n = len - at >= 4 ? d9_le32(p + at) : UINT32_MAX;
			if (len - at < 4 || n > len - at - 4) {
				if (kv)
					puts_(b, ":null");
				put(b, "}", 1);
				return;
			}
			if (kv)
				put(b, ":", 1);
			else if (i)
				put(b, ",", 1);
			d9_json_string(b, (const char *)p + at + 4, n);
			at += 4 + (size_t)n;
		}
	}
	put(b, "}", 1);
}

/* One nested value of type t at p + *at (end: the container's end). b NULL:
 * only walked. Returns false when the bytes do not fit. */
static bool nested(struct d9_buf *b, struct d9_reader *r, const void *priv, uint8_t t, const uint8_t *p,
		   size_t end, size_t *at, int depth)
{
	size_t left = end - *at;
	const uint8_t *q = p + *at;
	switch (t) {
	case D9_I64:
	case D9_F64:
		if (left < 8)
			return false;
		if (b)
			number(b, t, d9_le64(q));
		*at += 8;
		return true;
	case D9_BOOL:
	case D9_U8:
		if (left < 1)
			return false;
		if (b)
			number(b, t, q[0]);
		*at += 1;
		return true;
	case D9_U16:
		if (left < 2)
			return false;
		if (b)
			number(b, t, d9_le16(q));
		*at += 2;
		return true;
	case D9_U32:
		if (left < 4)
			return false;
		if (b)
			number(b, t, d9_le32(q));
		*at += 4;
		return true;
	case D9_VARINT: {
		uint64_t v = 0;
		for (unsigned i = 0, shift = 0;; i++, shift += 7) {
			if (i >= left || i >= 10)
				return false;
			v |= (uint64_t)(q[i] & 0x7f) << (shift < 64 ? shift : 63);
			if (!(q[i] & 0x80)) {
				*at += i + 1;
				break;
			}
		}
		if (b)
			number(b, t, v);
		return true;
	}
	case D9_STRING:
	case D9_BYTES:
	case D9_STRING_MAP:
	case D9_STACK: {
		if (left < 4)
			return false;
		uint32_t n = d9_le32(q);
		size_t bytes = n;
		if (t == D9_STACK)
			bytes = (size_t)n * 8;
		if (t == D9_STRING_MAP) {
			/* walk the pairs for the length */
			size_t k = 4;
			for (uint64_t i = 0; i < (uint64_t)n * 2; i++) {
				if (left - k < 4 || d9_le32(q + k) > left - k - 4)
					return false;
				k += 4 + (size_t)d9_le32(q + k);
			}
			if (b)
				string_map(b, q + 4, k - 4, n);
			*at += k;
			return true;
		}
		if (bytes > left - 4)
			return false;
		if (b) {
			if (t == D9_STRING) {
				d9_json_string(b, (const char *)q + 4, n);
			} else if (t == D9_BYTES) {
				hex(b, q + 4, n);
			} else {
				put(b, "[", 1);
				for (uint32_t i = 0; i < n; i++)
					putf(b, "%s\"0x%llx\"", i ? "," : "", (unsigned long long)d9_le64(q + 4 + (size_t)i * 8));
				put(b, "]", 1);
			}
		}
		*at += 4 + bytes;
		return true;
	}
	case D9_POOLED_STRING:
	case D9_POOLED_STACK:
		if (left < 4)
			return false;
		if (b) {
			uint32_t id = d9_le32(q);
			if (t == D9_POOLED_STRING)
				string_id(b, r, d9_pool_string(priv, id));
			else
				stack_id(b, r, d9_pool_stack(priv, id));
		}
		*at += 4;
		return true;
	case D9_LIST:
	case D9_MAP: {
		if (left < 4 || depth >= D9_MAX_NEST)
			return false;
		uint32_t n = d9_le32(q);
		size_t start = *at + 4, k = start;
		bool string_keys = true;
		if (t == D9_MAP) {
			/* An object when every key is a string. */
			for (uint32_t i = 0; i < n && string_keys; i++) {
				if (k >= end)
					return false;
				uint8_t kt = p[k] & (uint8_t)~D9_OPTIONAL;
				string_keys = kt == D9_STRING || kt == D9_POOLED_STRING;
				k++;
				if (!nested(NULL, r, priv, kt, p, end, &k, depth + 1) || k >= end)
					return false;
				uint8_t vt = p[k++] & (uint8_t)~D9_OPTIONAL;
				if (!nested(NULL, r, priv, vt, p, end, &k, depth + 1))
					return false;
			}
			k = start;
		}
		put(b, t == D9_LIST || !string_keys ? "[" : "{", 1);
		for (uint32_t i = 0; i < n; i++) {
			if (i)
				put(b, ",", 1);
			for (int kv = 0; kv < (t == D9_MAP ? 2 : 1); kv++) {
				if (k >= end)
					return false;
				uint8_t et = p[k++] & (uint8_t)~D9_OPTIONAL;
				if (t == D9_MAP && kv == 0 && !string_keys)
					put(b, "[", 1);
				if (kv == 1)
					put(b, string_keys ? ":" : ",", 1);
				if (kv == 0 && string_keys && et == D9_POOLED_STRING && k + 4 <= end &&
				    !d9_pool_string(priv, d9_le32(p + k))) {
					put(b, "\"\"", 2); /* an unresolved key: still an object */
					k += 4;
					continue;
				}
				if (!nested(b, r, priv, et, p, end, &k, depth + 1))
					return false;
				if (t == D9_MAP && kv == 1 && !string_keys)
					put(b, "]", 1);
			}
		}
		put(b, t == D9_LIST || !string_keys ? "]" : "}", 1);
		*at = k;
		return true;
	}
	default:
		return false;
	}
}

int d9_event_json(struct d9_reader *r, const struct d9_event *e, struct d9_buf *b)
{
	b->len = 0;
	b->failed = false;
	put(b, "{", 1);
	const struct d9_schema *s = e->schema;
	for (uint16_t i = 0; i < s->n_fields && !b->failed; i++) {
		const struct d9_value *v = &e->v[i];
		if (i)
			put(b, ",", 1);
		d9_json_string(b, s->fields[i].name, s->fields[i].name_len);
		put(b, ":", 1);
		switch (v->type) {
		case 0:
			puts_(b, "null");
			break;
		case D9_STRING:
			d9_json_string(b, (const char *)v->p, v->len);
			break;
		case D9_BYTES:
			hex(b, v->p, v->len);
			break;
		case D9_POOLED_STRING:
			string_id(b, r, v->u);
			break;
		case D9_POOLED_STACK:
			stack_id(b, r, v->u);
			break;
		case D9_STACK:
			put(b, "[", 1);
			for (uint32_t k = 0; k < v->count; k++)
				putf(b, "%s\"0x%llx\"", k ? "," : "", (unsigned long long)d9_le64(v->p + (size_t)k * 8));
			put(b, "]", 1);
			break;
		case D9_STRING_MAP:
			string_map(b, v->p, v->len, v->count);
			break;
		case D9_LIST:
		case D9_MAP: {
			/* Rendered from the bytes, count prefix included. */
			size_t at = 0, walk = 0;
			const uint8_t *start = v->p - 4;
			if (nested(NULL, r, e->priv, v->type, start, (size_t)v->len + 4, &walk, 0))
				nested(b, r, e->priv, v->type, start, (size_t)v->len + 4, &at, 0);
			else
				puts_(b, "null");
			break;
		}
		default:
			number(b, v->type, v->u);
			break;
		}
	}
	put(b, "}", 1);
	return b->failed ? -1 : 0;
}

/*
 * tl_canvas.c - see tl_canvas.h.
 *
 * The buffer is opaque RGB, three bytes a pixel (GDK_MEMORY_R8G8B8): the lanes
 * sit on the window background, and of the formats GTK 4.8's cairo renderer can
 * draw, this is the one it copies without a per-pixel float conversion (3 ms
 * for a 1600x900 window on this machine, against 14 ms for premultiplied BGRA
 * and 10 ms for a cairo node holding an image surface).
 */
#include "tl_canvas.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A colour ready to paint: premultiplied channels and 255 - alpha. */
struct paint {
	uint8_t r, g, b, ia;
};

static inline uint8_t to8(double v)
{
	return (uint8_t)(v <= 0 ? 0 : v >= 1 ? 255 : (int)(v * 255 + 0.5));
}

static struct paint paint_of(const GdkRGBA *c, double coverage)
{
	double a = c->alpha * coverage;
	a = a <= 0 ? 0 : a >= 1 ? 1 : a;
	struct paint p = { to8(c->red * a), to8(c->green * a), to8(c->blue * a), (uint8_t)(255 - to8(a)) };
	return p;
}

/* x * ia / 255, rounded. */
static inline uint8_t scale8(uint8_t x, uint8_t ia)
{
	unsigned t = (unsigned)x * ia + 128;
	return (uint8_t)((t + (t >> 8)) >> 8);
}

/* One pixel: the colour, or the colour over what is there. */
static inline void put(uint8_t *q, struct paint p)
{
	if (p.ia == 0) {
		q[0] = p.r;
		q[1] = p.g;
		q[2] = p.b;
	} else {
		q[0] = (uint8_t)(p.r + scale8(q[0], p.ia));
		q[1] = (uint8_t)(p.g + scale8(q[1], p.ia));
		q[2] = (uint8_t)(p.b + scale8(q[2], p.ia));
	}
}

static void span(uint8_t *row, int x0, int x1, struct paint p)
{
	uint8_t *q = row + (size_t)x0 * 3, *end = row + (size_t)x1 * 3;
	if (q >= end)
		return;
	if (p.ia == 0) {
		/* One pixel, then copies of what is written, doubling each time. */
		q[0] = p.r;
		q[1] = p.g;
		q[2] = p.b;
		size_t have = 3, want = (size_t)(end - q);
		while (have < want) {
			size_t n = have < want - have ? have : want - have;
			memcpy(q + have, q, n);
			have += n;
		}
	} else {
		for (; q < end; q += 3)
			put(q, p);
	}
}

/* One pixel column of rows rows from q down: most of a zoomed-out frame's
 * rectangles are one pixel wide, and a call per row cost more than the
 * pixels. */
static void column(uint8_t *q, size_t stride, long rows, struct paint p)
{
	for (long i = 0; i < rows; i++, q += stride)
		put(q, p);
}

/* One buffer per thread is kept between frames (returned when GTK drops the
 * texture): a fresh multi-megabyte allocation per frame costs more in page
 * faults than filling it. A buffer's capacity is stored in front of its pixels. */
#define HEAD 16
static _Thread_local uint8_t *spare; /* the pixels of the kept buffer */

static size_t capacity(const uint8_t *px)
{
	size_t cap;
	memcpy(&cap, px - HEAD, sizeof cap);
	return cap;
}

static uint8_t *take(size_t len)
{
	if (spare && capacity(spare) >= len && capacity(spare) <= 2 * len) {
		uint8_t *p = spare;
		spare = NULL;
		return p;
	}
	uint8_t *base = malloc(HEAD + len);
	if (!base)
		return NULL;
	memcpy(base, &len, sizeof len);
	return base + HEAD;
}

static void give_back(uint8_t *px)
{
	if (!spare || capacity(spare) < capacity(px)) {
		if (spare)
			free(spare - HEAD);
		spare = px;
	} else {
		free(px - HEAD);
	}
}

bool tl_canvas_init(struct tl_canvas *c, int x, int y, int w, int h, int scale, const GdkRGBA *bg)
{
	c->x = x;
	c->y = y;
	c->w = w > 0 ? w : 0;
	c->h = h > 0 ? h : 0;
	c->scale = scale > 0 ? scale : 1;
	c->pw = c->w * c->scale;
	c->ph = c->h * c->scale;
	c->len = (size_t)c->pw * (size_t)c->ph * 3;
	c->have_last = false;
	c->px = c->len ? take(c->len) : NULL;
	if (!c->px) {
		c->pw = c->ph = 0;
		return false;
	}
	GdkRGBA opaque = *bg;
	opaque.alpha = 1;
	struct paint p = paint_of(&opaque, 1);
	span(c->px, 0, c->pw, p);
	for (int yy = 1; yy < c->ph; yy++)
		memcpy(c->px + (size_t)yy * (size_t)c->pw * 3, c->px, (size_t)c->pw * 3);
	return true;
}

_Static_assert(sizeof(struct paint) == sizeof ((struct tl_canvas *)0)->last_paint, "a paint is 4 bytes");

/* paint_of(col, 1), from the one-entry cache when col is the last colour. */
static struct paint full_paint(struct tl_canvas *c, const GdkRGBA *col)
{
	struct paint p;
	if (c->have_last && memcmp(&c->last, col, sizeof *col) == 0) {
		memcpy(&p, c->last_paint, sizeof p);
		return p;
	}
	p = paint_of(col, 1);
	c->last = *col;
	memcpy(c->last_paint, &p, sizeof p);
	c->have_last = true;
	return p;
}

void tl_canvas_fill(struct tl_canvas *c, const GdkRGBA *col, double x, double y, double w, double h)
{
	if (!c->px || !(w > 0) || !(h > 0) || col->alpha <= 0)
		return;
	double s = c->scale;
	double fx0 = fmax((x - c->x) * s, 0), fx1 = fmin((x + w - c->x) * s, c->pw);
	long y0 = (long)floor((y - c->y) * s + 0.5), y1 = (long)floor((y + h - c->y) * s + 0.5);
	if (y0 < 0)
		y0 = 0;
	if (y1 > c->ph)
		y1 = c->ph;
	if (!(fx1 > fx0) || y1 <= y0)
		return;
	size_t stride = (size_t)c->pw * 3;
	long rows = y1 - y0;
	uint8_t *top = c->px + (size_t)y0 * stride;
	int ix0 = (int)floor(fx0), ix1 = (int)ceil(fx1);
	if (ix1 - ix0 == 1) {
		/* Within one pixel: the colour scaled by the part it covers. */
		column(top + (size_t)ix0 * 3, stride, rows, fx1 - fx0 == 1 ? full_paint(c, col) : paint_of(col, fx1 - fx0));
		return;
	}
	/* Whole pixels from in0 to in1, and partly covered edge pixels. */
	int in0 = (int)ceil(fx0), in1 = (int)floor(fx1);
	if (ix0 < in0)
		column(top + (size_t)ix0 * 3, stride, rows, paint_of(col, in0 - fx0));
	if (in1 < ix1)
		column(top + (size_t)in1 * 3, stride, rows, paint_of(col, fx1 - in1));
	if (in1 <= in0)
		return;
	struct paint full = full_paint(c, col);
	if (in1 - in0 <= 4) {
		for (int xx = in0; xx < in1; xx++)
			column(top + (size_t)xx * 3, stride, rows, full);
	} else if (full.ia == 0) {
		/* Opaque: the first row, then copies of it. */
		size_t off = (size_t)in0 * 3, n = (size_t)(in1 - in0) * 3;
		span(top, in0, in1, full);
		for (long yy = 1; yy < rows; yy++)
			memcpy(top + (size_t)yy * stride + off, top + off, n);
	} else {
		for (long yy = 0; yy < rows; yy++)
			span(top + (size_t)yy * stride, in0, in1, full);
	}
}

static void release_bytes(gpointer data)
{
	give_back(data);
}

void tl_canvas_append(struct tl_canvas *c, GtkSnapshot *s)
{
	if (!c->px)
		return;
	GBytes *b = g_bytes_new_with_free_func(c->px, c->len, release_bytes, c->px);
	c->px = NULL;
	GdkTexture *t = gdk_memory_texture_new(c->pw, c->ph, GDK_MEMORY_R8G8B8, b, (gsize)c->pw * 3);
	g_bytes_unref(b);
	gtk_snapshot_append_texture(s, t, &GRAPHENE_RECT_INIT((float)c->x, (float)c->y, (float)c->w, (float)c->h));
	g_object_unref(t);
}

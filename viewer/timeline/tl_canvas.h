/*
 * tl_canvas.h - a software raster for the lanes' rectangles.
 *
 * A zoomed-out frame has tens of thousands of one-pixel rectangles (a column
 * per pixel per lane for busy, parked and CPU state). As GSK colour nodes each
 * one is an allocation and, in the cairo renderer, a pixman call: 30-40 ms a
 * frame on a 1600 px wide window. Filling them into a pixel buffer here and
 * handing GSK one texture costs a few milliseconds, in both renderers.
 *
 * Coordinates are logical pixels of the widget; the buffer holds scale device
 * pixels per logical one, so HiDPI output stays sharp. Rectangle edges that fall
 * inside a pixel horizontally are blended by coverage (as cairo would draw the
 * colour node); vertical edges are rounded, since the layout's are integers.
 */
#ifndef STALLSCOPE_TL_CANVAS_H
#define STALLSCOPE_TL_CANVAS_H

#include <gtk/gtk.h>
#include <stdint.h>

struct tl_canvas {
	int x, y, w, h;   /* the area covered, logical px */
	int scale;
	int pw, ph;       /* buffer size, device px */
	uint8_t *px;      /* opaque RGB, 3 bytes a pixel, rows of pw pixels */
	size_t len;       /* bytes of px in use */
	/* The last colour painted at full coverage and its bytes: most fills
	 * repeat the one before. */
	GdkRGBA last;
	uint8_t last_paint[4];
	bool have_last;
};

/* Covers (x, y, w, h) filled with bg. Returns false when out of memory (then
 * every fill is a no-op and tl_canvas_append draws nothing). A canvas that was
 * set up must be appended: that hands its buffer on. */
bool tl_canvas_init(struct tl_canvas *c, int x, int y, int w, int h, int scale, const GdkRGBA *bg);
/* Paints a rectangle (logical px) over what is there, clipped to the canvas. */
void tl_canvas_fill(struct tl_canvas *c, const GdkRGBA *col, double x, double y, double w, double h);
/* Appends the canvas to s as one node and releases its buffer. */
void tl_canvas_append(struct tl_canvas *c, GtkSnapshot *s);

#endif /* STALLSCOPE_TL_CANVAS_H */

/*
 * tl_palette.h - the timeline's colours: a light and a dark theme, a stable
 * palette for spawn locations (hashed from the location id, so a location keeps
 * its colour across zoom levels, sessions and screenshots) and the duration
 * classes of dial9 (<1 ms, 1-10 ms, 10-50 ms, >50 ms).
 */
#ifndef STALLSCOPE_TL_PALETTE_H
#define STALLSCOPE_TL_PALETTE_H

#include <stdbool.h>
#include <stdint.h>

#include <gdk/gdk.h>

struct tl_theme {
	bool dark;
	GdkRGBA bg, fg, fg_dim, ruler_bg, label_bg, lane_alt, group_bg, grid, separator;
	GdkRGBA park, idle_summary, busy_summary;
	/* The CPU strip: blocked is blocked while a poll runs (loud), idle_off
	 * off CPU outside polls (parked or between them: quiet). */
	GdkRGBA on_cpu, blocked, preempted, idle_off;
	GdkRGBA sample, stall, loss, loss_bg, selection, highlight;
	GdkRGBA match, no_culprit;
};

void tl_theme_init(struct tl_theme *t, bool dark);

/* Colour of a spawn location (id <= 0: unknown location, neutral grey). */
GdkRGBA tl_location_color(int64_t location_id);

/* Colour of a culprit function, hashed from its name like the locations'
 * (NULL: no culprit, the theme's no_culprit). */
GdkRGBA tl_culprit_color(const char *function, const struct tl_theme *t);

/* Duration classes; the thresholds are dial9's. */
enum { TL_DUR_CLASSES = 4 };
int tl_duration_class(int64_t dur_ns);
GdkRGBA tl_duration_color(int dur_class);
const char *tl_duration_class_name(int dur_class);

#endif /* STALLSCOPE_TL_PALETTE_H */

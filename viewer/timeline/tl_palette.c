/*
 * tl_palette.c - theme colours and the location / duration palettes.
 *
 * The location palette has no red: red means "stall" everywhere in the viewer,
 * and a poll must never be mistaken for a stall marker.
 */
#include "tl_palette.h"

#include "thresholds.h"

#include <stdio.h>

static GdkRGBA rgb(unsigned hex)
{
	return (GdkRGBA){ ((hex >> 16) & 255) / 255.f, ((hex >> 8) & 255) / 255.f,
			  (hex & 255) / 255.f, 1.f };
}

static GdkRGBA rgba(unsigned hex, float a)
{
	GdkRGBA c = rgb(hex);
	c.alpha = a;
	return c;
}

void tl_theme_init(struct tl_theme *t, bool dark)
{
	t->dark = dark;
	if (dark) {
		t->bg = rgb(0x1e1e1e);
		t->fg = rgb(0xeeeeee);
		t->fg_dim = rgb(0xa0a0a0);
		t->ruler_bg = rgb(0x2a2a2a);
		t->label_bg = rgb(0x262626);
		t->lane_alt = rgb(0x232323);
		t->group_bg = rgb(0x303030);
		t->grid = rgba(0xffffff, 0.08f);
		t->separator = rgb(0x3a3a3a);
		t->park = rgb(0x6a6a6a);
		t->idle_summary = rgba(0x6a6a6a, 0.6f);
		t->busy_summary = rgb(0x5b8fd9);
		t->on_cpu = rgb(0x43a047);
		t->blocked = rgb(0xff7b1a);
		t->preempted = rgb(0x9c6ade);
		t->idle_off = rgb(0x4a4a4a);
		t->match = rgb(0x3d9bff);
		t->no_culprit = rgb(0x5d6d7e);
		t->sample = rgb(0xd0d0d0);
		t->stall = rgb(0xff3b30);
		t->loss = rgba(0xffcc00, 0.85f);
		t->loss_bg = rgba(0xffcc00, 0.10f);
		t->selection = rgba(0x62a0ea, 0.25f);
		t->highlight = rgb(0xffffff);
	} else {
		t->bg = rgb(0xffffff);
		t->fg = rgb(0x202020);
		t->fg_dim = rgb(0x707070);
		t->ruler_bg = rgb(0xf2f2f2);
		t->label_bg = rgb(0xf6f6f6);
		t->lane_alt = rgb(0xfafafa);
		t->group_bg = rgb(0xe4e4e4);
		t->grid = rgba(0x000000, 0.07f);
		t->separator = rgb(0xd6d6d6);
		t->park = rgb(0xb4b4b4);
		t->idle_summary = rgba(0xb4b4b4, 0.6f);
		t->busy_summary = rgb(0x3c6fc0);
		t->on_cpu = rgb(0x2e9e44);
		t->blocked = rgb(0xf06400);
		t->preempted = rgb(0x8a55d0);
		t->idle_off = rgb(0xd2d2d2);
		t->match = rgb(0x1a73e8);
		t->no_culprit = rgb(0xa9b8c6);
		t->sample = rgb(0x303030);
		t->stall = rgb(0xe01b24);
		t->loss = rgba(0xb08800, 0.9f);
		t->loss_bg = rgba(0xe5a50a, 0.12f);
		t->selection = rgba(0x3584e4, 0.20f);
		t->highlight = rgb(0x000000);
	}
}

/* Twelve hues (Tableau's) that stay apart on both themes; no grey (parks)
 * and no pure red (stalls). */
static const unsigned location_hues[] = {
	0x4e79a7, 0xf28e2b, 0x59a14f, 0xb07aa1, 0x76b7b2, 0xedc948,
	0x9c755f, 0xff9da7, 0x8cd17d, 0xd37295, 0x499894, 0xa0cbe8,
};

/* A 64-bit mix (splitmix64 finaliser), so ids 1, 2, 3 land far apart but a
 * given id always gets the same colour. */
static GdkRGBA hue_of(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return rgb(location_hues[x % (sizeof location_hues / sizeof location_hues[0])]);
}

GdkRGBA tl_location_color(int64_t location_id)
{
	if (location_id <= 0)
		return rgb(0x9a9a9a);
	return hue_of((uint64_t)location_id);
}

GdkRGBA tl_culprit_color(const char *function, const struct tl_theme *t)
{
	if (!function)
		return t->no_culprit;
	uint64_t h = 1469598103934665603ull;
	for (const char *p = function; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	return hue_of(h);
}

/* The long-poll levels of the report's thresholds table (thresholds.h), so a
 * change of the table recolours the lanes; a poll of exactly a level's length
 * takes the colour above it, as the timeline always drew it. A level left out
 * ("off") joins its class to the one below. */
int tl_duration_class(int64_t dur_ns)
{
	const struct ss_threshold *t = &ss_thresholds[SS_TH_LONG_POLL];
	const double lv[3] = { t->info, t->warning, t->critical };
	int cls = 0;
	for (int i = 0; i < 3; i++)
		if (lv[i] != SS_TH_OFF && (double)dur_ns >= lv[i] * 1e6)
			cls = i + 1;
	return cls;
}

GdkRGBA tl_duration_color(int dur_class)
{
	static const unsigned c[TL_DUR_CLASSES] = { 0x57b85f, 0xe8c547, 0xf08c2e, 0xa4286e };
	return rgb(c[dur_class < 0 ? 0 : dur_class >= TL_DUR_CLASSES ? TL_DUR_CLASSES - 1 : dur_class]);
}

/* "< 1 ms", "1-10 ms", "10-50 ms", "> 50 ms" from the long-poll levels. */
const char *tl_duration_class_name(int dur_class)
{
	static char names[TL_DUR_CLASSES][32];
	const struct ss_threshold *t = &ss_thresholds[SS_TH_LONG_POLL];
	const double lv[3] = { t->info, t->warning, t->critical };
	int k = dur_class < 0 ? 0 : dur_class >= TL_DUR_CLASSES ? TL_DUR_CLASSES - 1 : dur_class;
	if (k == 0)
		snprintf(names[k], sizeof names[k], "< %g ms", lv[0]);
	else if (k == 3)
		snprintf(names[k], sizeof names[k], "> %g ms", lv[2]);
	else
		snprintf(names[k], sizeof names[k], "%g-%g ms", lv[k - 1], lv[k]);
	return names[k];
}

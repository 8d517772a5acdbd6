/*
 * test_render.c - renders the fixture headlessly (the --render-png code path)
 * and checks the picture where the data says things are: the lanes, the colour
 * of polls by location and by duration class, parks, the CPU strip, stall
 * markers and lost-data hatching; plus the 1-2-5 tick ladder and formatting.
 * usage: test_render SCHEMA.sql OUTDIR
 */
#include <cairo.h>
#include <sqlite3.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "tl_db.h"
#include "tl_palette.h"
#include "tl_png.h"
#include "tl_ticks.h"
#include "soft_check.h"


struct pic {
	cairo_surface_t *s;
	struct tl_view v;
	struct tl_layout l;
};

static void pixel(const struct pic *p, int x, int y, int rgb[3])
{
	const unsigned char *d = cairo_image_surface_get_data(p->s);
	int stride = cairo_image_surface_get_stride(p->s);
	uint32_t px = *(const uint32_t *)(d + (size_t)y * (size_t)stride + (size_t)x * 4);
	rgb[0] = (px >> 16) & 255;
	rgb[1] = (px >> 8) & 255;
	rgb[2] = px & 255;
}

static bool near(const int rgb[3], GdkRGBA c, int tol)
{
	return abs(rgb[0] - (int)lroundf(c.red * 255)) <= tol && abs(rgb[1] - (int)lroundf(c.green * 255)) <= tol &&
	       abs(rgb[2] - (int)lroundf(c.blue * 255)) <= tol;
}

static int x_of(const struct pic *p, double ms)
{
	return TL_LABEL_W + (int)floor(tl_view_x(&p->v, FX_MS(ms)));
}

static int lane_y(const struct pic *p, int lane)
{
	return tl_view_lane_screen_y(&p->v, &p->l, lane);
}

static void expect(const struct pic *p, const char *what, double ms, int lane, int dy, GdkRGBA c)
{
	int rgb[3];
	int x = x_of(p, ms) + 1, y = lane_y(p, lane) + dy;
	pixel(p, x, y, rgb);
	CHECK(near(rgb, c, 3), "%s at %.1f ms lane %d (%d,%d): got #%02x%02x%02x, want #%02x%02x%02x", what, ms, lane,
	      x, y, rgb[0], rgb[1], rgb[2], (int)lroundf(c.red * 255), (int)lroundf(c.green * 255),
	      (int)lroundf(c.blue * 255));
}

/* Whether the pixel is (or is not) a busy bar: the busy colour at any depth
 * is blue well above red. */
static void expect_bar(const struct pic *p, const char *what, double ms, int lane, int dy, bool want)
{
	int rgb[3];
	int x = x_of(p, ms) + 1, y = lane_y(p, lane) + dy;
	pixel(p, x, y, rgb);
	bool bar = rgb[2] - rgb[0] > 60;
	CHECK(bar == want, "%s at %.1f ms lane %d (%d,%d): #%02x%02x%02x is %sa busy bar", what, ms, lane, x, y, rgb[0],
	      rgb[1], rgb[2], bar ? "" : "not ");
}

static struct pic render(struct tl_db *db, struct tl_png_options *o, const char *png)
{
	struct pic p;
	p.s = tl_png_render_surface(db, o, &p.v);
	tl_layout_compute(&p.l, db);
	if (png)
		cairo_surface_write_to_png(p.s, png);
	return p;
}

static void pic_free(struct pic *p)
{
	cairo_surface_destroy(p->s);
	tl_layout_free(&p->l);
}

static void test_ticks(void)
{
	CHECK(tl_tick_step(1) == 1, "step 1");
	CHECK(tl_tick_step(1000) == 1000, "step 1000 exact");
	CHECK(tl_tick_step(1001) == 2000, "step 1001");
	CHECK(tl_tick_step(2500) == 5000, "step 2500");
	CHECK(tl_tick_step(6e9) == 10000000000, "step 6 s");
	/* The ladder has no gaps at any zoom: every step is 1, 2 or 5 x 10^k and
	 * at most 2.5x the minimum asked for. */
	for (double m = 1.5; m < 1e13; m *= 1.37) {
		int64_t s = tl_tick_step(m);
		int64_t lead = s;
		while (lead % 10 == 0)
			lead /= 10;
		CHECK(s >= m && s <= m * 2.5 + 1 && (lead == 1 || lead == 2 || lead == 5), "ladder at %.0f: %lld", m,
		      (long long)s);
	}
	char b[64];
	tl_format_duration(b, sizeof b, 1500000, 500000);
	CHECK(!strcmp(b, "1.5 ms"), "1.5 ms: '%s'", b);
	tl_format_duration(b, sizeof b, 2000000000, 1000000000);
	CHECK(!strcmp(b, "2 s"), "2 s: '%s'", b);
	tl_format_duration(b, sizeof b, 0, 200000);
	CHECK(!strcmp(b, "0 us"), "0: '%s'", b);
	tl_format_duration(b, sizeof b, 250000, 0);
	CHECK(!strcmp(b, "250 us"), "250 us: '%s'", b);
	tl_format_wall(b, sizeof b, 1700000000123456789, 1000000);
	CHECK(strlen(b) == 12 && b[2] == ':' && !strcmp(b + 8, ".123"), "wall: '%s'", b);
}

/* Every picture check, with lane rectangles drawn one way (canvas or nodes). */
static void check_pictures(struct tl_db *db, enum tl_raster raster, const char *how, const char *outdir)
{
	char png[4096];
	struct tl_theme th;
	tl_theme_init(&th, false);

	/* Detail window 0..1000 ms at 4200 px: 0.25 ms/px, below the 1 ms
	 * summaries, so real polls are drawn. */
	struct tl_png_options o = { .width = 4200, .from = 0, .to = 1000000000, .raster = raster };
	snprintf(png, sizeof png, "%s/detail-%s.png", outdir, how);
	struct pic p = render(db, &o, png);
	CHECK(p.v.height == TL_RULER_H + 2 * TL_GROUP_H + 4 * TL_LANE_H + TL_LEGEND_H, "height %d", p.v.height);
	expect(&p, "poll loc 1", 125, 0, TL_POLL_Y + 12, tl_location_color(1));
	expect(&p, "poll loc 2", 205, 0, TL_POLL_Y + 12, tl_location_color(2));
	expect(&p, "stalled poll loc 3", 400, 0, TL_POLL_Y + 12, tl_location_color(3));
	expect(&p, "stall bar", 400, 0, TL_POLL_Y + TL_POLL_H - 2, th.stall);
	expect(&p, "stall triangle", 300, 0, 2, th.stall);
	expect(&p, "park", 700, 0, TL_PARK_Y + 2, th.park);
	expect(&p, "park w1", 12, 1, TL_PARK_Y + 2, th.park);
	expect(&p, "poll w1", 2, 1, TL_POLL_Y + 3, tl_location_color(2));
	expect(&p, "no poll while parked", 700, 0, TL_POLL_Y + 2, th.bg);
	expect(&p, "on-cpu", 320, 0, TL_CPU_Y + 2, th.on_cpu);
	expect(&p, "blocked in a poll", 380, 0, TL_CPU_Y + 2, th.blocked);
	expect(&p, "blocked in a poll is taller", 380, 0, TL_CPU_Y - 1, th.blocked);
	expect(&p, "blocked while parked is quiet", 700, 0, TL_CPU_Y + 2, th.idle_off);
	expect(&p, "and not taller", 700, 0, TL_CPU_Y - 1, th.bg);
	expect(&p, "preempted", 430, 0, TL_CPU_Y + 2, th.preempted);
	{
		/* Samples: a tick every ms on CPU in w0, none while blocked. */
		int rgb[3], ticks_on = 0, ticks_off = 0;
		for (double ms = 300; ms < 350; ms += 0.25) {
			pixel(&p, x_of(&p, ms), lane_y(&p, 0) + TL_SAMPLE_Y + 2, rgb);
			ticks_on += near(rgb, th.sample, 3);
		}
		for (double ms = 360; ms < 410; ms += 0.25) {
			pixel(&p, x_of(&p, ms), lane_y(&p, 0) + TL_SAMPLE_Y + 2, rgb);
			ticks_off += near(rgb, th.sample, 3);
		}
		CHECK(ticks_on >= 45 && ticks_on <= 55 && ticks_off == 0, "sample ticks on %d off %d", ticks_on, ticks_off);
		/* The io-thread lane has a tick every 5 ms. */
		int io = 0;
		for (double ms = 0; ms < 100; ms += 0.25) {
			pixel(&p, x_of(&p, ms), lane_y(&p, 3) + TL_SAMPLE_Y + 2, rgb);
			io += near(rgb, th.sample, 3);
		}
		CHECK(io >= 19 && io <= 21, "io-thread ticks %d", io);
		/* Lost events on w2's lane in [600,700): hatched, not plain. */
		pixel(&p, x_of(&p, 650), lane_y(&p, 2) + TL_PARK_Y + 2, rgb);
		CHECK(!near(rgb, th.park, 3) && !near(rgb, th.bg, 3), "loss hatch over w2 park");
		pixel(&p, x_of(&p, 655) + 1, lane_y(&p, 1) + TL_POLL_Y + 2, rgb);
		CHECK(near(rgb, th.bg, 3) || near(rgb, th.lane_alt, 3), "no loss hatch on w1 at 650 ms");
	}
	pic_free(&p);

	/* Duration classes: the 200 ms stalled poll is "> 50 ms", the 5 ms polls
	 * of w1 "1-10 ms", the 10 ms poll of w0 "10-50 ms", its 50 ms poll "> 50 ms"
	 * (the classes are [0,1) [1,10) [10,50) [50,inf) ms). */
	o.color = TL_COLOR_DURATION;
	snprintf(png, sizeof png, "%s/duration-%s.png", outdir, how);
	p = render(db, &o, png);
	expect(&p, "> 50 ms", 400, 0, TL_POLL_Y + 12, tl_duration_color(3));
	expect(&p, "10-50 ms", 205, 0, TL_POLL_Y + 12, tl_duration_color(2));
	expect(&p, "50 ms is > 50 ms", 125, 0, TL_POLL_Y + 12, tl_duration_color(3));
	expect(&p, "1-10 ms", 2, 1, TL_POLL_Y + 12, tl_duration_color(1));
	pic_free(&p);

	/* Zoomed out (summaries): w2 busy in [0,400), idle after; w0 busy bar
	 * during the stall. */
	struct tl_png_options z = { .width = 900, .raster = raster };
	snprintf(png, sizeof png, "%s/overview-%s.png", outdir, how);
	p = render(db, &z, png);
	/* Bars are the busy colour, deeper with the share, sqrt(share) of the
	 * band high: w0 is busy all through the stall (22 px), w2 half of
	 * [0,400) (16 px). */
	expect_bar(&p, "summary busy w0 top", 400, 0, TL_POLL_Y + 1, true);
	expect(&p, "summary busy w0 full depth", 400, 0, TL_POLL_Y + TL_POLL_H - 5, th.busy_summary);
	expect_bar(&p, "summary busy w2", 200, 2, TL_POLL_Y + TL_POLL_H - 1, true);
	expect_bar(&p, "summary busy w2 16 px", 200, 2, TL_POLL_Y + TL_POLL_H - 15, true);
	expect_bar(&p, "summary busy w2 not 19 px", 200, 2, TL_POLL_Y + TL_POLL_H - 19, false);
	expect(&p, "summary idle w2", 800, 2, TL_POLL_Y + TL_POLL_H - 1, th.bg);
	pic_free(&p);

	/* Dark theme renders with the dark background. */
	z.dark = true;
	p = render(db, &z, NULL);
	tl_theme_init(&th, true);
	expect(&p, "dark background", 800, 2, TL_POLL_Y + 2, th.bg);
	pic_free(&p);

}

/* Height (px) of the busy bar in column x of a lane's poll band: the run of
 * busy pixels up from the band's bottom. */
static int bar_height(const struct pic *p, int x, int lane)
{
	int y0 = lane_y(p, lane) + TL_POLL_Y, h = 0;
	for (int y = y0 + TL_POLL_H - 1; y >= y0; y--) {
		int rgb[3];
		pixel(p, x, y, rgb);
		if (rgb[2] - rgb[0] <= 60)
			break;
		h++;
	}
	return h;
}

/* A 12 s trace of a lightly loaded runtime (1%, 3%, 10%, 30% busy) zoomed
 * out in 1200 px (10 ms a pixel column): every column of every lane shows
 * its busy share, taller with the share, even at 1%. */
static void check_light(const char *schema, const char *outdir)
{
	char dbp[4096], png[4096], err[512];
	snprintf(dbp, sizeof dbp, "%s/light.db", outdir);
	if (fixture_build_light(dbp, schema) != 0) {
		CHECK(false, "the light fixture was built");
		return;
	}
	struct tl_db *db = tl_db_open(dbp, err, sizeof err);
	CHECK(db && db->n_lanes == 4, "the light trace opened with 4 lanes (%s)", db ? "" : err);
	if (!db || db->n_lanes != 4) {
		tl_db_close(db);
		return;
	}
	struct tl_png_options o = { .width = 1200, .height = 400 };
	snprintf(png, sizeof png, "%s/light-12s.png", outdir);
	struct pic p = render(db, &o, png);
	int lo[4] = { 99, 99, 99, 99 }, hi[4] = { 0 }, cols = 0;
	for (double ms = 100; ms < 11900; ms += 97) {
		int x = x_of(&p, ms) + 1;
		for (int l = 0; l < 4; l++) {
			int h = bar_height(&p, x, l);
			lo[l] = h < lo[l] ? h : lo[l];
			hi[l] = h > hi[l] ? h : hi[l];
		}
		cols++;
	}
	printf("light 12 s trace, %d columns: busy bar heights (px of %d) 1%%: %d-%d, 3%%: %d-%d, 10%%: %d-%d, 30%%: %d-%d\n",
	       cols, TL_POLL_H, lo[0], hi[0], lo[1], hi[1], lo[2], hi[2], lo[3], hi[3]);
	CHECK(lo[0] >= 2, "1%% busy is a bar of 2 px or more in every column (%d)", lo[0]);
	for (int l = 1; l < 4; l++)
		CHECK(lo[l] > hi[l - 1], "lane %d's busier share is a taller bar in every column (%d > %d)", l, lo[l],
		      hi[l - 1]);
	CHECK(hi[3] < TL_POLL_H, "30%% busy does not fill the band (%d)", hi[3]);
	pic_free(&p);
	for (size_t l = 0; l < 4; l++)
		printf("  lane %zu: %s\n", l, db->lanes[l].label);
	tl_db_close(db);
}

/* The light trace recorded by the sched_switch program (no CPU state inside
 * parks, META "switches" says so) zoomed out as above: a column that is a park
 * but for a 1% poll has no CPU strip (what it lacks of off-CPU time is
 * unknown, not on a CPU), one 30% busy is on a CPU; without the META line the
 * same rows draw the 1% lane's columns on a CPU, as before. */
static void check_light_unswitched(const char *schema, const char *outdir)
{
	char dbp[4096], png[4096], err[512];
	snprintf(dbp, sizeof dbp, "%s/light-unswitched.db", outdir);
	if (fixture_build_light_unswitched(dbp, schema) != 0) {
		CHECK(false, "the unswitched light fixture was built");
		return;
	}
	struct tl_theme th;
	tl_theme_init(&th, false);
	for (int meta = 1; meta >= 0; meta--) {
		if (!meta) {
			sqlite3 *d;
			CHECK(sqlite3_open(dbp, &d) == SQLITE_OK &&
			      sqlite3_exec(d, "DELETE FROM metadata", NULL, NULL, NULL) == SQLITE_OK, "META removed");
			sqlite3_close(d);
		}
		struct tl_db *db = tl_db_open(dbp, err, sizeof err);
		CHECK(db && db->n_lanes == 4, "the unswitched light trace opened (%s)", db ? "" : err);
		if (!db || db->n_lanes != 4) {
			tl_db_close(db);
			return;
		}
		CHECK(db->lanes[0].parks_unswitched == meta, "lane 0 parks unswitched: %d", db->lanes[0].parks_unswitched);
		struct tl_png_options o = { .width = 1200, .height = 400 };
		snprintf(png, sizeof png, "%s/light-12s-unswitched%s.png", outdir, meta ? "" : "-nometa");
		struct pic p = render(db, &o, png);
		int empty = 0, green = 0, busy_green = 0, cols = 0;
		for (double ms = 100; ms < 11900; ms += 97, cols++) {
			int rgb[3], x = x_of(&p, ms) + 1;
			/* on a CPU: the on-CPU green over the background, as pale as
			 * the column's busy share makes it */
			pixel(&p, x, lane_y(&p, 0) + TL_CPU_Y + 2, rgb);
			empty += near(rgb, th.bg, 3);
			green += rgb[1] > rgb[0] + 16 && rgb[1] > rgb[2] + 8;
			pixel(&p, x, lane_y(&p, 3) + TL_CPU_Y + 2, rgb);
			busy_green += rgb[1] > rgb[0] + 16 && rgb[1] > rgb[2] + 8;
		}
		printf("light 12 s trace, parks unswitched%s: 1%% lane's CPU strip empty in %d of %d columns, on a CPU in "
		       "%d; 30%% lane on a CPU in %d\n", meta ? "" : " but no META", empty, cols, green, busy_green);
		if (meta) /* (a sampled column may fall on a grid line) */
			CHECK(green == 0 && empty >= cols - 3, "1%% lane, parks unswitched: %d of %d columns empty, %d "
			      "on a CPU", empty, cols, green);
		else
			CHECK(green == cols, "1%% lane without the META: %d of %d columns on a CPU", green, cols);
		CHECK(busy_green == cols, "30%% lane: on a CPU in %d of %d columns", busy_green, cols);
		pic_free(&p);
		tl_db_close(db);
	}
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: test_render SCHEMA.sql OUTDIR\n");
		return 2;
	}
	test_ticks();
	char dbp[4096];
	snprintf(dbp, sizeof dbp, "%s/fixture.db", argv[2]);
	if (fixture_build_small(dbp, argv[1]) != 0)
		return 1;
	char err[512];
	struct tl_db *db = tl_db_open(dbp, err, sizeof err);
	if (!db) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	/* Lanes: three workers of one runtime in index order, then io-thread. */
	CHECK(db->n_lanes == 4, "lanes: %zu", db->n_lanes);
	CHECK(db->n_groups == 2, "groups: %zu", db->n_groups);
	CHECK(db->n_stalls == 1 && db->stalls[0].lane == 0, "stall on lane 0");
	CHECK(db->n_losses == 2, "losses: %zu", db->n_losses);
	if (db->n_lanes == 4) {
		CHECK(strstr(db->lanes[0].label, "w0") && strstr(db->lanes[0].label, "rt-w0"), "label 0 '%s'", db->lanes[0].label);
		CHECK(strstr(db->lanes[2].label, "rt-w2"), "label 2 '%s'", db->lanes[2].label);
		CHECK(!strcmp(db->lanes[3].label, "io-thread") && db->lanes[3].worker_id == 0, "io-thread lane");
		CHECK(strstr(db->groups[0].title, "demo") && strstr(db->groups[0].title, "3 workers"), "group '%s'",
		      db->groups[0].title);
	}
	check_pictures(db, TL_RASTER_NODES, "nodes", argv[2]);
	check_pictures(db, TL_RASTER_CANVAS, "canvas", argv[2]);
	check_light(argv[1], argv[2]);
	check_light_unswitched(argv[1], argv[2]);

	tl_db_close(db);
	if (failures) {
		fprintf(stderr, "%d check(s) failed; pictures in %s\n", failures, argv[2]);
		return 1;
	}
	printf("render: all checks passed\n");
	return 0;
}

/*
 * bench_render.c - timeline frame times on a large database: 200 frames at
 * random zoom levels and positions, each one the whole path a window frame
 * takes (range queries with level of detail, render nodes, and rasterising
 * them with cairo, offscreen), plus the time to the first frame (opening the
 * database included) and the peak memory (VmHWM).
 *
 * The database is SYNTHESIZED (tests/viewer/fixture.c: 8 workers, polls of
 * 2-32 us with a 0.1 % tail of 1-21 ms, parks, CPU intervals and samples, about
 * 20M rows, with worker_summaries and the schema's indexes), not imported from
 * a recording: the importer is not needed, and the row counts are exact. It is
 * generated once into the build directory (bench_render-20M.db) by a child
 * process, so its memory does not count in VmHWM.
 *
 * Targets: median <= 16 ms, p99 <= 33 ms, peak < 500 MB, first frame < 1 s.
 * usage: bench_render SCHEMA.sql DIR [EVENTS]
 */
#include <cairo.h>
#include <math.h>
#include <gtk/gtk.h>
#include <pango/pangocairo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"
#include "tl_db.h"
#include "tl_render.h"
#include "tl_scene.h"
#include "tl_view.h"

#include "bench_util.h"

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static long vm_hwm_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "VmHWM: %ld kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

struct frame_ctx {
	struct tl_db *db;
	struct tl_layout l;
	struct tl_scene sc;
	PangoContext *pc;
	cairo_surface_t *surf;
	uint64_t rows, seeks;
};

static double t_fetch, t_nodes, t_raster;

static void frame(struct frame_ctx *f, struct tl_view *v)
{
	double a = now_ms();
	tl_scene_update(&f->sc, f->db, &f->l, v);
	double b = now_ms();
	t_fetch += b - a;
	f->rows += f->sc.rows;
	f->seeks += f->sc.seeks;
	GtkSnapshot *s = gtk_snapshot_new();
	tl_render(s, f->pc, f->db, &f->l, &f->sc, v);
	GskRenderNode *node = gtk_snapshot_free_to_node(s);
	double c = now_ms();
	t_nodes += c - b;
	cairo_t *cr = cairo_create(f->surf);
	if (node) {
		gsk_render_node_draw(node, cr);
		gsk_render_node_unref(node);
	}
	cairo_destroy(cr);
	cairo_surface_flush(f->surf);
	t_raster += now_ms() - c;
	if (getenv("BENCH_VERBOSE"))
		fprintf(stderr, "npp %.0f bucket %lld: fetch %.1f nodes %.1f raster %.1f rows %llu seeks %llu\n",
			tl_view_ns_per_px(v), (long long)f->sc.summary_bucket, b - a, c - b, now_ms() - c,
			(unsigned long long)f->sc.rows, (unsigned long long)f->sc.seeks);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: bench_render SCHEMA.sql DIR [EVENTS]\n");
		return 2;
	}
	uint64_t events = argc > 3 ? strtoull(argv[3], NULL, 10) : 20000000;
	char dbp[4096];
	snprintf(dbp, sizeof dbp, "%s/bench_render-%lluM.db", argv[2], (unsigned long long)(events / 1000000));
	if (access(dbp, R_OK) != 0) {
		double g0 = now_ms();
		char tmp[4200];
		snprintf(tmp, sizeof tmp, "%s.tmp", dbp);
		pid_t pid = fork();
		if (pid == 0)
			_exit(fixture_build_synthetic(tmp, argv[1], events, 8) == 0 ? 0 : 1);
		int st;
		if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0 || rename(tmp, dbp) != 0) {
			fprintf(stderr, "bench_render: generating %s failed\n", dbp);
			return 1;
		}
		printf("generated %s in %.1f s\n", dbp, (now_ms() - g0) / 1000);
	}
	g_type_ensure(gsk_color_node_get_type());   /* see tl_png.c: no gtk_init */

	const int W = 1600, H = 900;
	double t_first0 = now_ms();
	char err[512];
	struct frame_ctx f = { 0 };
	f.db = tl_db_open(dbp, err, sizeof err);
	if (!f.db) {
		fprintf(stderr, "bench_render: %s\n", err);
		return 1;
	}
	tl_layout_compute(&f.l, f.db);
	tl_scene_init(&f.sc);
	f.pc = pango_font_map_create_context(pango_cairo_font_map_get_default());
	f.surf = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, W, H);
	struct tl_view v = { .width = W, .height = H, .legend = true };
	tl_view_fit(&v, f.db);
	frame(&f, &v);
	double first = now_ms() - t_first0;

	sqlite3_stmt *s;
	int64_t rows = 0;
	if (sqlite3_prepare_v2(f.db->db, "SELECT (SELECT count(*) FROM polls) + (SELECT count(*) FROM parks) +"
					 " (SELECT count(*) FROM cpu_intervals) + (SELECT count(*) FROM samples)", -1, &s, NULL) == SQLITE_OK) {
		if (sqlite3_step(s) == SQLITE_ROW)
			rows = sqlite3_column_int64(s, 0);
		sqlite3_finalize(s);
	}

	/* Random windows: durations log-uniform from 20 us to the whole trace,
	 * positions uniform; a fixed seed so runs compare. */
	enum { N = 200 };
	double times[N];
	srand(12345);
	int64_t span = f.db->last_ts - f.db->first_ts;
	f.rows = f.seeks = 0;
	t_fetch = t_nodes = t_raster = 0;
	for (int i = 0; i < N; i++) {
		double u = (double)rand() / RAND_MAX;
		double dur = exp(log(20000.0) + u * (log((double)span) - log(20000.0)));
		double p = (double)rand() / RAND_MAX;
		int64_t t0 = f.db->first_ts + (int64_t)(p * ((double)span - dur));
		tl_view_set_range(&v, f.db, t0, t0 + (int64_t)dur);
		double a = now_ms();
		frame(&f, &v);
		times[i] = now_ms() - a;
	}
	qsort(times, N, sizeof times[0], cmp_double);
	double median = (times[N / 2 - 1] + times[N / 2]) / 2, p99 = times[(N * 99) / 100 - 1];
	long hwm = vm_hwm_kb();
	printf("bench_render: %lld rows (polls+parks+cpu_intervals+samples), 8 workers, %.1f s of trace, %dx%d\n",
	       (long long)rows, (double)span / 1e9, W, H);
	printf("first frame (open + fetch + draw + rasterise): %.1f ms  [target < 1000]\n", first);
	printf("frames: %d  median %.2f ms  [target <= 16]  p99 %.2f ms  [target <= 33]  max %.2f ms\n", N, median, p99,
	       times[N - 1]);
	printf("rows read per frame %.0f, seeks per frame %.0f (mean)\n", (double)f.rows / N, (double)f.seeks / N);
	printf("time split over the 200 frames: fetch %.0f%%, build nodes %.0f%%, rasterise %.0f%%\n",
	       100 * t_fetch / (t_fetch + t_nodes + t_raster), 100 * t_nodes / (t_fetch + t_nodes + t_raster),
	       100 * t_raster / (t_fetch + t_nodes + t_raster));
	printf("peak memory VmHWM: %.1f MB  [target < 500]\n", (double)hwm / 1024);

	cairo_surface_destroy(f.surf);
	g_object_unref(f.pc);
	tl_scene_free(&f.sc);
	tl_layout_free(&f.l);
	tl_db_close(f.db);
	return 0;
}

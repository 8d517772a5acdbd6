/*
 * bench_render.c - timeline frame times on a large database: 200 views at
 * random zoom levels and positions, plus the time to the first picture
 * (opening the database included) and the peak memory (VmHWM).
 *
 * The window fetches scenes on its query worker, and snapshot() never runs
 * SQL, so "a frame" is no longer one thing. For every view the benchmark
 * measures what a user feels, through the window's own code (SsSession, its
 * worker, ss_scene_fetch), offscreen:
 *  - input to new picture: from the moment the view changed to the frame
 *    drawn from the scene fetched for it: the request, the fetch on the worker
 *    thread (range queries with level of detail), the handoff to the main
 *    loop, building the render nodes and rasterising them with cairo. This is
 *    the figure to hold against the targets and against older builds, whose
 *    frame fetched inside snapshot();
 *  - the main thread's frames, which no query can delay any more: the
 *    stretched frame, drawn at once at input, before the new scene arrives
 *    (the last scene stretched and shifted onto the new view: nodes +
 *    rasterising, no SQL), and the frame drawn when the scene arrives (the
 *    draw part of the figure above). These are the frame times during pan and
 *    zoom; older builds' frame was the whole fetch + draw.
 * As a baseline in the same run, each view is also drawn the old way, the
 * fetch inside the frame on the main thread (tl_scene_update + draw, on a
 * connection of its own), interleaved with the worker path in alternating
 * order so neither always finds the caches warm (both connections read
 * every index once first, as the benchmark always did with its one). Both
 * are timed in wall and process CPU time (CLOCK_PROCESS_CPUTIME_ID: the
 * worker's CPU counts), and their ratio is printed.
 *
 * What this cannot show: in the window, frames follow GTK's frame clock, so
 * the stretched frame is the one drawn after the input and the scene's frame
 * is the next one (up to a refresh interval later); here frames are drawn as
 * soon as they can be.
 *
 * BENCH_RENDER_PATHS=worker runs the worker path alone (no baseline, no
 * stretched frame): the same sequence as older builds of this benchmark (open,
 * first frame, the count, 200 views), for comparing whole-process CPU time
 * with them (perf stat, time). BENCH_VERBOSE=1 prints each view.
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
#include "ss_scene_fetch.h"
#include "ss_session.h"
#include "tl_db.h"
#include "tl_render.h"
#include "tl_scene.h"
#include "tl_view.h"

#include "bench_util.h"

static double now_ms(void)
{
	return clock_s(CLOCK_MONOTONIC) * 1e3;
}

static double cpu_ms(void)
{
	return clock_s(CLOCK_PROCESS_CPUTIME_ID) * 1e3;
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

struct bench {
	struct tl_db *meta;          /* the session's: its connection is the worker's */
	struct tl_db *inline_db;     /* the baseline's own connection */
	SsSession *session;
	struct ss_scene_fetch fetch;
	struct tl_layout l;
	struct tl_scene inline_sc;   /* reused across frames, as the old widget did */
	PangoContext *pc;
	cairo_surface_t *surf;
	uint64_t rows, seeks;
	double t_fetch, t_nodes, t_raster;   /* of the baseline */
};

static void arrived(void *user)
{
	(void)user;
}

/* Nodes + rasterising of one frame; returns the nodes' share in *nodes_ms. */
static void draw(struct bench *b, struct tl_db *db, const struct tl_scene *sc, const struct tl_view *v, double *nodes_ms)
{
	double a = now_ms();
	GtkSnapshot *s = gtk_snapshot_new();
	tl_render(s, b->pc, db, &b->l, sc, v);
	GskRenderNode *node = gtk_snapshot_free_to_node(s);
	double c = now_ms();
	if (nodes_ms)
		*nodes_ms = c - a;
	cairo_t *cr = cairo_create(b->surf);
	if (node) {
		gsk_render_node_draw(node, cr);
		gsk_render_node_unref(node);
	}
	cairo_destroy(cr);
	cairo_surface_flush(b->surf);
}

/* The window's path: request, fetch on the worker, handoff, draw; *frame is
 * the main thread's part once the scene is there (the frame drawn then). */
static void frame_worker(struct bench *b, const struct tl_view *v, double *wall, double *cpu, double *frame)
{
	double w0 = now_ms(), c0 = cpu_ms();
	guint got = b->fetch.received;
	ss_scene_fetch_want(&b->fetch, &b->l, v);
	while (b->fetch.received == got && b->fetch.inflight)
		g_main_context_iteration(NULL, TRUE);
	double f0 = now_ms();
	draw(b, b->meta, b->fetch.ready, v, NULL);
	*frame = now_ms() - f0;
	*wall = now_ms() - w0;
	*cpu = cpu_ms() - c0;
	b->rows += b->fetch.ready->rows;
	b->seeks += b->fetch.ready->seeks;
}

/* The old path: the fetch inside the frame, on the main thread. */
static void frame_inline(struct bench *b, const struct tl_view *v, double *wall, double *cpu)
{
	double w0 = now_ms(), c0 = cpu_ms();
	tl_scene_update(&b->inline_sc, b->inline_db, &b->l, v);
	double f = now_ms(), nodes;
	draw(b, b->inline_db, &b->inline_sc, v, &nodes);
	*wall = now_ms() - w0;
	*cpu = cpu_ms() - c0;
	b->t_fetch += f - w0;
	b->t_nodes += nodes;
	b->t_raster += *wall - (f - w0) - nodes;
}

/* What the window draws at once: the last scene, stretched onto v. */
static void frame_stretched(struct bench *b, const struct tl_view *v, double *wall, double *cpu)
{
	double w0 = now_ms(), c0 = cpu_ms();
	draw(b, b->meta, b->fetch.ready, v, NULL);
	*wall = now_ms() - w0;
	*cpu = cpu_ms() - c0;
}

struct count_job {
	int64_t rows;
	bool done;
};

static void count_rows(struct tl_db *db, void *p)
{
	struct count_job *j = p;
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(db->db, "SELECT (SELECT count(*) FROM polls) + (SELECT count(*) FROM parks) +"
				       " (SELECT count(*) FROM cpu_intervals) + (SELECT count(*) FROM samples)",
			       -1, &s, NULL) == SQLITE_OK) {
		if (sqlite3_step(s) == SQLITE_ROW)
			j->rows = sqlite3_column_int64(s, 0);
		sqlite3_finalize(s);
	}
}

static void count_run(struct tl_db *db, void *p)
{
	tl_db_arm(db, 600);
	count_rows(db, p);
}

static void count_done(void *p, void *user)
{
	(void)user;
	((struct count_job *)p)->done = true;
}

static double pct(double *v, int n, int p)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return v[(n * p) / 100 - 1];
}

static void print_times(const char *what, double *v, int n)
{
	double med = median(v, n);
	printf("%s: median %.2f ms  [target <= 16]  p99 %.2f ms  [target <= 33]  max %.2f ms\n", what, med,
	       pct(v, n, 99), v[n - 1]);
}

static double sum(const double *v, int n)
{
	double s = 0;
	for (int i = 0; i < n; i++)
		s += v[i];
	return s;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: bench_render SCHEMA.sql DIR [EVENTS]\n");
		return 2;
	}
	uint64_t events = argc > 3 ? strtoull(argv[3], NULL, 10) : 20000000;
	const char *paths = getenv("BENCH_RENDER_PATHS");
	bool all = !paths || strcmp(paths, "worker") != 0;
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
	struct bench b = { 0 };
	b.meta = tl_db_open(dbp, err, sizeof err);
	if (!b.meta) {
		fprintf(stderr, "bench_render: %s\n", err);
		return 1;
	}
	b.session = ss_session_new();
	ss_session_set_db(b.session, b.meta);
	ss_scene_fetch_init(&b.fetch, b.session, arrived, NULL);
	tl_layout_compute(&b.l, b.meta);
	b.pc = pango_font_map_create_context(pango_cairo_font_map_get_default());
	b.surf = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, W, H);
	struct tl_view v = { .width = W, .height = H, .legend = true };
	tl_view_fit(&v, b.meta);
	double wall, cpu, fr;
	frame_worker(&b, &v, &wall, &cpu, &fr);
	double first = now_ms() - t_first0;

	if (all) {
		b.inline_db = tl_db_open(dbp, err, sizeof err);
		if (!b.inline_db) {
			fprintf(stderr, "bench_render: %s\n", err);
			return 1;
		}
		tl_scene_init(&b.inline_sc);
	}
	/* The rows are counted on each connection, as the benchmark always did on
	 * its one: the count reads every index, so both paths start from the
	 * same warm page cache. */
	struct count_job cj = { 0 };
	static int count_key;
	ss_session_submit(b.session, &count_key, count_run, count_done, &cj, NULL, NULL);
	while (!cj.done)
		g_main_context_iteration(NULL, TRUE);
	int64_t rows = cj.rows;
	if (all) {
		tl_db_arm(b.inline_db, 600);
		count_rows(b.inline_db, &cj);
	}

	/* Random windows: durations log-uniform from 20 us to the whole trace,
	 * positions uniform; a fixed seed so runs compare. */
	enum { N = 200 };
	double w_work[N], c_work[N], w_arr[N], w_inl[N], c_inl[N], w_str[N], c_str[N];
	srand(12345);
	int64_t span = b.meta->last_ts - b.meta->first_ts;
	b.rows = b.seeks = 0;
	for (int i = 0; i < N; i++) {
		double u = (double)rand() / RAND_MAX;
		double dur = exp(log(20000.0) + u * (log((double)span) - log(20000.0)));
		double p = (double)rand() / RAND_MAX;
		int64_t t0 = b.meta->first_ts + (int64_t)(p * ((double)span - dur));
		tl_view_set_range(&v, b.meta, t0, t0 + (int64_t)dur);
		if (all) {
			frame_stretched(&b, &v, &w_str[i], &c_str[i]);
			if (i % 2) {
				frame_inline(&b, &v, &w_inl[i], &c_inl[i]);
				frame_worker(&b, &v, &w_work[i], &c_work[i], &w_arr[i]);
			} else {
				frame_worker(&b, &v, &w_work[i], &c_work[i], &w_arr[i]);
				frame_inline(&b, &v, &w_inl[i], &c_inl[i]);
			}
		} else {
			frame_worker(&b, &v, &w_work[i], &c_work[i], &w_arr[i]);
		}
		if (getenv("BENCH_VERBOSE"))
			fprintf(stderr, "npp %.0f bucket %lld: worker %.1f ms%s", tl_view_ns_per_px(&v),
				(long long)b.fetch.ready->summary_bucket, w_work[i], all ? "" : "\n");
		if (getenv("BENCH_VERBOSE") && all)
			fprintf(stderr, " (CPU %.1f), inline %.1f ms (CPU %.1f), stretched %.1f ms, rows %llu seeks %llu\n",
				c_work[i], w_inl[i], c_inl[i], w_str[i], (unsigned long long)b.inline_sc.rows,
				(unsigned long long)b.inline_sc.seeks);
	}
	long hwm = vm_hwm_kb();
	printf("bench_render: %lld rows (polls+parks+cpu_intervals+samples), 8 workers, %.1f s of trace, %dx%d\n",
	       (long long)rows, (double)span / 1e9, W, H);
	printf("first picture (open + fetch on the worker + draw + rasterise): %.1f ms  [target < 1000]\n", first);
	double cw = sum(c_work, N) / N;
	print_times("frames, input to new picture (fetch on the query worker + draw)", w_work, N);
	if (all) {
		double ci = sum(c_inl, N) / N, cs = sum(c_str, N) / N;
		double mw = median(w_work, N), mi = median(w_inl, N);
		print_times("frames, fetch inside the frame (the old path, same views, interleaved)", w_inl, N);
		print_times("stretched frame (drawn at input while the fetch runs; no SQL)", w_str, N);
		print_times("frame drawn when the scene arrives (main thread; no SQL)", w_arr, N);
		printf("CPU per view: worker path %.2f ms, inline path %.2f ms, ratio %.3f; stretched frame %.2f ms\n", cw,
		       ci, cw / ci, cs);
		printf("median wall ratio worker/inline %.3f\n", mw / mi);
		printf("rows read per frame %.0f, seeks per frame %.0f (mean)\n", (double)b.rows / N, (double)b.seeks / N);
		printf("time split of the inline path over the 200 frames: fetch %.0f%%, build nodes %.0f%%, rasterise %.0f%%\n",
		       100 * b.t_fetch / (b.t_fetch + b.t_nodes + b.t_raster),
		       100 * b.t_nodes / (b.t_fetch + b.t_nodes + b.t_raster),
		       100 * b.t_raster / (b.t_fetch + b.t_nodes + b.t_raster));
	} else {
		printf("CPU per view: worker path %.2f ms\n", cw);
	}
	printf("peak memory VmHWM: %.1f MB  [target < 500]\n", (double)hwm / 1024);

	cairo_surface_destroy(b.surf);
	g_object_unref(b.pc);
	ss_scene_fetch_reset(&b.fetch);
	g_object_unref(b.session);   /* stops the worker, closes b.meta */
	if (all) {
		tl_scene_free(&b.inline_sc);
		tl_db_close(b.inline_db);
	}
	tl_layout_free(&b.l);
	return 0;
}

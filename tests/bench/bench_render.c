/*
 * bench_render.c - timeline frames on a large database, two builds of the
 * viewer side by side: the time to the first picture from opening the
 * database, and the frames of a pan-and-zoom session (p50, p99, max).
 *
 * Each build runs in a child process of its own (`bench_render --serve DB`,
 * commands on stdin, figures on stdout), and the parent drives both with the
 * same views, one view at a time, alternating which build goes first, so both
 * see the same load and the same page cache. The baseline is this same file
 * compiled in a checkout of the older revision (its code draws and fetches;
 * this file only times it), e.g. for main at 2e4ccb0:
 *     mkdir /tmp/old && git archive 2e4ccb0 | tar -x -C /tmp/old
 *     cp tests/bench/bench_render.c /tmp/old/tests/bench/
 *     (cd /tmp/old && meson setup build && ninja -C build tests/bench/bench_render)
 *     build/tests/bench/bench_render schema/stallscope.sql /var/tmp/bench 100000000 \
 *         /tmp/old/build/tests/bench/bench_render
 * Without OLD only this build is measured. It uses only what both builds have
 * (tl_db_open, the session's worker, ss_scene_fetch, tl_render).
 *
 * What one view measures, through the window's own code (SsSession, its query
 * worker, ss_scene_fetch), offscreen at 1600x900:
 *  - input to new picture: the request, the fetch on the worker thread, the
 *    handoff to the main loop, building the render nodes and rasterising them
 *    with cairo: what the user waits for;
 *  - main-thread frames: the stretched frame drawn at once at input (the last
 *    scene stretched onto the new view: nodes + rasterising, no SQL) and the
 *    frame drawn when the new scene arrives; both are pooled. In the window
 *    frames follow GTK's frame clock, so these are the frame times of a pan;
 *    here they are drawn as soon as they can be.
 *  - CPU time of the child process (worker thread included) per view.
 * The first picture: tl_db_open, the layout, the first scene fetched on the
 * worker and drawn, in a fresh process (fonts loaded before the clock starts),
 * once per round and build.
 *
 * The session: zoom in from the whole trace to 20 us in steps of 1.5x about
 * one point, pans of a tenth of the window (12 right, then 12 left over the
 * same views) at five zoom levels, zoom out to the whole trace about another
 * point, then 60 jumps to random windows (log-uniform 20 us .. the whole
 * trace). A fixed seed, so runs compare. BENCH_VERBOSE=1 prints each view.
 *
 * The database is SYNTHESIZED (tests/viewer/fixture.c: 8 workers, polls of
 * 2-32 us with a 0.1 % tail of 1-21 ms, parks, CPU intervals and samples,
 * EVENTS rows, with worker_summaries and the schema's indexes): generated once
 * into DIR (bench_render-<N>M.db) by a child process. 100M rows are about
 * 4.6 GB: keep it out of the source tree.
 *
 * Targets (issue 17): p99 frame <= 16 ms on 100M rows, first frame <= 100 ms.
 * usage: bench_render SCHEMA.sql DIR [EVENTS [OLD_BENCH_RENDER [ROUNDS]]]
 *        bench_render --serve DB
 */
#include <cairo.h>
#include <errno.h>
#include <math.h>
#include <gtk/gtk.h>
#include <pango/pangocairo.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

static double thread_ms(void)
{
	return clock_s(CLOCK_THREAD_CPUTIME_ID) * 1e3;
}

static long status_kb(const char *key)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;
	size_t n = strlen(key);
	while (f && fgets(line, sizeof line, f))
		if (strncmp(line, key, n) == 0 && sscanf(line + n, ": %ld kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

/* ---- one build's side: the child ---- */

enum { W = 1600, H = 900 };

struct side {
	struct tl_db *db;
	SsSession *session;
	struct ss_scene_fetch fetch;
	struct tl_layout l;
	struct tl_view v;
	PangoContext *pc;
	cairo_surface_t *surf;
};

static void arrived(void *user)
{
	(void)user;
}

static void draw(struct side *s, const struct tl_scene *sc)
{
	GtkSnapshot *snap = gtk_snapshot_new();
	tl_render(snap, s->pc, s->db, &s->l, sc, &s->v);
	GskRenderNode *node = gtk_snapshot_free_to_node(snap);
	cairo_t *cr = cairo_create(s->surf);
	if (node) {
		gsk_render_node_draw(node, cr);
		gsk_render_node_unref(node);
	}
	cairo_destroy(cr);
	cairo_surface_flush(s->surf);
}

/* Request, fetch on the worker, handoff, draw: wall time, and in *cpu the
 * process's CPU time for it; *frame and *frame_cpu are the draw's wall and
 * main-thread CPU time. */
static double fetch_and_draw(struct side *s, double *cpu, double *frame, double *frame_cpu)
{
	double w0 = now_ms(), c0 = cpu_ms();
	guint got = s->fetch.received;
	ss_scene_fetch_want(&s->fetch, &s->l, &s->v);
	while (s->fetch.received == got && s->fetch.inflight)
		g_main_context_iteration(NULL, TRUE);
	double f0 = now_ms(), t0 = thread_ms();
	draw(s, s->fetch.ready);
	*frame_cpu = thread_ms() - t0;
	*frame = now_ms() - f0;
	*cpu = cpu_ms() - c0;
	return now_ms() - w0;
}

static int serve(const char *db_path)
{
	g_type_ensure(gsk_color_node_get_type());   /* see tl_png.c: no gtk_init */
	struct side s = { 0 };
	s.pc = pango_font_map_create_context(pango_cairo_font_map_get_default());
	s.surf = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, W, H);
	{
		/* Fonts are loaded at start-up in the window, not when a trace opens. */
		PangoLayout *pl = pango_layout_new(s.pc);
		pango_layout_set_text(pl, "w0 0123456789 ms", -1);
		int pw, ph;
		pango_layout_get_pixel_size(pl, &pw, &ph);
		g_object_unref(pl);
	}
	char line[256];
	while (fgets(line, sizeof line, stdin)) {
		long long t0, t1;
		if (strncmp(line, "open", 4) == 0) {
			char err[512];
			double w0 = now_ms(), c0 = cpu_ms(), x, fr, fc;
			s.db = tl_db_open(db_path, err, sizeof err);
			if (!s.db) {
				fprintf(stderr, "bench_render: %s\n", err);
				return 1;
			}
			s.session = ss_session_new();
			ss_session_set_db(s.session, s.db);
			ss_scene_fetch_init(&s.fetch, s.session, arrived, NULL);
			tl_layout_compute(&s.l, s.db);
			s.v = (struct tl_view){ .width = W, .height = H, .legend = true };
			tl_view_fit(&s.v, s.db);
			fetch_and_draw(&s, &x, &fr, &fc);
			printf("first %.3f %.3f %lld %lld\n", now_ms() - w0, cpu_ms() - c0, (long long)s.db->first_ts,
			       (long long)s.db->last_ts);
		} else if (sscanf(line, "view %lld %lld", &t0, &t1) == 2 && s.db) {
			tl_view_set_range(&s.v, s.db, t0, t1);
			double st0 = now_ms(), stc0 = thread_ms(), pic_cpu, arr, arr_cpu;
			draw(&s, s.fetch.ready);   /* the stretched frame */
			double str = now_ms() - st0, str_cpu = thread_ms() - stc0;
			double pic = fetch_and_draw(&s, &pic_cpu, &arr, &arr_cpu);
			printf("view %.3f %.3f %.3f %.3f %.3f %.3f %.3f %llu %llu %lld\n", pic, arr, str, pic_cpu, arr_cpu,
			       str_cpu, pic_cpu + str_cpu,
			       (unsigned long long)s.fetch.ready->rows, (unsigned long long)s.fetch.ready->seeks,
			       (long long)s.fetch.ready->summary_bucket);
		} else if (strncmp(line, "quit", 4) == 0) {
			printf("mem %ld %ld\n", status_kb("VmHWM"), status_kb("RssAnon"));
			fflush(stdout);
			break;
		} else {
			printf("error\n");
		}
		fflush(stdout);
	}
	if (s.session) {
		ss_scene_fetch_reset(&s.fetch);
		g_object_unref(s.session);   /* stops the worker, closes the database */
		tl_layout_free(&s.l);
	}
	cairo_surface_destroy(s.surf);
	g_object_unref(s.pc);
	return 0;
}

/* ---- the driver ---- */

struct child {
	pid_t pid;
	FILE *in, *out;
};

static int spawn(struct child *c, const char *exe, const char *db)
{
	int to[2], from[2];
	if (pipe(to) != 0 || pipe(from) != 0)
		return -1;
	c->pid = fork();
	if (c->pid < 0)
		return -1;
	if (c->pid == 0) {
		dup2(to[0], 0);
		dup2(from[1], 1);
		close(to[0]);
		close(to[1]);
		close(from[0]);
		close(from[1]);
		execl(exe, exe, "--serve", db, (char *)NULL);
		fprintf(stderr, "bench_render: %s: %s\n", exe, strerror(errno));
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	c->in = fdopen(to[1], "w");
	c->out = fdopen(from[0], "r");
	return c->in && c->out ? 0 : -1;
}

/* Sends one command and reads the answer line into buf. */
static int ask(struct child *c, const char *cmd, char *buf, size_t n)
{
	fputs(cmd, c->in);
	fflush(c->in);
	if (!fgets(buf, (int)n, c->out)) {
		fprintf(stderr, "bench_render: a build's process ended early\n");
		return -1;
	}
	return 0;
}

struct view {
	int64_t t0, t1;
	const char *phase;
};

struct seq {
	struct view *v;
	int n, cap;
};

static void add(struct seq *s, int64_t t0, int64_t t1, const char *phase)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 256;
		s->v = realloc(s->v, (size_t)s->cap * sizeof *s->v);
		if (!s->v)
			abort();
	}
	if (t1 <= t0)
		t1 = t0 + 1;
	s->v[s->n++] = (struct view){ t0, t1, phase };
}

static double urand(void)
{
	return (double)rand() / RAND_MAX;
}

/* The pan-and-zoom session over [first, last] (see the top of the file). */
static void make_session(struct seq *s, int64_t first, int64_t last)
{
	double span = (double)(last - first), lo = 20000;
	srand(12345);
	double a = (double)first + 0.37 * span, t0 = (double)first, t1 = (double)last;
	add(s, first, last, "zoom in");
	while (t1 - t0 > lo) {
		t0 = a - (a - t0) / 1.5;
		t1 = a + (t1 - a) / 1.5;
		add(s, (int64_t)t0, (int64_t)t1, "zoom in");
	}
	/* In whole nanoseconds, as the window pans: twelve steps back return to
	 * the views of the twelve steps out. */
	const double pans[] = { 50e3, 1e6, 20e6, 500e6, span / 8 };
	for (size_t k = 0; k < sizeof pans / sizeof *pans; k++) {
		int64_t d = (int64_t)fmin(pans[k], span), step = d / 10;
		int64_t p = first + (int64_t)(urand() * (span - (double)d) * 0.8 + 0.1 * (span - (double)d));
		for (int i = 0; i < 24; i++) {
			p += (i < 12 ? 1 : -1) * step;
			add(s, p, p + d, "pan");
		}
	}
	a = (double)first + 0.71 * span;
	t0 = a - lo / 2;
	t1 = a + lo / 2;
	while (t1 - t0 < span) {
		t0 = fmax((double)first, a - (a - t0) * 1.5);
		t1 = fmin((double)last, a + (t1 - a) * 1.5);
		add(s, (int64_t)t0, (int64_t)t1, "zoom out");
		if (t0 <= (double)first && t1 >= (double)last)
			break;
	}
	for (int i = 0; i < 60; i++) {
		double d = exp(log(lo) + urand() * (log(span) - log(lo)));
		double p = (double)first + urand() * (span - d);
		add(s, (int64_t)p, (int64_t)(p + d), "jump");
	}
}

struct figs {
	double *pic, *main, *cpu, *pic_cpu, *main_cpu, first[64], first_cpu[64];
	int n, n_main, n_first;
	long hwm_kb, anon_kb;
	double rows, seeks;
};

static double pct(double *v, int n, double p)
{
	if (n <= 0)
		return NAN;
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	int i = (int)ceil(p / 100 * n) - 1;
	return v[i < 0 ? 0 : i >= n ? n - 1 : i];
}

static double mean(const double *v, int n)
{
	double s = 0;
	for (int i = 0; i < n; i++)
		s += v[i];
	return n ? s / n : NAN;
}

static void line3(const char *what, double *o, int no, double *n, int nn, bool two)
{
	printf("%-34s", what);
	if (two)
		printf(" %7.2f %7.2f %7.2f  |", pct(o, no, 50), pct(o, no, 99), pct(o, no, 100));
	printf(" %7.2f %7.2f %7.2f", pct(n, nn, 50), pct(n, nn, 99), pct(n, nn, 100));
	if (two)
		printf("  | %6.3f %6.3f", pct(n, nn, 50) / pct(o, no, 50), pct(n, nn, 99) / pct(o, no, 99));
	printf("\n");
}

static double load1(void)
{
	double l = -1;
	FILE *f = fopen("/proc/loadavg", "r");
	if (f && fscanf(f, "%lf", &l) != 1)
		l = -1;
	if (f)
		fclose(f);
	return l;
}

static const char *met(bool ok)
{
	return ok ? "MET" : "NOT MET";
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--serve") == 0)
		return serve(argv[2]);
	if (argc < 3 || argc > 6) {
		fprintf(stderr, "usage: bench_render SCHEMA.sql DIR [EVENTS [OLD_BENCH_RENDER [ROUNDS]]]\n");
		return 2;
	}
	uint64_t events = argc > 3 ? strtoull(argv[3], NULL, 10) : 20000000;
	const char *old = argc > 4 && *argv[4] ? argv[4] : NULL;
	int rounds = argc > 5 ? atoi(argv[5]) : 3;
	if (rounds < 1 || rounds > 64) {
		fprintf(stderr, "bench_render: ROUNDS is 1 to 64\n");
		return 2;
	}
	char dbp[4096];
	snprintf(dbp, sizeof dbp, "%s/bench_render-%lluM.db", argv[2], (unsigned long long)(events / 1000000));
	if (access(dbp, R_OK) != 0) {
		double g0 = now_ms();
		char tmp[4200];
		snprintf(tmp, sizeof tmp, "%s.tmp", dbp);
		printf("generating %s (%llu rows) ...\n", dbp, (unsigned long long)events);
		fflush(stdout);
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
	if (old && access(old, X_OK) != 0) {
		fprintf(stderr, "bench_render: %s: not an executable\n", old);
		return 2;
	}
	struct stat dst;
	stat(dbp, &dst);
	const char *exe[2] = { old, "/proc/self/exe" };
	char self[4096];
	ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
	if (sl > 0) {
		self[sl] = 0;
		exe[1] = self;
	}
	int nb = old ? 2 : 1, b0 = old ? 0 : 1;   /* builds b0..1: 0 old, 1 new */
	struct figs f[2];
	memset(f, 0, sizeof f);
	struct seq seq = { 0 };
	double load_start = load1();
	char buf[512];
	for (int r = 0; r < rounds; r++) {
		struct child c[2];
		for (int k = 0; k < nb; k++) {
			int b = nb == 1 ? 1 : (k + r) % 2;
			if (spawn(&c[b], exe[b], dbp) != 0) {
				fprintf(stderr, "bench_render: cannot start %s\n", exe[b]);
				return 1;
			}
		}
		/* The first picture, in a fresh process of each build. */
		for (int k = 0; k < nb; k++) {
			int b = nb == 1 ? 1 : (k + r) % 2;
			double ms, cms;
			long long first, last;
			if (ask(&c[b], "open\n", buf, sizeof buf) != 0 ||
			    sscanf(buf, "first %lf %lf %lld %lld", &ms, &cms, &first, &last) != 4) {
				fprintf(stderr, "bench_render: %s could not open %s\n", exe[b], dbp);
				return 1;
			}
			f[b].first[f[b].n_first] = ms;
			f[b].first_cpu[f[b].n_first++] = cms;
			if (!seq.n) {
				make_session(&seq, first, last);
				for (int i = b0; i < 2; i++) {
					f[i].pic = calloc((size_t)(seq.n * rounds), sizeof(double));
					f[i].cpu = calloc((size_t)(seq.n * rounds), sizeof(double));
					f[i].main = calloc((size_t)(2 * seq.n * rounds), sizeof(double));
					f[i].pic_cpu = calloc((size_t)(seq.n * rounds), sizeof(double));
					f[i].main_cpu = calloc((size_t)(2 * seq.n * rounds), sizeof(double));
				}
			}
		}
		for (int i = 0; i < seq.n; i++) {
			char cmd[96];
			snprintf(cmd, sizeof cmd, "view %lld %lld\n", (long long)seq.v[i].t0, (long long)seq.v[i].t1);
			for (int k = 0; k < nb; k++) {
				int b = nb == 1 ? 1 : (k + i + r) % 2;
				double pic, arr, str, pic_cpu, arr_cpu, str_cpu, cpu;
				unsigned long long rows, seeks;
				long long bucket;
				if (ask(&c[b], cmd, buf, sizeof buf) != 0 ||
				    sscanf(buf, "view %lf %lf %lf %lf %lf %lf %lf %llu %llu %lld", &pic, &arr, &str, &pic_cpu,
					   &arr_cpu, &str_cpu, &cpu, &rows, &seeks, &bucket) != 10) {
					fprintf(stderr, "bench_render: bad answer from %s: %s", exe[b], buf);
					return 1;
				}
				struct figs *x = &f[b];
				x->pic[x->n] = pic;
				x->pic_cpu[x->n] = pic_cpu;
				x->cpu[x->n++] = cpu;
				x->main_cpu[x->n_main] = str_cpu;
				x->main[x->n_main++] = str;
				x->main_cpu[x->n_main] = arr_cpu;
				x->main[x->n_main++] = arr;
				x->rows += (double)rows;
				x->seeks += (double)seeks;
				if (getenv("BENCH_VERBOSE"))
					fprintf(stderr, "%s %-8s %3d t0 %lld span %12lld ns bucket %10lld: picture %7.2f ms (CPU %6.2f), frames %.2f/%.2f ms (CPU %.2f/%.2f), rows %llu seeks %llu\n",
						b ? "new" : "old", seq.v[i].phase, i, (long long)seq.v[i].t0, (long long)(seq.v[i].t1 - seq.v[i].t0), bucket,
						pic, pic_cpu, str, arr, str_cpu, arr_cpu, rows, seeks);
			}
		}
		for (int b = b0; b < 2; b++) {
			if (ask(&c[b], "quit\n", buf, sizeof buf) == 0)
				sscanf(buf, "mem %ld %ld", &f[b].hwm_kb, &f[b].anon_kb);
			fclose(c[b].in);
			fclose(c[b].out);
			waitpid(c[b].pid, NULL, 0);
		}
	}
	double load_end = load1();
	struct figs *o = &f[0], *n = &f[1];
	bool two = old != NULL;
	printf("bench_render: %s, %.2f GB, %llu rows (polls+parks+cpu_intervals+samples), 8 workers, %.1f s of trace,"
	       " %dx%d\n", dbp, (double)dst.st_size / 1e9, (unsigned long long)events,
	       (double)(seq.v[0].t1 - seq.v[0].t0) / 1e9, W, H);
	printf("%d views a round (zoom in, pans out and back at 5 zoom levels, zoom out, 60 jumps) x %d rounds, %s\n", seq.n, rounds,
	       two ? "builds interleaved view by view" : "this build only");
	if (two)
		printf("old: %s\nnew: %s\n", old, exe[1]);
	printf("%-34s", "ms");
	if (two)
		printf(" %7s %7s %7s  |", "old p50", "p99", "max");
	printf(" %7s %7s %7s", "new p50", "p99", "max");
	if (two)
		printf("  | new/old p50, p99");
	printf("\n");
	line3("input to new picture, wall", o->pic, o->n, n->pic, n->n, two);
	line3("  CPU (process)", o->pic_cpu, o->n, n->pic_cpu, n->n, two);
	line3("main-thread frame (no SQL), wall", o->main, o->n_main, n->main, n->n_main, two);
	line3("  CPU (main thread)", o->main_cpu, o->n_main, n->main_cpu, n->n_main, two);
	line3("first picture from open, wall", o->first, o->n_first, n->first, n->n_first, two);
	line3("  CPU (process)", o->first_cpu, o->n_first, n->first_cpu, n->n_first, two);
	double co = mean(o->cpu, o->n), cn = mean(n->cpu, n->n);
	if (two)
		printf("CPU per view (stretched frame + fetch + new picture; process, worker included): old %.2f ms,"
		       " new %.2f ms, new/old %.3f\n", co, cn, cn / co);
	else
		printf("CPU per view (stretched frame + fetch + new picture; process, worker included): %.2f ms\n", cn);
	printf("rows read per view %.0f, seeks %.0f (new)%s", n->rows / n->n, n->seeks / n->n, two ? "" : "\n");
	if (two)
		printf("; old %.0f, %.0f\n", o->rows / o->n, o->seeks / o->n);
	printf("memory of the new build's process: VmHWM %.1f MB (mapped database pages count in it), RssAnon at the"
	       " end %.1f MB%s", n->hwm_kb / 1024.0, n->anon_kb / 1024.0, two ? "" : "\n");
	if (two)
		printf("; old: VmHWM %.1f MB, RssAnon %.1f MB\n", o->hwm_kb / 1024.0, o->anon_kb / 1024.0);
	/* Wall time is what the targets name; on a loaded machine it measures
	 * the scheduler too, so the CPU time is judged beside it. */
	for (int w = 0; w < 2; w++) {
		double p99 = pct(w ? n->pic_cpu : n->pic, n->n, 99), m99 = pct(w ? n->main_cpu : n->main, n->n_main, 99);
		double first = pct(w ? n->first_cpu : n->first, n->n_first, 50);
		printf("targets (new build, %s): p99 input to new picture <= 16 ms: %.2f ms %s; p99 main-thread frame"
		       " <= 16 ms: %.2f ms %s; first picture <= 100 ms: median %.1f ms %s\n", w ? "CPU time" : "wall time",
		       p99, met(p99 <= 16), m99, met(m99 <= 16), first, met(first <= 100));
	}
	printf("load average (1 min): %.2f at the start, %.2f at the end (2 cores)\n", load_start, load_end);
	return 0;
}

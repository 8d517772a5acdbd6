/*
 * test_tour.c - the window on the demo recordings, as a new user tours it,
 * under a real (virtual) X server, with screenshots of each step:
 *
 *  - blocking demo: the longest stall selected in the Stalls table says
 *    "blocked in read" and names culprit_blocking_syscall in the answer bar
 *    over the lanes, with the side notebook's tab unchanged; the table has
 *    the task, culprit, on-CPU and system call of it; ] and [ walk the stalls
 *    in time order and bring each into view; } selects the first finding and
 *    the timeline shows it; a search by function marks its polls;
 *  - the SQL console refuses DELETE, ATTACH and load_extension in place and
 *    the file is byte for byte what it was; a row with ts moves the timeline;
 *    a runaway recursive query runs while the window keeps drawing frames,
 *    and Cancel stops it (the next query answers at once);
 *  - leak demo: the task view of a task alive at the end shows its dumps;
 *  - a file of random bytes named .db: "not an SQLite database" in the
 *    banner, nothing of the importer's log in it;
 *  - an import cancelled makes no database; the shortcuts window lists
 *    exactly the keys that are bound.
 *
 * usage: test_tour SCHEMA.sql OUTDIR DEMO_DIR   (run by test_window.sh)
 */
#include <gtk/gtk.h>
#include <glib/gstdio.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gui_util.h"
#include "soft_check.h"
#include "ss_answer.h"
#include "ss_app.h"
#include "ss_search.h"
#include "ss_source.h"
#include "ss_sql.h"
#include "ss_stalls.h"
#include "ss_window.h"

static const char *outdir, *demodir;
static char blocking_db[4096], leak_db[4096], random_db[4096];

static bool settle(SsWindow *win)
{
	return gui_settle(win, 60);
}

static void screenshot(GtkWidget *w, const char *name)
{
	gui_screenshot(w, outdir, name, 0);
}

/* Opens path in the window and waits for the trace (or an error). */
static bool open_and_wait(SsWindow *win, const char *path)
{
	struct tl_db *before = ss_timeline_get_db(ss_window_get_timeline(win));
	const char *paths[] = { path };
	ss_window_open_paths(win, paths, 1);
	gint64 end = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
	while (g_get_monotonic_time() < end) {
		while (g_main_context_iteration(NULL, FALSE))
			;
		struct tl_db *now = ss_timeline_get_db(ss_window_get_timeline(win));
		if ((now && now != before) || ss_window_get_error(win))
			return settle(win);
		g_usleep(2000);
	}
	return false;
}

static int64_t sql_int(const char *dbp, const char *sql)
{
	sqlite3 *db = NULL;
	int64_t v = -1;
	if (sqlite3_open_v2(dbp, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
		sqlite3_stmt *s = NULL;
		if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
			v = sqlite3_column_int64(s, 0);
		sqlite3_finalize(s);
	}
	sqlite3_close(db);
	return v;
}

/* Stall ids of a database in time order; n set. g_free() it. */
static int64_t *stalls_in_time_order(const char *dbp, size_t *n)
{
	sqlite3 *db = NULL;
	GArray *a = g_array_new(FALSE, FALSE, sizeof(int64_t));
	if (sqlite3_open_v2(dbp, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
		sqlite3_stmt *s = NULL;
		if (sqlite3_prepare_v2(db, "SELECT id FROM stalls ORDER BY ts, id", -1, &s, NULL) == SQLITE_OK)
			while (sqlite3_step(s) == SQLITE_ROW) {
				int64_t id = sqlite3_column_int64(s, 0);
				g_array_append_val(a, id);
			}
		sqlite3_finalize(s);
	}
	sqlite3_close(db);
	*n = a->len;
	return (int64_t *)g_array_free(a, FALSE);
}

static bool in_view(SsWindow *win, int64_t t0, int64_t t1)
{
	const struct ss_range *v = ss_session_get_visible_range(ss_window_get_session(win));
	bool ok = v->t0 <= t0 && v->t1 >= t1;
	if (!ok)
		fprintf(stderr, "  (view %lld..%lld, wanted %lld..%lld)\n", (long long)v->t0, (long long)v->t1,
			(long long)t0, (long long)t1);
	return ok;
}

static void check_stall_answer(SsWindow *win)
{
	SsStalls *st = ss_window_get_stalls(win);
	CHECK(ss_stalls_count(st) > 0, "the blocking demo has stalls (%u)", ss_stalls_count(st));
	const char *side_before = ss_window_get_front_panel(win);
	/* The table opens sorted longest first. */
	ss_stalls_select_row(st, 0);
	CHECK(settle(win), "the stall's verdict was worked out");
	char *say = ss_answer_get_text(ss_window_get_answer(win));
	printf("answer bar: %s\n", say);
	CHECK(gui_contains(say, "blocked in read"), "the answer bar says blocked in read");
	CHECK(gui_contains(say, "culprit_blocking_syscall"), "the answer bar names the culprit");
	CHECK(!strstr(say, "preempted"), "a blocked stall is not called preempted");
	g_free(say);
	CHECK(gtk_widget_get_mapped(ss_window_get_answer(win)), "the answer bar is on screen");
	CHECK(g_strcmp0(ss_window_get_front_panel(win), side_before) == 0, "no tab was switched to show it (%s, %s)",
	      side_before, ss_window_get_front_panel(win));
	char *table = ss_window_get_panel_text(win, "stalls");
	CHECK(gui_contains(table, "\tculprit_blocking_syscall\t"), "the table has its culprit");
	CHECK(gui_contains(table, "\tread\t"), "the table has its system call");
	g_free(table);
	screenshot(GTK_WIDGET(win), "tour-blocking-stall.png");
}

static void check_stall_walk(SsWindow *win)
{
	SsSession *s = ss_window_get_session(win);
	size_t n;
	int64_t *ids = stalls_in_time_order(blocking_db, &n);
	CHECK(n >= 3, "three stalls or more to walk (%zu)", n);
	ss_session_select(s, SS_SEL_STALL, ids[0], 0);
	size_t walked = 1;
	for (size_t i = 1; i < n && i < 12; i++) {
		gtk_widget_activate_action(GTK_WIDGET(win), "tl.next-stall", NULL);
		const struct ss_selection *sel = ss_session_get_selection(s);
		if (sel->kind != SS_SEL_STALL || sel->id != ids[i]) {
			CHECK(false, "] step %zu selects stall %lld (got kind %d id %lld)", i, (long long)ids[i], sel->kind,
			      (long long)sel->id);
			break;
		}
		walked++;
	}
	CHECK(settle(win), "the walk's views were drawn");
	char q[96];
	snprintf(q, sizeof q, "SELECT ts FROM stalls WHERE id = %lld", (long long)ss_session_get_selection(s)->id);
	int64_t ts = sql_int(blocking_db, q);
	CHECK(in_view(win, ts, ts), "the stall walked to is in view");
	for (size_t i = walked - 1; i-- > 0;) {
		gtk_widget_activate_action(GTK_WIDGET(win), "tl.prev-stall", NULL);
		const struct ss_selection *sel = ss_session_get_selection(s);
		if (sel->kind != SS_SEL_STALL || sel->id != ids[i]) {
			CHECK(false, "[ back to stall %lld (got %lld)", (long long)ids[i], (long long)sel->id);
			break;
		}
	}
	CHECK(ss_session_get_selection(s)->id == ids[0], "[ walked back to the first stall");
	gtk_widget_activate_action(GTK_WIDGET(win), "tl.prev-stall", NULL);
	CHECK(ss_session_get_selection(s)->id == ids[0], "[ on the first stall stays there");
	printf("walked %zu stalls forward and back in time order\n", walked);
	g_free(ids);
}

static void check_findings(SsWindow *win)
{
	SsSession *s = ss_window_get_session(win);
	/* Far from everything, so that the finding must move the view. */
	struct tl_db *db = ss_session_get_db(s);
	ss_session_select(s, SS_SEL_NONE, 0, 0);
	ss_session_set_visible_range(s, db->last_ts - 1000000, db->last_ts);
	char *before = ss_window_get_panel_text(win, "findings");
	CHECK(before && !strstr(before, "Analysing"), "the findings arrived");
	g_free(before);
	gtk_widget_activate_action(GTK_WIDGET(win), "findings.next", NULL);
	CHECK(settle(win), "the finding's view was drawn");
	char *text = ss_window_get_panel_text(win, "findings");
	CHECK(gui_contains(text, "\n> "), "the first finding is selected");
	printf("findings panel:\n%s\n", text);
	g_free(text);
	CHECK(g_strcmp0(ss_window_get_front_dock_panel(win), "findings") == 0, "the Findings tab is in front");
	const struct ss_selection *sel = ss_session_get_selection(s);
	const struct ss_range *r = ss_session_get_range_selection(s);
	if (sel->kind == SS_SEL_POLL) {
		char q[128];
		snprintf(q, sizeof q, "SELECT ts FROM polls WHERE id = %lld", (long long)sel->id);
		int64_t ts = sql_int(blocking_db, q);
		snprintf(q, sizeof q, "SELECT ts + dur FROM polls WHERE id = %lld", (long long)sel->id);
		CHECK(ts > 0 && in_view(win, ts, sql_int(blocking_db, q)), "the finding's poll is selected and in view");
	} else {
		CHECK(r->t1 > r->t0 && in_view(win, r->t0, r->t0), "the finding's range is selected and in view");
	}
	screenshot(GTK_WIDGET(win), "tour-finding.png");
	gtk_widget_activate_action(GTK_WIDGET(win), "findings.next", NULL);
	text = ss_window_get_panel_text(win, "findings");
	const char *second = text ? strstr(text, "\n> ") : NULL;
	const char *first_line = text ? strchr(text, '\n') : NULL;
	CHECK(second && first_line && second != first_line, "} moves to the next finding");
	g_free(text);
}

static void check_search(SsWindow *win)
{
	GtkWidget *search = ss_window_get_search(win);
	ss_search_run(search, "culprit_blocking_syscall");
	CHECK(settle(win), "the search finished");
	const char *st = ss_search_status(search);
	printf("search status: %s\n", st);
	CHECK(st && *st && !strstr(st, "no match"), "a search by function matches polls: %s", st);
	size_t n = 0;
	ss_session_get_marks(ss_window_get_session(win), &n, NULL, NULL);
	CHECK(n > 0, "its polls are marked (%zu)", n);
	screenshot(GTK_WIDGET(win), "tour-search.png");
	gtk_widget_activate_action(GTK_WIDGET(win), "search.clear", NULL);
	settle(win);
}

static char *file_bytes(const char *path, gsize *len)
{
	char *b = NULL;
	if (!g_file_get_contents(path, &b, len, NULL))
		*len = 0;
	return b;
}

static bool wait_sql(GtkWidget *sql, int seconds)
{
	gint64 end = g_get_monotonic_time() + (gint64)seconds * G_USEC_PER_SEC;
	while (ss_sql_running(sql) && g_get_monotonic_time() < end) {
		while (g_main_context_iteration(NULL, FALSE))
			;
		g_usleep(1000);
	}
	return !ss_sql_running(sql);
}

static void check_console(SsWindow *win)
{
	GtkWidget *sql = ss_window_get_panel(win, "sql");
	gsize len0, len1;
	char *bytes0 = file_bytes(blocking_db, &len0);
	int64_t polls = sql_int(blocking_db, "SELECT count(*) FROM polls");
	static const char *const refused[] = {
		"DELETE FROM polls",
		"ATTACH DATABASE ':memory:' AS other",
		"SELECT load_extension('libm.so.6')",
	};
	for (size_t i = 0; i < G_N_ELEMENTS(refused); i++) {
		ss_sql_run(sql, refused[i]);
		CHECK(wait_sql(sql, 20), "'%s' returned", refused[i]);
		char *t = ss_window_get_panel_text(win, "sql");
		CHECK(t && g_str_has_prefix(t, "Error: "), "'%s' is refused in place: %s", refused[i], t ? t : "");
		printf("%s -> %.*s\n", refused[i], t ? (int)strcspn(t, "\n") : 0, t ? t : "");
		g_free(t);
	}
	char *bytes1 = file_bytes(blocking_db, &len1);
	CHECK(bytes0 && bytes1 && len0 == len1 && memcmp(bytes0, bytes1, len0) == 0,
	      "the database file is byte for byte unchanged");
	CHECK(sql_int(blocking_db, "SELECT count(*) FROM polls") == polls, "every poll is still there");
	g_free(bytes0);
	g_free(bytes1);

	/* A row with ts (and dur, poll_id) shows itself on the timeline. */
	ss_sql_run(sql, "SELECT id AS poll_id, ts, dur, task_id FROM polls ORDER BY dur DESC LIMIT 5");
	CHECK(wait_sql(sql, 20), "the query of polls returned");
	ss_sql_select_row(sql, 0);
	settle(win);
	SsSession *s = ss_window_get_session(win);
	int64_t top = sql_int(blocking_db, "SELECT id FROM polls ORDER BY dur DESC LIMIT 1");
	int64_t ts = sql_int(blocking_db, "SELECT ts FROM polls ORDER BY dur DESC LIMIT 1");
	CHECK(ss_session_get_selection(s)->kind == SS_SEL_POLL && ss_session_get_selection(s)->id == top,
	      "the row selected its poll");
	CHECK(in_view(win, ts, ts), "the row's time is in view");
	screenshot(GTK_WIDGET(win), "tour-sql.png");

	/* Runaway: the window keeps drawing while it runs; Cancel stops it. */
	SsTimeline *tl = ss_window_get_timeline(win);
	ss_sql_run(sql, "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT count(*) FROM r");
	gui_spin(300);
	CHECK(ss_sql_running(sql), "the runaway query runs");
	unsigned f0 = ss_timeline_frames(tl);
	int painted = 0;
	gint64 t0 = g_get_monotonic_time();
	for (int i = 0; i < 5; i++) {
		gtk_widget_activate_action(GTK_WIDGET(win), i % 2 ? "tl.zoom-in" : "tl.zoom-out", NULL);
		painted += gui_wait_paint(GTK_WIDGET(win));
	}
	gint64 t1 = g_get_monotonic_time();
	unsigned f1 = ss_timeline_frames(tl);
	CHECK(ss_sql_running(sql), "the runaway query still runs after the frames");
	CHECK(painted == 5 && f1 > f0, "the window drew %d frames (timeline %u) in %.0f ms while the query ran", painted,
	      f1 - f0, (double)(t1 - t0) / 1000);
	printf("while the runaway query ran: %d window frames, %u timeline frames in %.0f ms\n", painted, f1 - f0,
	       (double)(t1 - t0) / 1000);
	screenshot(GTK_WIDGET(win), "tour-sql-running.png");
	ss_sql_cancel(sql);
	char *t = ss_window_get_panel_text(win, "sql");
	CHECK(gui_contains(t, "Cancelled"), "the console says it cancelled");
	g_free(t);
	ss_sql_run(sql, "SELECT 42 AS answer");
	CHECK(wait_sql(sql, 10), "the next query answered within 10 s of the cancel");
	t = ss_window_get_panel_text(win, "sql");
	CHECK(gui_contains(t, "\n42\n"), "and its answer is shown");
	g_free(t);
}

static void check_leak_task(SsWindow *win)
{
	CHECK(open_and_wait(win, leak_db), "the leak demo opened (%s)",
	      ss_window_get_error(win) ? ss_window_get_error(win) : "ok");
	int64_t id = sql_int(leak_db, "SELECT t.id FROM tasks t WHERE t.end_ts IS NULL AND EXISTS"
				      " (SELECT 1 FROM task_dumps d WHERE d.task_id = t.id) ORDER BY t.id LIMIT 1");
	char q[96];
	snprintf(q, sizeof q, "SELECT count(*) FROM task_dumps WHERE task_id = %lld", (long long)id);
	int64_t dumps = sql_int(leak_db, q);
	CHECK(id > 0 && dumps > 0, "a task alive at the end with dumps (%lld, %lld dumps)", (long long)id,
	      (long long)dumps);
	gtk_widget_activate_action(GTK_WIDGET(win), "task.show", "x", (gint64)id);
	CHECK(settle(win), "the task view's queries finished");
	char *t = ss_window_get_panel_text(win, "task");
	printf("task view:\n%.*s\n", t ? (int)MIN(strlen(t), 1500) : 0, t ? t : "");
	CHECK(g_strcmp0(ss_window_get_front_dock_panel(win), "task") == 0, "the Task tab is in front");
	char want[64];
	snprintf(want, sizeof want, "%lld task dump%s", (long long)dumps, dumps == 1 ? "" : "s");
	CHECK(gui_contains(t, want), "the task view counts its dumps");
	CHECK(gui_contains(t, "dump at "), "and lists them");
	g_free(t);
	screenshot(GTK_WIDGET(win), "tour-leak-task.png");
}

static void check_random_db(SsWindow *win)
{
	CHECK(open_and_wait(win, random_db), "opening random bytes ended");
	const char *e = ss_window_get_error(win);
	printf("random bytes: %s\n", e ? e : "(no error)");
	CHECK(e && strstr(e, "not an SQLite database"), "random bytes are not an SQLite database");
	CHECK(e && !strstr(e, "magic") && !strstr(e, "stallscope import:"), "no segment talk or log lines in it");
	gui_spin(800); /* the banner slides in */
	screenshot(GTK_WIDGET(win), "tour-random.png");
}

/* Whether key+mods is bound to an action of the application. */
static bool bound(GtkApplication *app, guint key, GdkModifierType mods)
{
	char **actions = gtk_application_list_action_descriptions(app);
	bool found = false;
	for (char **a = actions; *a && !found; a++) {
		char **accels = gtk_application_get_accels_for_action(app, *a);
		for (char **c = accels; *c && !found; c++) {
			guint k;
			GdkModifierType m;
			found = gtk_accelerator_parse(*c, &k, &m) && k == key && m == mods;
		}
		g_strfreev(accels);
	}
	g_strfreev(actions);
	return found;
}

/* Every key the shortcuts window shows is bound, and every action with a
 * binding has one of its keys there. Modifier-only entries (a click, a drag)
 * and Ctrl+Return (the console's editor's own key) are not accelerators. */
static void check_shortcuts(GtkApplication *app)
{
	const char *ui = ss_app_shortcuts_ui(), *tag = "<property name='accelerator'>";
	GString *shown = g_string_new(" ");
	int n = 0;
	for (const char *p = strstr(ui, tag); p; p = strstr(p, tag)) {
		p += strlen(tag);
		const char *e = strstr(p, "</property>");
		if (!e)
			break;
		char *raw = g_strndup(p, (gsize)(e - p));
		GString *u = g_string_new(raw);
		g_string_replace(u, "&lt;", "<", 0);
		g_string_replace(u, "&gt;", ">", 0);
		char **keys = g_strsplit(u->str, " ", -1);
		for (char **k = keys; *k; k++) {
			if (!**k || g_str_has_suffix(*k, ">") || !strcmp(*k, "<Control>Return"))
				continue;
			guint key;
			GdkModifierType mods;
			CHECK(gtk_accelerator_parse(*k, &key, &mods), "'%s' in the shortcuts window parses", *k);
			CHECK(bound(app, key, mods), "'%s' in the shortcuts window is bound", *k);
			char *norm = gtk_accelerator_name(key, mods);
			g_string_append_printf(shown, "%s ", norm);
			g_free(norm);
			n++;
		}
		g_strfreev(keys);
		g_string_free(u, TRUE);
		g_free(raw);
		p = e;
	}
	char **actions = gtk_application_list_action_descriptions(app);
	for (char **a = actions; *a; a++) {
		char **accels = gtk_application_get_accels_for_action(app, *a);
		bool listed = !accels[0];
		for (char **c = accels; *c && !listed; c++) {
			guint k;
			GdkModifierType m;
			if (!gtk_accelerator_parse(*c, &k, &m))
				continue;
			char *name = gtk_accelerator_name(k, m), *norm = g_strdup_printf(" %s ", name);
			listed = strstr(shown->str, norm) != NULL;
			g_free(norm);
			g_free(name);
		}
		CHECK(listed, "%s (%s) is in the shortcuts window", *a, accels[0] ? accels[0] : "");
		g_strfreev(accels);
	}
	g_strfreev(actions);
	printf("shortcuts window: %d keys, all bound; every bound action listed\n", n);
	g_string_free(shown, TRUE);
}

static gboolean run_checks(gpointer data)
{
	GtkApplication *app = data;
	GList *wins = gtk_application_get_windows(app);
	CHECK(wins != NULL, "a window opened");
	check_shortcuts(app);
	if (wins) {
		SsWindow *win = SS_WINDOW(wins->data);
		CHECK(settle(win), "the first scene arrived");
		CHECK(ss_timeline_get_db(ss_window_get_timeline(win)) != NULL, "the blocking demo opened (%s)",
		      ss_window_get_error(win) ? ss_window_get_error(win) : "ok");
		if (ss_timeline_get_db(ss_window_get_timeline(win))) {
			/* Every task of the example runtime comes from one spawn
			 * helper: the culprit tells its polls apart, the location not. */
			GVariant *mode = g_action_group_get_action_state(ss_timeline_actions(ss_window_get_timeline(win)),
									 "color-by");
			CHECK(mode && !strcmp(g_variant_get_string(mode, NULL), "culprit"),
			      "the blocking demo opens coloured by culprit function (%s)",
			      mode ? g_variant_get_string(mode, NULL) : "?");
			if (mode)
				g_variant_unref(mode);
			check_stall_answer(win);
			check_stall_walk(win);
			check_findings(win);
			check_search(win);
			check_console(win);
			check_leak_task(win);
			check_random_db(win);
		}
		gtk_window_destroy(GTK_WINDOW(win));
	}
	g_application_quit(G_APPLICATION(app));
	return G_SOURCE_REMOVE;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: test_tour SCHEMA.sql OUTDIR DEMO_DIR\n");
		return 2;
	}
	outdir = argv[2];
	demodir = argv[3];
	g_mkdir_with_parents(outdir, 0755);
	if (!gui_import_demo(demodir, outdir, "tour", "blocking", blocking_db, sizeof blocking_db) ||
	    !gui_import_demo(demodir, outdir, "tour", "leak", leak_db, sizeof leak_db))
		return 1;
	/* An import cancelled before its first segment makes no database. */
	char cancelled_db[4096], dir[4096], err[2048];
	snprintf(cancelled_db, sizeof cancelled_db, "%s/tour-cancelled.db", outdir);
	snprintf(dir, sizeof dir, "%s/blocking", demodir);
	g_unlink(cancelled_db);
	const char *cpaths[] = { dir };
	volatile int cancel = 1;
	int crc = ss_source_import(cpaths, 1, cancelled_db, NULL, NULL, &cancel, err, sizeof err);
	CHECK(crc == -1 && !strcmp(err, "cancelled"), "a cancelled import says so (%d, %s)", crc, err);
	CHECK(!g_file_test(cancelled_db, G_FILE_TEST_EXISTS), "and leaves no database behind");
	snprintf(random_db, sizeof random_db, "%s/tour-random.db", outdir);
	char junk[8192];
	for (size_t i = 0; i < sizeof junk; i++)
		junk[i] = (char)g_random_int_range(0, 256);
	if (!g_file_set_contents(random_db, junk, sizeof junk, NULL))
		return 1;
	/* Recent files go to the test's directory, not the developer's. */
	g_setenv("XDG_DATA_HOME", outdir, TRUE);
	int rc = gui_run_window(argv[0], blocking_db, run_checks);
	if (rc != 0)
		return rc;
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("tour: all checks passed\n");
	return 0;
}

/*
 * ss_app.c - the GtkApplication: accelerators, the about dialog, the shortcuts
 * window, open-recent, and one window per command-line/open request.
 *
 * NON_UNIQUE: every invocation is its own process, so opening a trace never
 * depends on a session bus (the tests run under a bare Xvfb).
 */
#include "ss_app.h"

#include <gtk/gtk.h>

#include "ss_resources.h"
#include "ss_style.h"
#include "ss_window.h"

/* The shortcuts window: every entry is a binding of on_startup()'s table
 * below (tests/viewer/test_tour.c checks that they agree). */
static const char shortcuts_ui[] =
	"<interface>"
	"<object class='GtkShortcutsWindow' id='help_overlay'><property name='modal'>1</property>"
	"<child><object class='GtkShortcutsSection'><property name='section-name'>timeline</property>"
	"<child><object class='GtkShortcutsGroup'><property name='title'>Navigate</property>"
	"<child><object class='GtkShortcutsShortcut'><property name='title'>Zoom in / out around the pointer</property>"
	"<property name='accelerator'>plus minus</property></object></child>"
	"<child><object class='GtkShortcutsShortcut'><property name='title'>Zoom with the wheel</property>"
	"<property name='accelerator'>&lt;Control&gt;</property><property name='subtitle'>Ctrl + wheel, or pinch</property></object></child>"
	"<child><object class='GtkShortcutsShortcut'><property name='title'>Pan</property>"
	"<property name='accelerator'>Left Right</property><property name='subtitle'>or drag, or the wheel</property></object></child>"
	"<child><object class='GtkShortcutsShortcut'><property name='title'>Show everything</property>"
	"<property name='accelerator'>0 Home</property></object></child>"
	"<child><object class='GtkShortcutsShortcut'><property name='title'>Zoom to the selection</property>"
	"<property name='accelerator'>z</property></object></child>"
	"<child><object class='GtkShortcutsShortcut'><property name='title'>Previous / next view</property>"
	"<property name='accelerator'>&lt;Alt&gt;Left &lt;Alt&gt;Right</property></object></child>"
	"</object></child>"
	"<child><object class='GtkShortcutsGroup'><property name='title'>Find</property>"
	"<child><object class='GtkShortcutsShortcut'><property name='title'>Next / previous stall</property>"
	"<property name='accelerator'>bracketright bracketleft</property></object></child>"
	"<child><object class='GtkShortcutsShortcut'><property name='title'>Next / previous finding</property>"
	"<property name='accelerator'>braceright braceleft</property></object></child>"
	"<child><object class='GtkShortcutsShortcut'><property name='title'>Search (task 12, w2, a function, file.c:40)</property>"
	"<property name='accelerator'>&lt;Control&gt;f</property></object></child>"
	"<child><object class='GtkShortcutsShortcut'><property name='title'>Next / previous match</property>"
	"<property name='accelerator'>F3 &lt;Shift&gt;F3</property></object></child>"
	"<child><object class='GtkShortcutsShortcut'><property name='title'>Task view of the selected poll</property>"
	"<property name='accelerator'>t</property></object></child>"
	"</object></child>"
	"<child><object class='GtkShortcutsGroup'><property name='title'>Select</property>"
	"<child><object class='GtkShortcutsShortcut'><property name='title'>Select a poll (and highlight its task)</property>"
	"<property name='accelerator'>&lt;Primary&gt;</property><property name='subtitle'>click</property></object></child>"
	"<child><object class='GtkShortcutsShortcut'><property name='title'>Select a range</property>"
	"<property name='accelerator'>&lt;Shift&gt;</property><property name='subtitle'>Shift + drag</property></object></child>"
	"<child><object class='GtkShortcutsShortcut'><property name='title'>Clear the selection</property>"
	"<property name='accelerator'>Escape</property></object></child>"
	"</object></child>"
	"<child><object class='GtkShortcutsGroup'><property name='title'>General</property>"
	"<child><object class='GtkShortcutsShortcut'><property name='title'>Open a trace</property>"
	"<property name='accelerator'>&lt;Control&gt;o</property></object></child>"
	"<child><object class='GtkShortcutsShortcut'><property name='title'>Show or hide the side panel</property>"
	"<property name='accelerator'>F9</property></object></child>"
	"<child><object class='GtkShortcutsShortcut'><property name='title'>Run the SQL console's query</property>"
	"<property name='accelerator'>&lt;Control&gt;Return</property></object></child>"
	"<child><object class='GtkShortcutsShortcut'><property name='title'>Keyboard shortcuts</property>"
	"<property name='accelerator'>&lt;Control&gt;question</property></object></child>"
	"<child><object class='GtkShortcutsShortcut'><property name='title'>Close the window</property>"
	"<property name='accelerator'>&lt;Control&gt;w</property></object></child>"
	"<child><object class='GtkShortcutsShortcut'><property name='title'>Quit</property>"
	"<property name='accelerator'>&lt;Control&gt;q</property></object></child>"
	"</object></child>"
	"</object></child></object></interface>";

const char *ss_app_shortcuts_ui(void)
{
	return shortcuts_ui;
}

static SsWindow *new_window(GtkApplication *app)
{
	SsWindow *w = ss_window_new(app);
	GtkBuilder *b = gtk_builder_new_from_string(shortcuts_ui, -1);
	gtk_application_window_set_help_overlay(GTK_APPLICATION_WINDOW(w),
						GTK_SHORTCUTS_WINDOW(gtk_builder_get_object(b, "help_overlay")));
	g_object_unref(b);
	return w;
}

static void on_activate(GApplication *app, gpointer data)
{
	(void)data;
	gtk_window_present(GTK_WINDOW(new_window(GTK_APPLICATION(app))));
}

static void on_open(GApplication *app, GFile **files, int n, const char *hint, gpointer data)
{
	(void)hint;
	(void)data;
	/* All the files given at once are one trace (segments of a recording). */
	SsWindow *w = new_window(GTK_APPLICATION(app));
	gtk_window_present(GTK_WINDOW(w));
	ss_window_open_files(w, files, (gsize)n);
}

static void act_about(GSimpleAction *a, GVariant *p, gpointer app)
{
	(void)a;
	(void)p;
	GtkWindow *parent = gtk_application_get_active_window(GTK_APPLICATION(app));
	gtk_show_about_dialog(parent, "program-name", "stallscope", "logo-icon-name", SS_APP_ID,
			      "version", STALLSCOPE_VERSION, "license-type", GTK_LICENSE_APACHE_2_0,
			      "comments", "A runtime microscope for asynchronous and thread-pool programs", NULL);
}

static void act_open_recent(GSimpleAction *a, GVariant *p, gpointer app)
{
	(void)a;
	const char *path = g_variant_get_string(p, NULL);
	SsWindow *w = new_window(GTK_APPLICATION(app));
	gtk_window_present(GTK_WINDOW(w));
	ss_window_open_paths(w, &path, 1);
}

static void act_quit(GSimpleAction *a, GVariant *p, gpointer app)
{
	(void)a;
	(void)p;
	g_application_quit(G_APPLICATION(app));
}

static void on_startup(GApplication *app, gpointer data)
{
	(void)data;
	static const GActionEntry entries[] = {
		{ "about", act_about, NULL, NULL, NULL, { 0 } },
		{ "open-recent", act_open_recent, "s", NULL, NULL, { 0 } },
		{ "quit", act_quit, NULL, NULL, NULL, { 0 } },
	};
	g_action_map_add_action_entries(G_ACTION_MAP(app), entries, G_N_ELEMENTS(entries), app);
	static const struct {
		const char *action;
		const char *accels[4];
	} accels[] = {
		{ "win.open", { "<Control>o", NULL } },
		{ "app.quit", { "<Control>q", NULL } },
		{ "window.close", { "<Control>w", NULL } },
		{ "win.show-help-overlay", { "<Control>question", NULL } },
		{ "tl.zoom-in", { "plus", "equal", "KP_Add", NULL } },
		{ "tl.zoom-out", { "minus", "KP_Subtract", NULL } },
		{ "tl.pan-left", { "Left", NULL } },
		{ "tl.pan-right", { "Right", NULL } },
		{ "tl.fit", { "0", "Home", NULL } },
		{ "tl.zoom-selection", { "z", NULL } },
		{ "tl.back", { "<Alt>Left", "BackSpace", NULL } },
		{ "tl.forward", { "<Alt>Right", NULL } },
		{ "tl.clear-selection", { "Escape", NULL } },
		{ "tl.next-stall", { "bracketright", NULL } },
		{ "tl.prev-stall", { "bracketleft", NULL } },
		{ "findings.next", { "braceright", NULL } },
		{ "findings.prev", { "braceleft", NULL } },
		{ "search.focus", { "<Control>f", NULL } },
		{ "search.next", { "F3", NULL } },
		{ "search.prev", { "<Shift>F3", NULL } },
		{ "task.show-selected", { "t", NULL } },
		{ "win.toggle-side", { "F9", NULL } },
	};
	for (size_t i = 0; i < G_N_ELEMENTS(accels); i++)
		gtk_application_set_accels_for_action(GTK_APPLICATION(app), accels[i].action, accels[i].accels);
	ss_style_follow_system();
	ss_style_install_css();
	/* The icon is built in (data/stallscope.gresource.xml): the About
	 * dialog and the window show it wherever the program runs from. */
	ss_resources_register_resource();
	GdkDisplay *d = gdk_display_get_default();
	if (d)
		gtk_icon_theme_add_resource_path(gtk_icon_theme_get_for_display(d), "/io/github/stallscope/Viewer/icons");
	gtk_window_set_default_icon_name(SS_APP_ID);
}

GtkApplication *ss_app_new(void)
{
	GtkApplication *app = gtk_application_new(SS_APP_ID, G_APPLICATION_HANDLES_OPEN | G_APPLICATION_NON_UNIQUE);
	g_signal_connect(app, "startup", G_CALLBACK(on_startup), NULL);
	g_signal_connect(app, "activate", G_CALLBACK(on_activate), NULL);
	g_signal_connect(app, "open", G_CALLBACK(on_open), NULL);
	return app;
}

int ss_app_run(int argc, char **argv)
{
	g_set_application_name("stallscope");
	GtkApplication *app = ss_app_new();
	int rc = g_application_run(G_APPLICATION(app), argc, argv);
	g_object_unref(app);
	return rc;
}

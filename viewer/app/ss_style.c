/*
 * ss_style.c - see ss_style.h. Asynchronous throughout: a missing session bus
 * or portal only means the setting is not followed, never a delay at startup.
 */
#include "ss_style.h"

#include <gtk/gtk.h>
#include <string.h>

static void apply(GVariant *v)
{
	/* color-scheme: 0 no preference, 1 prefer dark, 2 prefer light. */
	while (v && g_variant_is_of_type(v, G_VARIANT_TYPE_VARIANT)) {
		GVariant *inner = g_variant_get_variant(v);
		g_variant_unref(v);
		v = inner;
	}
	if (v && g_variant_is_of_type(v, G_VARIANT_TYPE_UINT32))
		g_object_set(gtk_settings_get_default(), "gtk-application-prefer-dark-theme",
			     g_variant_get_uint32(v) == 1, NULL);
	if (v)
		g_variant_unref(v);
}

static void on_changed(GDBusProxy *p, const char *sender, const char *signal, GVariant *params, gpointer data)
{
	(void)p;
	(void)sender;
	(void)data;
	if (strcmp(signal, "SettingChanged") != 0)
		return;
	const char *ns, *key;
	GVariant *val;
	g_variant_get(params, "(&s&sv)", &ns, &key, &val);
	if (strcmp(ns, "org.freedesktop.appearance") == 0 && strcmp(key, "color-scheme") == 0)
		apply(val);
	else
		g_variant_unref(val);
}

static void on_read(GObject *src, GAsyncResult *res, gpointer data)
{
	(void)data;
	GVariant *r = g_dbus_proxy_call_finish(G_DBUS_PROXY(src), res, NULL);
	if (!r)
		return;
	GVariant *v;
	g_variant_get(r, "(v)", &v);
	apply(v);
	g_variant_unref(r);
}

static void on_proxy(GObject *src, GAsyncResult *res, gpointer data)
{
	(void)src;
	(void)data;
	GDBusProxy *p = g_dbus_proxy_new_for_bus_finish(res, NULL);
	if (!p)
		return;
	g_signal_connect(p, "g-signal", G_CALLBACK(on_changed), NULL);
	g_dbus_proxy_call(p, "Read", g_variant_new("(ss)", "org.freedesktop.appearance", "color-scheme"),
			  G_DBUS_CALL_FLAGS_NONE, 2000, NULL, on_read, NULL);
	/* The proxy lives as long as the process, to keep receiving changes. */
}

void ss_style_follow_system(void)
{
	if (!g_getenv("DBUS_SESSION_BUS_ADDRESS") && !g_getenv("XDG_RUNTIME_DIR"))
		return;
	g_dbus_proxy_new_for_bus(G_BUS_TYPE_SESSION, G_DBUS_PROXY_FLAGS_DO_NOT_AUTO_START_AT_CONSTRUCTION, NULL,
				 "org.freedesktop.portal.Desktop", "/org/freedesktop/portal/desktop",
				 "org.freedesktop.portal.Settings", NULL, on_proxy, NULL);
}

/* Badges say a verdict or a severity in the colours the timeline uses for
 * the same thing (tl_palette.c): blocked orange, computing green, waiting
 * for a CPU purple. */
static const char css[] =
	".ss-badge { border-radius: 4px; padding: 1px 8px; font-weight: bold; color: white; }\n"
	".ss-verdict-computing { background: #2e9e44; }\n"
	".ss-verdict-preempted, .ss-verdict-waiting { background: #8a55d0; }\n"
	".ss-verdict-blocked { background: #f06400; }\n"
	".ss-verdict-partly { background: #c77c2a; }\n"
	".ss-verdict-none { background: #808080; }\n"
	".ss-sev-critical { background: #c01c28; }\n"
	".ss-sev-warning { background: #c88800; }\n"
	".ss-sev-info { background: #3584e4; }\n"
	".ss-banner { background: alpha(#e01b24, 0.14); border-radius: 6px; padding: 4px 6px; }\n"
	".ss-error { color: #c01c28; }\n"
	"ssanswer { border-bottom: 1px solid alpha(currentColor, 0.15); }\n";

void ss_style_install_css(void)
{
	GdkDisplay *d = gdk_display_get_default();
	if (!d)
		return;
	GtkCssProvider *p = gtk_css_provider_new();
	gtk_css_provider_load_from_data(p, css, -1);
	gtk_style_context_add_provider_for_display(d, GTK_STYLE_PROVIDER(p), GTK_STYLE_PROVIDER_PRIORITY_APPLICATION);
	g_object_unref(p);
}

bool ss_style_widget_is_dark(GtkWidget *w)
{
	GdkRGBA fg;
#if GTK_CHECK_VERSION(4, 10, 0)
	gtk_widget_get_color(w, &fg);
#else
	gtk_style_context_get_color(gtk_widget_get_style_context(w), &fg);
#endif
	return 0.2126 * fg.red + 0.7152 * fg.green + 0.0722 * fg.blue > 0.5;
}

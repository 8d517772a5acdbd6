/*
 * ss_panels.c - the panel registry; see ss_panels.h. To add a panel, add its
 * X(name) line below, in the order of its tab.
 */
#include "ss_panels.h"

#include <string.h>

#define SS_PANELS(X) \
	X(details)   \
	X(stalls)    \
	X(range)

#define DECLARE(name) extern const struct ss_panel ss_panel_##name;
SS_PANELS(DECLARE)
#undef DECLARE

#define ENTRY(name) &ss_panel_##name,
static const struct ss_panel *const panels[] = { SS_PANELS(ENTRY) };
#undef ENTRY

size_t ss_panel_count(void)
{
	return G_N_ELEMENTS(panels);
}

const struct ss_panel *ss_panel_at(size_t i)
{
	return i < G_N_ELEMENTS(panels) ? panels[i] : NULL;
}

const struct ss_panel *ss_panel_find(const char *id)
{
	for (size_t i = 0; i < G_N_ELEMENTS(panels); i++)
		if (strcmp(panels[i]->id, id) == 0)
			return panels[i];
	return NULL;
}

GtkWidget *ss_panel_text_view(GtkLabel **label)
{
	GtkLabel *l = GTK_LABEL(gtk_label_new(NULL));
	gtk_label_set_selectable(l, TRUE);
	gtk_label_set_xalign(l, 0);
	gtk_label_set_yalign(l, 0);
	gtk_label_set_wrap(l, TRUE);
	gtk_label_set_wrap_mode(l, PANGO_WRAP_WORD_CHAR);
	gtk_widget_add_css_class(GTK_WIDGET(l), "monospace");
	gtk_widget_set_margin_start(GTK_WIDGET(l), 8);
	gtk_widget_set_margin_end(GTK_WIDGET(l), 8);
	gtk_widget_set_margin_top(GTK_WIDGET(l), 8);
	GtkWidget *sw = gtk_scrolled_window_new();
	gtk_scrolled_window_set_child(GTK_SCROLLED_WINDOW(sw), GTK_WIDGET(l));
	gtk_scrolled_window_set_policy(GTK_SCROLLED_WINDOW(sw), GTK_POLICY_NEVER, GTK_POLICY_AUTOMATIC);
	gtk_widget_set_vexpand(sw, TRUE);
	*label = l;
	return sw;
}

/*
 * ss_style.h - dark or light following the desktop: the freedesktop
 * portal's org.freedesktop.appearance color-scheme (what GNOME and KDE set),
 * read at startup and followed when it changes. Without a portal, GTK's own
 * settings stay in charge. And the application's CSS.
 */
#ifndef STALLSCOPE_SS_STYLE_H
#define STALLSCOPE_SS_STYLE_H

#include <gtk/gtk.h>
#include <stdbool.h>

void ss_style_follow_system(void);

/* Whether w is drawn dark: its theme's text colour is light. Follows whatever
 * theme and colour scheme GTK resolved, with no setting of our own. Main
 * thread. */
bool ss_style_widget_is_dark(GtkWidget *w);

/* The application's own CSS (badges, the error banner, severity and delay
 * colours), for the default display. */
void ss_style_install_css(void);

#endif /* STALLSCOPE_SS_STYLE_H */

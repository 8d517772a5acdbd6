/*
 * ss_style.h - dark or light following the desktop: the freedesktop
 * portal's org.freedesktop.appearance color-scheme (what GNOME and KDE set),
 * read at startup and followed when it changes. Without a portal, GTK's own
 * settings stay in charge. And the application's CSS.
 */
#ifndef STALLSCOPE_SS_STYLE_H
#define STALLSCOPE_SS_STYLE_H

void ss_style_follow_system(void);

/* The application's own CSS (badges, the error banner, severity and delay
 * colours), for the default display. */
void ss_style_install_css(void);

#endif /* STALLSCOPE_SS_STYLE_H */

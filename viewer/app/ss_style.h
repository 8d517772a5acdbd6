/*
 * ss_style.h - dark or light following the desktop: the freedesktop
 * portal's org.freedesktop.appearance color-scheme (what GNOME and KDE set),
 * read at startup and followed when it changes. Without a portal, GTK's own
 * settings stay in charge.
 */
#ifndef STALLSCOPE_SS_STYLE_H
#define STALLSCOPE_SS_STYLE_H

void ss_style_follow_system(void);

#endif /* STALLSCOPE_SS_STYLE_H */

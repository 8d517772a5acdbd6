/*
 * ss_tree.h - the call tree panel (ss_tree.c), seen from the tests and the
 * search: selecting a node's row (which asks for its function's callers and
 * callees), and what the caller/callee side shows.
 */
#ifndef STALLSCOPE_SS_TREE_H
#define STALLSCOPE_SS_TREE_H

#include <gtk/gtk.h>
#include <stdbool.h>
#include <stdint.h>

/* Opens the path to node (of the panel's result tree) and selects its row;
 * false when it cannot be shown. */
bool ss_tree_panel_select(GtkWidget *panel, uint32_t node);
/* Whether caller/callee trees are being computed. */
bool ss_tree_panel_focus_pending(GtkWidget *panel);
/* The caller/callee side as text (the function's figures, its direct
 * callers and callees, its lines), NULL before a function was selected.
 * g_free() it. */
char *ss_tree_panel_focus_text(GtkWidget *panel);
/* Rows shown in the tree. */
guint ss_tree_panel_rows(GtkWidget *panel);

#endif /* STALLSCOPE_SS_TREE_H */

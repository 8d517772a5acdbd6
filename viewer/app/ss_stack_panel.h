/*
 * ss_stack_panel.h - SsStackPanel, what the stack views' panels (the CPU and
 * off-CPU flame graphs, ss_flame.c; the call tree, ss_tree.c) share: a
 * toolbar (the scope, grouping by function or line, inside polls only,
 * inverted or top-down / bottom-up, search, compare), the scope that follows
 * the session (the selected poll, stall, task or worker, or the range
 * selection, whichever the user chose last; the whole trace otherwise), and
 * the computation on the session's query worker: the scope's profile
 * (viewer/analysis/sv_collect.h) and its tree, never on the main thread. A
 * newer request supersedes the one in flight (interrupting its SQL), and the
 * last picture stays, marked as being recomputed, until the new one arrives.
 * A panel computes only while it is shown: a hidden tab's request waits.
 *
 * Profiles are cached per scope (switching grouping, inverting or searching
 * reads no SQL again), and a baseline for the diff is either a scope pinned
 * here ("Pin as baseline": the current profile) or another database's whole
 * trace ("Compare with a database…").
 *
 * The body (a flame graph, a tree) is made by the kind and shown each result.
 */
#ifndef STALLSCOPE_SS_STACK_PANEL_H
#define STALLSCOPE_SS_STACK_PANEL_H

#include <gtk/gtk.h>
#include <stdbool.h>

#include "ss_session.h"
#include "sv_collect.h"
#include "sv_tree.h"

G_BEGIN_DECLS

/* One computed view, immutable once delivered and shared by reference. */
struct ss_stack_result {
	struct sv_scope scope;        /* resolved: what was read */
	char title[512];              /* the scope in words, with a note when the choice had no selection */
	struct sv_collect_info info;
	struct sv_profile *prof;      /* shared with the panel's cache */
	struct sv_profile *base;      /* the baseline, NULL without a diff */
	char base_name[256];          /* "the pinned range 1.2 s – 1.3 s", "steady.db" */
	struct sv_tree tree;          /* of prof (diffed against base) */
	enum sv_group group;
	enum sv_tree_mode mode;
	double ms;                    /* wall time on the worker */
};
struct ss_stack_result *ss_stack_result_ref(struct ss_stack_result *r);
void ss_stack_result_unref(struct ss_stack_result *r);

#define SS_TYPE_STACK_PANEL (ss_stack_panel_get_type())
G_DECLARE_FINAL_TYPE(SsStackPanel, ss_stack_panel, SS, STACK_PANEL, GtkBox)

struct ss_stack_kind {
	const char *id;               /* the panel's registry id */
	int kind;                     /* enum sv_kind, or -1: chosen in the toolbar */
	bool tree_modes;              /* top-down / bottom-up (else an "Inverted" toggle) */
	GtkWidget *(*create_body)(SsStackPanel *panel);
	/* A new result (NULL: none, the trace closed); the body takes a reference. */
	void (*show)(GtkWidget *body, struct ss_stack_result *r);
	/* Highlights what matches needle ("" none); returns the weight covered. */
	int64_t (*search)(GtkWidget *body, const char *needle);
};

/* kind must outlive the panel (a static). */
GtkWidget *ss_stack_panel_new(SsSession *session, const struct ss_stack_kind *kind);
SsSession *ss_stack_panel_get_session(SsStackPanel *self);
GtkWidget *ss_stack_panel_get_body(GtkWidget *panel);

/* The last result delivered (NULL before one), whether a request is in
 * flight, and how many results were computed and on which thread (tests). */
struct ss_stack_result *ss_stack_panel_get_result(GtkWidget *panel);
bool ss_stack_panel_pending(GtkWidget *panel);
void ss_stack_panel_counts(GtkWidget *panel, guint *computed, guint *off_main);
/* The search's covered weight, as its label shows it. */
int64_t ss_stack_panel_get_matched(GtkWidget *panel);

/* What the toolbar sets, for tests and scripts. */
void ss_stack_panel_set_search(GtkWidget *panel, const char *text);
void ss_stack_panel_set_group(GtkWidget *panel, enum sv_group group);
void ss_stack_panel_set_inverted(GtkWidget *panel, bool inverted);
void ss_stack_panel_pin_baseline(GtkWidget *panel);
void ss_stack_panel_compare_db(GtkWidget *panel, const char *path);
void ss_stack_panel_clear_baseline(GtkWidget *panel);

/* The panel as text (ss_panel.text): the scope, totals, the heaviest
 * functions by self and total. g_free() it. */
char *ss_stack_panel_text(GtkWidget *panel);

G_END_DECLS

#endif /* STALLSCOPE_SS_STACK_PANEL_H */

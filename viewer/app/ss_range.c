/*
 * ss_range.c - the Range panel: the range selected with Shift+drag, summed up
 * per worker (busy, parked and off-CPU time) with its top locations
 * (tl_query_range_summary). It comes to the front when a range is selected;
 * clearing the selection leaves the last summary readable. A text panel
 * (ss_text_panel.h).
 */
#include "ss_panels.h"
#include "ss_text_panel.h"
#include "tl_query.h"

static void *request(SsSession *s, bool *raise)
{
	const struct ss_range *r = ss_session_get_range_selection(s);
	if (r->t1 <= r->t0)
		return NULL;
	*raise = true;
	return g_memdup2(r, sizeof *r);
}

static void run(struct tl_db *db, const void *request, GString *out)
{
	const struct ss_range *r = request;
	tl_query_range_summary(db, r->t0, r->t1, out);
	g_string_append(out, "\nZ zooms to the selection, Escape clears it.");
}

static char *intro(const struct tl_db *db)
{
	return g_strdup(db ? "Shift+drag on the timeline to summarise a range: busy, parked and off-CPU time per "
			     "worker, and the locations that took the time."
			   : "No trace");
}

static const struct ss_text_kind kind = { "range", "range-selection", request, run, intro };

static GtkWidget *create(SsSession *session)
{
	return ss_text_panel_new(session, &kind);
}

const struct ss_panel ss_panel_range = { "range", "Range", create, ss_text_panel_get_text };

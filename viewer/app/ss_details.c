/*
 * ss_details.c - the Details panel: what the selection is. A poll's task,
 * location, times, wake and its delay, CPU states and samples as stacks; a
 * stall's captures with their backtraces; a task's spawn and end; a worker's
 * totals. Before anything is selected it says what the trace holds and how to
 * explore it. A text panel (ss_text_panel.h); the text is tl_query.c's.
 */
#include "ss_panels.h"
#include "ss_text_panel.h"
#include "tl_query.h"

static void *request(SsSession *s, bool *raise)
{
	const struct ss_selection *sel = ss_session_get_selection(s);
	if (sel->kind == SS_SEL_NONE)
		return NULL;   /* the last details stay readable after a click beside a poll */
	/* A stall is chosen in the Stalls tab, which stays in front. */
	*raise = sel->kind != SS_SEL_STALL;
	return g_memdup2(sel, sizeof *sel);
}

static void run(struct tl_db *db, const void *request, GString *out)
{
	const struct ss_selection *sel = request;
	switch (sel->kind) {
	case SS_SEL_POLL:
		tl_query_poll_details(db, sel->id, out);
		break;
	case SS_SEL_STALL:
		for (size_t i = 0; i < db->n_stalls; i++)
			if (db->stalls[i].id == sel->id) {
				tl_query_stall_details(db, &db->stalls[i], out);
				break;
			}
		break;
	case SS_SEL_TASK:
		tl_query_task_details(db, sel->id, out);
		break;
	case SS_SEL_WORKER:
		tl_query_worker_details(db, sel->id, out);
		break;
	case SS_SEL_NONE:
		break;
	}
}

static char *intro(const struct tl_db *db)
{
	if (!db)
		return g_strdup("No trace");
	return g_strdup_printf("%zu lane%s, %zu stall%s, %zu lost-data range%s\n\n"
			       "Click a poll for its task, wake and samples, or a worker's label for its totals.\n"
			       "Shift+drag to summarise a range.\n"
			       "Ctrl+wheel zooms around the pointer; drag pans.",
			       db->n_lanes, db->n_lanes == 1 ? "" : "s", db->n_stalls, db->n_stalls == 1 ? "" : "s",
			       db->n_losses, db->n_losses == 1 ? "" : "s");
}

static const struct ss_text_kind kind = { "details", "selection", request, run, intro };

static GtkWidget *create(SsSession *session)
{
	return ss_text_panel_new(session, &kind);
}

const struct ss_panel ss_panel_details = { "details", "Details", create, ss_text_panel_get_text };

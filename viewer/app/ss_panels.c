/*
 * ss_panels.c - the panel registry; see ss_panels.h. To add a panel, add its
 * X(name) line below, in the order of its tab (within its notebook: the side
 * panels, then the dock's, keep the order they have here).
 */
#include "ss_panels.h"

#include <string.h>

#define SS_PANELS(X) \
	X(details)   \
	X(range)     \
	X(findings)  \
	X(stalls)    \
	X(task)      \
	X(sql)       \
	X(flame)     \
	X(offcpu)    \
	X(tree)

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

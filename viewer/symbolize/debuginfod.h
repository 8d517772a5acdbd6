/*
 * debuginfod.h - files by build id from the debuginfod servers DEBUGINFOD_URLS
 * names, for the symbolizer (symbolize.c) when a binary or its debug info is not
 * found locally. libdebuginfod does the asking and keeps what it fetched in its
 * cache (DEBUGINFOD_CACHE_PATH, else ~/.cache/debuginfod_client), so an import
 * that comes again needs no network. Here: each build id is asked once per
 * client, a request gets at most SS_SYM_DEBUGINFOD_REQUEST_S seconds
 * (DEBUGINFOD_MAXTIME when shorter), all of a client's requests together
 * SS_SYM_DEBUGINFOD_BUDGET_S; past that it says why instead of asking. Not
 * thread-safe: one client per symbolizer, used by its thread.
 */
#ifndef STALLSCOPE_DEBUGINFOD_H
#define STALLSCOPE_DEBUGINFOD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ss_dc;

/* A client when DEBUGINFOD_URLS is set and this build has libdebuginfod, else
 * NULL (and every call below takes NULL as "no debuginfod"). */
struct ss_dc *ss_dc_new(void);
void ss_dc_free(struct ss_dc *c);
/* Whether this build can ask debuginfod servers at all. */
bool ss_dc_available(void);

/* The binary (executable) or its debug info with build id id: a path in the
 * cache, owned by c, or NULL with *why ("" when debuginfod is not in use). */
const char *ss_dc_fetch(struct ss_dc *c, const uint8_t *id, size_t len, bool executable,
			const char **why);

/* "debuginfod: N files fetched, ..." ("" when nothing was asked); owned by c. */
const char *ss_dc_summary(struct ss_dc *c);

#endif /* STALLSCOPE_DEBUGINFOD_H */

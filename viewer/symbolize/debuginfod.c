/*
 * debuginfod.c - see debuginfod.h. The time limit is ours, enforced through
 * libdebuginfod's progress callback, which it calls while it waits (about once a
 * second at least): returning nonzero ends the request.
 */
#include "debuginfod.h"
#include "symbolize.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef STALLSCOPE_HAVE_DEBUGINFOD
#include <elfutils/debuginfod.h>
#endif

/* A build id asked, and what came back. */
struct answer {
	char hex[129];
	bool executable;
	char *path;               /* the cached file, NULL when none */
	char note[96];            /* why not */
};

struct ss_dc {
#ifdef STALLSCOPE_HAVE_DEBUGINFOD
	debuginfod_client *client; /* made on first use */
#endif
	uint64_t deadline, spent, request_ns;
	struct answer *asked;
	size_t n_asked, cap_asked;
	unsigned fetched, missing, failed;
	char stopped[96];          /* why asking stopped, "" while it goes on */
	char summary[256];
};

bool ss_dc_available(void)
{
#ifdef STALLSCOPE_HAVE_DEBUGINFOD
	return true;
#else
	return false;
#endif
}

struct ss_dc *ss_dc_new(void)
{
#ifdef STALLSCOPE_HAVE_DEBUGINFOD
	const char *urls = getenv("DEBUGINFOD_URLS");
	if (!urls || !*urls)
		return NULL;
	struct ss_dc *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	/* libdebuginfod's own per-download limit, when shorter, is ours too. */
	const char *maxtime = getenv("DEBUGINFOD_MAXTIME");
	long mt = maxtime ? strtol(maxtime, NULL, 10) : 0;
	c->request_ns = (uint64_t)(mt > 0 && mt < SS_SYM_DEBUGINFOD_REQUEST_S ? mt : SS_SYM_DEBUGINFOD_REQUEST_S) *
			1000000000u;
	return c;
#else
	return NULL;
#endif
}

void ss_dc_free(struct ss_dc *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n_asked; i++)
		free(c->asked[i].path);
	free(c->asked);
#ifdef STALLSCOPE_HAVE_DEBUGINFOD
	if (c->client)
		debuginfod_end(c->client);
#endif
	free(c);
}

#ifdef STALLSCOPE_HAVE_DEBUGINFOD
static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int progress(debuginfod_client *client, long a, long b)
{
	(void)a, (void)b;
	struct ss_dc *c = debuginfod_get_user_data(client);
	return mono_ns() >= c->deadline;
}

/* Asks the servers (a has the build id); fills a->path or a->note. */
static void ask(struct ss_dc *c, struct answer *a, const uint8_t *id, size_t len)
{
	if (c->stopped[0]) {
		snprintf(a->note, sizeof a->note, "%s", c->stopped);
		return;
	}
	if (!c->client) {
		c->client = debuginfod_begin();
		if (!c->client) {
			snprintf(c->stopped, sizeof c->stopped, "debuginfod: client not available");
			snprintf(a->note, sizeof a->note, "%s", c->stopped);
			return;
		}
		debuginfod_set_user_data(c->client, c);
		debuginfod_set_progressfn(c->client, progress);
	}
	const uint64_t budget = (uint64_t)SS_SYM_DEBUGINFOD_BUDGET_S * 1000000000u;
	uint64_t t0 = mono_ns(), left = budget - c->spent;
	c->deadline = t0 + (c->request_ns < left ? c->request_ns : left);
	char *path = NULL;
	int fd = a->executable ? debuginfod_find_executable(c->client, id, (int)len, &path)
			       : debuginfod_find_debuginfo(c->client, id, (int)len, &path);
	uint64_t t1 = mono_ns();
	c->spent += t1 - t0;
	if (fd >= 0) {
		close(fd);
		a->path = path;
		c->fetched++;
		return;
	}
	free(path);
	if (t1 >= c->deadline) {
		c->failed++;
		snprintf(a->note, sizeof a->note, "debuginfod: no answer within %.0f s",
			 (double)(c->deadline - t0) / 1e9);
		if (c->spent >= budget)
			snprintf(c->stopped, sizeof c->stopped, "debuginfod: not asked, its %d s budget is spent",
				 SS_SYM_DEBUGINFOD_BUDGET_S);
	} else if (fd == -ENOENT) {
		c->missing++;
		snprintf(a->note, sizeof a->note, "debuginfod: not on the servers");
	} else {
		c->failed++;
		snprintf(a->note, sizeof a->note, "debuginfod: %s", strerror(-fd));
	}
}
#endif

const char *ss_dc_fetch(struct ss_dc *c, const uint8_t *id, size_t len, bool executable,
			const char **why)
{
	*why = "";
	if (!c || !len || len > 64)
		return NULL;
	char hex[129];
	ss_sym_hex(id, len, hex);
	for (size_t i = 0; i < c->n_asked; i++)
		if (c->asked[i].executable == executable && strcmp(c->asked[i].hex, hex) == 0) {
			*why = c->asked[i].note;
			return c->asked[i].path;
		}
	if (c->n_asked == c->cap_asked) {
		size_t nc = c->cap_asked ? 2 * c->cap_asked : 16;
		struct answer *na = realloc(c->asked, nc * sizeof *na);
		if (!na)
			return NULL;
		c->asked = na;
		c->cap_asked = nc;
	}
	struct answer *a = &c->asked[c->n_asked++];
	memset(a, 0, sizeof *a);
	snprintf(a->hex, sizeof a->hex, "%s", hex);
	a->executable = executable;
#ifdef STALLSCOPE_HAVE_DEBUGINFOD
	ask(c, a, id, len);
#else
	snprintf(a->note, sizeof a->note, "debuginfod: not built in");
#endif
	*why = a->note;
	return a->path;
}

const char *ss_dc_summary(struct ss_dc *c)
{
	if (!c || !c->n_asked)
		return "";
	snprintf(c->summary, sizeof c->summary,
		 "debuginfod: %u files fetched, %u build ids not on the servers, %u requests failed "
		 "(%.1f s)%s%s", c->fetched, c->missing, c->failed, (double)c->spent / 1e9,
		 c->stopped[0] ? "; " : "", c->stopped);
	return c->summary;
}

/*
 * record_summary.c - after a run: seal what its processes left unsealed (a
 * program killed by Ctrl-C never reaches its exit handlers), then read back what
 * the run wrote, so `record` can say what it holds, what could not be recorded,
 * and whether anything was recorded at all.
 */
#include "record-private.h"

#include "recorder-private.h"
#include "segment_reader.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* name is PREFIX.N.bin[.active] or PREFIX-PID.N.bin[.active]: its prefix into out
 * and the child's pid (0 for the root prefix). 1 when it is one of those. */
static int match(const char *name, const char *prefix, char *out, size_t len, long *pid,
		 int *active)
{
	size_t pl = strlen(prefix);
	if (strncmp(name, prefix, pl) != 0)
		return 0;
	const char *p = name + pl;
	*pid = 0;
	if (*p == '-') {
		char *end;
		*pid = strtol(p + 1, &end, 10);
		if (end == p + 1 || *pid <= 0)
			return 0;
		p = end;
	}
	if (*p != '.')
		return 0;
	char *end;
	strtoull(p + 1, &end, 10);
	if (end == p + 1)
		return 0;
	if (!strcmp(end, ".bin"))
		*active = 0;
	else if (!strcmp(end, ".bin.active"))
		*active = 1;
	else
		return 0;
	snprintf(out, len, "%.*s", (int)(p - name), name);
	return 1;
}

void ss_run_repair(const char *dir, const struct stallscope_config *cfg)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	char done[32][256];
	int ndone = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		char pfx[256];
		long pid;
		int active;
		if (!match(de->d_name, cfg->file_prefix, pfx, sizeof pfx, &pid, &active) || !active)
			continue;
		if (pid && !(kill((pid_t)pid, 0) != 0 && errno == ESRCH))
			continue; /* a child still running writes it */
		int seen = 0;
		for (int i = 0; i < ndone && !seen; i++)
			seen = !strcmp(done[i], pfx);
		if (seen || ndone == 32)
			continue;
		snprintf(done[ndone++], sizeof done[0], "%s", pfx);
	}
	closedir(d);
	for (int i = 0; i < ndone; i++) {
		struct ss_segments_config sc = {
			.dir = dir, .prefix = done[i], .max_file_size = cfg->max_file_size,
			.rotation_count = cfg->rotation_count, .session_id = 0,
		};
		char err[256];
		/* Opening a prefix cuts each orphaned .active file to its last intact
		 * block, seals and renames it, as the recorder's next start would. */
		struct ss_segments *sg = ss_segments_open(&sc, err, sizeof err);
		if (sg)
			ss_segments_close(sg);
		else
			fprintf(stderr, "stallscope record: cannot seal the segments of %s/%s: %s\n",
				dir, done[i], err);
	}
}

/* Threads are defined again in every segment: count each (recording, thread) once. */
#define MAX_THREADS_COUNTED 4096
static struct { uint64_t session, thread; } seen_threads[MAX_THREADS_COUNTED];
static uint32_t nseen_threads;

static void note_thread(struct ss_run_summary *s, uint64_t session, uint64_t thread)
{
	for (uint32_t i = 0; i < nseen_threads; i++)
		if (seen_threads[i].session == session && seen_threads[i].thread == thread)
			return;
	if (nseen_threads < MAX_THREADS_COUNTED) {
		seen_threads[nseen_threads].session = session;
		seen_threads[nseen_threads++].thread = thread;
	}
	s->threads++;
}

static void count_file(const char *path, uint64_t since_ns, struct ss_run_summary *s,
		       uint64_t *sessions, uint32_t max_sessions)
{
	struct ss_reader *r;
	char err[256];
	if (ss_reader_open_file(&r, path, NULL, NULL, err, sizeof err) != 0)
		return;
	const struct ss_segment_header *h = ss_reader_header(r);
	if (h->start_ts < since_ns) {
		ss_reader_close(r);
		return;
	}
	int known = 0;
	for (uint32_t i = 0; i < s->recordings && !known; i++)
		known = sessions[i] == h->session_id;
	if (!known && s->recordings < max_sessions)
		sessions[s->recordings++] = h->session_id;
	s->segments++;
	struct ss_block_info b;
	while (ss_reader_next_block(r, &b)) {
		struct ss_record rec;
		while (ss_reader_next_record(r, &rec)) {
			if (rec.is_event && rec.type != SS_REC_LOSS)
				s->events++;
			switch (rec.type) {
			case SS_REC_THREAD_DEF:
				note_thread(s, h->session_id, rec.u.thread_def.thread);
				break;
			case SS_REC_PARK: s->parks++; break;
			case SS_REC_POLL_BEGIN: s->polls++; break;
			case SS_REC_SAMPLE: s->samples++; break;
			case SS_REC_SWITCH: s->switches++; break;
			case SS_REC_STALL: s->stalls++; break;
			case SS_REC_META:
				if (!s->sampler[0] && rec.u.meta.key_len == 7 &&
				    !memcmp(rec.u.meta.key, "sampler", 7))
					snprintf(s->sampler, sizeof s->sampler, "%.*s",
						 (int)rec.u.meta.value_len, rec.u.meta.value);
				break;
			default: break;
			}
		}
	}
	ss_reader_close(r);
}

void ss_run_summarise(const char *dir, const char *prefix, uint64_t since_ns,
		      struct ss_run_summary *out)
{
	memset(out, 0, sizeof *out);
	nseen_threads = 0;
	snprintf(out->files, sizeof out->files, "%s/%s.*.bin", dir, prefix);
	DIR *d = opendir(dir);
	if (!d)
		return;
	uint64_t sessions[256];
	int children = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		char pfx[256], path[4096 + 300];
		long pid;
		int active;
		if (!match(de->d_name, prefix, pfx, sizeof pfx, &pid, &active))
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		struct stat st;
		if (stat(path, &st) != 0)
			continue;
		uint32_t before = out->segments;
		count_file(path, since_ns, out, sessions, 256);
		if (out->segments == before)
			continue;
		out->bytes += (uint64_t)st.st_size;
		out->active_segments += (uint32_t)active;
		children |= pid != 0;
	}
	closedir(d);
	if (children) {
		size_t l = strlen(out->files);
		snprintf(out->files + l, sizeof out->files - l, " and %s/%s-PID.*.bin", dir, prefix);
	}
}

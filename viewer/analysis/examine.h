/*
 * examine.h - single polls judged on demand, for a viewer that asks about the
 * poll under the pointer, the one selected, or every long poll in view: the
 * same examination as the report's (polls.h: CPU split, verdict, culprit,
 * system call) without running the whole analysis first, and the verdict said
 * in words.
 *
 * An examiner keeps what a run of questions shares: the stacks cache (frames,
 * which functions are shared helpers), the stalls by poll, and the culprit of
 * every poll asked about. It reads through the connection it was made with,
 * on the caller's thread; not thread-safe (one examiner per connection, used
 * by the thread that steps that connection's statements).
 */
#ifndef STALLSCOPE_EXAMINE_H
#define STALLSCOPE_EXAMINE_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "polls.h"

struct ss_examiner;

/* NULL when memory ran out or the database has no stacks tables. db must
 * outlive the examiner. */
struct ss_examiner *ss_examiner_new(sqlite3 *db);
void ss_examiner_free(struct ss_examiner *x);

/* Examines one poll (ss_poll_examine). Returns 0, or -1 when it cannot be
 * read: no such poll, an interrupted or failed statement (ss_examiner_error
 * says which). A failure does not stick: the next call reads again. */
int ss_examiner_poll(struct ss_examiner *x, int64_t poll_id, struct ss_poll_detail *out);
const char *ss_examiner_error(const struct ss_examiner *x);

/* The culprit function of a poll (its own-code frame), examined once and then
 * cached; NULL when it has none or could not be read (not cached then). The
 * string lives as long as the examiner. */
const char *ss_examiner_culprit(struct ss_examiner *x, int64_t poll_id);

/* The verdict of an examined poll in words, as the viewer shows it beside the
 * timeline: "computing in culprit_spin_long_poll (96% on CPU)", "blocked in
 * read for 40.05 ms, called from culprit_blocking_syscall", "waiting for a
 * CPU (runnable but not running 85% of it)". Never "preempted" for a poll
 * that the verdict calls computing. */
void ss_poll_say(const struct ss_poll_detail *d, char *buf, size_t len);

/* "96% on CPU, 3% blocked, 1% preempted", or "no on/off-CPU data" when the
 * thread has none. */
void ss_poll_split_text(const struct ss_poll_detail *d, char *buf, size_t len);

#endif /* STALLSCOPE_EXAMINE_H */

/*
 * ss_worker.h - the window's query worker: one thread that owns the open
 * trace's SQLite connection and runs every piece of database work of the
 * timeline and the panels, so the main loop never waits on SQL.
 *
 * Work is submitted as a job under a key (any pointer: the timeline's scene,
 * a panel). A newer job under the same key supersedes the older ones: a queued
 * one is dropped unrun, a running one is stopped with sqlite3_interrupt() on
 * the worker's connection, and a finished one whose result has not reached the
 * main loop yet is discarded. Results are handed back to the main context
 * (the thread-default context of the thread that created the worker) as idle
 * sources; a job's done() is called there, and only for jobs that were not
 * superseded, cancelled or shut down.
 *
 * Threads: every function is called from the main thread (the one that created
 * the worker), except that run() of a job is called on the worker thread with
 * the connection. The worker does not own the tl_db; ss_worker_free() (which
 * stops the thread) must come before tl_db_close().
 */
#ifndef STALLSCOPE_SS_WORKER_H
#define STALLSCOPE_SS_WORKER_H

#include <glib.h>
#include <stdbool.h>

#include "tl_db.h"

struct ss_worker;

/* On the worker thread: the job's SQL, through db (the worker's connection).
 * data is the job's own. */
typedef void (*ss_job_run_fn)(struct tl_db *db, void *data);
/* On the main thread, after run() returned, unless the job was superseded or
 * cancelled meanwhile. */
typedef void (*ss_job_done_fn)(void *data, void *user);

/* Counters since the worker started (tests and the benchmark read them). */
struct ss_worker_stats {
	guint submitted;
	guint superseded;   /* dropped before they ran */
	guint interrupted;  /* stopped while running (sqlite3_interrupt) */
	guint discarded;    /* finished, but superseded before delivery */
	guint delivered;    /* done() called */
};

/* Starts the thread; db's connection belongs to it from now on. */
struct ss_worker *ss_worker_new(struct tl_db *db);
/* Cancels everything (interrupting what runs), joins the thread and frees the
 * worker. No done() is called afterwards. Returns once the thread is gone,
 * which an interrupt makes prompt even during a long query. NULL is ignored. */
void ss_worker_free(struct ss_worker *w);

/* Queues a job under key (not NULL), superseding key's earlier jobs. data is
 * freed with free_data (on the main thread, may be NULL) once the job is
 * delivered or dropped. user is passed to done() as is. */
void ss_worker_submit(struct ss_worker *w, const void *key, ss_job_run_fn run, ss_job_done_fn done, void *data,
		      GDestroyNotify free_data, void *user);
/* Supersedes key's jobs without a new one. */
void ss_worker_cancel(struct ss_worker *w, const void *key);
/* True while a job under key is queued, running or awaiting delivery. */
bool ss_worker_pending(const struct ss_worker *w, const void *key);
/* True when no job at all is queued, running or awaiting delivery. */
bool ss_worker_idle(const struct ss_worker *w);
struct ss_worker_stats ss_worker_get_stats(const struct ss_worker *w);

#endif /* STALLSCOPE_SS_WORKER_H */

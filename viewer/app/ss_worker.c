/*
 * ss_worker.c - the query worker; see ss_worker.h.
 *
 * One interrupt must stop a whole job, not one of its statements: SQLite
 * clears a connection's interrupt flag when a statement starts while no other
 * is running, and a job (a scene, a panel's text) runs dozens of statements in
 * turn. So while a job runs, the worker keeps a statement stepped and
 * unfinished (`keep`): the running count never drops to zero, and once
 * interrupted, every later statement of the job fails at once. After an
 * interrupted job every statement is reset, so the flag cannot reach the next.
 *
 * `keep` reads a table, so it also holds the read transaction open from job
 * to job while they keep coming (a pan or a zoom sends one a frame): starting
 * a transaction per job costs a dozen system calls (locks, the hot-journal
 * check, page 1) and a third of a millisecond. Once no job came for
 * LINGER_US, every statement is reset and the shared lock released, so an
 * import can write the database while the window sits idle.
 *
 * A job is in one of three places, all under the lock: the queue, running, or
 * posted (finished, its idle source attached to the main context). Jobs are
 * freed on the main thread only, so free_data and done never race.
 */
#include "ss_worker.h"

#include <sqlite3.h>

#include "view_queries.h"

struct job {
	const void *key;
	ss_job_run_fn run;
	ss_job_done_fn done;
	void *data;
	GDestroyNotify free_data;
	void *user;
	struct ss_worker *w;
	GSource *source;     /* while posted */
	gint cancelled;      /* atomic: set under the lock, read by the worker */
};

#define LINGER_US (250 * 1000)

struct ss_worker {
	GMutex lock;
	GCond cond;
	GQueue queue;        /* of struct job, oldest first */
	struct job *running;
	GQueue posted;
	struct tl_db *db;
	GThread *thread;
	GMainContext *ctx;
	bool stopping;
	struct ss_worker_stats stats;
};

static void job_free(struct job *j)
{
	if (j->free_data)
		j->free_data(j->data);
	g_free(j);
}

static gboolean deliver(gpointer p)
{
	struct job *j = p;
	struct ss_worker *w = j->w;
	g_mutex_lock(&w->lock);
	g_queue_remove(&w->posted, j);
	bool ok = !g_atomic_int_get(&j->cancelled);
	if (ok)
		w->stats.delivered++;
	g_mutex_unlock(&w->lock);
	if (ok && j->done)
		j->done(j->data, j->user);
	g_source_unref(j->source);   /* the context drops its own on return */
	job_free(j);
	return G_SOURCE_REMOVE;
}

/* Under the lock, on the worker thread. */
static void post(struct ss_worker *w, struct job *j)
{
	j->source = g_idle_source_new();
	/* Above GTK's redraw and layout priorities: a result is drawn in the
	 * next frame, not the one after. */
	g_source_set_priority(j->source, G_PRIORITY_DEFAULT);
	g_source_set_callback(j->source, deliver, j, NULL);
	g_source_set_static_name(j->source, "stallscope query result");
	g_queue_push_tail(&w->posted, j);
	g_source_attach(j->source, w->ctx);
}

/* Ends every statement of the connection: the read transaction, and any
 * interrupt, end with them. Worker thread, without the lock. */
static void release(struct ss_worker *w, sqlite3_stmt *keep, bool *held)
{
	tl_db_reset_all(w->db);
	if (keep)
		sqlite3_reset(keep);
	*held = false;
}

static gpointer worker_main(gpointer p)
{
	struct ss_worker *w = p;
	sqlite3_stmt *keep = NULL;
	bool held = false;   /* keep is stepped: a read transaction is open */
	keep = ss_view_prepare(w->db->db, SS_V_KEEP_SNAPSHOT, 0);
	g_mutex_lock(&w->lock);
	for (;;) {
		while (!w->stopping && g_queue_is_empty(&w->queue)) {
			if (!held) {
				g_cond_wait(&w->cond, &w->lock);
				continue;
			}
			gint64 until = g_get_monotonic_time() + LINGER_US;
			if (!g_cond_wait_until(&w->cond, &w->lock, until) && g_queue_is_empty(&w->queue)) {
				g_mutex_unlock(&w->lock);
				release(w, keep, &held);
				g_mutex_lock(&w->lock);
			}
		}
		if (w->stopping)
			break;
		struct job *j = g_queue_pop_head(&w->queue);
		w->running = j;
		g_mutex_unlock(&w->lock);
		if (!g_atomic_int_get(&j->cancelled)) {
			/* SELECT 1 FROM sqlite_schema: a row while the schema has one,
			 * which a stallscope database always has. */
			if (keep && !held)
				held = sqlite3_step(keep) == SQLITE_ROW;
			j->run(w->db, j->data);
		}
		g_mutex_lock(&w->lock);
		w->running = NULL;
		/* Interrupts come only with cancelled set, under this lock, while
		 * the job is running: past this point none can arrive for it. */
		bool interrupted = g_atomic_int_get(&j->cancelled);
		post(w, j);
		if (interrupted || !held) {
			g_mutex_unlock(&w->lock);
			release(w, keep, &held);
			g_mutex_lock(&w->lock);
		}
	}
	g_mutex_unlock(&w->lock);
	release(w, keep, &held);
	sqlite3_finalize(keep);
	return NULL;
}

struct ss_worker *ss_worker_new(struct tl_db *db)
{
	struct ss_worker *w = g_new0(struct ss_worker, 1);
	g_mutex_init(&w->lock);
	g_cond_init(&w->cond);
	g_queue_init(&w->queue);
	g_queue_init(&w->posted);
	w->db = db;
	w->ctx = g_main_context_ref_thread_default();
	w->thread = g_thread_new("ss-query", worker_main, w);
	return w;
}

/* Under the lock: supersedes key's jobs (every job when key is NULL). The
 * dropped queued jobs go to *drop, to be freed once the lock is released. */
static void cancel_locked(struct ss_worker *w, const void *key, GSList **drop)
{
	for (GList *l = w->queue.head; l;) {
		GList *next = l->next;
		struct job *j = l->data;
		if (!key || j->key == key) {
			g_queue_delete_link(&w->queue, l);
			*drop = g_slist_prepend(*drop, j);
			w->stats.superseded++;
		}
		l = next;
	}
	struct job *r = w->running;
	if (r && (!key || r->key == key) && !g_atomic_int_get(&r->cancelled)) {
		g_atomic_int_set(&r->cancelled, 1);
		/* Safe from this thread: the connection is closed only after the
		 * worker thread is joined, and running is cleared under this lock. */
		sqlite3_interrupt(w->db->db);
		w->stats.interrupted++;
	}
	for (GList *l = w->posted.head; l; l = l->next) {
		struct job *j = l->data;
		if ((!key || j->key == key) && !g_atomic_int_get(&j->cancelled)) {
			g_atomic_int_set(&j->cancelled, 1);
			w->stats.discarded++;
		}
	}
}

static void drop_jobs(GSList *drop)
{
	g_slist_free_full(drop, (GDestroyNotify)job_free);
}

void ss_worker_submit(struct ss_worker *w, const void *key, ss_job_run_fn run, ss_job_done_fn done, void *data,
		      GDestroyNotify free_data, void *user)
{
	struct job *j = g_new0(struct job, 1);
	j->key = key;
	j->run = run;
	j->done = done;
	j->data = data;
	j->free_data = free_data;
	j->user = user;
	j->w = w;
	GSList *drop = NULL;
	g_mutex_lock(&w->lock);
	cancel_locked(w, key, &drop);
	g_queue_push_tail(&w->queue, j);
	w->stats.submitted++;
	g_cond_signal(&w->cond);
	g_mutex_unlock(&w->lock);
	drop_jobs(drop);
}

void ss_worker_cancel(struct ss_worker *w, const void *key)
{
	GSList *drop = NULL;
	g_mutex_lock(&w->lock);
	cancel_locked(w, key, &drop);
	g_mutex_unlock(&w->lock);
	drop_jobs(drop);
}

static bool has_key(GQueue *q, const void *key)
{
	for (GList *l = q->head; l; l = l->next) {
		struct job *j = l->data;
		if (j->key == key && !g_atomic_int_get(&j->cancelled))
			return true;
	}
	return false;
}

bool ss_worker_pending(const struct ss_worker *cw, const void *key)
{
	struct ss_worker *w = (struct ss_worker *)cw;
	g_mutex_lock(&w->lock);
	bool r = has_key(&w->queue, key) || has_key(&w->posted, key) ||
		 (w->running && w->running->key == key && !g_atomic_int_get(&w->running->cancelled));
	g_mutex_unlock(&w->lock);
	return r;
}

bool ss_worker_idle(const struct ss_worker *cw)
{
	struct ss_worker *w = (struct ss_worker *)cw;
	g_mutex_lock(&w->lock);
	bool r = g_queue_is_empty(&w->queue) && g_queue_is_empty(&w->posted) && !w->running;
	g_mutex_unlock(&w->lock);
	return r;
}

struct ss_worker_stats ss_worker_get_stats(const struct ss_worker *cw)
{
	struct ss_worker *w = (struct ss_worker *)cw;
	g_mutex_lock(&w->lock);
	struct ss_worker_stats s = w->stats;
	g_mutex_unlock(&w->lock);
	return s;
}

void ss_worker_free(struct ss_worker *w)
{
	if (!w)
		return;
	GSList *drop = NULL;
	g_mutex_lock(&w->lock);
	cancel_locked(w, NULL, &drop);
	w->stopping = true;
	g_cond_signal(&w->cond);
	g_mutex_unlock(&w->lock);
	drop_jobs(drop);
	g_thread_join(w->thread);
	/* The thread is gone: what it posted is all there is, and its sources
	 * run on this thread, so removing them here means none runs later. */
	struct job *j;
	while ((j = g_queue_pop_head(&w->posted))) {
		g_source_destroy(j->source);
		g_source_unref(j->source);
		job_free(j);
	}
	g_main_context_unref(w->ctx);
	g_cond_clear(&w->cond);
	g_mutex_clear(&w->lock);
	g_free(w);
}

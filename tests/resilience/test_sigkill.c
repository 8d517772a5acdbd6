/*
 * test_sigkill.c - a recording process killed with SIGKILL at a random moment
 * leaves files that are safe to read and lose at most about one flush interval.
 *
 * 20 rounds, each in a forked child that records from 2-4 threads with small
 * segments (256 KiB, so rotations happen) until the parent SIGKILLs it after
 * 10-400 ms (seeded RNG; the seed is printed, STALLSCOPE_TEST_SEED replays it).
 * Every child starts in the same directory, so each start also recovers the
 * orphan of the round before. After each kill:
 *   - every file opens with a valid header, or (an .active file cut inside its
 *     header) is reported as TRUNCATED;
 *   - sealed files decode with no damage and match their footer's event count;
 *     .active files decode with no damage or a TRUNCATED tail, never CORRUPT;
 *   - every event produced more than 300 ms before the kill is on disk (the
 *     flush interval is 100 ms), unless the trace itself reports it lost.
 * Finally one session started in the directory seals the last orphan and every
 * file decodes without damage.
 */
#include <stallscope/stallscope.h>

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "resil.h"
#include "trace_check.h"

#define ROUNDS 20
#define MAX_THREADS 4
#define CKPT_CAP 16384
#define MARGIN_NS 300000000ull

struct shared {
	_Atomic uint32_t started;
	_Atomic uint32_t nckpt[MAX_THREADS];
	struct rs_ckpt ckpt[MAX_THREADS][CKPT_CAP];
};

static struct shared *shm;

static void child_main(const char *dir, int round, int nthreads)
{
	alarm(30); /* never outlive a parent that failed */
	struct stallscope_config cfg;
	stallscope_config_init(&cfg);
	cfg.output_dir = dir;
	cfg.file_prefix = "sk";
	cfg.max_file_size = 256 << 10;
	cfg.rotation_count = 1000;
	cfg.rotation_period_s = UINT32_MAX;
	cfg.buffer_events = 1 << 18;
	cfg.cpu_sampling = 0;
	if (stallscope_start(&cfg) != 0)
		_exit(3);
	static struct rs_producer p[MAX_THREADS];
	memset(p, 0, sizeof p);
	for (int i = 0; i < nthreads; i++) {
		p[i].tag = ((uint64_t)round << 8) | (uint64_t)i;
		p[i].burst = 50;
		p[i].pause_us = 1000;
		p[i].ckpt = shm->ckpt[i];
		p[i].nckpt = &shm->nckpt[i];
		p[i].ckpt_cap = CKPT_CAP;
	}
	rs_producers_start(p, nthreads);
	atomic_store(&shm->started, 1u);
	for (;;)
		pause();
}

struct round_stats {
	uint64_t checked_threads, max_lag_ns, files;
};

/* Checks the files of one round (or the final state when pid == 0). */
static void check_files(const char *dir, pid_t pid, int round, int nthreads, uint64_t kill_ts,
			struct round_stats *rs)
{
	struct tc_trace t;
	CHECK(tc_load_dir(&t, dir, "sk", pid != 0) == 0, "load %s", dir);
	rs->files += t.nsegs;
	int actives = 0;
	for (size_t i = 0; i < t.nsegs; i++) {
		const struct tc_segment *s = &t.segs[i];
		CHECK(s->damage != SS_DAMAGE_CORRUPT && s->damage != SS_DAMAGE_IO,
		      "round %d: %s: %s damage: %s", round, s->path, ss_damage_kind_name(s->damage),
		      s->damage_reason);
		if (s->active) {
			actives++;
			CHECK(pid != 0, "%s still .active after the final start", s->path);
			/* An orphan is this round's: earlier ones were recovered by this child. */
			if (s->header.pid)
				CHECK(s->header.pid == (uint64_t)pid, "round %d: %s belongs to pid %llu",
				      round, s->path, (unsigned long long)s->header.pid);
			/* Killed between the footer and the rename (fdatasync lies between):
			 * then the footer must hold. */
			CHECK(!s->sealed || s->footer.events == s->events,
			      "%s: footer says %llu events, read %llu", s->path,
			      (unsigned long long)s->footer.events, (unsigned long long)s->events);
			continue;
		}
		CHECK(s->damage == SS_DAMAGE_NONE && s->sealed, "round %d: sealed %s: %s", round,
		      s->path, s->damage_reason);
		CHECK(s->footer.events == s->events, "round %d: %s: footer says %llu events, read %llu",
		      round, s->path, (unsigned long long)s->footer.events,
		      (unsigned long long)s->events);
	}
	CHECK(t.corrupt_segments == 0, "round %d: %llu corrupt", round,
	      (unsigned long long)t.corrupt_segments);
	CHECK(actives <= 1, "round %d: %d .active files", round, actives);
	if (!pid) {
		CHECK(t.header_failures == 0, "final: %llu unreadable files",
		      (unsigned long long)t.header_failures);
		tc_free(&t);
		return;
	}

	/* Loss: per producer, the events of this round's process that are on disk. */
	for (int th = 0; th < nthreads; th++) {
		uint64_t tag = ((uint64_t)round << 8) | (uint64_t)th;
		uint32_t n = atomic_load(&shm->nckpt[th]);
		const struct rs_ckpt *cp = NULL;
		for (uint32_t k = 0; k < n; k++)
			if (shm->ckpt[th][k].ts + MARGIN_NS <= kill_ts)
				cp = &shm->ckpt[th][k];
		uint64_t maxseq = 0, thread = 0;
		for (size_t i = 0; i < t.nevents; i++) {
			const struct tc_event *e = &t.events[i];
			if (e->type == SS_REC_MARK && (e->b >> RS_SEQ_BITS) == tag) {
				thread = e->thread;
				if ((e->b & RS_SEQ_MASK) > maxseq)
					maxseq = e->b & RS_SEQ_MASK;
			}
		}
		if (!cp)
			continue; /* killed too early for this thread to have old events */
		uint8_t *seen = calloc(maxseq + 2, 1);
		CHECK(seen, "oom");
		uint64_t lost = 0;
		for (size_t i = 0; i < t.nevents; i++) {
			const struct tc_event *e = &t.events[i];
			if (e->type == SS_REC_MARK && (e->b >> RS_SEQ_BITS) == tag) {
				uint64_t sq = e->b & RS_SEQ_MASK;
				CHECK(!seen[sq], "round %d thread %d: seq %llu twice", round, th,
				      (unsigned long long)sq);
				seen[sq] = 1;
			} else if (e->type == SS_REC_LOSS && thread && e->thread == thread) {
				lost += e->a;
			}
		}
		uint64_t missing = 0;
		for (uint64_t sq = 0; sq <= cp->seq; sq++)
			missing += sq > maxseq || !seen[sq];
		/* The newest checkpoint whose events are all on disk: how far behind the
		 * kill the disk was. */
		uint64_t contiguous = 0;
		while (contiguous <= maxseq && seen[contiguous])
			contiguous++;
		uint64_t lag = kill_ts;
		for (uint32_t k = 0; k < n; k++)
			if (shm->ckpt[th][k].seq < contiguous)
				lag = kill_ts > shm->ckpt[th][k].ts ? kill_ts - shm->ckpt[th][k].ts : 0;
		if (lag > rs->max_lag_ns)
			rs->max_lag_ns = lag;
		rs->checked_threads++;
		free(seen);
		/* Each iteration is 3 events; a LOSS record counts events, not marks. */
		CHECK(missing * 3 <= lost,
		      "round %d thread %d: %llu of the %llu marks produced >= 300 ms before the "
		      "kill are not on disk (trace reports %llu events lost); disk was %llu ms behind",
		      round, th, (unsigned long long)missing, (unsigned long long)(cp->seq + 1),
		      (unsigned long long)lost, (unsigned long long)(lag / 1000000));
	}
	tc_free(&t);
}

static void archive_sealed(const char *dir, const char *archive)
{
	struct rs_file f[512];
	int n = rs_list(dir, "sk", f, 512);
	for (int i = 0; i < n; i++) {
		if (f[i].active)
			continue;
		char a[1024], b[1024];
		snprintf(a, sizeof a, "%s/%s", dir, f[i].name);
		snprintf(b, sizeof b, "%s/%s", archive, f[i].name);
		CHECK(rename(a, b) == 0, "rename %s", a);
	}
}

int main(void)
{
	uint64_t seed = rs_now() ^ ((uint64_t)getpid() << 20);
	const char *env = getenv("STALLSCOPE_TEST_SEED");
	if (env && *env)
		seed = strtoull(env, NULL, 0);
	printf("test_sigkill: seed %llu (STALLSCOPE_TEST_SEED=%llu replays it)\n",
	       (unsigned long long)seed, (unsigned long long)seed);
	uint64_t rng = seed;

	shm = mmap(NULL, sizeof *shm, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(shm != MAP_FAILED, "mmap");
	char *dir = tc_tmpdir("sigkill");
	/* Sealed files move here once checked, so each round loads only new files;
	 * the orphan stays for the next child to recover. */
	char archive[600];
	snprintf(archive, sizeof archive, "%s/archive", dir);
	CHECK(mkdir(archive, 0700) == 0, "mkdir %s", archive);

	struct round_stats rs = {0};
	for (int round = 1; round <= ROUNDS; round++) {
		int nthreads = 2 + (int)(rs_rand(&rng) % 3);
		unsigned delay_ms = 10 + (unsigned)(rs_rand(&rng) % 391);
		memset(shm, 0, sizeof *shm);
		fflush(NULL);
		pid_t pid = fork();
		CHECK(pid >= 0, "fork");
		if (pid == 0)
			child_main(dir, round, nthreads);
		uint64_t t0 = rs_now();
		while (!atomic_load(&shm->started)) {
			int st;
			CHECK(waitpid(pid, &st, WNOHANG) == 0, "round %d: child exited early (0x%x)", round, st);
			CHECK(rs_now() - t0 < 20000000000ull, "round %d: child did not start", round);
			rs_sleep_ms(1);
		}
		rs_sleep_ms(delay_ms);
		uint64_t kill_ts = rs_now();
		CHECK(kill(pid, SIGKILL) == 0, "kill");
		int status;
		CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
		CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "round %d: status 0x%x", round,
		      status);
		check_files(dir, pid, round, nthreads, kill_ts, &rs);
		archive_sealed(dir, archive);
	}

	/* One clean start seals what the last child left. */
	struct stallscope_config cfg;
	stallscope_config_init(&cfg);
	cfg.output_dir = dir;
	cfg.file_prefix = "sk";
	cfg.max_file_size = 256 << 10;
	cfg.rotation_count = 1000;
	cfg.cpu_sampling = 0;
	CHECK(stallscope_start(&cfg) == 0, "final start: %s", stallscope_last_error());
	CHECK(stallscope_stop() == 0, "final stop: %s", stallscope_last_error());
	check_files(dir, 0, 0, 0, 0, &rs);
	check_files(archive, 0, 0, 0, 0, &rs);

	/* Every orphan of every round was sealed by recovery. */
	struct tc_trace a;
	CHECK(tc_load_dir(&a, archive, "sk", false) == 0, "load archive");
	uint64_t recovered = 0;
	for (size_t i = 0; i < a.nsegs; i++)
		recovered += a.segs[i].footer.sealed_by == SS_SEALED_RECOVERY;
	struct tc_trace d;
	CHECK(tc_load_dir(&d, dir, "sk", false) == 0, "load dir");
	for (size_t i = 0; i < d.nsegs; i++)
		recovered += d.segs[i].footer.sealed_by == SS_SEALED_RECOVERY;
	printf("test_sigkill: %d rounds, %llu files, %llu recovered orphans, %llu producer checks, "
	       "disk at most %llu ms behind the kill\n", ROUNDS, (unsigned long long)rs.files,
	       (unsigned long long)recovered, (unsigned long long)rs.checked_threads,
	       (unsigned long long)(rs.max_lag_ns / 1000000));
	CHECK(recovered >= ROUNDS / 2, "only %llu orphans recovered", (unsigned long long)recovered);
	tc_free(&a);
	tc_free(&d);
	tc_rmrf(dir);
	free(dir);
	munmap(shm, sizeof *shm);
	return 0;
}

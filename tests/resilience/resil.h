/*
 * resil.h - what the resilience tests share: producer threads that emit numbered
 * events (so a test can tell exactly which ones reached the disk), directory
 * listings of segment files, and small clock/sleep helpers.
 *
 * Every producer iteration emits POLL_BEGIN, MARK, POLL_END (and a QUEUE record
 * with random depths when `noisy`, so blocks compress badly). The MARK value is
 * (tag << 40) | seq, seq counting 0, 1, 2 ... per producer.
 */
#ifndef STALLSCOPE_RESIL_H
#define STALLSCOPE_RESIL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define RS_SEQ_BITS 40
#define RS_SEQ_MASK ((UINT64_C(1) << RS_SEQ_BITS) - 1)

/* A checkpoint: every event with seq <= seq was produced at or before ts. */
struct rs_ckpt {
	uint64_t seq;
	uint64_t ts;
};

struct rs_producer {
	/* set by the caller */
	uint64_t tag;           /* goes into the MARK value's top bits */
	uint32_t burst;         /* iterations between pauses (default 200) */
	uint32_t pause_us;      /* pause length (default 1000) */
	bool noisy;             /* also emit QUEUE records with random values */
	struct rs_ckpt *ckpt;   /* optional checkpoint log (e.g. in shared memory) */
	_Atomic uint32_t *nckpt;
	uint32_t ckpt_cap;
	/* maintained by the thread */
	pthread_t thread;
	_Atomic uint64_t produced; /* iterations done (= next seq) */
	_Atomic uint64_t last_ts;  /* CLOCK_MONOTONIC after the last iteration */
};

/* Starts n producers (p[i] prepared by the caller; zero fields get defaults). */
void rs_producers_start(struct rs_producer *p, int n);
/* Stops and joins them. */
void rs_producers_stop(struct rs_producer *p, int n);

/* cfg for a hooks-only session (no CPU sampling, no task dumps) writing
 * prefix's segments into dir, with a stall threshold of threshold_ms. */
struct stallscope_config;
void rs_hooks_only(struct stallscope_config *cfg, const char *dir, const char *prefix,
		   uint32_t threshold_ms);

/* The value of a metric in stallscope_metrics_text (fails the test when it
 * is not there). */
long long rs_metric(const char *name);

uint64_t rs_now(void);
void rs_sleep_ms(unsigned ms);

struct rs_file {
	uint64_t seq;
	bool active;
	bool symlink;
	bool regular;
	uint64_t size;
	char name[256];
};

/* Lists PREFIX.N.bin and PREFIX.N.bin.active in dir (lstat), sorted by seq then
 * .bin before .active. Returns the count (at most max), or -1 if dir cannot be
 * opened. */
int rs_list(const char *dir, const char *prefix, struct rs_file *out, int max);
/* Total bytes of those files (regular files only); 0 when dir is missing. */
uint64_t rs_dir_bytes(const char *dir, const char *prefix);

/* Whole file content, malloc'd (NUL added); NULL on error. */
char *rs_read_file(const char *path, size_t *len);
int rs_write_file(const char *path, const void *data, size_t len);

/* Deterministic PRNG (splitmix64). */
uint64_t rs_rand(uint64_t *state);

#endif

/*
 * resil.c - helpers of the resilience tests (see resil.h).
 */
#include "resil.h"

#include <stallscope/stallscope.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "trace_check.h"

static _Atomic int stop_flag;

uint64_t rs_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

long long rs_metric(const char *name)
{
	static char buf[65536];
	char key[128];
	stallscope_metrics_text(buf, sizeof buf);
	snprintf(key, sizeof key, "\n%s ", name);
	const char *p = strstr(buf, key);
	CHECK(p != NULL, "no %s in the metrics text", name);
	return atoll(p + strlen(key));
}

void rs_sleep_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

uint64_t rs_rand(uint64_t *state)
{
	uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static void *producer_main(void *arg)
{
	struct rs_producer *p = arg;
	uint64_t rng = p->tag * 7919u + 1;
	uint32_t loc = stallscope_location("resil.c", 1, "producer");
	uint32_t name = stallscope_name("seq");
	stallscope_worker_begin("resil", (uint32_t)p->tag);
	uint64_t seq = 0;
	while (!atomic_load_explicit(&stop_flag, memory_order_relaxed)) {
		for (uint32_t i = 0; i < p->burst; i++, seq++) {
			stallscope_poll_begin((p->tag << RS_SEQ_BITS) | seq, loc);
			stallscope_mark(name, (int64_t)((p->tag << RS_SEQ_BITS) | seq));
			if (p->noisy) {
				uint64_t r = rs_rand(&rng);
				stallscope_queue_depth((uint32_t)r, (uint32_t)(r >> 32));
			}
			stallscope_poll_end();
		}
		uint64_t now = rs_now();
		atomic_store_explicit(&p->produced, seq, memory_order_relaxed);
		atomic_store_explicit(&p->last_ts, now, memory_order_relaxed);
		if (p->ckpt) {
			uint32_t n = atomic_load_explicit(p->nckpt, memory_order_relaxed);
			if (n < p->ckpt_cap) {
				p->ckpt[n].seq = seq - 1;
				p->ckpt[n].ts = now;
				atomic_store_explicit(p->nckpt, n + 1, memory_order_release);
			}
		}
		if (p->pause_us)
			usleep(p->pause_us);
	}
	stallscope_worker_end();
	return NULL;
}

void rs_producers_start(struct rs_producer *p, int n)
{
	atomic_store(&stop_flag, 0);
	for (int i = 0; i < n; i++) {
		if (!p[i].burst)
			p[i].burst = 200;
		atomic_store(&p[i].produced, 0);
		CHECK(pthread_create(&p[i].thread, NULL, producer_main, &p[i]) == 0, "pthread_create");
	}
}

void rs_producers_stop(struct rs_producer *p, int n)
{
	atomic_store(&stop_flag, 1);
	for (int i = 0; i < n; i++)
		pthread_join(p[i].thread, NULL);
}

static int cmp_file(const void *a, const void *b)
{
	const struct rs_file *x = a, *y = b;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return (int)x->active - (int)y->active;
}

int rs_list(const char *dir, const char *prefix, struct rs_file *out, int max)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	size_t pl = strlen(prefix);
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL && n < max) {
		if (strncmp(de->d_name, prefix, pl) != 0 || de->d_name[pl] != '.')
			continue;
		const char *s = de->d_name + pl + 1;
		if (*s < '0' || *s > '9')
			continue;
		char *end;
		unsigned long long seq = strtoull(s, &end, 10);
		bool active = !strcmp(end, ".bin.active");
		if (!active && strcmp(end, ".bin") != 0)
			continue;
		struct stat st;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue; /* vanished between readdir and stat (renamed, evicted) */
		struct rs_file *f = &out[n++];
		memset(f, 0, sizeof *f);
		f->seq = seq;
		f->active = active;
		f->symlink = S_ISLNK(st.st_mode);
		f->regular = S_ISREG(st.st_mode);
		f->size = (uint64_t)st.st_size;
		snprintf(f->name, sizeof f->name, "%s", de->d_name);
	}
	closedir(d);
	qsort(out, (size_t)n, sizeof *out, cmp_file);
	return n;
}

uint64_t rs_dir_bytes(const char *dir, const char *prefix)
{
	struct rs_file files[512];
	int n = rs_list(dir, prefix, files, 512);
	uint64_t t = 0;
	for (int i = 0; i < n; i++)
		if (files[i].regular)
			t += files[i].size;
	return t;
}

char *rs_read_file(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	struct stat st;
	if (fstat(fd, &st) != 0) {
		close(fd);
		return NULL;
	}
	size_t n = (size_t)st.st_size;
	char *buf = malloc(n + 1);
	size_t got = 0;
	while (buf && got < n) {
		ssize_t r = read(fd, buf + got, n - got);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	if (!buf)
		return NULL;
	buf[got] = 0;
	if (len)
		*len = got;
	return buf;
}

int rs_write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	const char *c = data;
	while (len) {
		ssize_t w = write(fd, c, len);
		if (w <= 0) {
			close(fd);
			return -1;
		}
		c += w;
		len -= (size_t)w;
	}
	return close(fd);
}

void rs_hooks_only(struct stallscope_config *cfg, const char *dir, const char *prefix,
		   uint32_t threshold_ms)
{
	stallscope_config_init(cfg);
	cfg->output_dir = dir;
	cfg->file_prefix = prefix;
	cfg->stall_threshold_ms = threshold_ms;
	cfg->cpu_sampling = 0;
	cfg->task_dump_enabled = 0;
}

/*
 * io_spy.c - see io_spy.h.
 */
/* Both pwritev and pwritev64 are defined here: with 64-bit offsets asked for,
 * the headers would give pwritev the other's name. */
#undef _FILE_OFFSET_BITS
#include "io_spy.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

struct io_spy io_spy;

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int on_writer(void)
{
	char name[17] = "";
	prctl(PR_GET_NAME, name, 0, 0, 0);
	return strcmp(name, "ss-writer") == 0;
}

static void delay(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
	while (ns && nanosleep(&ts, &ts) != 0)
		;
}

/* The real-time thread: spins for hog_ns each time hog_go is bumped, on the
 * CPU of whoever bumped it (which then waits in its run queue meanwhile). */
static pthread_t hog;
static _Atomic uint32_t hog_go, hog_done, hog_cpu, hog_quit;

uint64_t io_spy_schedstat(const char *schedstat, uint64_t *run, uint64_t *slices)
{
	char buf[96] = "";
	FILE *f = fopen(schedstat, "r");
	if (f && !fgets(buf, sizeof buf, f))
		buf[0] = 0;
	if (f)
		fclose(f);
	char *p = strchr(buf, ' '), *end = p;
	if (run)
		*run = p ? strtoull(buf, NULL, 10) : 0;
	uint64_t wait = p ? strtoull(p + 1, &end, 10) : 0;
	if (slices)
		*slices = p ? strtoull(end, NULL, 10) : 0;
	return wait;
}

uint64_t io_spy_run_delay_ns(const char *schedstat)
{
	return io_spy_schedstat(schedstat, NULL, NULL);
}

static void pin(pthread_t t, uint32_t cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(t, sizeof set, &set);
}

static void *hog_main(void *arg)
{
	(void)arg;
	uint32_t seen = 0;
	for (;;) {
		uint32_t go;
		while ((go = atomic_load(&hog_go)) == seen && !atomic_load(&hog_quit))
			syscall(SYS_futex, &hog_go, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
		if (atomic_load(&hog_quit))
			return NULL;
		seen = go;
		pin(pthread_self(), atomic_load(&hog_cpu));
		uint64_t end = mono_ns() + atomic_load(&io_spy.preempt_ns);
		while (mono_ns() < end)
			;
		atomic_store(&hog_done, seen);
	}
}

int io_spy_preempt_start(void)
{
	pthread_attr_t a;
	struct sched_param sp = { .sched_priority = 1 };
	pthread_attr_init(&a);
	pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&a, SCHED_FIFO);
	pthread_attr_setschedparam(&a, &sp);
	atomic_store(&io_spy.preempt_least_ns, UINT64_MAX);
	int e = pthread_create(&hog, &a, hog_main, NULL);
	pthread_attr_destroy(&a);
	errno = e;
	return e ? -1 : 0;
}

void io_spy_preempt_stop(void)
{
	atomic_store(&hog_quit, 1);
	atomic_fetch_add(&hog_go, 1);
	syscall(SYS_futex, &hog_go, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	pthread_join(hog, NULL);
	atomic_store(&hog_quit, 0);
}

/* The writer waits in its run queue while the real-time thread spins on its
 * CPU: pinned to the CPU it is on, it cannot run elsewhere meanwhile. */
static void preempted(void)
{
	cpu_set_t was;
	pthread_getaffinity_np(pthread_self(), sizeof was, &was);
	uint32_t cpu = (uint32_t)sched_getcpu();
	pin(pthread_self(), cpu);
	uint64_t rq0 = io_spy_run_delay_ns("/proc/thread-self/schedstat");
	atomic_store(&hog_cpu, cpu);
	uint32_t go = atomic_fetch_add(&hog_go, 1) + 1;
	syscall(SYS_futex, &hog_go, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	while (atomic_load(&hog_done) != go)
		sched_yield();
	uint64_t waited = io_spy_run_delay_ns("/proc/thread-self/schedstat") - rq0;
	pthread_setaffinity_np(pthread_self(), sizeof was, &was);
	uint64_t least = atomic_load(&io_spy.preempt_least_ns);
	while (waited < least && !atomic_compare_exchange_weak(&io_spy.preempt_least_ns, &least, waited))
		;
}

typedef ssize_t (*pwritev_fn)(int, const struct iovec *, int, off_t);

static ssize_t spied_write(const char *sym, pwritev_fn *real, int fd, const struct iovec *iov,
			   int n, off_t off)
{
	if (!*real)
		*real = (pwritev_fn)dlsym(RTLD_NEXT, sym);
	if (!on_writer())
		return (*real)(fd, iov, n, off);
	delay(atomic_load(&io_spy.write_delay_ns));
	if (atomic_load(&io_spy.preempt_ns))
		preempted();
	ssize_t r = (*real)(fd, iov, n, off);
	uint64_t end = mono_ns();
	uint64_t none = 0;
	if (atomic_compare_exchange_strong(&io_spy.first_write_end, &none, end)) {
		atomic_store(&io_spy.first_write_rq,
			     io_spy_run_delay_ns("/proc/thread-self/schedstat"));
	} else {
		none = 0;
		atomic_compare_exchange_strong(&io_spy.second_write_end, &none, end);
	}
	atomic_store(&io_spy.last_write_end, end);
	atomic_fetch_add(&io_spy.writes, 1);
	return r;
}

ssize_t pwritev(int fd, const struct iovec *iov, int n, off_t off)
{
	static pwritev_fn real;
	return spied_write("pwritev", &real, fd, iov, n, off);
}

ssize_t pwritev64(int fd, const struct iovec *iov, int n, off64_t off)
{
	static pwritev_fn real;
	return spied_write("pwritev64", &real, fd, iov, n, off);
}

int fdatasync(int fd)
{
	static int (*real)(int);
	if (!real)
		real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
	if (on_writer()) {
		if (io_spy.on_sync)
			io_spy.on_sync();
		delay(atomic_load(&io_spy.sync_delay_ns));
		atomic_fetch_add(&io_spy.syncs, 1);
	}
	return real(fd);
}

int open(const char *path, int flags, ...)
{
	static int (*real)(const char *, int, ...);
	if (!real)
		real = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
	va_list ap;
	va_start(ap, flags);
	mode_t mode = (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? va_arg(ap, mode_t) : 0;
	va_end(ap);
	size_t n = strlen(path);
	if (n > 7 && !strcmp(path + n - 7, ".active") && !on_writer())
		delay(atomic_exchange(&io_spy.start_open_delay_ns, 0));
	return real(path, flags, mode);
}

/* The same function in a 64-bit libc. */
int open64(const char *path, int flags, ...) __attribute__((alias("open")));

int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	if (!real)
		real = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))
			dlsym(RTLD_NEXT, "pthread_create");
	char name[17] = "";
	prctl(PR_GET_NAME, name, 0, 0, 0);
	if (atomic_load(&io_spy.refuse_threads) && !strcmp(name, "ss-watchdog")) {
		atomic_fetch_add(&io_spy.threads_refused, 1);
		return EAGAIN;
	}
	return real(th, attr, fn, arg);
}

int io_spy_has_thread(const char *name)
{
	return io_spy_thread_dir(name, NULL, 0);
}

int io_spy_thread_dir(const char *name, char *dir, size_t len)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	int found = 0;
	while (d && !found && (de = readdir(d))) {
		char path[300], comm[64] = "";
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "/proc/self/task/%s/comm", de->d_name);
		FILE *f = fopen(path, "r");
		if (f && fgets(comm, sizeof comm, f)) {
			comm[strcspn(comm, "\n")] = 0;
			found = strcmp(comm, name) == 0;
		}
		if (found && dir)
			snprintf(dir, len, "/proc/self/task/%s", de->d_name);
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return found;
}

/*
 * io_spy.c - see io_spy.h.
 */
/* Both pwritev and pwritev64 are defined here: with 64-bit offsets asked for,
 * the headers would give pwritev the other's name. */
#undef _FILE_OFFSET_BITS
#include "io_spy.h"

#include <dirent.h>
#include <dlfcn.h>
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

typedef ssize_t (*pwritev_fn)(int, const struct iovec *, int, off_t);

static ssize_t spied_write(const char *sym, pwritev_fn *real, int fd, const struct iovec *iov,
			   int n, off_t off)
{
	if (!*real)
		*real = (pwritev_fn)dlsym(RTLD_NEXT, sym);
	if (!on_writer())
		return (*real)(fd, iov, n, off);
	delay(atomic_load(&io_spy.write_delay_ns));
	ssize_t r = (*real)(fd, iov, n, off);
	uint64_t end = mono_ns();
	uint64_t zero = 0;
	atomic_compare_exchange_strong(&io_spy.first_write_end, &zero, end);
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

typedef int (*open_fn)(const char *, int, ...);

static int spied_open(const char *sym, open_fn *real, const char *path, int flags, va_list ap)
{
	if (!*real)
		*real = (open_fn)dlsym(RTLD_NEXT, sym);
	mode_t mode = (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? va_arg(ap, mode_t) : 0;
	size_t n = strlen(path);
	if (n > 7 && !strcmp(path + n - 7, ".active") && !on_writer())
		delay(atomic_exchange(&io_spy.start_open_delay_ns, 0));
	return (*real)(path, flags, mode);
}

int open(const char *path, int flags, ...)
{
	static open_fn real;
	va_list ap;
	va_start(ap, flags);
	int fd = spied_open("open", &real, path, flags, ap);
	va_end(ap);
	return fd;
}

int open64(const char *path, int flags, ...)
{
	static open_fn real;
	va_list ap;
	va_start(ap, flags);
	int fd = spied_open("open64", &real, path, flags, ap);
	va_end(ap);
	return fd;
}

int io_spy_has_thread(const char *name)
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
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return found;
}

/*
 * test_seal_sync.c - a seal hands the segment's pages to the disk without
 * waiting for them: one sync_file_range(SYNC_FILE_RANGE_WRITE) of the whole
 * file per sealed segment, and no fdatasync or fsync anywhere in a session
 * (README, "The files it writes": power loss).
 *
 * The three calls are defined here, counted, and passed on to the kernel: the
 * library's references resolve to the executable's definitions first. A
 * session with 64 KiB segments and no compression rotates by size a few times;
 * the count of sync_file_range calls must equal the sealed segments, which
 * must all be in the directory and decode.
 */
#include <stallscope/stallscope.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "trace_check.h"

static _Atomic int n_fdatasync, n_fsync, n_range, bad_range;

int fdatasync(int fd)
{
	atomic_fetch_add(&n_fdatasync, 1);
	return (int)syscall(SYS_fdatasync, fd);
}

int fsync(int fd)
{
	atomic_fetch_add(&n_fsync, 1);
	return (int)syscall(SYS_fsync, fd);
}

int sync_file_range(int fd, off_t off, off_t len, unsigned int flags)
{
	atomic_fetch_add(&n_range, 1);
	if (off != 0 || len != 0 || flags != SYNC_FILE_RANGE_WRITE)
		atomic_fetch_add(&bad_range, 1);
	return (int)syscall(SYS_sync_file_range, fd, off, len, flags);
}

int main(void)
{
	char *dir = tc_tmpdir("seal-sync");
	struct stallscope_config cfg;
	stallscope_config_init(&cfg);
	cfg.output_dir = dir;
	cfg.file_prefix = "seal";
	cfg.max_file_size = 65536;
	cfg.rotation_count = 1000;
	cfg.compress = 0;
	cfg.cpu_sampling = 0;
	CHECK(stallscope_start(&cfg) == 0, "start: %s", stallscope_last_error());
	uint32_t loc = STALLSCOPE_LOCATION();
	/* ~40k polls: several times 64 KiB of records, drained in many cycles. */
	for (uint64_t task = 1; task <= 40000; task++) {
		stallscope_poll_begin(task * 2654435761u, loc);
		stallscope_poll_end();
		if (task % 1000 == 0)
			usleep(2000);
	}
	CHECK(stallscope_stop() == 0, "stop: %s", stallscope_last_error());

	int sealed = 0;
	DIR *d = opendir(dir);
	CHECK(d, "opendir %s", dir);
	for (struct dirent *e; (e = readdir(d));) {
		size_t n = strlen(e->d_name);
		if (n > 4 && !strcmp(e->d_name + n - 4, ".bin"))
			sealed++;
		CHECK(!strstr(e->d_name, ".active"), "left unsealed: %s", e->d_name);
	}
	closedir(d);
	CHECK(sealed >= 2, "only %d sealed segment(s): no rotation happened", sealed);
	CHECK(atomic_load(&n_fdatasync) == 0 && atomic_load(&n_fsync) == 0,
	      "a session waited for the disk: %d fdatasync, %d fsync", atomic_load(&n_fdatasync),
	      atomic_load(&n_fsync));
	CHECK(atomic_load(&n_range) == sealed, "%d sync_file_range calls for %d sealed segments",
	      atomic_load(&n_range), sealed);
	CHECK(atomic_load(&bad_range) == 0, "%d sync_file_range calls not of the whole file for writing",
	      atomic_load(&bad_range));
	struct tc_trace t;
	CHECK(tc_load_dir(&t, dir, "seal", false) == 0, "the sealed segments do not load");
	CHECK(t.nsegs == (size_t)sealed && !t.corrupt_segments && !t.truncated_segments &&
	      !t.header_failures, "%zu of %d segments loaded, %llu corrupt, %llu truncated, %llu "
	      "unreadable", t.nsegs, sealed, (unsigned long long)t.corrupt_segments,
	      (unsigned long long)t.truncated_segments, (unsigned long long)t.header_failures);
	/* a loaded machine may make the writer late and the rings drop: every
	 * event is then either in the segments or counted lost */
	CHECK(tc_real_events(&t) + t.lost == 80000, "%llu events, %llu lost (80000 made)",
	      (unsigned long long)tc_real_events(&t), (unsigned long long)t.lost);
	tc_free(&t);
	tc_rmrf(dir);
	free(dir);
	printf("seal sync: ok (%d sealed segments, each handed to the disk once, no fdatasync)\n", sealed);
	return 0;
}

/*
 * target.c - the database file an import writes.
 *
 * A first import is built with the journal off (fast bulk loading), so a kill
 * or a full disk in the middle would leave a "malformed" file that nothing can
 * repair. It is therefore built under a temporary name beside the target
 * (.NAME.importing.PID.N, same directory, so same filesystem), synced, and
 * renamed into place only once complete: the target is either absent or whole.
 * A temporary file left by a killed import (its process is gone) is removed by
 * the next import of the same target. The sync waited ~50 ms for the steady
 * recording's 92 MB at the very end of an import; the pages start to go out
 * when the load is over (ss_target_writeback), beside the links and the commit
 * that still run on one CPU, and the sync waits for the rest. An existing database is written in place
 * inside one transaction with SQLite's rollback journal, so it too is either as
 * before or complete.
 */
#include "target.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* dirname and basename of path, without modifying it. */
static void split(const char *path, char *dir, size_t dlen, const char **base)
{
	const char *slash = strrchr(path, '/');
	if (!slash) {
		snprintf(dir, dlen, ".");
		*base = path;
	} else if (slash == path) {
		snprintf(dir, dlen, "/");
		*base = slash + 1;
	} else {
		snprintf(dir, dlen, "%.*s", (int)(slash - path), path);
		*base = slash + 1;
	}
}

/* Removes .BASE.importing.PID.N files whose PID no longer runs. */
static void remove_stale(const char *dir, const char *base, FILE *log, bool quiet)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	char prefix[NAME_MAX + 1];
	int pl = snprintf(prefix, sizeof prefix, ".%s.importing.", base);
	if (pl < 0 || (size_t)pl >= sizeof prefix) {
		closedir(d);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, prefix, (size_t)pl) != 0)
			continue;
		char *end;
		long pid = strtol(e->d_name + pl, &end, 10);
		if (pid <= 0 || *end != '.' || pid == getpid())
			continue;
		if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue; /* its import may still be running */
		char p[PATH_MAX];
		if (snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= (int)sizeof p)
			continue;
		if (unlinkat(dirfd(d), e->d_name, 0) == 0 && !quiet)
			fprintf(log, "stallscope import: removed %s, left by an import that was interrupted\n", p);
	}
	closedir(d);
}

int ss_target_begin(struct ss_target *t, const char *path, FILE *log, bool quiet)
{
	memset(t, 0, sizeof *t);
	t->path = path;
	t->write_path = path;
	if (strcmp(path, ":memory:") == 0)
		return 0;
	struct stat st;
	if (stat(path, &st) == 0) {
		if (S_ISDIR(st.st_mode)) {
			snprintf(t->err, sizeof t->err, "%s is a directory", path);
			return -1;
		}
		if (st.st_size > 0)
			return 0; /* an existing database: written in place, journaled */
		t->replace_empty = true;
	} else if (errno != ENOENT) {
		snprintf(t->err, sizeof t->err, "%s: %s", path, strerror(errno));
		return -1;
	}
	char dir[PATH_MAX];
	const char *base;
	split(path, dir, sizeof dir, &base);
	if (!*base) {
		snprintf(t->err, sizeof t->err, "%s: not a file name", path);
		return -1;
	}
	remove_stale(dir, base, log, quiet);
	/* O_EXCL with a fresh name: never someone else's file; 0666 & umask, as
	 * SQLite would create the database itself. */
	for (unsigned n = 0; n < 1000; n++) {
		if (snprintf(t->tmp, sizeof t->tmp, "%s/.%s.importing.%ld.%u", dir, base, (long)getpid(), n) >=
		    (int)sizeof t->tmp) {
			snprintf(t->err, sizeof t->err, "%s: path too long", path);
			return -1;
		}
		int fd = open(t->tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
		if (fd >= 0) {
			close(fd);
			t->write_path = t->tmp;
			t->building = true;
			return 0;
		}
		if (errno != EEXIST) {
			snprintf(t->err, sizeof t->err, "cannot create %s: %s", t->tmp, strerror(errno));
			t->tmp[0] = 0;
			return -1;
		}
	}
	snprintf(t->err, sizeof t->err, "cannot find a free temporary name beside %s", path);
	t->tmp[0] = 0;
	return -1;
}

static void *writeback_main(void *arg)
{
	const struct ss_target *t = arg;
	int fd = open(t->tmp, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		/* a hint: whatever fails here, the sync at the commit still runs */
		sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
		close(fd);
	}
	return NULL;
}

void ss_target_writeback(struct ss_target *t)
{
	if (t->building && !t->writing_back && pthread_create(&t->writeback, NULL, writeback_main, t) == 0)
		t->writing_back = true;
}

static void writeback_end(struct ss_target *t)
{
	if (t->writing_back)
		pthread_join(t->writeback, NULL);
	t->writing_back = false;
}

int ss_target_commit(struct ss_target *t)
{
	writeback_end(t);
	if (!t->building)
		return 0;
	/* Synced before the rename: after a power cut the name never points at
	 * a file whose pages did not reach the disk. */
	int fd = open(t->tmp, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fsync(fd) != 0) {
		snprintf(t->err, sizeof t->err, "cannot sync %s: %s", t->tmp, strerror(errno));
		if (fd >= 0)
			close(fd);
		ss_target_abort(t);
		return -1;
	}
	close(fd);
	int rc;
	if (t->replace_empty) {
		rc = rename(t->tmp, t->path);
	} else {
		/* Someone may have created the target meanwhile (another import):
		 * never replace what this import did not see. */
		rc = renameat2(AT_FDCWD, t->tmp, AT_FDCWD, t->path, RENAME_NOREPLACE);
		if (rc != 0 && errno == EINVAL) /* a filesystem without the flag */
			rc = link(t->tmp, t->path) == 0 ? unlink(t->tmp) : -1;
	}
	if (rc != 0) {
		snprintf(t->err, sizeof t->err, errno == EEXIST ? "%s appeared during the import (another "
			 "import?); it was left as it is" : "cannot rename the new database to %s: %s",
			 t->path, strerror(errno));
		ss_target_abort(t);
		return -1;
	}
	t->building = false;
	char dir[PATH_MAX];
	const char *base;
	split(t->path, dir, sizeof dir, &base);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	return 0;
}

void ss_target_abort(struct ss_target *t)
{
	writeback_end(t);
	if (t->building && t->tmp[0])
		unlink(t->tmp);
	t->building = false;
}

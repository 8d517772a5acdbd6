/*
 * segment_file.c - the files on disk: PREFIX.N.bin.active while written, renamed to
 * PREFIX.N.bin when sealed by a footer.
 *
 * Guarantees:
 *   - a block is either wholly in the file or not at all: a short or failed write
 *     is cut back with ftruncate, so no trailing garbage follows the last block;
 *   - files are created 0640 with O_EXCL|O_NOFOLLOW, so a symlink (or any file)
 *     planted where a segment should go is refused, never followed;
 *   - the disk budget max_file_size x rotation_count holds: after each seal the
 *     oldest sealed segments of the prefix are deleted until the sealed ones plus
 *     one segment being written fit (with rotation_count = 1 the newest sealed one
 *     is kept, so the bound is then budget plus one segment);
 *   - at open, numbering continues after the highest N found, segments of an
 *     earlier run count against the budget, and an orphaned .active file is cut to
 *     its last intact block, sealed (sealed_by = RECOVERY) and renamed;
 *   - a directory removed while recording is noticed (the active file's link count
 *     drops to 0) and recreated for the next segment.
 */
#include "recorder-private.h"
#include "segment_write.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

struct sealed {
	uint64_t seq;
	uint64_t bytes;
};

struct ss_segments {
	char *dir;
	char *prefix;
	uint64_t max_file_size;
	uint32_t rotation_count;
	int archiving;          /* shipped segments are evicted first (archive.c) */
	uint64_t session_id;
	char exe[SS_MAX_EXE_LEN];
	uint32_t exe_len;
	char hostname[72];
	char boot_id[40];

	int fd;                 /* active file, -1 when none */
	uint64_t active_seq;
	uint64_t active_bytes;  /* bytes of whole blocks in the active file */
	uint64_t next_seq;
	char active_path[PATH_MAX];

	struct sealed *sealed;  /* sealed segments of this prefix on disk, by seq */
	size_t nsealed, capsealed;
};

static int mkdir_p(const char *path)
{
	char buf[PATH_MAX];
	if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
		errno = ENAMETOOLONG;
		return -1;
	}
	/* Usually the directory or its parent is there: one call, not one per
	 * component of the path. */
	if (mkdir(buf, 0750) == 0)
		return 0;
	int e = errno;
	if (e == ENOENT) {
		for (char *p = buf + 1; *p; p++) {
			if (*p != '/')
				continue;
			*p = 0;
			if (mkdir(buf, 0750) != 0 && errno != EEXIST)
				return -1;
			*p = '/';
		}
		if (mkdir(buf, 0750) == 0)
			return 0;
		e = errno;
	}
	if (e != EEXIST) {
		errno = e;
		return -1;
	}
	/* Something is there: it must be a directory (or a link to one), else the
	 * reason given later would be a misleading EACCES or nothing at all. */
	struct stat st;
	if (stat(buf, &st) != 0)
		return -1;
	if (!S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		return -1;
	}
	return 0;
}

static void read_small_file(const char *path, char *out, size_t len)
{
	memset(out, 0, len);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, out, len - 1);
	close(fd);
	if (n <= 0) {
		out[0] = 0;
		return;
	}
	out[n] = 0;
	out[strcspn(out, "\n")] = 0;
}

static int seg_path(const struct ss_segments *sg, uint64_t seq, int active, char *out, size_t len)
{
	int n = snprintf(out, len, "%s/%s.%llu.bin%s", sg->dir, sg->prefix,
			 (unsigned long long)seq, active ? ".active" : "");
	return n > 0 && (size_t)n < len ? 0 : -1;
}

/* "PREFIX.N.bin" or "PREFIX.N.bin.active": returns 1 / 2 and N, else 0. */
static int parse_name(const struct ss_segments *sg, const char *name, uint64_t *seq)
{
	size_t pl = strlen(sg->prefix);
	if (strncmp(name, sg->prefix, pl) != 0 || name[pl] != '.')
		return 0;
	const char *p = name + pl + 1;
	if (*p < '0' || *p > '9')
		return 0;
	uint64_t n = 0;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (n > (UINT64_MAX - 9) / 10)
			return 0;
		n = n * 10 + (uint64_t)(*p - '0');
	}
	*seq = n;
	if (!strcmp(p, ".bin"))
		return 1;
	if (!strcmp(p, ".bin.active"))
		return 2;
	return 0;
}

static int sealed_add(struct ss_segments *sg, uint64_t seq, uint64_t bytes)
{
	if (sg->nsealed == sg->capsealed) {
		size_t cap = sg->capsealed ? sg->capsealed * 2 : 32;
		struct sealed *n = realloc(sg->sealed, cap * sizeof *n);
		if (!n)
			return -1;
		sg->sealed = n;
		sg->capsealed = cap;
	}
	size_t i = sg->nsealed;
	while (i > 0 && sg->sealed[i - 1].seq > seq) {
		sg->sealed[i] = sg->sealed[i - 1];
		i--;
	}
	sg->sealed[i] = (struct sealed){seq, bytes};
	sg->nsealed++;
	return 0;
}

static uint64_t sealed_bytes(const struct ss_segments *sg)
{
	uint64_t t = 0;
	for (size_t i = 0; i < sg->nsealed; i++)
		t += sg->sealed[i].bytes;
	return t;
}

static void update_usage(const struct ss_segments *sg)
{
	atomic_store(&ss_counters.disk_usage, sealed_bytes(sg) + sg->active_bytes);
}

/* Which sealed segment eviction deletes next (never the newest): the oldest;
 * while segments are being shipped, the oldest shipped one if there is one. */
static size_t victim(const struct ss_segments *sg, int *shipped)
{
	*shipped = 0;
	for (size_t i = 0; sg->archiving && i + 1 < sg->nsealed; i++) {
		char path[PATH_MAX];
		if (seg_path(sg, sg->sealed[i].seq, 0, path, sizeof path) == 0 && ss_archive_is_shipped(path)) {
			*shipped = 1;
			return i;
		}
	}
	return 0;
}

/* Deletes sealed segments until the sealed ones and one more segment fit the
 * budget, always keeping the newest sealed one. */
static void evict(struct ss_segments *sg)
{
	uint64_t budget = sg->max_file_size * sg->rotation_count;
	uint64_t total = sealed_bytes(sg);
	while (sg->nsealed > 1 && total + sg->max_file_size > budget) {
		int shipped;
		size_t i = victim(sg, &shipped);
		char path[PATH_MAX];
		int named = seg_path(sg, sg->sealed[i].seq, 0, path, sizeof path) == 0;
		if (named && unlink(path) != 0 && errno != ENOENT) {
			ss_log("cannot delete old segment %s: %m", path);
			atomic_fetch_add(&ss_counters.errors, 1);
		} else {
			atomic_fetch_add(&ss_counters.segments_evicted, 1);
			if (sg->archiving && !shipped) {
				atomic_fetch_add(&ss_counters.segments_evicted_unshipped, 1);
				ss_log("segment %s deleted for the disk budget before it was shipped", path);
			}
		}
		if (named && sg->archiving)
			ss_archive_forget(path);
		total -= sg->sealed[i].bytes;
		memmove(sg->sealed + i, sg->sealed + i + 1, (sg->nsealed - i - 1) * sizeof *sg->sealed);
		sg->nsealed--;
	}
	update_usage(sg);
}

static int read_exact(int fd, void *p, size_t n, uint64_t off)
{
	char *c = p;
	while (n) {
		ssize_t r = pread(fd, c, n, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		c += r;
		n -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}

/* Seals an orphaned .active file left by a process that died: keeps the intact
 * blocks, appends a footer, renames. Returns the sealed size, or 0 when the file
 * held nothing usable and was removed. */
static uint64_t recover_orphan(struct ss_segments *sg, uint64_t seq)
{
	char apath[PATH_MAX], fpath[PATH_MAX];
	if (seg_path(sg, seq, 1, apath, sizeof apath) || seg_path(sg, seq, 0, fpath, sizeof fpath))
		return 0;
	int fd = open(apath, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		ss_log("cannot open orphaned segment %s: %m", apath);
		return 0;
	}
	struct ss_file_header h;
	char *exe = NULL;
	uint64_t off = 0;
	const char *why = NULL;
	if (read_exact(fd, &h, sizeof h, 0) != 0)
		why = "no complete file header";
	else if ((why = ss_file_header_check(&h, NULL)) == NULL) {
		exe = malloc(h.exe_len + 1u);
		if (!exe || read_exact(fd, exe, h.exe_len, sizeof h) != 0)
			why = "no complete file header";
		else if ((why = ss_file_header_check(&h, exe)) == NULL)
			off = h.header_size;
	}
	free(exe);
	if (why) {
		ss_log("removing orphaned segment %s: %s", apath, why);
		close(fd);
		unlink(apath);
		return 0;
	}

	struct ss_footer f = {.start_ts = h.start_ts, .sealed_by = SS_SEALED_RECOVERY};
	uint64_t next_block = 0;
	int has_footer = 0;
	void *payload = NULL;
	for (;;) {
		struct ss_block_header b;
		if (read_exact(fd, &b, sizeof b, off) != 0 || ss_block_header_check(&b) != NULL)
			break;
		void *np = realloc(payload, b.payload_len ? b.payload_len : 1);
		if (!np)
			break;
		payload = np;
		if (read_exact(fd, payload, b.payload_len, off + sizeof b) != 0 ||
		    ss_crc32c(0, payload, b.payload_len) != b.payload_crc || b.block_seq != next_block)
			break;
		off += sizeof b + b.payload_len;
		next_block++;
		if (b.kind == SS_BLOCK_FOOTER) {
			has_footer = 1;
			break;
		}
		f.blocks++;
		f.events += b.record_count;
		if (b.first_ts && (!f.first_event_ts || b.first_ts < f.first_event_ts))
			f.first_event_ts = b.first_ts;
		if (b.last_ts > f.last_event_ts)
			f.last_event_ts = b.last_ts;
	}
	free(payload);
	int ok = 1;
	if (!has_footer) {
		/* Every block read so far was an event block: next_block == f.blocks. */
		f.end_ts = f.last_event_ts > f.start_ts ? f.last_event_ts : f.start_ts;
		struct ss_block_header b;
		ss_footer_frame(&b, &f);
		ok = ftruncate(fd, (off_t)off) == 0 && ss_block_write(fd, off, &b, &f) == 0;
		off += sizeof b + sizeof f;
	}
	close(fd);
	if (!ok || rename(apath, fpath) != 0) {
		ss_log("cannot seal orphaned segment %s: %m", apath);
		atomic_fetch_add(&ss_counters.errors, 1);
		return 0;
	}
	ss_log("sealed orphaned segment %s (%llu intact blocks)", fpath,
	       (unsigned long long)f.blocks);
	return off;
}

static int scan_dir(struct ss_segments *sg)
{
	DIR *d = opendir(sg->dir);
	if (!d)
		return -1;
	uint64_t orphans[64];
	size_t norphans = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		uint64_t seq;
		int kind = parse_name(sg, de->d_name, &seq);
		if (!kind)
			continue;
		if (seq >= sg->next_seq)
			sg->next_seq = seq + 1;
		if (kind == 2) {
			if (norphans < 64)
				orphans[norphans++] = seq;
			continue;
		}
		struct stat st;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
			sealed_add(sg, seq, (uint64_t)st.st_size);
	}
	closedir(d);
	for (size_t i = 0; i < norphans; i++) {
		uint64_t bytes = recover_orphan(sg, orphans[i]);
		if (bytes)
			sealed_add(sg, orphans[i], bytes);
	}
	return 0;
}

SS_INTERNAL struct ss_segments *ss_segments_open(const struct ss_segments_config *cfg,
						 char *err, size_t errlen)
{
	struct ss_segments *sg = calloc(1, sizeof *sg);
	if (!sg) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	sg->fd = -1;
	sg->dir = strdup(cfg->dir);
	sg->prefix = strdup(cfg->prefix);
	sg->max_file_size = cfg->max_file_size;
	sg->rotation_count = cfg->rotation_count;
	sg->archiving = cfg->archiving;
	sg->session_id = cfg->session_id;
	if (!sg->dir || !sg->prefix) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (mkdir_p(sg->dir) != 0) {
		snprintf(err, errlen, "cannot create output directory %s: %s", sg->dir, strerror(errno));
		goto fail;
	}
	if (access(sg->dir, W_OK | X_OK) != 0) {
		snprintf(err, errlen, "output directory %s is not writable: %s", sg->dir,
			 strerror(errno));
		goto fail;
	}
	char exe_link[64];
	ssize_t n = ss_target_proc_path(exe_link, sizeof exe_link, "exe") == 0
		? readlink(exe_link, sg->exe, sizeof sg->exe - 1) : -1;
	sg->exe_len = n > 0 ? (uint32_t)n : 0;
	struct utsname u;
	if (uname(&u) == 0)
		snprintf(sg->hostname, sizeof sg->hostname, "%s", u.nodename);
	read_small_file("/proc/sys/kernel/random/boot_id", sg->boot_id, sizeof sg->boot_id);
	if (scan_dir(sg) != 0) {
		snprintf(err, errlen, "cannot read output directory %s: %s", sg->dir, strerror(errno));
		goto fail;
	}
	evict(sg);
	return sg;
fail:
	ss_segments_close(sg);
	return NULL;
}

SS_INTERNAL int ss_segments_begin(struct ss_segments *sg, uint64_t start_ts)
{
	if (sg->fd >= 0)
		return 0;
	uint64_t seq = 0;
	int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
	int fd = -1;
	/* A name that is taken (a planted file or symlink) is skipped, and the next
	 * number tried at once, so one stuck name neither stops recording nor opens a
	 * gap until the writer's next retry. */
	for (int tries = 0; tries < 16 && fd < 0; tries++) {
		seq = sg->next_seq;
		if (seg_path(sg, seq, 1, sg->active_path, sizeof sg->active_path) != 0) {
			errno = ENAMETOOLONG;
			return -1;
		}
		fd = open(sg->active_path, flags, 0640);
		if (fd < 0 && errno == ENOENT && mkdir_p(sg->dir) == 0) {
			ss_log("output directory %s was removed; recreated it", sg->dir);
			fd = open(sg->active_path, flags, 0640);
		}
		if (fd >= 0)
			break;
		if (errno != EEXIST && errno != ELOOP)
			return -1;
		ss_log("refusing to write %s: something already exists there", sg->active_path);
		sg->next_seq++;
	}
	if (fd < 0)
		return -1;

	struct ss_file_header h = {
		.session_id = sg->session_id, .segment_seq = seq, .pid = ss_target_header_pid(),
		.start_ts = start_ts,
	};
	struct timespec m, r;
	clock_gettime(CLOCK_MONOTONIC, &m);
	clock_gettime(CLOCK_REALTIME, &r);
	h.anchor_mono_ns = (uint64_t)m.tv_sec * 1000000000u + (uint64_t)m.tv_nsec;
	h.anchor_real_ns = (uint64_t)r.tv_sec * 1000000000u + (uint64_t)r.tv_nsec;
	memcpy(h.boot_id, sg->boot_id, sizeof h.boot_id);
	memcpy(h.hostname, sg->hostname, sizeof h.hostname);
	ss_file_header_finish(&h, sg->exe, sg->exe_len);

	if (ss_file_header_write(fd, &h, sg->exe) != 0) {
		int e = errno;
		close(fd);
		unlink(sg->active_path);
		errno = e;
		return -1;
	}
	sg->fd = fd;
	sg->active_seq = seq;
	sg->next_seq = seq + 1;
	sg->active_bytes = h.header_size;
	update_usage(sg);
	return 0;
}

SS_INTERNAL int ss_segments_have_active(const struct ss_segments *sg)
{
	return sg->fd >= 0;
}

SS_INTERNAL int ss_segments_append(struct ss_segments *sg, const struct ss_block_header *bh,
				   const void *payload)
{
	if (sg->fd < 0) {
		errno = EBADF;
		return -1;
	}
	size_t want = sizeof *bh + bh->payload_len;
	if (ss_block_write(sg->fd, sg->active_bytes, bh, payload) == 0) {
		sg->active_bytes += want;
		atomic_fetch_add(&ss_counters.bytes_written, want);
		update_usage(sg);
		return 0;
	}
	int e = errno;
	/* Cut back a partial block: a reader must never see a torn one at the end. */
	if (ftruncate(sg->fd, (off_t)sg->active_bytes) != 0)
		ss_log("cannot cut back a partial block in %s: %m", sg->active_path);
	errno = e;
	return -1;
}

/* The directory may be gone with every sealed file in it: count what is there. */
static void rescan_sealed(struct ss_segments *sg)
{
	sg->nsealed = 0;
	DIR *d = opendir(sg->dir);
	if (d) {
		closedir(d);
		scan_dir(sg);
	}
	update_usage(sg);
}

SS_INTERNAL int ss_segments_seal(struct ss_segments *sg, const struct ss_footer *f)
{
	if (sg->fd < 0)
		return 0;
	struct ss_block_header b;
	ss_footer_frame(&b, f);
	int rc = ss_segments_append(sg, &b, f);
	int e = errno;
	/* A sealed segment is what people copy off the machine: make it durable once. */
	if (rc == 0)
		fdatasync(sg->fd);
	close(sg->fd);
	sg->fd = -1;
	char fpath[PATH_MAX];
	if (seg_path(sg, sg->active_seq, 0, fpath, sizeof fpath) != 0 ||
	    rename(sg->active_path, fpath) != 0) {
		/* Left as .active; the next start recovers it. */
		if (rc == 0)
			e = errno;
		rc = -1;
	}
	if (rc == 0) {
		sealed_add(sg, sg->active_seq, sg->active_bytes);
		atomic_fetch_add(&ss_counters.segments_sealed, 1);
	}
	sg->active_bytes = 0;
	/* A failed rename usually means the directory went away, and the sealed
	 * segments with it: the budget and disk usage must not count them. */
	if (rc != 0)
		rescan_sealed(sg);
	evict(sg);
	errno = e;
	return rc;
}

SS_INTERNAL uint64_t ss_segments_active_bytes(const struct ss_segments *sg)
{
	return sg->fd >= 0 ? sg->active_bytes : 0;
}

SS_INTERNAL uint64_t ss_segments_active_seq(const struct ss_segments *sg)
{
	return sg->active_seq;
}

SS_INTERNAL int ss_segments_lost(struct ss_segments *sg)
{
	struct stat st;
	if (sg->fd < 0)
		return 0;
	if (fstat(sg->fd, &st) != 0)
		return 1;
	return st.st_nlink == 0;
}

SS_INTERNAL void ss_segments_abandon(struct ss_segments *sg)
{
	if (sg->fd >= 0) {
		close(sg->fd);
		sg->fd = -1;
	}
	sg->active_bytes = 0;
	rescan_sealed(sg);
}

SS_INTERNAL void ss_segments_close(struct ss_segments *sg)
{
	if (!sg)
		return;
	if (sg->fd >= 0)
		close(sg->fd);
	free(sg->dir);
	free(sg->prefix);
	free(sg->sealed);
	free(sg);
}

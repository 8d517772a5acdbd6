/*
 * store_mmap.c - see store_mmap.h.
 *
 * A connection's main file is a struct mm_file: our methods in front, the
 * default VFS's file right behind. Only xFetch and xUnfetch are ours (and the
 * mmap-size hint, which is not passed on, so the default VFS maps nothing of
 * its own); every other method is passed through. Journal, WAL and temporary
 * files are opened by the default VFS in place, with its own methods.
 *
 * The mappings live in a fixed table that the SIGBUS handler reads without a
 * lock: a slot's range is published (base, then len) only once mapped, and
 * cleared (len first) before it is unmapped.
 */
#include "store_mmap.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_FILES 64
#define VFS_NAME "stallscope-ro"

struct mapping {
	dev_t dev;
	ino_t ino;
	int fd;                        /* kept open for the process: see store_mmap.h */
	int refs;                      /* connections using the mapping */
	_Atomic(uintptr_t) base;
	_Atomic(size_t) len;           /* 0: not mapped */
};

static struct mapping maps[MAX_FILES];
static int n_maps;                     /* under lock */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_uint_fast64_t faults;
static struct sigaction previous;
static uintptr_t page_size;            /* set before the handler is installed */

struct mm_file {
	sqlite3_file base;
	struct mapping *map;           /* NULL: nothing mapped, all reads go through */
	sqlite3_file *real;
};

static sqlite3_vfs vfs;
static const sqlite3_vfs *inner;
static bool usable;

/* ---- the SIGBUS guard ---- */

static bool in_a_mapping(uintptr_t addr)
{
	for (int i = 0; i < MAX_FILES; i++) {
		size_t len = atomic_load(&maps[i].len);
		uintptr_t base = atomic_load(&maps[i].base);
		if (len && addr >= base && addr - base < len)
			return true;
	}
	return false;
}

static void forward(int sig, siginfo_t *si, void *uc)
{
	if ((previous.sa_flags & SA_SIGINFO) && previous.sa_sigaction) {
		previous.sa_sigaction(sig, si, uc);
		return;
	}
	if (!(previous.sa_flags & SA_SIGINFO) && previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
		previous.sa_handler(sig);
		return;
	}
	/* The default action: a fault repeats on return and kills the process as
	 * it would have without this handler; a SIGBUS sent with kill is raised
	 * again (blocked until the handler returns). */
	struct sigaction dfl;
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	sigaction(sig, &dfl, NULL);
	if (si->si_code <= 0)
		raise(sig);
}

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;
	uintptr_t addr = (uintptr_t)si->si_addr;
	if (si->si_code == BUS_ADRERR && in_a_mapping(addr)) {
		uintptr_t page = page_size;
		/* Zeros in place of the page that is gone: the read goes on, and
		 * SQLite sees a page that is no B-tree page (SQLITE_CORRUPT). */
		long r = syscall(SYS_mmap, addr & ~(page - 1), (size_t)page, PROT_READ,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		if (r != -1) {
			atomic_fetch_add(&faults, 1);
			errno = saved;
			return;
		}
	}
	errno = saved;
	forward(sig, si, uc);
}

uint64_t ss_store_mmap_faults(void)
{
	return atomic_load(&faults);
}

/* ---- mappings ---- */

/* Whether len bytes more of address space fit: always on 64-bit without
 * RLIMIT_AS, else within an eighth of what the limit leaves free. */
static bool address_room(uint64_t len)
{
	struct rlimit rl;
	uint64_t limit = UINT64_MAX;
	if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		limit = (uint64_t)rl.rlim_cur;
	if (sizeof(void *) < 8 && limit > (UINT64_C(3) << 30))
		limit = UINT64_C(3) << 30;
	if (limit == UINT64_MAX)
		return len <= SIZE_MAX;
	uint64_t used = 0;
	unsigned long pages = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (f && fscanf(f, "%lu", &pages) == 1)
		used = (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE);
	if (f)
		fclose(f);
	return used < limit && len <= (limit - used) / 8;
}

/* Under lock: the slot of (dev, ino), made (with its descriptor) when new. */
static struct mapping *slot_of(const char *path, const struct stat *st)
{
	for (int i = 0; i < n_maps; i++)
		if (maps[i].dev == st->st_dev && maps[i].ino == st->st_ino)
			return &maps[i];
	if (n_maps == MAX_FILES)
		return NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat fst;
	if (fd < 0)
		return NULL;
	if (fstat(fd, &fst) != 0 || fst.st_dev != st->st_dev || fst.st_ino != st->st_ino) {
		/* Replaced around SQLite's open: leave it unmapped. The descriptor
		 * is of another file than SQLite's, so closing it drops no lock. */
		close(fd);
		return NULL;
	}
	struct mapping *m = &maps[n_maps++];
	m->dev = st->st_dev;
	m->ino = st->st_ino;
	m->fd = fd;
	return m;
}

/* Under lock: maps m when no connection uses it yet; false when it cannot. */
static bool map_acquire(struct mapping *m)
{
	if (m->refs) {
		m->refs++;
		return true;
	}
	struct stat st;
	if (fstat(m->fd, &st) != 0 || st.st_size <= 0 || !address_room((uint64_t)st.st_size))
		return false;
	void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, m->fd, 0);
	if (p == MAP_FAILED)
		return false;
	atomic_store(&m->base, (uintptr_t)p);
	atomic_store(&m->len, (size_t)st.st_size);
	m->refs = 1;
	return true;
}

static void map_release(struct mapping *m)
{
	pthread_mutex_lock(&lock);
	if (--m->refs == 0) {
		size_t len = atomic_exchange(&m->len, 0);
		munmap((void *)atomic_load(&m->base), len);
	}
	pthread_mutex_unlock(&lock);
}

/* ---- the file methods ---- */

static sqlite3_file *real_of(sqlite3_file *f)
{
	return ((struct mm_file *)f)->real;
}

static int mm_close(sqlite3_file *f)
{
	struct mm_file *mf = (struct mm_file *)f;
	int rc = mf->real->pMethods ? mf->real->pMethods->xClose(mf->real) : SQLITE_OK;
	if (mf->map)
		map_release(mf->map);
	mf->map = NULL;
	return rc;
}

static int mm_read(sqlite3_file *f, void *buf, int n, sqlite3_int64 off)
{
	return real_of(f)->pMethods->xRead(real_of(f), buf, n, off);
}

static int mm_write(sqlite3_file *f, const void *buf, int n, sqlite3_int64 off)
{
	return real_of(f)->pMethods->xWrite(real_of(f), buf, n, off);
}

static int mm_truncate(sqlite3_file *f, sqlite3_int64 size)
{
	return real_of(f)->pMethods->xTruncate(real_of(f), size);
}

static int mm_sync(sqlite3_file *f, int flags)
{
	return real_of(f)->pMethods->xSync(real_of(f), flags);
}

static int mm_size(sqlite3_file *f, sqlite3_int64 *size)
{
	return real_of(f)->pMethods->xFileSize(real_of(f), size);
}

static int mm_lock(sqlite3_file *f, int level)
{
	return real_of(f)->pMethods->xLock(real_of(f), level);
}

static int mm_unlock(sqlite3_file *f, int level)
{
	return real_of(f)->pMethods->xUnlock(real_of(f), level);
}

static int mm_check_lock(sqlite3_file *f, int *out)
{
	return real_of(f)->pMethods->xCheckReservedLock(real_of(f), out);
}

static int mm_control(sqlite3_file *f, int op, void *arg)
{
	/* The mapping is ours: the default VFS must not make a second one. A
	 * negative size asks what is mapped (PRAGMA mmap_size reads it so). */
	struct mapping *m = ((struct mm_file *)f)->map;
	if (op == SQLITE_FCNTL_MMAP_SIZE && m) {
		sqlite3_int64 *sz = arg;
		if (*sz < 0)
			*sz = (sqlite3_int64)atomic_load(&m->len);
		return SQLITE_OK;
	}
	return real_of(f)->pMethods->xFileControl(real_of(f), op, arg);
}

static int mm_sector(sqlite3_file *f)
{
	return real_of(f)->pMethods->xSectorSize(real_of(f));
}

static int mm_device(sqlite3_file *f)
{
	return real_of(f)->pMethods->xDeviceCharacteristics(real_of(f));
}

static int mm_shm_map(sqlite3_file *f, int pg, int pgsz, int extend, void volatile **pp)
{
	return real_of(f)->pMethods->xShmMap(real_of(f), pg, pgsz, extend, pp);
}

static int mm_shm_lock(sqlite3_file *f, int off, int n, int flags)
{
	return real_of(f)->pMethods->xShmLock(real_of(f), off, n, flags);
}

static void mm_shm_barrier(sqlite3_file *f)
{
	real_of(f)->pMethods->xShmBarrier(real_of(f));
}

static int mm_shm_unmap(sqlite3_file *f, int del)
{
	return real_of(f)->pMethods->xShmUnmap(real_of(f), del);
}

/* A page inside the mapping is handed out as it is; NULL sends SQLite to
 * xRead (past the mapping: the file grew since it was opened). */
static int mm_fetch(sqlite3_file *f, sqlite3_int64 off, int n, void **pp)
{
	struct mapping *m = ((struct mm_file *)f)->map;
	*pp = NULL;
	if (m && off >= 0 && n > 0 && (uint64_t)off + (uint64_t)n <= atomic_load(&m->len))
		*pp = (char *)atomic_load(&m->base) + off;
	return SQLITE_OK;
}

static int mm_unfetch(sqlite3_file *f, sqlite3_int64 off, void *p)
{
	(void)f;
	(void)off;
	(void)p;
	return SQLITE_OK;
}

static const sqlite3_io_methods mm_methods = {
	.iVersion = 3,
	.xClose = mm_close, .xRead = mm_read, .xWrite = mm_write, .xTruncate = mm_truncate,
	.xSync = mm_sync, .xFileSize = mm_size, .xLock = mm_lock, .xUnlock = mm_unlock,
	.xCheckReservedLock = mm_check_lock, .xFileControl = mm_control, .xSectorSize = mm_sector,
	.xDeviceCharacteristics = mm_device, .xShmMap = mm_shm_map, .xShmLock = mm_shm_lock,
	.xShmBarrier = mm_shm_barrier, .xShmUnmap = mm_shm_unmap, .xFetch = mm_fetch, .xUnfetch = mm_unfetch,
};

static int mm_open(sqlite3_vfs *v, sqlite3_filename name, sqlite3_file *f, int flags, int *out_flags)
{
	(void)v;
	sqlite3_vfs *in = (sqlite3_vfs *)inner;
	if (!(flags & SQLITE_OPEN_MAIN_DB) || !(flags & SQLITE_OPEN_READONLY) || !name)
		return in->xOpen(in, name, f, flags, out_flags);   /* in place, its own methods */
	struct mm_file *mf = (struct mm_file *)f;
	memset(mf, 0, sizeof *mf);
	mf->real = (sqlite3_file *)(mf + 1);
	/* The file before SQLite opens it and after we do (slot_of) must be one
	 * inode: then SQLite's descriptor and the mapping are of the same file,
	 * even if the path is replaced meanwhile. */
	struct stat st;
	bool known = stat(name, &st) == 0 && S_ISREG(st.st_mode);
	int rc = in->xOpen(in, name, mf->real, flags, out_flags);
	if (rc != SQLITE_OK) {
		f->pMethods = NULL;
		return rc;
	}
	f->pMethods = &mm_methods;
	if (known) {
		pthread_mutex_lock(&lock);
		struct mapping *m = slot_of(name, &st);
		if (m && map_acquire(m))
			mf->map = m;
		pthread_mutex_unlock(&lock);
	}
	return SQLITE_OK;
}

static void setup(void)
{
	const char *env = getenv("STALLSCOPE_MMAP");
	if (env && strcmp(env, "off") == 0)
		return;
	inner = sqlite3_vfs_find(NULL);
	long page = sysconf(_SC_PAGESIZE);
	if (!inner || inner->iVersion < 1 || page <= 0)
		return;
	page_size = (uintptr_t)page;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, &previous) != 0)
		return;
	vfs = *inner;
	vfs.zName = VFS_NAME;
	vfs.pNext = NULL;
	/* mm_file, then the default VFS's file at the alignment it needs. */
	vfs.szOsFile = (int)sizeof(struct mm_file) + inner->szOsFile;
	vfs.xOpen = mm_open;
	usable = sqlite3_vfs_register(&vfs, 0) == SQLITE_OK;
}

const char *ss_store_mmap_vfs(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, setup);
	return usable ? VFS_NAME : NULL;
}

bool ss_store_mmap_enable(sqlite3 *db)
{
	sqlite3_file *f = NULL;
	if (sqlite3_file_control(db, "main", SQLITE_FCNTL_FILE_POINTER, &f) != SQLITE_OK || !f ||
	    f->pMethods != &mm_methods || !((struct mm_file *)f)->map)
		return false;
	/* Any size above 0 switches fetching on; the mapping is already made. */
	return sqlite3_exec(db, "PRAGMA mmap_size=268435456", NULL, NULL, NULL) == SQLITE_OK;
}

/*
 * stall_capture.c - one capture of a stalled worker, run on the thread that
 * takes the watchdog's looks: what is the thread doing, and where.
 *
 * Classification comes from /proc/self/task/TID/syscall: a number when the thread
 * sleeps in a system call (blocked, and which call), "running" when it is in
 * TASK_RUNNING. Running is then split by the thread's CPU clock over a short
 * window: a thread that gains CPU time is on CPU, one that gains almost none while
 * staying runnable is waiting for a CPU (starvation, preemption).
 *
 * Stacks. A thread that is not in a system call is sent our real-time signal
 * (tgkill); its handler walks frame pointers from the interrupted context into
 * this thread's capture cell, every load bounded by the thread's stack (TLS
 * bounds set by stallscope_worker_begin). A thread blocked in a system call is
 * never signalled, so the host never sees EINTR: its stack memory above the user
 * stack pointer that /proc reported is copied with process_vm_readv (which fails
 * cleanly instead of faulting if the thread exits meanwhile) and searched for the
 * frame-pointer chain. The syscall file is read again right before tgkill, which
 * narrows the window in which a thread could enter a system call to
 * microseconds; should it happen anyway, SA_RESTART restarts the call.
 *
 * With CFI unwinding (a stack copy size given to ss_capture_init) the handler
 * copies the interrupted registers and the stack above sp instead of walking,
 * and a blocked thread's copy goes out with the sp and pc /proc gave; the writer
 * unwinds both (unwind.h).
 *
 * A capture never sleeps: its waits (the 1 ms CPU-clock window, the signal's
 * answer, up to ANSWER_NS for a thread that blocks the signal) are steps the
 * caller takes at their times (ss_capture_step), so the thread that takes them
 * does other work between them: the writer's cycles, when that thread is the
 * writer's (watchdog.c), whose flush promise cannot wait 50 ms.
 */
#include "stall.h"
#include "sigwalk.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define WINDOW_NS 1000000ull         /* CPU-clock window that splits running/runnable */
#define ANSWER_NS 50000000ull        /* how long a signalled thread gets to answer */
_Static_assert(WINDOW_NS + ANSWER_NS < SS_CAPTURE_END_NS, "a stop drops captures it should wait for");
#define ANSWER_NAP0_NS 100000ull     /* first wait for its answer, doubling ... */
#define ANSWER_NAP_MAX_NS 2000000ull /* ... up to this */
#define SCAN_BYTES (64u << 10)       /* stack copied above a blocked thread's sp */
#define MAX_CODE_RANGES 256

/* Written by the handler on the worker, read by the watchdog after done == req.
 * With copies, C.copy bytes of stack follow each cell (C.stride apart). */
struct cap_cell {
	_Atomic uint32_t req;
	_Atomic uint32_t done;
	uint32_t n;
	uint32_t pad;
	uint64_t frames[SS_STALL_FRAMES];
	struct ss_ucopy uc;
};

static struct {
	unsigned char *cells;
	size_t stride;
	uint32_t copy;
	uint32_t ncells;
	struct ss_slot *slots;
	uint32_t session;
	int signo;
	struct sigaction old;
	uint32_t gen;
	uint32_t used;  /* cells below this one were signalled this session */
	pid_t pid;
	uint64_t code_lo[MAX_CODE_RANGES], code_hi[MAX_CODE_RANGES];
	uint32_t ncode;
	uint8_t *scan;
	/* Per cell. fd: /proc/self/task/TID/syscall of the cell's thread, kept
	 * open while the slot keeps its thread: a capture reads it twice, and
	 * opening and closing it each time were four of a running capture's dozen
	 * system calls. A host that closes every descriptor (a daemon's closefrom)
	 * may have closed it and reused its number: dev and ino (from an fstat at
	 * the open) say whether the number is still ours, so the host's file is
	 * never closed. signalled: the thread the cell's last request was sent to
	 * (cell_of below). */
	struct cell_of {
		int fd;
		uint32_t thread, signalled;
		uint64_t dev, ino;
	} *sysfd;
} C;

/* The cells (2 MB with the default stack copy) outlive their session, for the
 * next one: unmapping them at stop cost 150-200 us of CPU on a VM (a munmap
 * with threads running elsewhere shoots their TLB entries down), and only the
 * pages used take memory. dirty is how much of them the last session wrote,
 * cleared at the next init: a stale req/done pair could pass for a new
 * answer. */
static struct {
	unsigned char *cells;
	size_t len, dirty;
} kept;

/* Read by the handler: cleared before the cells go away. */
static _Atomic(unsigned char *) armed_cells;
static _Atomic uint32_t inflight;

static struct cap_cell *cell_at(unsigned char *cells, size_t i)
{
	return (struct cap_cell *)(void *)(cells + i * C.stride);
}

static void on_signal(int sig, siginfo_t *si, void *ucv)
{
	(void)sig;
	int saved = errno;
	atomic_fetch_add(&inflight, 1);
	unsigned char *cells = atomic_load(&armed_cells);
	struct ss_slot *s = ss_tls_slot;
	if (cells && s && si && si->si_code == SI_TKILL && ss_tls_session == C.session &&
	    s >= C.slots && s < C.slots + C.ncells) {
		struct cap_cell *c = cell_at(cells, (size_t)(s - C.slots));
		uint32_t r = atomic_load_explicit(&c->req, memory_order_acquire);
		if (r != atomic_load_explicit(&c->done, memory_order_relaxed)) {
			const ucontext_t *uc = ucv;
			if (C.copy) {
				ss_ucopy_take(&c->uc, (uint8_t *)(c + 1), C.copy, uc, ss_tls_stack_lo,
					      ss_tls_stack_hi);
				c->n = 0;
			} else {
				uint64_t pc, sp, fp;
				ss_uc_regs(uc, &pc, &sp, &fp);
				c->n = ss_fp_walk(pc, sp, fp, ss_tls_stack_lo, ss_tls_stack_hi,
						  c->frames, SS_STALL_FRAMES);
			}
			atomic_store_explicit(&c->done, r, memory_order_release);
		}
	}
	atomic_fetch_sub(&inflight, 1);
	errno = saved;
}

static int add_code_range(struct dl_phdr_info *info, size_t size, void *ctx)
{
	(void)size;
	(void)ctx;
	for (int i = 0; i < info->dlpi_phnum && C.ncode < MAX_CODE_RANGES; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		C.code_lo[C.ncode] = info->dlpi_addr + ph->p_vaddr;
		C.code_hi[C.ncode] = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
		C.ncode++;
	}
	return 0;
}

static int is_code(uint64_t a)
{
	for (uint32_t i = 0; i < C.ncode; i++)
		if (a >= C.code_lo[i] && a < C.code_hi[i])
			return 1;
	return 0;
}

/* Forgets cell i's cached descriptor, closing it only while it is still the
 * file it opened: one fstat, at a thread's change or a session's end. */
static void close_sysfd(uint32_t i)
{
	struct stat st;
	if (!C.sysfd || C.sysfd[i].fd < 0)
		return;
	if (fstat(C.sysfd[i].fd, &st) == 0 && (uint64_t)st.st_dev == C.sysfd[i].dev &&
	    (uint64_t)st.st_ino == C.sysfd[i].ino)
		close(C.sysfd[i].fd);
	C.sysfd[i].fd = -1;
}

SS_INTERNAL int ss_capture_init(struct ss_slot *slots, uint32_t nslots, uint32_t session,
				uint32_t copy, char *why, size_t len)
{
	memset(&C, 0, sizeof C);
	C.copy = copy;
	C.stride = (sizeof(struct cap_cell) + copy + 7) & ~(size_t)7;
	size_t need = (size_t)nslots * C.stride;
	if (kept.cells && kept.len >= need) {
		memset(kept.cells, 0, kept.dirty < kept.len ? kept.dirty : kept.len);
	} else {
		if (kept.cells)
			munmap(kept.cells, kept.len);
		void *m = mmap(NULL, need, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		kept.cells = m == MAP_FAILED ? NULL : m;
		kept.len = kept.cells ? need : 0;
	}
	/* All of it until fini says how much was used: a child forked during the
	 * session starts its own with the parent's req/done pairs in these cells. */
	kept.dirty = kept.len;
	C.cells = kept.cells;
	C.scan = malloc(SCAN_BYTES);
	C.sysfd = malloc(sizeof *C.sysfd * nslots);
	if (!C.cells || !C.scan || !C.sysfd) {
		snprintf(why, len, "out of memory for capture cells");
		goto fail;
	}
	for (uint32_t i = 0; i < nslots; i++)
		C.sysfd[i] = (struct cell_of){ .fd = -1 };
	C.ncells = nslots;
	C.slots = slots;
	C.session = session;
	C.pid = getpid();
	dl_iterate_phdr(add_code_range, NULL);
	C.signo = ss_rtsig_claim(on_signal, &C.old, why, len);
	if (!C.signo)
		goto fail;
	atomic_store(&armed_cells, C.cells);
	return 0;
fail:
	free(C.scan);
	free(C.sysfd);
	memset(&C, 0, sizeof C);
	return -1;
}

SS_INTERNAL void ss_capture_fini(void)
{
	if (!C.signo)
		return;
	atomic_store(&armed_cells, NULL);
	/* A handler that loaded the cells before we cleared them may still write. */
	while (atomic_load(&inflight) != 0)
		sched_yield();
	ss_rtsig_release(C.signo, &C.old);
	for (uint32_t i = 0; i < C.ncells; i++)
		close_sysfd(i);
	kept.dirty = (size_t)C.used * C.stride; /* the cells stay mapped (kept) */
	free(C.scan);
	free(C.sysfd);
	memset(&C, 0, sizeof C);
}

/* Opens (and caches) /proc/self/task/TID/syscall of slot s's thread for cell
 * i: the descriptor, or -1 (errno). */
static int open_sysfd(const struct ss_slot *s, uint32_t i)
{
	if (C.sysfd[i].fd >= 0 && C.sysfd[i].thread == s->thread_id)
		return C.sysfd[i].fd;
	char path[64];
	struct stat st;
	close_sysfd(i);
	snprintf(path, sizeof path, "/proc/self/task/%u/syscall", (uint32_t)s->tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	C.sysfd[i] = (struct cell_of){ .fd = fd, .thread = s->thread_id,
				       .signalled = C.sysfd[i].signalled,
				       .dev = (uint64_t)st.st_dev, .ino = (uint64_t)st.st_ino };
	return fd;
}

/* What the syscall file says, exactly as the kernel writes it: "running" (1);
 * "nr a1 .. a6 sp pc" in a system call (nr >= 0, then eight 0x fields) or
 * "-1 sp pc" outside one (0, with *nr, *sp, *pc). Anything else (-1) was not
 * read from it: a cached descriptor the host closed and reused for a file of
 * its own, which may well begin with a number (a PID file, a counter). */
static int parse_syscall(const char *buf, long *nr, uint64_t *sp, uint64_t *pc)
{
	if (!strcmp(buf, "running\n") || !strcmp(buf, "running"))
		return 1;
	if (buf[0] != '-' && (buf[0] < '0' || buf[0] > '9'))
		return -1;
	char *end;
	long v = strtol(buf, &end, 10);
	if (end == buf || v < -1)
		return -1;
	uint64_t x[8];
	int want = v < 0 ? 2 : 8;
	for (int k = 0; k < want; k++) {
		if (strncmp(end, " 0x", 3) != 0 || !isxdigit((unsigned char)end[3]))
			return -1;
		x[k] = strtoull(end + 3, &end, 16);
	}
	if (strcmp(end, "\n") != 0 && *end)
		return -1;
	*nr = v;
	*sp = x[want - 2];
	*pc = x[want - 1];
	return 0;
}

/* /proc/self/task/TID/syscall of slot s (cell i): 1 running; 0 not running, with
 * *nr (-1 when not in a system call), *sp and *pc; -1 unreadable (errno). */
static int read_syscall(const struct ss_slot *s, uint32_t i, long *nr, uint64_t *sp, uint64_t *pc)
{
	char buf[256];
	int r = -1;
	for (int again = 1; again;) {
		/* A cached descriptor that fails may be one the host closed:
		 * then the file is opened once more. */
		again = C.sysfd[i].fd >= 0 && C.sysfd[i].thread == s->thread_id;
		int fd = open_sysfd(s, i);
		if (fd < 0)
			return -1;
		/* At offset 0 the file is generated afresh. */
		ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
		if (n > 0) {
			buf[n] = 0;
			if ((r = parse_syscall(buf, nr, sp, pc)) >= 0)
				break;
		}
		int e = n < 0 ? errno : EIO;
		/* The thread is gone (the next one of the slot opens its own), or
		 * the descriptor is not ours any more. */
		close_sysfd(i);
		errno = e;
	}
	return r;
}

static char proc_state(uint32_t tid)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/self/task/%u/stat", tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return '?';
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return '?';
	buf[n] = 0;
	char *rp = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
	return rp && rp[1] == ' ' && rp[2] ? rp[2] : '?';
}

static uint64_t thread_cpu_ns(uint32_t tid, int *ok)
{
	struct timespec ts;
	if (clock_gettime(ss_thread_cpuclock(tid), &ts) != 0) {
		*ok = 0;
		return 0;
	}
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static const char *syscall_name(long nr)
{
	switch (nr) {
#ifdef SYS_read
	case SYS_read: return "read";
#endif
#ifdef SYS_write
	case SYS_write: return "write";
#endif
#ifdef SYS_futex
	case SYS_futex: return "futex";
#endif
#ifdef SYS_nanosleep
	case SYS_nanosleep: return "nanosleep";
#endif
#ifdef SYS_clock_nanosleep
	case SYS_clock_nanosleep: return "clock_nanosleep";
#endif
#ifdef SYS_poll
	case SYS_poll: return "poll";
#endif
#ifdef SYS_ppoll
	case SYS_ppoll: return "ppoll";
#endif
#ifdef SYS_select
	case SYS_select: return "select";
#endif
#ifdef SYS_pselect6
	case SYS_pselect6: return "pselect6";
#endif
#ifdef SYS_epoll_wait
	case SYS_epoll_wait: return "epoll_wait";
#endif
#ifdef SYS_epoll_pwait
	case SYS_epoll_pwait: return "epoll_pwait";
#endif
#ifdef SYS_recvfrom
	case SYS_recvfrom: return "recvfrom";
#endif
#ifdef SYS_recvmsg
	case SYS_recvmsg: return "recvmsg";
#endif
#ifdef SYS_sendto
	case SYS_sendto: return "sendto";
#endif
#ifdef SYS_connect
	case SYS_connect: return "connect";
#endif
#ifdef SYS_accept4
	case SYS_accept4: return "accept4";
#endif
#ifdef SYS_openat
	case SYS_openat: return "openat";
#endif
#ifdef SYS_fsync
	case SYS_fsync: return "fsync";
#endif
#ifdef SYS_fdatasync
	case SYS_fdatasync: return "fdatasync";
#endif
#ifdef SYS_pread64
	case SYS_pread64: return "pread64";
#endif
#ifdef SYS_pwrite64
	case SYS_pwrite64: return "pwrite64";
#endif
#ifdef SYS_wait4
	case SYS_wait4: return "wait4";
#endif
#ifdef SYS_flock
	case SYS_flock: return "flock";
#endif
#ifdef SYS_fcntl
	case SYS_fcntl: return "fcntl";
#endif
#ifdef SYS_ioctl
	case SYS_ioctl: return "ioctl";
#endif
	default: return NULL;
	}
}

static uint64_t word_at(const uint8_t *buf, size_t off)
{
	uint64_t w;
	memcpy(&w, buf + off, sizeof w);
	return w;
}

/* The stack of a thread blocked in a system call, from a copy of its stack above
 * sp: the first frame record whose chain holds code addresses all the way, with
 * the return address just below it (the call into the library that blocked,
 * which has no frame pointer of its own). Returns frames written (pc first). */
static uint32_t scan_blocked(const struct ss_slot *s, uint64_t sp, uint64_t pc, uint64_t *out,
			     const char **how)
{
	uint32_t n = 0;
	out[n++] = pc;
	uint64_t lo = s->stack_lo, hi = s->stack_hi;
	if (!lo || sp < lo || sp >= hi || (sp & 7)) {
		*how = "no stack bounds for the thread (stallscope_worker_begin not called?)";
		return n;
	}
	size_t len = hi - sp < SCAN_BYTES ? (size_t)(hi - sp) : SCAN_BYTES;
	struct iovec local = { C.scan, len }, remote = { (void *)(uintptr_t)sp, len };
	ssize_t got = process_vm_readv(C.pid, &local, 1, &remote, 1, 0);
	if (got < 16) {
		*how = "its stack could not be read (process_vm_readv refused)";
		return n;
	}
	len = (size_t)got & ~(size_t)7;
	uint64_t last_ret = 0;
	for (size_t off = 0; off + 16 <= len; off += 8) {
		uint64_t a = sp + off, next = word_at(C.scan, off), ret = word_at(C.scan, off + 8);
		if (is_code(next))
			last_ret = next;
		if ((next & 7) || next <= a || next >= sp + len || !is_code(ret))
			continue;
		/* Follow the chain inside the copy; demand two links before believing it. */
		uint64_t tmp[SS_STALL_FRAMES];
		uint32_t k = 0;
		uint64_t fp = a;
		while (k < SS_STALL_FRAMES && fp >= sp && fp + 16 <= sp + len && !(fp & 7)) {
			uint64_t nx = word_at(C.scan, fp - sp), r = word_at(C.scan, fp - sp + 8);
			if (!is_code(r))
				break;
			tmp[k++] = r;
			if (nx <= fp)
				break;
			fp = nx;
		}
		if (k < 2)
			continue;
		if (last_ret && last_ret != ret && n < SS_STALL_FRAMES)
			out[n++] = last_ret;
		for (uint32_t i = 0; i < k && n < SS_STALL_FRAMES; i++)
			out[n++] = tmp[i];
		*how = "stack read from its memory above the blocked sp";
		return n;
	}
	*how = "no frame-pointer chain found above its sp";
	return n;
}

/* A blocked thread for the writer's unwinder: the pc and sp /proc gave and the
 * stack above sp (no other register of a thread in a system call is readable). */
static void copy_blocked(const struct ss_slot *s, uint64_t sp, uint64_t pc, struct ss_stall_msg *m,
			 const char **how)
{
	m->blocked = 1;
	m->uc.valid = (1u << SS_UREG_PC) | (1u << SS_UREG_SP);
	m->uc.regs[SS_UREG_PC] = pc;
	m->uc.regs[SS_UREG_SP] = sp;
	m->uc.len = 0;
	uint64_t lo = s->stack_lo, hi = s->stack_hi;
	if (!lo || sp < lo || sp >= hi || (sp & 7)) {
		*how = "no stack bounds for the thread (stallscope_worker_begin not called?)";
		return;
	}
	size_t len = hi - sp < C.copy ? (size_t)(hi - sp) : C.copy;
	struct iovec local = { ss_stall_msg_stack(m), len }, remote = { (void *)(uintptr_t)sp, len };
	ssize_t got = process_vm_readv(C.pid, &local, 1, &remote, 1, 0);
	if (got < 16) {
		*how = "its stack could not be read (process_vm_readv refused)";
		return;
	}
	m->uc.len = (uint32_t)got & ~7u;
	*how = "stack copied from its memory above the blocked sp";
}

/* Sends the signal that asks the handler of slot i's thread for its stack:
 * 0, or -1 when tgkill failed (the thread is gone). A thread that keeps the
 * signal blocked (a sigwait thread, a poll that blocks it) holds it queued:
 * one more for each capture would pile up real-time signals, counted against
 * the user's RLIMIT_SIGPENDING (the host's own sigqueue and timers then fail
 * with EAGAIN). So while this thread has not answered the last request sent to
 * it, that request stands for this capture too: the handler answers whatever
 * request is current when the one queued signal is taken, and nothing else is
 * queued. */
static int signal_send(const struct ss_slot *s, uint32_t i, struct ss_capture_run *run)
{
	struct cap_cell *c = cell_at(C.cells, i);
	if (i >= C.used)
		C.used = i + 1;
	uint32_t req = atomic_load_explicit(&c->req, memory_order_relaxed);
	if (C.sysfd[i].signalled == s->thread_id &&
	    atomic_load_explicit(&c->done, memory_order_acquire) != req) {
		run->gen = req;
		return 0;
	}
	run->gen = ++C.gen ? C.gen : ++C.gen;
	C.sysfd[i].signalled = s->thread_id;
	atomic_store_explicit(&c->req, run->gen, memory_order_release);
	return syscall(SYS_tgkill, C.pid, s->tid, C.signo) == 0 ? 0 : -1;
}

/* The handler's walk (or copy, into m) once it answered run->gen: 1, else 0. */
static int signal_answer(uint32_t i, const struct ss_capture_run *run, uint64_t *out, uint32_t *n,
			 struct ss_stall_msg *m)
{
	struct cap_cell *c = cell_at(C.cells, i);
	if (atomic_load_explicit(&c->done, memory_order_acquire) != run->gen)
		return 0;
	*n = c->n < SS_STALL_FRAMES ? c->n : SS_STALL_FRAMES;
	memcpy(out, c->frames, *n * sizeof *out);
	if (C.copy && c->uc.valid) {
		m->uc = c->uc;
		if (m->uc.len > C.copy)
			m->uc.len = 0;
		memcpy(ss_stall_msg_stack(m), c + 1, m->uc.len);
		out[0] = c->uc.regs[SS_UREG_PC];
		*n = 1;
	}
	return 1;
}

/* A thread in a system call (or blocked outside one): classified and its stack
 * taken from its memory, at once. */
static void finish_blocked(const struct ss_slot *s, struct ss_stall_msg *m, long nr, uint64_t sp,
			   uint64_t pc)
{
	const char *how = "";
	char st = proc_state((uint32_t)s->tid);
	m->kind = SS_STALL_BLOCKED;
	if (C.copy) {
		copy_blocked(s, sp, pc, m, &how);
		m->frames[0] = pc;
		m->nframes = 1;
	} else {
		m->nframes = scan_blocked(s, sp, pc, m->frames, &how);
	}
	if (nr >= 0) {
		const char *name = syscall_name(nr);
		m->syscall1 = (uint32_t)nr + 1;
		if (name)
			snprintf(m->reason, sizeof m->reason, "blocked in %s (state %c); %s", name, st,
				 how);
		else
			snprintf(m->reason, sizeof m->reason, "blocked in system call %ld (state %c); %s",
				 nr, st, how);
	} else {
		snprintf(m->reason, sizeof m->reason,
			 "blocked outside a system call (state %c, a page fault?); %s", st, how);
	}
}

/* A running or runnable thread, once the signal's wait is over: w 0 answered,
 * -1 tgkill failed, -2 no answer within ANSWER_NS, -3 the thread ended first. */
static void finish_running(const struct ss_capture_run *run, struct ss_stall_msg *m, int w,
			   uint32_t n)
{
	m->kind = run->on_cpu ? SS_STALL_RUNNING : SS_STALL_RUNNABLE;
	m->nframes = n;
	const char *stack = w == 0 ? (m->uc.valid ? (m->uc.len ? "registers and stack copied by signal"
				      : "registers by signal, no stack copy (no stack bounds)")
				      : n > 1 ? "stack by signal" : "stack by signal: pc only "
				      "(no stack bounds, or no frame pointers)")
			  : w == -1 ? "no stack: tgkill failed (thread gone)"
			  : w == -3 ? "no stack: the thread ended before it answered the signal"
				    : "no stack: the thread did not answer the signal in 50 ms "
				      "(blocks it, or got no CPU)";
	snprintf(m->reason, sizeof m->reason, "%s: %.3f ms CPU in a %.3f ms window; %s",
		 run->on_cpu ? "running" : "runnable but not running",
		 (double)run->window_cpu / 1e6, (double)run->window / 1e6, stack);
}

enum { STEP_WINDOW = 1, STEP_ANSWER };

static void clear_msg(struct ss_stall_msg *m)
{
	m->nframes = 0;
	m->syscall1 = 0;
	m->kind = SS_STALL_UNKNOWN;
}

SS_INTERNAL int ss_capture_begin(const struct ss_slot *s, uint32_t i, struct ss_stall_msg *m,
				 struct ss_capture_run *run)
{
	uint32_t tid = (uint32_t)s->tid;
	long nr = -1;
	uint64_t sp = 0, pc = 0;
	memset(run, 0, sizeof *run);
	clear_msg(m);
	if (!C.signo) {
		snprintf(m->reason, sizeof m->reason, "capture not set up");
		return 1;
	}
	int r = read_syscall(s, i, &nr, &sp, &pc);
	if (r < 0) {
		snprintf(m->reason, sizeof m->reason, "cannot read /proc/self/task/%u/syscall: %s",
			 tid, strerror(errno));
		return 1;
	}
	if (r == 0) {
		finish_blocked(s, m, nr, sp, pc);
		return 1;
	}
	/* Running or runnable: does it gain CPU time over the window? The window
	 * is what elapses between the two readings (the next step), not what was
	 * asked: a late step makes a longer window, and the thread cannot gain more
	 * CPU time than the wall time around both readings. */
	run->cpu_ok = 1;
	run->w0 = ss_now();
	run->c0 = thread_cpu_ns(tid, &run->cpu_ok);
	run->step = STEP_WINDOW;
	run->at_ns = run->w0 + WINDOW_NS;
	return 0;
}

SS_INTERNAL int ss_capture_step(const struct ss_slot *s, uint32_t i, struct ss_stall_msg *m,
				struct ss_capture_run *run)
{
	uint32_t tid = (uint32_t)s->tid, n = 0;
	clear_msg(m);
	if (run->step == STEP_WINDOW) {
		int cpu_ok = run->cpu_ok;
		uint64_t c1 = thread_cpu_ns(tid, &cpu_ok);
		uint64_t w1 = ss_now();
		run->cpu_ok = cpu_ok;
		run->window_cpu = c1 > run->c0 ? c1 - run->c0 : 0;
		run->window = w1 > run->w0 ? w1 - run->w0 : 1;
		if (run->window_cpu > run->window)
			run->window_cpu = run->window;
		/* Again right before deciding: it may have entered a system call. */
		long nr = -1;
		uint64_t sp = 0, pc = 0;
		int r = read_syscall(s, i, &nr, &sp, &pc);
		if (r < 0) {
			snprintf(m->reason, sizeof m->reason, "thread gone during the capture (%s)",
				 strerror(errno));
			return 1;
		}
		if (r == 0) {
			finish_blocked(s, m, nr, sp, pc);
			return 1;
		}
		if (!run->cpu_ok) {
			snprintf(m->reason, sizeof m->reason, "cannot read the thread's CPU clock");
			return 1;
		}
		/* A tenth of the window: a thread on CPU gains nearly all of it. */
		run->on_cpu = run->window_cpu * 10 >= run->window;
		if (signal_send(s, i, run) != 0) {
			finish_running(run, m, -1, 0);
			return 1;
		}
		/* A thread on CPU answers within microseconds; one waiting for a CPU
		 * (a loaded machine) may take milliseconds: looks that double up to
		 * 2 ms cost about 25 wake-ups over the whole 50 ms, not 500. */
		run->step = STEP_ANSWER;
		run->deadline = w1 + ANSWER_NS;
		run->nap = ANSWER_NAP0_NS;
		run->at_ns = ss_now() + run->nap;
		return 0;
	}
	if (signal_answer(i, run, m->frames, &n, m)) {
		finish_running(run, m, 0, n);
		return 1;
	}
	/* The thread left (its slot is kept for the capture): no answer will
	 * come, and the slot is released once the capture is done. */
	if (atomic_load_explicit(&s->state, memory_order_acquire) == SS_SLOT_RETIRED) {
		finish_running(run, m, -3, 0);
		return 1;
	}
	uint64_t now = ss_now();
	if (now >= run->deadline) {
		finish_running(run, m, -2, 0);
		return 1;
	}
	if (run->nap < ANSWER_NAP_MAX_NS)
		run->nap *= 2;
	run->at_ns = now + run->nap;
	if (run->at_ns > run->deadline)
		run->at_ns = run->deadline;
	return 0;
}

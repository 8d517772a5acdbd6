/*
 * sampler_inpoll.c - where the off-CPU filter (sampler_bpf.c) and the
 * sched_switch program (sampler_swtp.c) learn that a thread is inside a poll or
 * parked: a BPF array map of one element, mmapped here, that the lane hooks
 * write with one plain store each and the programs read at every switch, no
 * system call on either side.
 *
 * The element is two arrays of SS_INPOLL_CELLS u32, both indexed by the tid's
 * low bits: in_poll[] (SS_INPOLL_*, recorder-private.h), NONE where no followed
 * thread owns the bucket, ALL once the sampler follows one, then, for a worker
 * whose hooks describe it, IN from a poll's begin to its end, PARKED from a
 * park to its unpark and OUT otherwise, written only by that thread; and
 * shared[], set by the writer for a bucket two followed threads hash to. The
 * filter keeps a switch-out where in_poll[] says IN or ALL or shared[] is set,
 * and the program takes a stack there and writes nothing while it says NONE,
 * or PARKED in a bucket nobody shares: a followed thread the hooks do not describe, or one whose flag
 * cannot be trusted, keeps every switch and switch-out stack, what it did
 * before the filter existed; the switch-outs of a thread nobody follows (the
 * recorder's own, a runtime's timer thread), which the drain would drop, are
 * never built. A bucket goes to the first followed thread; only
 * followed workers are given a cell (ss_slot.inpoll_cell, set by the writer), so
 * a thread nobody follows never writes one. A stale value left by a thread just
 * unfollowed (its last store racing the reset) concerns a thread nobody
 * follows, whose records the drain drops either way.
 *
 * The map and its mapping live as long as the process (a hook may still store
 * through a cell while a session stops, so the memory must never go away);
 * each sampler start clears them. Its descriptor is open only while a start
 * loads the filter (the mapping and the program keep the map): a session
 * leaves no descriptor behind, and the next one opens the map again by its id
 * (BPF_MAP_GET_FD_BY_ID, CAP_SYS_ADMIN), or, refused, makes a new one and
 * leaves the old mapping where it is. In a forked child the shared pages would
 * reach the parent's filter: after_fork puts private memory in their place.
 * Writer thread only, but for the hooks' stores.
 */
#include "sampler-private.h"

#include <errno.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CELLS SS_INPOLL_CELLS
#define VALUE_SIZE (2u * CELLS * sizeof(uint32_t))

_Static_assert((CELLS & (CELLS - 1)) == 0, "the filter masks the tid");
_Static_assert(VALUE_SIZE % 4096 == 0, "the element fills whole pages");

static int map_fd = -1;
static uint32_t map_id;
static _Atomic uint32_t *cells;       /* in_poll[CELLS] then shared[CELLS] */
static uint16_t followers[CELLS];      /* followed threads per bucket */

static uint32_t bucket(uint32_t tid)
{
	return tid & (CELLS - 1);
}

static uint32_t id_of(int fd)
{
	struct bpf_map_info info;
	memset(&info, 0, sizeof info);
	union bpf_attr a;
	memset(&a, 0, sizeof a);
	a.info.bpf_fd = (uint32_t)fd;
	a.info.info_len = sizeof info;
	a.info.info = (uint64_t)(uintptr_t)&info;
	return syscall(SYS_bpf, BPF_OBJ_GET_INFO_BY_FD, &a, sizeof a) == 0 ? info.id : 0;
}

SS_INTERNAL int ss_inpoll_open(char *why, size_t len)
{
	if (map_fd < 0 && cells && map_id) {
		union bpf_attr a;
		memset(&a, 0, sizeof a);
		a.map_id = map_id;
		map_fd = (int)syscall(SYS_bpf, BPF_MAP_GET_FD_BY_ID, &a, sizeof a);
	}
	if (map_fd < 0) {
		union bpf_attr a;
		memset(&a, 0, sizeof a);
		a.map_type = BPF_MAP_TYPE_ARRAY;
		a.key_size = sizeof(uint32_t);
		a.value_size = VALUE_SIZE;
		a.max_entries = 1;
		a.map_flags = BPF_F_MMAPABLE;
		int fd = (int)syscall(SYS_bpf, BPF_MAP_CREATE, &a, sizeof a);
		if (fd < 0) {
			int e = errno;
			snprintf(why, len, "bpf(MAP_CREATE, mmapable array): %s", ss_errno_name(e));
			return -e;
		}
		void *p = mmap(NULL, VALUE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED) {
			int e = errno;
			close(fd);
			snprintf(why, len, "mmap of the in-poll map: %s", ss_errno_name(e));
			return -e;
		}
		map_fd = fd;
		map_id = id_of(fd);
		cells = p;
	}
	/* Hooks of the previous session may still store here: a stale 1 only keeps
	 * a switch-out that the drain then hands on as before. */
	memset((void *)cells, 0, VALUE_SIZE);
	memset(followers, 0, sizeof followers);
	return 0;
}

SS_INTERNAL int ss_inpoll_map_fd(void)
{
	return map_fd;
}

SS_INTERNAL void ss_inpoll_close_fd(void)
{
	if (map_fd >= 0)
		close(map_fd);
	map_fd = -1;
}

SS_INTERNAL void ss_inpoll_follow(uint32_t tid)
{
	uint32_t b = bucket(tid);
	if (followers[b] < UINT16_MAX)
		followers[b]++;
	if (followers[b] > 1) /* sticky for the session: whose flag is whose is lost */
		atomic_store_explicit(&cells[CELLS + b], 1u, memory_order_relaxed);
	else
		atomic_store_explicit(&cells[b], SS_INPOLL_ALL, memory_order_relaxed);
}

SS_INTERNAL _Atomic uint32_t *ss_inpoll_cell(uint32_t tid, int in_poll)
{
	uint32_t b = bucket(tid);
	if (followers[b] != 1)
		return NULL;
	atomic_store_explicit(&cells[b], in_poll ? SS_INPOLL_IN : SS_INPOLL_OUT, memory_order_relaxed);
	return &cells[b];
}

SS_INTERNAL void ss_inpoll_unfollow(uint32_t tid)
{
	uint32_t b = bucket(tid);
	if (followers[b] && followers[b] < UINT16_MAX)
		followers[b]--;
	if (!followers[b])
		atomic_store_explicit(&cells[b], SS_INPOLL_NONE, memory_order_relaxed);
}

SS_INTERNAL void ss_inpoll_after_fork(void)
{
	if (!cells)
		return;
	/* Same address, private zeroed pages: a cell a slot still names stays valid
	 * memory and no longer reaches the parent's filter. */
	mmap((void *)cells, VALUE_SIZE, PROT_READ | PROT_WRITE,
	     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	cells = NULL;
	map_id = 0;
	ss_inpoll_close_fd();
}

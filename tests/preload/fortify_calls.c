/*
 * fortify_calls.c - poll and ppoll as a fortified build calls them: with
 * _FORTIFY_SOURCE and an array whose size the compiler knows, glibc's headers
 * route them to __poll_chk and __ppoll_chk, which the shim wraps too.
 */
#include <poll.h>
#include <stddef.h>

int fortified_poll(struct pollfd *fds, nfds_t n, int timeout);
int fortified_ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts);

int fortified_poll(struct pollfd *fds, nfds_t n, int timeout)
{
	struct pollfd local[4];
	for (nfds_t i = 0; i < n && i < 4; i++)
		local[i] = fds[i];
	int r = poll(local, n, timeout);
	for (nfds_t i = 0; i < n && i < 4; i++)
		fds[i] = local[i];
	return r;
}

int fortified_ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts)
{
	struct pollfd local[4];
	for (nfds_t i = 0; i < n && i < 4; i++)
		local[i] = fds[i];
	return ppoll(local, n, ts, NULL);
}

/*
 * sigwalk.c - the frame walk and real-time signal bookkeeping shared by the
 * sampler's timer fallback, stall captures and task dumps (see sigwalk.h).
 *
 * Why a real-time signal and not SIGPROF: SIGPROF is what other profilers
 * (gperftools, setitimer users) take, and a host that uses it must keep it. We
 * take the highest real-time signal whose disposition is still SIG_DFL; each user
 * claims its own, so the sampler and the watchdog never share a handler's state.
 *
 * Why the walk cannot fault: the part of a thread's stack above its stack pointer
 * is mapped by construction, and every load is confined to it.
 */
#include "sigwalk.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

SS_INTERNAL int ss_rtsig_claim(void (*handler)(int, siginfo_t *, void *), struct sigaction *old,
			       char *why, size_t len)
{
	int chosen = 0;
	for (int sig = SIGRTMAX; sig > SIGRTMIN; sig--) {
		struct sigaction cur;
		if (sigaction(sig, NULL, &cur) != 0)
			continue;
		if (!(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_DFL) {
			chosen = sig;
			*old = cur;
			break;
		}
	}
	if (!chosen) {
		snprintf(why, len, "every real-time signal SIGRTMIN+1..SIGRTMAX has a handler");
		return 0;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = handler;
	/* SA_RESTART: should a signal ever land in a restartable system call, the
	 * host sees the call complete, not EINTR. */
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
	sigfillset(&sa.sa_mask); /* nothing else of ours nests inside */
	if (sigaction(chosen, &sa, NULL) != 0) {
		snprintf(why, len, "sigaction(%d): %s", chosen, strerror(errno));
		return 0;
	}
	return chosen;
}

SS_INTERNAL void ss_rtsig_release(int sig, const struct sigaction *old)
{
	struct sigaction ign;
	memset(&ign, 0, sizeof ign);
	ign.sa_handler = SIG_IGN;
	sigaction(sig, &ign, NULL);
	sigaction(sig, old, NULL);
}

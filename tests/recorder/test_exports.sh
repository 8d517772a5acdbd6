#!/bin/sh
# test_exports.sh NM LIBSTALLSCOPE PRELOAD_SHIM - what the recorder's shared
# objects export, from `nm -D --defined-only`:
#   libstallscope.so           stallscope_* only (the public API, and the shim's
#                              ABI of recorder/src/shim-abi.h); schema/'s helpers
#                              and every ss_* name stay hidden;
#   libstallscope_preload.so   the libc, pthread and liburing functions it
#                              interposes (recorder/preload/preload.c,
#                              wrap_waits.c), the two glibc version nodes of
#                              preload.map, and nothing else of ours unless it
#                              starts with stallscope_.
# A new wrapper is added to the list below with its definition.
nm=$1 lib=$2 shim=$3
if [ -z "$nm" ]; then
	echo "SKIP: no nm found (binutils) to list the exported symbols"
	exit 77
fi

shim_allowed='
_exit execv execve execvp execvpe fork pthread_create pthread_setname_np
poll ppoll __poll_chk __ppoll_chk select pselect epoll_wait epoll_pwait epoll_pwait2
__io_uring_get_cqe io_uring_wait_cqes io_uring_wait_cqe_timeout
io_uring_submit_and_wait io_uring_submit_and_wait_timeout
pthread_cond_wait pthread_cond_timedwait pthread_cond_clockwait
sem_wait sem_timedwait sem_clockwait
GLIBC_2.2.5 GLIBC_2.3.2
'

fail=0
# Prints the names (version suffix cut off) that $1 exports and $2 does not allow.
check() {
	obj=$1 allowed=$2
	syms=$("$nm" -D --defined-only "$obj") || { echo "FAIL: $nm cannot read $obj"; fail=1; return; }
	n=$(printf '%s\n' "$syms" | grep -c .)
	bad=$(printf '%s\n' "$syms" | awk 'NF { print $NF }' | sed 's/@.*//' | sort -u |
	      while read -r s; do
		case $s in stallscope_*) continue ;; esac
		case " $(echo $allowed) " in *" $s "*) continue ;; esac
		echo "$s"
	      done)
	if [ -n "$bad" ]; then
		echo "FAIL: $(basename "$obj") exports what it must not:"
		printf '  %s\n' $bad
		fail=1
	else
		echo "ok: $(basename "$obj"): $n exported symbols, all allowed"
	fi
}

check "$lib" ''
check "$shim" "$shim_allowed"
# The shim must still export every wrapper it defines (an allowed list that
# outlived a wrapper would otherwise hide a lost interposition).
have=" $("$nm" -D --defined-only "$shim" | awk 'NF { print $NF }' | sed 's/@.*//' | tr '\n' ' ') "
for s in $shim_allowed; do
	case $have in *" $s "*) ;; *) echo "FAIL: $(basename "$shim") no longer exports $s"; fail=1 ;; esac
done
exit $fail

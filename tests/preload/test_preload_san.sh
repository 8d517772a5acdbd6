#!/bin/sh
# test_preload_san.sh - the sanitizer pass of the shim: wrapped_calls with an
# ASan+UBSan build of the shim and the recorder behind it preloaded (the ASan
# runtime first, as it must be), plain, with a forked child followed, and with a
# failed exec. The program's own checks must pass, the sanitizers stay silent
# (any report aborts), and the recording decodes with its parks.
# usage: test_preload_san.sh STALLSCOPE_CLI WRAPPED_CALLS SHIM_SAN
set -eu
cli=$1
prog=$2
shim=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stallscope-psan.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# hung_stacks PID: every thread's kernel wait and, with gdb, its user stack.
hung_stacks() {
	echo "--- process $1: $(tr '\0' ' ' < "/proc/$1/cmdline" 2> /dev/null)"
	for t in /proc/"$1"/task/*; do
		echo "thread ${t##*/} ($(cat "$t/comm" 2> /dev/null)): wchan $(cat "$t/wchan" 2> /dev/null), syscall $(cut -d' ' -f1 "$t/syscall" 2> /dev/null)"
	done
	if command -v gdb > /dev/null; then
		timeout 30 gdb -batch -nx -ex 'thread apply all bt' -p "$1" 2>&1 | grep -v '^\[New LWP' || true
	fi
}
asan=$(cc -print-file-name=libasan.so)
ubsan=$(cc -print-file-name=libubsan.so)
[ -e "$asan" ] && [ -e "$ubsan" ] || { echo "SKIP: no ASan/UBSan runtime"; exit 77; }
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for mode in plain fork exec; do
	arg=$mode
	[ "$mode" = plain ] && arg=
	# shellcheck disable=SC2086 # $arg is empty or one word
	LD_PRELOAD="$asan:$ubsan:$shim" STALLSCOPE_ENABLED=1 STALLSCOPE_OUTPUT_DIR="$tmp/$mode" \
		STALLSCOPE_FOLLOW_CHILDREN=1 "$prog" $arg > "$tmp/$mode.log" 2>&1 &
	pid=$!
	# A run takes under 2 s; once (in CI) one hung until meson's timeout and
	# said nothing, so a late run prints where each of its threads waits.
	waited=0
	while kill -0 "$pid" 2> /dev/null && [ "$waited" -lt 600 ]; do
		sleep 0.1
		waited=$((waited + 1))
	done
	if kill -0 "$pid" 2> /dev/null; then
		cat "$tmp/$mode.log"
		for p in $pid $(pgrep -P "$pid" || true); do
			hung_stacks "$p"
		done
		kill -9 $pid $(pgrep -P "$pid" || true) 2> /dev/null || true
		fail "wrapped_calls $mode under the sanitized shim still runs after 60 s"
	fi
	wait "$pid" || { cat "$tmp/$mode.log"; fail "wrapped_calls $mode under the sanitized shim"; }
	for f in "$tmp/$mode"/*.bin; do
		"$cli" dump --summary "$f" > "$tmp/dump" || fail "$f does not decode"
	done
	"$cli" dump --summary "$tmp/$mode"/stallscope.*.bin | grep -q 'PARK' || fail "$mode: no parks recorded"
done
ls "$tmp"/fork/stallscope-*.bin > /dev/null 2>&1 || fail "the followed child did not record"
echo "preload (sanitized): ok"

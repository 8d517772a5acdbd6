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
asan=$(cc -print-file-name=libasan.so)
ubsan=$(cc -print-file-name=libubsan.so)
[ -e "$asan" ] && [ -e "$ubsan" ] || { echo "SKIP: no ASan/UBSan runtime"; exit 77; }
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for mode in plain fork exec; do
	arg=$mode
	[ "$mode" = plain ] && arg=
	# shellcheck disable=SC2086 # $arg is empty or one word
	LD_PRELOAD="$asan:$ubsan:$shim" STALLSCOPE_ENABLED=1 STALLSCOPE_OUTPUT_DIR="$tmp/$mode" \
		STALLSCOPE_FOLLOW_CHILDREN=1 "$prog" $arg > "$tmp/$mode.log" 2>&1 ||
		{ cat "$tmp/$mode.log"; fail "wrapped_calls $mode under the sanitized shim"; }
	for f in "$tmp/$mode"/*.bin; do
		"$cli" dump --summary "$f" > "$tmp/dump" || fail "$f does not decode"
	done
	"$cli" dump --summary "$tmp/$mode"/stallscope.*.bin | grep -q 'PARK' || fail "$mode: no parks recorded"
done
ls "$tmp"/fork/stallscope-*.bin > /dev/null 2>&1 || fail "the followed child did not record"
echo "preload (sanitized): ok"

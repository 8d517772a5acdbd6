#!/bin/sh
# run-libfuzzer-dial9.sh - build the libFuzzer target for the dial9 reader
# (fuzz_dial9_reader.c: scan, value accessors, time-order merge) with clang
# (ASan+UBSan) straight from the sources and run it on a working copy of the
# dial9 seed corpus. For long runs; the meson test fuzz-smoke-dial9-reader is
# the short one.
#
#   tests/fuzz/run-libfuzzer-dial9.sh [SECONDS] [extra libFuzzer flags...]
#
# SECONDS defaults to 600. Work files go to $FUZZ_WORK (default
# tests/fuzz/corpus-work/dial9/, ignored by git): the grown corpus, the binary,
# and any crash-*/leak-*/timeout-* artifacts. Reproduce one with
#   $FUZZ_WORK/fuzz_dial9_reader $FUZZ_WORK/artifacts/crash-...
# Exit status is libFuzzer's: non-zero when it found a crash.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
secs=${1:-600}
[ $# -gt 0 ] && shift
work=${FUZZ_WORK:-$here/corpus-work/dial9}
CLANG=${CLANG:-clang}

mkdir -p "$work/corpus" "$work/artifacts"
cp -n "$here/corpus/dial9/"* "$work/corpus/" 2>/dev/null || true

"$CLANG" -std=c17 -g -O1 -D_GNU_SOURCE \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-fno-omit-frame-pointer \
	-I"$root/viewer/reader/dial9" -I"$here" \
	"$here/fuzz_dial9_reader.c" "$root"/viewer/reader/dial9/*.c \
	-lz -lm -o "$work/fuzz_dial9_reader"

exec "$work/fuzz_dial9_reader" -max_total_time="$secs" -max_len=262144 \
	-artifact_prefix="$work/artifacts/" "$@" "$work/corpus"

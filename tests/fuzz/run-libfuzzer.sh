#!/bin/sh
# run-libfuzzer.sh - build the libFuzzer target for the segment reader with clang
# (ASan+UBSan) straight from the sources and run it on a working copy of the seed
# corpus. For long runs; the meson test fuzz-smoke-segment-reader is the short one.
#
#   tests/fuzz/run-libfuzzer.sh [SECONDS] [extra libFuzzer flags...]
#
# SECONDS defaults to 600. Work files go to $FUZZ_WORK (default
# tests/fuzz/corpus-work/, ignored by git): the grown corpus, the binary, and any
# crash-*/leak-*/timeout-* artifacts. Reproduce one with
#   $FUZZ_WORK/fuzz_segment_reader $FUZZ_WORK/artifacts/crash-...
# Exit status is libFuzzer's: non-zero when it found a crash.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
secs=${1:-600}
[ $# -gt 0 ] && shift
work=${FUZZ_WORK:-$here/corpus-work}
CLANG=${CLANG:-clang}

mkdir -p "$work/corpus" "$work/artifacts"
cp -n "$here/corpus/segment_reader/"* "$work/corpus/" 2>/dev/null || true

zstd_flags=""
zstd_libs=""
if pkg-config --exists libzstd 2>/dev/null; then
	zstd_flags="-DSTALLSCOPE_HAVE_ZSTD=1 $(pkg-config --cflags libzstd)"
	zstd_libs=$(pkg-config --libs libzstd)
fi

# shellcheck disable=SC2086 # the flag variables are word lists on purpose
"$CLANG" -std=c17 -g -O1 -D_GNU_SOURCE $zstd_flags \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-fno-omit-frame-pointer \
	-I"$root/schema" -I"$root/viewer/reader" -I"$root/viewer/cli" -I"$here" \
	"$here/fuzz_segment_reader.c" \
	"$root"/viewer/reader/*.c "$root/viewer/cli/dump_format.c" "$root/schema/format.c" \
	$zstd_libs -o "$work/fuzz_segment_reader"

exec "$work/fuzz_segment_reader" -max_total_time="$secs" -max_len=65536 \
	-artifact_prefix="$work/artifacts/" "$@" "$work/corpus"

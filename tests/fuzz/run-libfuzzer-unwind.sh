#!/bin/sh
# run-libfuzzer-unwind.sh - build the libFuzzer target for the recorder's unwinder
# (fuzz_unwind.c: corrupted registers and stack copies against CFI unwinding with
# libdw) with clang (ASan+UBSan) straight from the sources and run it on a working
# copy of the seed corpus. For long runs; the meson test fuzz-smoke-unwind is the
# short one.
#
#   tests/fuzz/run-libfuzzer-unwind.sh [SECONDS] [extra libFuzzer flags...]
#
# SECONDS defaults to 600. Work files go to $FUZZ_WORK (default
# tests/fuzz/corpus-work/unwind/, ignored by git): the grown corpus, the binary,
# and artifacts.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
secs=${1:-600}
[ $# -gt 0 ] && shift
work=${FUZZ_WORK:-$here/corpus-work/unwind}
CLANG=${CLANG:-clang}

mkdir -p "$work/corpus" "$work/artifacts"
cp -n "$here/corpus/unwind/"* "$work/corpus/" 2>/dev/null || true

zstd_flags=""
zstd_libs=""
if pkg-config --exists libzstd 2>/dev/null; then
	zstd_flags="-DSTALLSCOPE_HAVE_ZSTD=1 $(pkg-config --cflags libzstd)"
	zstd_libs=$(pkg-config --libs libzstd)
fi
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined"

# The chain the base state is captured in must have no frame pointers.
# shellcheck disable=SC2086 # the flag variables are word lists on purpose
"$CLANG" -std=c17 -g -O2 -D_GNU_SOURCE $san -fomit-frame-pointer -I"$here" \
	-c "$here/fuzz_unwind_nofp.c" -o "$work/fuzz_unwind_nofp.o"
# shellcheck disable=SC2086
"$CLANG" -std=c17 -g -O1 -D_GNU_SOURCE -DSTALLSCOPE_HAVE_LIBDW=1 $zstd_flags \
	-fsanitize=fuzzer $san -fno-omit-frame-pointer -pthread \
	-I"$root/schema" -I"$root/recorder/include" -I"$root/recorder/src" -I"$here" \
	"$here/fuzz_unwind.c" "$work/fuzz_unwind_nofp.o" \
	"$root"/recorder/src/*.c "$root/schema/format.c" \
	-ldw -lelf $zstd_libs -lm -o "$work/fuzz_unwind"

exec "$work/fuzz_unwind" -max_total_time="$secs" -max_len=16384 \
	-artifact_prefix="$work/artifacts/" "$@" "$work/corpus"

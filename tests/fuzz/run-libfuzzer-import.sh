#!/bin/sh
# run-libfuzzer-import.sh - build the libFuzzer target for the importer
# (fuzz_import.c: a fuzzed segment imported into an in-memory SQLite database)
# with clang (ASan+UBSan) straight from the sources and run it on a working copy
# of the seed corpus (segments and dial9 traces) plus two demo segments. For long runs; the meson test
# fuzz-smoke-import is the short one.
#
#   tests/fuzz/run-libfuzzer-import.sh [SECONDS] [extra libFuzzer flags...]
#
# SECONDS defaults to 600. Work files go to $FUZZ_WORK (default
# tests/fuzz/corpus-work/import/, ignored by git): the grown corpus, the binary, and artifacts.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
secs=${1:-600}
[ $# -gt 0 ] && shift
work=${FUZZ_WORK:-$here/corpus-work/import}
CLANG=${CLANG:-clang}

mkdir -p "$work/corpus" "$work/artifacts"
cp -n "$here/corpus/segment_reader/"* "$here/corpus/dial9/"* "$work/corpus/" 2>/dev/null || true
cp -n "$root/data/demo/long-poll/long-poll.0.bin" "$root/data/demo/blocking/blocking.1.bin" \
	"$work/corpus/" 2>/dev/null || true
python3 "$root/viewer/store/sqlite/embed_sql.py" "$root/schema/stallscope.sql" "$work/schema_sql.c"

zstd_flags=""
zstd_libs=""
if pkg-config --exists libzstd 2>/dev/null; then
	zstd_flags="-DSTALLSCOPE_HAVE_ZSTD=1 $(pkg-config --cflags libzstd)"
	zstd_libs=$(pkg-config --libs libzstd)
fi

# shellcheck disable=SC2086 # the flag variables are word lists on purpose
"$CLANG" -std=c17 -g -O1 -D_GNU_SOURCE $zstd_flags \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-fno-omit-frame-pointer -pthread \
	-I"$root/schema" -I"$root/viewer/reader" -I"$root/viewer/reader/dial9" -I"$root/viewer/importer" \
	-I"$root/viewer/model" -I"$root/viewer/store/sqlite" -I"$root/viewer/symbolize" -I"$here" \
	"$here/fuzz_import.c" "$work/schema_sql.c" \
	"$root"/viewer/importer/*.c "$root"/viewer/model/*.c "$root"/viewer/store/sqlite/*.c \
	"$root"/viewer/symbolize/*.c "$root"/viewer/reader/*.c "$root"/viewer/reader/dial9/*.c \
	"$root/schema/format.c" \
	-lsqlite3 -ldw -lelf -lz -lm $zstd_libs -o "$work/fuzz_import"

exec "$work/fuzz_import" -max_total_time="$secs" -max_len=262144 \
	-artifact_prefix="$work/artifacts/" "$@" "$work/corpus"

#!/bin/sh
# run-libfuzzer-db.sh - build the libFuzzer target for the readers of databases
# someone sent (fuzz_db.c: a fuzzed program builds a database with the real
# schema and hostile rows; `stallscope report`, `export` and `compare` read it
# and the timeline renders it) with clang (ASan+UBSan) straight from the sources, and run it on a working
# copy of tests/fuzz/corpus/db. For long runs; the meson test fuzz-smoke-db is
# the short one.
#
#   tests/fuzz/run-libfuzzer-db.sh [SECONDS] [extra libFuzzer flags...]
#
# SECONDS defaults to 600. Work files go to $FUZZ_WORK (default
# tests/fuzz/corpus-work/db/, ignored by git). Needs gtk4's development files for
# the render half; without them only the report is fuzzed.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
secs=${1:-600}
[ $# -gt 0 ] && shift
work=${FUZZ_WORK:-$here/corpus-work/db}
CLANG=${CLANG:-clang}

mkdir -p "$work/corpus" "$work/artifacts"
cp -n "$here/corpus/db/"* "$work/corpus/" 2>/dev/null || true
python3 "$root/viewer/store/sqlite/embed_sql.py" "$root/schema/stallscope.sql" "$work/schema_sql.c"
x86=-
for h in /usr/include/x86_64-linux-gnu/asm/unistd_64.h /usr/include/asm/unistd_64.h; do
	[ "$x86" = - ] && [ -f "$h" ] && x86=$h
done
generic=-
[ -f /usr/include/asm-generic/unistd.h ] && generic=/usr/include/asm-generic/unistd.h
python3 "$root/viewer/model/gen_syscalls.py" "$x86" "$generic" "$work/syscall_names.c"

render_flags=""
render_src=""
render_libs=""
if pkg-config --exists gtk4 2>/dev/null; then
	render_flags="-DFUZZ_DB_RENDER=1 -DGLIB_VERSION_MIN_REQUIRED=GLIB_VERSION_2_74 $(pkg-config --cflags gtk4) -I$root/viewer/timeline"
	render_src=$(ls "$root"/viewer/timeline/*.c)
	render_libs="$(pkg-config --libs gtk4) -lm"
fi

# The pprof writer when protobuf-c is there (as meson decides it), else the
# stand-in that refuses the format.
pprof_src="$root/viewer/export/pprof_none.c"
pprof_libs=""
if command -v protoc-c >/dev/null && pkg-config --exists libprotobuf-c zlib 2>/dev/null; then
	protoc-c --c_out="$work" --proto_path="$root/viewer/export" "$root/viewer/export/profile.proto"
	pprof_src="$root/viewer/export/pprof.c $work/profile.pb-c.c"
	pprof_libs="$(pkg-config --libs libprotobuf-c zlib)"
fi

# shellcheck disable=SC2086 # the flag variables are word lists on purpose
"$CLANG" -std=c17 -g -O1 -D_GNU_SOURCE $render_flags \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-fno-omit-frame-pointer -pthread \
	-I"$root/schema" -I"$root/viewer/cli" -I"$root/viewer/store/sqlite" -I"$root/viewer/analysis" \
	-I"$root/viewer/export" -I"$root/viewer/model" -I"$work" -I"$here" \
	"$here/fuzz_db.c" "$work/schema_sql.c" "$work/syscall_names.c" "$root/viewer/cli/cmd_report.c" \
	"$root/viewer/cli/cmd_export.c" "$root/viewer/cli/cmd_compare.c" "$root/viewer/cli/cli_open.c" "$root"/viewer/analysis/*.c \
	"$root/viewer/export/chrome.c" "$root/viewer/export/export.c" "$root/viewer/export/folded.c" \
	"$root/viewer/export/json_out.c" $pprof_src "$root/viewer/model/hmap.c" \
	"$root/viewer/store/sqlite/store_open.c" "$root/viewer/store/sqlite/read_queries.c" \
	$render_src -lsqlite3 -lm $pprof_libs $render_libs -o "$work/fuzz_db"

LSAN_OPTIONS=suppressions=$here/lsan-gtk.supp exec "$work/fuzz_db" -max_total_time="$secs" \
	-max_len=65536 -artifact_prefix="$work/artifacts/" "$@" "$work/corpus"

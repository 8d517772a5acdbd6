#!/bin/sh
# compare_builds.sh OLD_CLI NEW_CLI [DIR...] - what two builds of `stallscope`
# read and write must be the same, byte for byte, for a change that may not
# alter either (issue 11 moved the segment framing into schema/):
#   dump       `dump` and `dump --summary` of every demo segment (data/demo), every
#              file of the fuzz corpus (tests/fuzz/corpus/segment_reader) and every
#              segment under each DIR: the same stdout, stderr and exit status;
#   symbolize  each DIR copied twice and symbolized by each build: the same files;
#   recovery   the first segment of each DIR with its footer and 200 bytes before
#              it cut off, left as PREFIX.N.bin.active, sealed by each build's
#              `record` (the recorder's recovery): the same sealed file.
# Not a test of the suite (it needs a second build); run it by hand, e.g. with
# the build of main and a bench recording:
#   tests/tools/compare_builds.sh ../main/build/viewer/cli/stallscope \
#       build/viewer/cli/stallscope /tmp/bench-recording
set -eu
old=$1 new=$2
shift 2
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stallscope-compare.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
files=0 same=0 bytes=0

# One run of CLI ARGS, as one file: stdout, stderr, exit status.
run() {
	out=$1
	shift
	rc=0
	"$@" >"$out.stdout" 2>"$out.stderr" || rc=$?
	{ cat "$out.stdout"; echo "--- stderr"; cat "$out.stderr"; echo "--- exit $rc"; } >"$out"
	rm -f "$out.stdout" "$out.stderr"
}

compare_dump() {
	f=$1
	for mode in "" --summary; do
		run "$tmp/a" "$old" dump $mode "$f"
		run "$tmp/b" "$new" dump $mode "$f"
		files=$((files + 1))
		if cmp -s "$tmp/a" "$tmp/b"; then
			same=$((same + 1))
			bytes=$((bytes + $(wc -c <"$tmp/a")))
		else
			echo "DIFFERENT: dump $mode $f"
			diff "$tmp/a" "$tmp/b" | head -5
		fi
	done
}

for f in "$root"/data/demo/*/*.bin "$root"/tests/fuzz/corpus/segment_reader/*; do
	compare_dump "$f"
done
for d in "$@"; do
	for f in "$d"/*.bin; do
		compare_dump "$f"
	done
done
echo "dump: $same of $files outputs identical ($bytes bytes), old $old, new $new"

n=0 ok=0
for d in "$@"; do
	rm -rf "$tmp/sa" "$tmp/sb"
	cp -a "$d" "$tmp/sa"
	cp -a "$d" "$tmp/sb"
	"$old" symbolize -q "$tmp/sa"
	"$new" symbolize -q "$tmp/sb"
	for f in "$tmp"/sa/*; do
		n=$((n + 1))
		if cmp -s "$f" "$tmp/sb/$(basename "$f")"; then
			ok=$((ok + 1))
		else
			echo "DIFFERENT: symbolize of $d: $(basename "$f")"
		fi
	done
done
echo "symbolize: $ok of $n rewritten segments identical"

n=0 ok=0
for d in "$@"; do
	seg=$(ls "$d"/*.bin | head -1)
	name=$(basename "$seg")
	prefix=${name%.*.bin}
	# The footer (56 + 72 bytes) and a torn last block: what a SIGKILL leaves.
	size=$(wc -c <"$seg")
	cut=$((size - 56 - 72 - 200))
	for side in a b; do
		rm -rf "$tmp/r$side"
		mkdir "$tmp/r$side"
		head -c "$cut" "$seg" >"$tmp/r$side/$name.active"
	done
	"$old" record -o "$tmp/ra" --prefix "$prefix" -- true >/dev/null 2>&1
	"$new" record -o "$tmp/rb" --prefix "$prefix" -- true >/dev/null 2>&1
	n=$((n + 1))
	if [ -f "$tmp/ra/$name" ] && cmp -s "$tmp/ra/$name" "$tmp/rb/$name"; then
		ok=$((ok + 1))
	else
		echo "DIFFERENT: recovery of $seg cut at $cut bytes"
	fi
done
echo "recovery: $ok of $n recovered segments identical"
[ "$same" -eq "$files" ]

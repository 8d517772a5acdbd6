#!/bin/sh
# record-demo.sh - regenerates the demo segments in data/demo/ from the example
# runtime: one subdirectory per scenario, each holding a few sealed segments
# (the file size limit is small so that every recording rotates at least once).
#
# usage: data/record-demo.sh [BUILD_DIR]     (default: build, relative to the repo)
#
# Recording goes to a temporary directory first, so a failed or interrupted run
# never leaves half-written segments in data/demo/.
#
# The demos must show their culprits as on a quiet machine (the long-poll
# scenario's longest poll on CPU, not preempted): on a busy one, run it as root
# at high priority, `nice -n -20 data/record-demo.sh`, as the committed demo was.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
case $build in /*) ;; *) build=$root/$build ;; esac

scenarios="steady long-poll blocking mutex starvation leak"
duration=1.5
workers=4
rate=1500
seed=1
# 64 KiB is the smallest size the recorder accepts; a count high enough that no
# segment of a 1.5 s run is evicted, so each demo covers its whole run.
max_file_size=65536
rotation_count=64
max_total_kb=4096

if [ ! -d "$build" ]; then
	meson setup "$build" "$root"
fi
ninja -C "$build" recorder/examples/stallscope-example-runtime
exe=$build/recorder/examples/stallscope-example-runtime

# The CLI's symbolize step adds symbol tables so the culprit functions are named
# when the segments are imported on another machine. Optional: skipped (with a
# note) when the CLI is not built yet.
cli=
for c in "$build/viewer/cli/stallscope"; do
	if [ -x "$c" ] && "$c" help symbolize >/dev/null 2>&1; then
		cli=$c
		break
	fi
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/stallscope-demo.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

for sc in $scenarios; do
	out=$tmp/$sc
	mkdir -p "$out"
	# Starvation on one CPU: four busy workers then wait for it, so the demo holds
	# "runnable but not running" stall captures on any machine.
	pin=
	if [ "$sc" = starvation ] && command -v taskset >/dev/null 2>&1; then
		pin="taskset -c 0"
	fi
	echo "== $sc"
	STALLSCOPE_ENABLED=1 \
	STALLSCOPE_OUTPUT_DIR=$out \
	STALLSCOPE_FILE_PREFIX=$sc \
	STALLSCOPE_MAX_FILE_SIZE=$max_file_size \
	STALLSCOPE_ROTATION_COUNT=$rotation_count \
	STALLSCOPE_ROTATION_PERIOD_S=1 \
	STALLSCOPE_TASK_DUMP_ENABLED=1 \
		$pin "$exe" --scenario "$sc" --workers "$workers" --duration "$duration" \
		--rate "$rate" --seed "$seed"

	if ls "$out"/*.bin.active >/dev/null 2>&1; then
		echo "record-demo: $sc left an unsealed segment; stallscope_stop() did not seal" >&2
		exit 1
	fi
	n=$(find "$out" -name "$sc.*.bin" | wc -l)
	if [ "$n" -lt 2 ]; then
		echo "record-demo: $sc produced $n sealed segment(s); expected a rotation" >&2
		exit 1
	fi
	if [ -n "$cli" ]; then
		"$cli" symbolize "$out" || echo "record-demo: symbolize failed for $sc; keeping unsymbolized segments" >&2
	fi
done

[ -n "$cli" ] || echo "record-demo: this build has no 'stallscope symbolize'; segments are not symbolized" >&2

total_kb=$(du -sk "$tmp" | cut -f1)
if [ "$total_kb" -gt "$max_total_kb" ]; then
	echo "record-demo: ${total_kb} KiB recorded, over the ${max_total_kb} KiB budget for data/;" \
		"lower the rate or duration" >&2
	exit 1
fi

mkdir -p "$root/data/demo"
for sc in $scenarios; do
	rm -rf "$root/data/demo/$sc"
	mkdir -p "$root/data/demo/$sc"
	cp "$tmp/$sc"/"$sc".*.bin "$root/data/demo/$sc/"
done
echo "record-demo: wrote ${total_kb} KiB under data/demo/:"
ls -l "$root"/data/demo/*/

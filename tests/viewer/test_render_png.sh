#!/bin/sh
# stallscope-viewer --render-png with neither DISPLAY nor WAYLAND_DISPLAY, on
# segment files (imported on the fly): a PNG of the requested size comes out.
# usage: test_render_png.sh STALLSCOPE_VIEWER SEGMENT_DIR OUTDIR
set -eu
viewer=$1 segs=$2 out=$3/demo.png
rm -f "$out"
env -u DISPLAY -u WAYLAND_DISPLAY "$viewer" --render-png "$out" --size 1000x400 "$segs"
[ -s "$out" ] || { echo "no PNG written"; exit 1; }
# PNG signature and the IHDR size (bytes 16..23: width, height, big-endian).
sig=$(od -An -tx1 -N8 "$out" | tr -d ' \n')
[ "$sig" = 89504e470d0a1a0a ] || { echo "not a PNG: $sig"; exit 1; }
size=$(od -An -tu1 -j16 -N8 "$out" | tr -s ' ' | sed 's/^ //')
[ "$size" = "0 0 3 232 0 0 1 144" ] || { echo "unexpected size bytes: $size"; exit 1; }
# Bad input is a clear error, not a crash.
if env -u DISPLAY -u WAYLAND_DISPLAY "$viewer" --render-png "$3/bad.png" /nonexistent 2>"$3/err.txt"; then
	echo "a missing path should fail"; exit 1
fi
grep -q "stallscope-viewer:" "$3/err.txt" || { cat "$3/err.txt"; exit 1; }
# Unknown option values are refused by name, as for --color.
for bad in "--theme purple" "--color rainbow"; do
	# shellcheck disable=SC2086
	if env -u DISPLAY -u WAYLAND_DISPLAY "$viewer" --render-png "$3/bad.png" $bad "$segs" 2>"$3/err.txt"; then
		echo "$bad was accepted"; exit 1
	fi
	grep -q "is '" "$3/err.txt" || { cat "$3/err.txt"; echo "$bad: no clear message"; exit 1; }
done
[ ! -e "$3/bad.png" ] || { echo "a refused option still wrote a PNG"; exit 1; }
echo "render-png: ok"

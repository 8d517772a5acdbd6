#!/bin/sh
# stallscope-viewer --render-png on a database cut short (a trace someone sent,
# truncated in transfer): it fails with a one-line message or renders what it
# can, and is never killed by a signal (the viewer reads databases through a
# memory mapping: viewer/store/sqlite/store_mmap.h).
# usage: test_render_png_truncated.sh STALLSCOPE_VIEWER STALLSCOPE_CLI SEGMENT_DIR OUTDIR
set -eu
viewer=$1 cli=$2 segs=$3 out=$4
db=$out/trunc-full.db
rm -f "$db"
"$cli" import "$segs" -o "$db" -q
size=$(stat -c %s "$db")
for pct in 5 30 70 99; do
	cut=$out/trunc-$pct.db png=$out/trunc-$pct.png
	rm -f "$png"
	head -c $((size * pct / 100)) "$db" >"$cut"
	set +e
	env -u DISPLAY -u WAYLAND_DISPLAY "$viewer" --render-png "$png" --size 800x300 "$cut" 2>"$out/trunc-err.txt"
	rc=$?
	set -e
	if [ $rc -ge 126 ]; then
		cat "$out/trunc-err.txt"; echo "$pct%: killed or crashed (exit $rc)"; exit 1
	fi
	if [ $rc -eq 0 ]; then
		[ -s "$png" ] || { echo "$pct%: exit 0 without a PNG"; exit 1; }
		echo "$pct%: rendered what it could"
	else
		grep -q "stallscope-viewer:" "$out/trunc-err.txt" || { cat "$out/trunc-err.txt"; echo "$pct%: no message"; exit 1; }
		echo "$pct%: refused: $(head -1 "$out/trunc-err.txt")"
	fi
	rm -f "$cut" "$png"
done
rm -f "$db" "$out/trunc-err.txt"
echo "render-png truncated: ok"

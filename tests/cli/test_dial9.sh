#!/bin/sh
# test_dial9.sh - a dial9 trace through the commands a user runs, unchanged
# by its format: `stallscope import` of a directory of dial9 segments (gzip,
# named as dial9 names them) says what it did not map; `stallscope report`
# on the database names the runtime's workers, the longest poll and the
# wake-to-poll delays, as text and as JSON; `stallscope-viewer --render-png`
# draws the database and also the dial9 directory itself (imported on the
# fly). The trace is tests/import/d9_synthetic.c's, written by make_dial9_seeds.
# usage: test_dial9.sh STALLSCOPE_CLI MAKE_DIAL9_SEEDS VIEWER|- OUTDIR
set -eu
cli=$1 seeds=$2 viewer=$3 out=$4
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stallscope-dial9.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

mkdir "$tmp/seeds" "$tmp/traces"
"$seeds" "$tmp/seeds"
cp "$tmp/seeds/synthetic.bin.gz" "$tmp/traces/trace.0.bin.gz"

"$cli" import "$tmp/traces" -o "$tmp/t.db" 2>"$tmp/import.txt" || { cat "$tmp/import.txt"; fail "import"; }
grep -q '1 segment imported, 0 unchanged, 0 damaged' "$tmp/import.txt" || { cat "$tmp/import.txt"; fail "summary"; }
grep -q 'kept in other_events: MyCustomEvent (1)' "$tmp/import.txt" \
	|| { cat "$tmp/import.txt"; fail "the unmapped event type is not named"; }

"$cli" report "$tmp/t.db" > "$tmp/report.txt" || { cat "$tmp/report.txt"; fail "report"; }
for want in 'main#0' 'main#1' 'wake-to-poll delay: 2 wakes led to a poll' 'src/main.rs:10'; do
	grep -q "$want" "$tmp/report.txt" || { cat "$tmp/report.txt"; fail "report lacks '$want'"; }
done
"$cli" report "$tmp/t.db" --json > "$tmp/report.json"
python3 - "$tmp/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert isinstance(r, dict) and r, r
PY

if [ "$viewer" != - ]; then
	for src in "$tmp/t.db" "$tmp/traces"; do
		png=$out/dial9-$(basename "$src").png
		rm -f "$png"
		env -u DISPLAY -u WAYLAND_DISPLAY "$viewer" --render-png "$png" --size 1200x360 "$src" \
			|| fail "render of $src"
		sig=$(od -An -tx1 -N8 "$png" | tr -d ' \n')
		[ "$sig" = 89504e470d0a1a0a ] || fail "not a PNG: $png"
	done
	# the directory renders what the database renders
	cmp -s "$out/dial9-t.db.png" "$out/dial9-traces.png" || fail "the directory and its database render differently"
fi
echo "dial9: ok"

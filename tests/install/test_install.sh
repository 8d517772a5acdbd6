#!/bin/sh
# test_install.sh - `meson install` works, and a program outside the tree builds
# against the installed header and library with nothing but pkg-config, then
# records a segment that the installed `stallscope dump` decodes.
# usage: test_install.sh BUILD_DIR
set -eu
build=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stallscope-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
meson install -C "$build" --destdir "$tmp/root" --no-rebuild --quiet >/dev/null
pc=$(find "$tmp/root" -name stallscope.pc | head -n 1)
[ -n "$pc" ] || { echo "stallscope.pc was not installed"; exit 1; }
prefix=$(sed -n 's/^prefix=//p' "$pc")
flags=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --define-variable=prefix="$tmp/root$prefix" \
	--cflags --libs stallscope)
cat > "$tmp/app.c" <<'C'
#include <stallscope/stallscope.h>
#include <stdio.h>
int main(int argc, char **argv)
{
	struct stallscope_config cfg;
	stallscope_config_init(&cfg);
	cfg.output_dir = argv[argc - 1];
	cfg.cpu_sampling = 0;
	if (stallscope_start(&cfg) != 0) {
		fprintf(stderr, "%s\n", stallscope_last_error());
		return 1;
	}
	stallscope_worker_begin("installed", 0);
	for (int i = 0; i < 1000; i++) {
		stallscope_poll_begin((uint64_t)i, STALLSCOPE_LOCATION());
		stallscope_poll_end();
	}
	return stallscope_stop();
}
C
# shellcheck disable=SC2086 # $flags is a list of compiler arguments
cc -std=c17 -Wall -Werror -o "$tmp/app" "$tmp/app.c" $flags
libdir=$(dirname "$(find "$tmp/root" -name 'libstallscope.so' | head -n 1)")
LD_LIBRARY_PATH=$libdir "$tmp/app" "$tmp/out"
cli=$(find "$tmp/root" -path '*/bin/stallscope' | head -n 1)
"$cli" dump --summary "$tmp"/out/stallscope.0.bin > "$tmp/dump.txt"
grep -q 'POLL_BEGIN 1000' "$tmp/dump.txt" || { cat "$tmp/dump.txt"; echo "installed program's events missing"; exit 1; }
grep -q 'status     sealed' "$tmp/dump.txt" || { cat "$tmp/dump.txt"; exit 1; }
# `record` of a program that knows nothing of stallscope finds the installed shim
# (beside the installed library, which the shim finds through its RUNPATH).
shim=$(find "$tmp/root" -name libstallscope_preload.so | head -n 1)
[ -n "$shim" ] && [ "$(dirname "$shim")" = "$libdir" ] || { echo "libstallscope_preload.so not installed beside libstallscope.so"; exit 1; }
"$cli" record -o "$tmp/rec" -- sh -c 'sleep 0.2' 2> "$tmp/rec.log" || { cat "$tmp/rec.log"; exit 1; }
grep -q "preload shim $shim" "$tmp/rec.log" || { cat "$tmp/rec.log"; echo "installed record did not use the installed shim"; exit 1; }
# The viewer and its desktop integration (when built with the GUI).
if [ -n "$(find "$tmp/root" -path '*/bin/stallscope-viewer')" ]; then
	for f in applications/io.github.stallscope.Viewer.desktop metainfo/io.github.stallscope.Viewer.metainfo.xml \
		icons/hicolor/scalable/apps/io.github.stallscope.Viewer.svg; do
		[ -n "$(find "$tmp/root" -path "*/share/$f")" ] || { echo "$f was not installed"; exit 1; }
	done
fi
echo "install: ok (header, library, preload shim, pkg-config, CLI, record, viewer)"

#!/bin/sh
# Runs test_window under a virtual X server; skipped (77) without xvfb-run.
# usage: test_window.sh TEST_PROGRAM ARGS...   (test_window, test_stacks_window, test_tour)
if ! command -v xvfb-run >/dev/null 2>&1; then
	echo "SKIP: xvfb-run not installed (apt-get install xvfb xauth)"
	exit 77
fi
# GDK_BACKEND=x11: the test is about the X server it starts, not a Wayland
# session the developer may be in. The renderer is cairo unless SS_GSK_RENDERER
# says otherwise (gl: Mesa's software GL under Xvfb; the test then SKIPs when
# GTK could not use GL).
renderer=${SS_GSK_RENDERER:-cairo}
exec env -u WAYLAND_DISPLAY GDK_BACKEND=x11 GSK_RENDERER="$renderer" SS_EXPECT_RENDERER="$renderer" \
	NO_AT_BRIDGE=1 xvfb-run -a -s "-screen 0 1600x1000x24" "$@"

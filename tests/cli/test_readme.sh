#!/bin/sh
# test_readme.sh - the README's C example is code a user can paste: it is taken
# out of README.md exactly as printed (the first ```c block of "Integrating it
# into a runtime") and compiled against the public header with the project's
# warnings (-Wall -Wextra) as errors. The runtime's own pieces it declares (next_task,
# push, wait_for_work) are supplied here so it also links against the library.
# usage: test_readme.sh SOURCE_ROOT LIBDIR CC
set -eu
root=$1 libdir=$2 cc=${3:-cc}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stallscope-readme.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
awk '/^## Integrating it into a runtime/ { inside = 1 }
     inside && /^```c$/ { code = 1; next }
     code && /^```$/ { exit }
     code { print }' "$root/README.md" > "$tmp/example.c"
[ -s "$tmp/example.c" ] || { echo "FAIL: no C example under 'Integrating it into a runtime'"; exit 1; }
cat > "$tmp/runtime.c" <<'C'
#include <stddef.h>
struct task;
struct task *next_task(void);
void push(struct task *t);
void wait_for_work(void);
struct task *next_task(void) { return NULL; }
void push(struct task *t) { (void)t; }
void wait_for_work(void) { }
C
flags="-std=c17 -Wall -Wextra -Werror -Werror=implicit-function-declaration -Wno-unused-parameter"
"$cc" $flags -I "$root/recorder/include" -c "$tmp/example.c" -o "$tmp/example.o" \
	|| { echo "FAIL: the README's C example does not compile:"; cat -n "$tmp/example.c"; exit 1; }
"$cc" -c "$tmp/runtime.c" -o "$tmp/runtime.o"
"$cc" "$tmp/example.o" "$tmp/runtime.o" -L "$libdir" -lstallscope -o "$tmp/example" \
	|| { echo "FAIL: the README's C example does not link against libstallscope"; exit 1; }
echo "readme: the C example compiles and links ($(wc -l < "$tmp/example.c") lines)"

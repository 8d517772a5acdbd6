#!/bin/sh
# test_record.sh - `stallscope record -- CMD` runs CMD with recording switched on
# through the environment, the options reach it (prefix, directory), its exit
# status comes back, and misuse is refused with a message: no command, an unknown
# option, a command that cannot be run (127).
# usage: test_record.sh STALLSCOPE_CLI EXAMPLE_RUNTIME
set -eu
cli=$1
example=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stallscope-record.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$cli" record -o "$tmp/out" --prefix rec -s 1M -- "$example" --scenario steady --duration 0.3 \
	> "$tmp/log" 2>&1 || { cat "$tmp/log"; fail "record of the example runtime failed"; }
ls "$tmp"/out/rec.*.bin >/dev/null 2>&1 || { cat "$tmp/log"; fail "no sealed rec.N.bin segment"; }
grep -q 'segment.*/rec.*.bin' "$tmp/log" || { cat "$tmp/log"; fail "no summary of what was written"; }
"$cli" dump --summary "$tmp"/out/rec.*.bin > "$tmp/dump" || fail "recorded segments do not dump cleanly"
grep -q 'POLL_BEGIN' "$tmp/dump" || fail "no polls recorded"

# The program's exit status is passed through.
set +e
"$cli" record -o "$tmp/out2" -- sh -c 'exit 3' > /dev/null 2>&1
[ $? -eq 3 ] || fail "exit status not passed through"
"$cli" record -o "$tmp/out3" -- /nonexistent/program > "$tmp/log3" 2>&1
[ $? -eq 127 ] || fail "a missing program did not give 127"
"$cli" record -o "$tmp/out4" > "$tmp/log4" 2>&1
[ $? -eq 1 ] && grep -q 'no command' "$tmp/log4" || fail "no command was not refused clearly"
"$cli" record --bogus -- true > "$tmp/log5" 2>&1
[ $? -eq 1 ] && grep -q "unknown option" "$tmp/log5" || fail "an unknown option was not refused"
set -e
echo "record: ok"

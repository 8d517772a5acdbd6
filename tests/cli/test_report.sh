#!/bin/sh
# test_report.sh - `stallscope report` answers "which task held the worker, and was
# it computing or blocked?" on the bundled demos: the long-poll demo's longest poll
# is computing in culprit_spin_long_poll, the blocking demo's is blocked in read in
# culprit_blocking_syscall; --json is valid JSON with the same verdicts; a file
# that is not a stallscope database is refused with a clear message.
# usage: test_report.sh STALLSCOPE_CLI SOURCE_ROOT
set -eu
cli=$1
root=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stallscope-report.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

fail() { echo "FAIL: $*"; exit 1; }

"$cli" import --quiet "$root/data/demo/long-poll" -o "$tmp/lp.db"
"$cli" import --quiet "$root/data/demo/blocking" -o "$tmp/bl.db"

"$cli" report "$tmp/lp.db" --top 3 > "$tmp/lp.txt"
grep -q 'culprit_spin_long_poll' "$tmp/lp.txt" || { cat "$tmp/lp.txt"; fail "long-poll culprit not named"; }
sed -n '/longest polls/,/^stalls/p' "$tmp/lp.txt" | grep -q 'computing' \
	|| { cat "$tmp/lp.txt"; fail "long-poll verdict is not computing"; }
grep -q 'CRITICAL\|WARNING' "$tmp/lp.txt" || fail "no finding for the long polls"

"$cli" report "$tmp/bl.db" --top 3 > "$tmp/bl.txt"
grep -q 'culprit_blocking_syscall' "$tmp/bl.txt" || { cat "$tmp/bl.txt"; fail "blocking culprit not named"; }
sed -n '/longest polls/,/^stalls/p' "$tmp/bl.txt" | grep -q 'blocked in read' \
	|| { cat "$tmp/bl.txt"; fail "blocking verdict does not name read"; }

"$cli" report "$tmp/bl.db" --json > "$tmp/bl.json"
python3 - "$tmp/bl.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
top = r["long_polls"]["longest"][0]
assert top["verdict"] == "blocked", top
assert "culprit_blocking_syscall" in (top["stack"] or ""), top
assert r["stalls"]["by_kind"].get("blocked", 0) > 0, r["stalls"]
assert r["workers"] and all("utilisation" in w for w in r["workers"])
PY

echo "not a database" > "$tmp/bad.db"
if "$cli" report "$tmp/bad.db" > "$tmp/bad.txt" 2>&1; then fail "a non-database was accepted"; fi
grep -q 'stallscope report' "$tmp/bad.txt" || { cat "$tmp/bad.txt"; fail "no clear message"; }
echo "report: ok"

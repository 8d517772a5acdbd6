#!/bin/sh
# test_example_loss.sh - the three places that count lost events agree: the
# example runtime's exit line (dropped_events=), the metrics file
# (stallscope_events_dropped_total) and the imported loss table. Events are lost
# to failed writes here: a file-size limit (RLIMIT_FSIZE, SIGXFSZ ignored) far
# below the rotation size makes writes fail until the writer rotates.
# usage: test_example_loss.sh STALLSCOPE_CLI EXAMPLE_RUNTIME
set -eu
cli=$1 rt=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stallscope-loss.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
( trap '' XFSZ; ulimit -f 100
  STALLSCOPE_ENABLED=1 STALLSCOPE_OUTPUT_DIR="$tmp/seg" STALLSCOPE_METRICS_FILE="$tmp/m.prom" \
  STALLSCOPE_ROTATION_COUNT=1000 \
	"$rt" --scenario steady --workers 4 --duration 1 --rate 50000 --seed 2 ) 2> "$tmp/err.txt" \
	|| { cat "$tmp/err.txt"; fail "the runtime failed"; }
line=$(grep 'stallscope-example-runtime: scenario=' "$tmp/err.txt") || { cat "$tmp/err.txt"; fail "no exit line"; }
exit_n=$(echo "$line" | sed -n 's/.* dropped_events=\([0-9]*\).*/\1/p')
metric=$(sed -n 's/^stallscope_events_dropped_total \([0-9]*\)$/\1/p' "$tmp/m.prom")
"$cli" import --quiet "$tmp/seg" -o "$tmp/t.db" || fail "import"
table=$(sqlite3 "$tmp/t.db" "SELECT coalesce(sum(count), 0) FROM loss WHERE source = 'events'")
echo "dropped: exit line $exit_n, metrics $metric, loss table $table"
[ -n "$exit_n" ] && [ "$exit_n" -gt 0 ] || fail "nothing was lost: the limit did not bite ($line)"
[ "$exit_n" = "$metric" ] || fail "the exit line says $exit_n, the metrics $metric"
[ "$exit_n" = "$table" ] || fail "the exit line says $exit_n, the loss table $table"
echo "example-loss: ok"

#!/bin/sh
# test_archive.sh - STALLSCOPE_ARCHIVE_COMMAND on the example runtime, rotating
# every second:
#   1. a command that fails twice and then succeeds ships every segment exactly
#      once (byte-identical copies), and the metrics count 2 failures;
#   2. a restart into the same directory ships only the new segments, and a
#      segment left unshipped by a run whose command always failed is shipped
#      by the next run, once;
#   3. a command that hangs is killed (with what it started) at its time limit
#      while recording goes on: segments keep being sealed, nothing is dropped;
#   4. a segment evicted for the disk budget before it was shipped is counted.
# usage: test_archive.sh STALLSCOPE_CLI EXAMPLE_RUNTIME
set -eu
cli=$1
rt=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stallscope-archive.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
metric() { sed -n "s/^$1 //p" "$2"; }

record() { # DIR SECONDS COMMAND [VAR=VALUE...]
	dir=$1 secs=$2 cmd=$3
	shift 3
	env STALLSCOPE_ENABLED=1 STALLSCOPE_OUTPUT_DIR="$dir" STALLSCOPE_ROTATION_PERIOD_S=1 \
		STALLSCOPE_CPU_SAMPLING=0 STALLSCOPE_METRICS_FILE="$dir/metrics.prom" \
		STALLSCOPE_ARCHIVE_COMMAND="$cmd" "$@" "$rt" --duration "$secs" > "$dir.out" 2>&1 \
		|| { cat "$dir.out"; fail "the example runtime failed"; }
}

# The command: ships %p to $dst/%f, logging "%f %h"; fails while $dst/fail > 0.
cat > "$tmp/ship.sh" <<'SH'
#!/bin/sh
dst=$1; p=$2; f=$3; h=$4
if [ -s "$dst/fail" ] && [ "$(cat "$dst/fail")" -gt 0 ]; then
	echo $(( $(cat "$dst/fail") - 1 )) > "$dst/fail"
	exit 3
fi
cp "$p" "$dst/$f.part" && mv "$dst/$f.part" "$dst/$f" && echo "$f $h" >> "$dst/log"
SH
chmod +x "$tmp/ship.sh"

# ---- 1. fails twice, then succeeds -------------------------------------------------
mkdir -p "$tmp/dst"
echo 2 > "$tmp/dst/fail"
record "$tmp/rec" 4 "$tmp/ship.sh $tmp/dst %p %f %h"
n=$(ls "$tmp/rec" | grep -c '\.bin$')
[ "$n" -ge 3 ] || fail "only $n segments sealed in 4 s"
[ "$(wc -l < "$tmp/dst/log")" -eq "$n" ] || { cat "$tmp/dst/log"; fail "$n segments, shipped lines differ"; }
[ "$(cut -d' ' -f1 "$tmp/dst/log" | sort | uniq -d)" = "" ] || fail "a segment was shipped twice"
host=$(uname -n)
for f in "$tmp"/rec/*.bin; do
	b=$(basename "$f")
	cmp -s "$f" "$tmp/dst/$b" || fail "$b not shipped intact"
	[ -e "$f.shipped" ] || fail "$b has no shipped marker"
	grep -qx "$b $host" "$tmp/dst/log" || fail "%h is not the host name for $b"
done
m="$tmp/rec/metrics.prom"
[ "$(metric stallscope_archive_failed_total "$m")" = 2 ] || { cat "$m"; fail "failures not counted as 2"; }
[ "$(metric stallscope_archive_shipped_total "$m")" = "$n" ] || { cat "$m"; fail "shipped_total is not $n"; }
[ "$(metric stallscope_archive_pending "$m")" = 0 ] || { cat "$m"; fail "segments still pending"; }
[ "$(metric stallscope_archive_last_success_time_seconds "$m")" -gt 1000000000 ] || fail "no last success time"
# The shipped copies are what the importer reads.
"$cli" import -q "$tmp/dst" -o "$tmp/shipped.db" || fail "the shipped segments do not import"

# ---- 2. a restart ships nothing twice ---------------------------------------------
first=$n
record "$tmp/rec" 2 "$tmp/ship.sh $tmp/dst %p %f %h"
n=$(ls "$tmp/rec" | grep -c '\.bin$')
[ "$(wc -l < "$tmp/dst/log")" -eq "$n" ] || { cat "$tmp/dst/log"; fail "after a restart: $n segments, shipped lines differ"; }
[ "$(cut -d' ' -f1 "$tmp/dst/log" | sort | uniq -d)" = "" ] || fail "a restart shipped a segment again"
[ "$n" -gt "$first" ] || fail "the restart sealed no segment"
# A run whose command always fails leaves its segments pending; the next run
# ships them (and its own), each once.
mkdir -p "$tmp/dst2"
echo 1000000 > "$tmp/dst2/fail"
record "$tmp/rec2" 2 "$tmp/ship.sh $tmp/dst2 %p %f %h"
[ ! -e "$tmp/dst2/log" ] || fail "a failing command shipped something"
m="$tmp/rec2/metrics.prom"
[ "$(metric stallscope_archive_pending "$m")" -ge 1 ] || { cat "$m"; fail "nothing pending after failures"; }
echo 0 > "$tmp/dst2/fail"
record "$tmp/rec2" 2 "$tmp/ship.sh $tmp/dst2 %p %f %h"
n=$(ls "$tmp/rec2" | grep -c '\.bin$')
[ "$(wc -l < "$tmp/dst2/log")" -eq "$n" ] || { cat "$tmp/dst2/log"; ls "$tmp/rec2"; fail "pending segments of the first run not shipped once"; }
[ "$(cut -d' ' -f1 "$tmp/dst2/log" | sort | uniq -d)" = "" ] || fail "a segment was shipped twice"

# ---- 3. a command that hangs -------------------------------------------------------
# `sleep` under a shell: the kill must reach the whole process group.
tag=$$$(date +%N | cut -c1-4)
start=$(date +%s)
record "$tmp/rec3" 4 "sleep 7$tag" STALLSCOPE_ARCHIVE_TIMEOUT_S=1
took=$(( $(date +%s) - start ))
m="$tmp/rec3/metrics.prom"
[ "$(metric stallscope_archive_timeouts_total "$m")" -ge 2 ] || { cat "$m"; fail "the hanging command was not killed at its limit"; }
[ "$(metric stallscope_archive_shipped_total "$m")" = 0 ] || fail "a killed command counted as shipped"
n=$(ls "$tmp/rec3" | grep -c '\.bin$')
[ "$n" -ge 3 ] || { cat "$tmp/rec3.out"; fail "recording did not go on while the command hung ($n segments)"; }
grep -q 'dropped_events=0 ' "$tmp/rec3.out" || { cat "$tmp/rec3.out"; fail "events were dropped while the command hung"; }
[ "$took" -lt 30 ] || fail "stop waited $took s for a hanging command"
if pgrep -f "sleep 7$tag" > /dev/null; then
	pkill -f "sleep 7$tag"
	fail "the hanging command's children outlived its kill"
fi
"$cli" import -q "$tmp/rec3" -o "$tmp/hang.db" || fail "segments recorded while the command hung do not import"

# ---- 4. evicted before it was shipped -----------------------------------------------
mkdir -p "$tmp/dst4"
echo 1000000 > "$tmp/dst4/fail"
record "$tmp/rec4" 3 "$tmp/ship.sh $tmp/dst4 %p %f %h" STALLSCOPE_ROTATION_COUNT=2 \
	STALLSCOPE_MAX_FILE_SIZE=65536
m="$tmp/rec4/metrics.prom"
ev=$(metric stallscope_segments_evicted_total "$m")
un=$(metric stallscope_segments_evicted_unshipped_total "$m")
[ "$ev" -ge 1 ] && [ "$un" = "$ev" ] || { cat "$m"; fail "unshipped evictions not counted ($un of $ev)"; }
[ "$(ls "$tmp/rec4" | grep -c '\.shipped$')" = 0 ] || fail "a marker outlived its segment"
echo "archive: ok"

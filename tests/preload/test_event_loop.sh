#!/bin/bash
# test_event_loop.sh - an unmodified epoll server from Debian (redis-server) under
# `stallscope record`, with load from a client in this test (loopback only, 300
# requests one at a time, then one slow iteration of each kind, every step
# bounded by a 5 s socket timeout). Checks: the event loop's parks are its
# epoll_wait calls and its loop iterations are polls (one per request and cron
# tick, parks and iterations alternating); an iteration made slow on purpose is
# a stall with its stack: DEBUG SLEEP blocked in clock_nanosleep, a Lua busy
# loop running; redis's background threads park on their condition variables.
# usage: test_event_loop.sh STALLSCOPE_CLI
set -u
cli=$1
command -v redis-server >/dev/null || { echo "SKIP: redis-server is not installed (apt-get install redis-server)"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stallscope-loop.XXXXXX")
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
q() { sqlite3 -batch -noheader "$1" "$2"; }
N=300

run_once() {
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	"$cli" record -o "$tmp/rec$attempt" -- redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
		--enable-debug-command yes --daemonize no --loglevel warning --hz 10 > "$tmp/redis.log" 2>&1 &
	rec=$!
	python3 - "$port" "$N" > "$tmp/client.log" 2>&1 <<-'PY' || { cat "$tmp/client.log" "$tmp/redis.log"; fail "load client"; }
	import socket, sys, time
	port, n = int(sys.argv[1]), int(sys.argv[2])
	deadline = time.monotonic() + 10
	while True:
	    try:
	        s = socket.create_connection(("127.0.0.1", port), timeout=5)
	        break
	    except OSError:
	        if time.monotonic() > deadline:
	            raise SystemExit("redis did not start listening within 10 s")
	        time.sleep(0.05)
	def cmd(*args):
	    s.sendall(b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args))
	    buf = b""
	    while not buf.endswith(b"\r\n"):
	        chunk = s.recv(4096)
	        if not chunk:
	            return buf
	        buf += chunk
	    return buf
	for _ in range(200):  # wait until it answers, not only listens
	    if cmd(b"PING") == b"+PONG\r\n":
	        break
	    time.sleep(0.05)
	for _ in range(n):
	    assert cmd(b"PING") == b"+PONG\r\n"
	assert cmd(b"DEBUG", b"SLEEP", b"0.08").startswith(b"+OK")
	r = cmd(b"EVAL", b"local i = 0 while i < 40000000 do i = i + 1 end return i", b"0")
	assert r.startswith(b":"), r
	cmd(b"SHUTDOWN", b"NOSAVE")
	print("client: ok")
	PY
	for _ in $(seq 1 200); do kill -0 "$rec" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$rec" 2>/dev/null && fail "redis under record did not exit after SHUTDOWN"
	wait "$rec" || { cat "$tmp/redis.log"; fail "record of redis-server exited non-zero"; }
	"$cli" import "$tmp/rec$attempt" -o "$tmp/r.db" -q || fail "import"
}

# The Lua loop is a running stall when it has a CPU; on a loaded machine the
# watchdog can find it waiting for one (a runnable stall, the right verdict for
# what happened). That is retried, up to three recordings, saying so.
main_lane="SELECT w.id FROM workers w JOIN threads t ON t.id = w.thread_id WHERE w.runtime = 'redis-server' AND w.idx = 0"
for attempt in 1 2 3; do
	rm -f "$tmp/r.db"
	run_once
	m=$(q "$tmp/r.db" "$main_lane")
	[ -n "$m" ] || break
	[ "$(q "$tmp/r.db" "SELECT count(*) FROM stalls WHERE worker_id = $m AND kind = 'running' AND dur >= 50000000")" -ge 1 ] && break
	[ "$(q "$tmp/r.db" "SELECT count(*) FROM stalls WHERE worker_id = $m AND kind = 'runnable' AND dur >= 50000000")" -ge 1 ] || break
	echo "attempt $attempt: the busy loop waited for a CPU (load $(cut -d' ' -f1 /proc/loadavg)); recording again"
done

main=$(q "$tmp/r.db" "$main_lane")
[ -n "$main" ] || fail "no lane for redis's main thread"
parks=$(q "$tmp/r.db" "SELECT count(*) FROM parks WHERE worker_id = $main")
polls=$(q "$tmp/r.db" "SELECT count(*) FROM polls WHERE worker_id = $main")
span=$(q "$tmp/r.db" "SELECT (max(ts + dur) - min(ts)) / 1000000000 + 1 FROM polls WHERE worker_id = $main")
loc=$(q "$tmp/r.db" "SELECT DISTINCT l.function FROM polls p JOIN locations l ON l.id = p.location_id WHERE p.worker_id = $main")
[ "$loc" = "epoll_wait loop" ] || fail "main thread's iterations are at '$loc'"
# each request wakes the loop once; the cron (--hz 10) and connection setup add a few
[ "$polls" -ge "$N" ] && [ "$polls" -le $((N + 20 * span + 50)) ] || fail "$polls loop iterations for $N requests in ${span}s"
diff=$((parks - polls))
[ "${diff#-}" -le 1 ] || fail "parks ($parks) and iterations ($polls) do not alternate"
# parks are the waits, iterations the handling: they do not overlap
overlap=$(q "$tmp/r.db" "SELECT count(*) FROM polls p JOIN parks k ON k.worker_id = p.worker_id
	WHERE p.worker_id = $main AND k.ts < p.ts + p.dur AND p.ts < k.ts + k.dur")
[ "$overlap" -eq 0 ] || fail "$overlap parks overlap loop iterations"

blocked=$(q "$tmp/r.db" "SELECT count(*) FROM stalls s WHERE s.worker_id = $main AND s.kind = 'blocked' AND s.dur >= 70000000
	AND EXISTS (SELECT 1 FROM stall_captures c JOIN callsites cs ON cs.id = c.callsite_id JOIN frames f ON f.id = cs.frame_id
	            WHERE c.stall_id = s.id AND c.syscall = 230 AND f.function LIKE '%clock_nanosleep%')")
[ "$blocked" -ge 1 ] || { q "$tmp/r.db" "SELECT * FROM stalls; SELECT * FROM stall_captures"; fail "DEBUG SLEEP is not a blocked stall in clock_nanosleep with its stack"; }
running=$(q "$tmp/r.db" "SELECT count(*) FROM stalls s WHERE s.worker_id = $main AND s.kind = 'running' AND s.dur >= 50000000
	AND EXISTS (SELECT 1 FROM stall_captures c WHERE c.stall_id = s.id AND c.callsite_id IS NOT NULL)")
[ "$running" -ge 1 ] || { q "$tmp/r.db" "SELECT * FROM stalls"; fail "the Lua busy loop is not a running stall with a stack"; }
bg=$(q "$tmp/r.db" "SELECT count(*) FROM workers w JOIN threads t ON t.id = w.thread_id WHERE t.name LIKE 'bio_%'
	AND (SELECT count(*) FROM parks p WHERE p.worker_id = w.id) >= 1 AND (SELECT count(*) FROM polls p WHERE p.worker_id = w.id) = 0")
[ "$bg" -ge 1 ] || fail "redis's bio threads do not park"
"$cli" report "$tmp/r.db" > "$tmp/report.txt" 2>&1 || { cat "$tmp/report.txt"; fail "report"; }
grep -q 'epoll_wait loop' "$tmp/report.txt" || { cat "$tmp/report.txt"; fail "the report does not name the loop's slow iterations"; }
echo "event loop: ok ($N requests, $polls iterations, $parks parks, stalls: $blocked blocked, $running running)"

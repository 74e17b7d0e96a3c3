#!/usr/bin/env bash
# worker-fcgi.sh: measure the FastCGI worker through host nginx against the
# same handler served by plain net/http (the worker's -bench-http), with wrk.
# Prints req/s, latency and CPU microseconds per request of the worker (and
# nginx) for: GET via nginx, GET plain, POST batch via nginx.
#
# Host processes on loopback only, ports 19000-19099. Needs nginx, wrk, curl.
# The nginx config is a minimal one written to a temp dir (upstream keepalive
# + fastcgi_keep_conn); the project's own nginx/nginx.conf is measured by
# `make bench-host`.
#
# Env: DURATION (10s) CONNS (32) MAXPROCS (0: runtime) GCPERCENT (400)
#      LISTEN (unix: a socket in the temp dir; tcp: 127.0.0.1:19000)
#      PUZZLES (tests/reliability/testdata/test1000)
#      BATCH (lines per POST, 100) ROUNDS (1)
set -euo pipefail
cd "$(dirname "$0")/../.."
DURATION=${DURATION:-10s}
CONNS=${CONNS:-32}
MAXPROCS=${MAXPROCS:-0}
GCPERCENT=${GCPERCENT:-400}
BATCH=${BATCH:-100}
ROUNDS=${ROUNDS:-1}
PUZZLES=${PUZZLES:-tests/reliability/testdata/test1000}
PUZZLES=$(readlink -f "$PUZZLES")
for t in nginx wrk curl; do command -v $t >/dev/null || { echo "worker-fcgi.sh: $t not installed" >&2; exit 1; }; done

tmp=$(mktemp -d)
chmod 755 "$tmp" # nginx workers (not root) must reach the socket
wpid=""
cleanup() {
	if [[ -n $wpid ]] && kill "$wpid" 2>/dev/null; then wait "$wpid" 2>/dev/null || true; fi
	if [[ -f $tmp/nginx.pid ]]; then kill "$(cat "$tmp/nginx.pid")" 2>/dev/null || true; fi
	sleep 0.3
	rm -rf "$tmp"
}
trap cleanup EXIT

case ${LISTEN:-unix} in
unix) LISTEN=$tmp/worker.sock; UPSTREAM="unix:$LISTEN" ;;
tcp) LISTEN=127.0.0.1:19000; UPSTREAM=$LISTEN ;;
*) UPSTREAM=$LISTEN ;;
esac

echo "== building worker"
go build -trimpath -o "$tmp/sudoku-fcgi" ./cmd/sudoku-fcgi
"$tmp/sudoku-fcgi" -listen "$LISTEN" -internal-listen 127.0.0.1:19001 -bench-http 127.0.0.1:19002 \
	-id bench -maxprocs "$MAXPROCS" -gc-percent "$GCPERCENT" 2>"$tmp/worker.log" &
wpid=$!

mkdir -p "$tmp/logs"
cat >"$tmp/nginx.conf" <<CONF
worker_processes 2;
error_log $tmp/logs/error.log warn;
pid $tmp/nginx.pid;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $tmp/body; fastcgi_temp_path $tmp/fcgi; proxy_temp_path $tmp/proxy;
    uwsgi_temp_path $tmp/uwsgi; scgi_temp_path $tmp/scgi;
    upstream sudoku_workers {
        zone sudoku_workers 64k;
        random two least_conn;
        server $UPSTREAM max_fails=0;
        keepalive 32;
    }
    server {
        listen 127.0.0.1:19080;
        client_max_body_size 2m;
        location /sudoku {
            fastcgi_pass sudoku_workers;
            fastcgi_keep_conn on;
            include /etc/nginx/fastcgi_params;
            fastcgi_param HTTP_X_REQUEST_ID \$request_id;
        }
    }
}
CONF
nginx -p "$tmp" -c "$tmp/nginx.conf"
for _ in $(seq 50); do curl -fs -o /dev/null http://127.0.0.1:19001/readyz && break; sleep 0.1; done
curl -fs -o /dev/null "http://127.0.0.1:19080/sudoku?puzzle=$(head -c81 "$PUZZLES")" || { echo "nginx -> worker not answering"; cat "$tmp/worker.log" "$tmp/logs/error.log"; exit 1; }

export SUDOKU_PUZZLES=$PUZZLES # for rotate.lua
cat >"$tmp/post.lua" <<LUA
local puzzles = {}
for line in io.lines("$PUZZLES") do
  if #line >= 81 then puzzles[#puzzles + 1] = line:sub(1, 81) end
end
local bodies, n = {}, $BATCH
for s = 1, #puzzles, n do
  local t = {}
  for j = s, math.min(s + n - 1, #puzzles) do t[#t + 1] = j .. ":" .. puzzles[j] end
  bodies[#bodies + 1] = table.concat(t, "\n") .. "\n"
end
local i = 0
request = function()
  i = i % #bodies + 1
  return wrk.format("POST", "/sudoku", {["Content-Type"] = "text/plain"}, bodies[i])
end
LUA

ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
nginx_ticks() { local s=0; for p in $(pgrep -P "$(cat "$tmp/nginx.pid")"); do s=$((s + $(ticks "$p"))); done; echo $s; }
hz=$(getconf CLK_TCK)

# measure LABEL URL SCRIPT UNITS_PER_REQUEST
measure() {
	local label=$1 url=$2 script=$3 per=$4
	local w0 n0 w1 n1 out reqs rps p50 p99 non2xx
	w0=$(ticks $wpid); n0=$(nginx_ticks)
	out=$(wrk -t1 -c"$CONNS" -d"$DURATION" --latency -s "$script" "$url" 2>&1)
	w1=$(ticks $wpid); n1=$(nginx_ticks)
	reqs=$(awk '/requests in/{print $1}' <<<"$out")
	rps=$(awk '/Requests\/sec/{print $2}' <<<"$out")
	p50=$(awk '$1=="50%"{print $2}' <<<"$out")
	p99=$(awk '$1=="99%"{print $2}' <<<"$out")
	non2xx=$(awk '/Non-2xx/{print $5}' <<<"$out")
	printf '%-22s %10s req/s %10.0f puzzles/s  p50 %-9s p99 %-9s non-2xx %-6s worker %6.1f us/req  nginx %6.1f us/req\n' \
		"$label" "$rps" "$(echo "$rps * $per" | bc)" "$p50" "$p99" "${non2xx:-0}" \
		"$(echo "scale=2; ($w1-$w0)*1000000/$hz/$reqs" | bc)" "$(echo "scale=2; ($n1-$n0)*1000000/$hz/$reqs" | bc)"
}

echo "== $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), wrk -t1 -c$CONNS -d$DURATION, GOMAXPROCS=$MAXPROCS (0: runtime) gc-percent=$GCPERCENT, upstream $UPSTREAM"
for _ in $(seq "$ROUNDS"); do
	measure "GET nginx->fcgi" http://127.0.0.1:19080/ "$PWD/tests/bench/rotate.lua" 1
	measure "GET plain net/http" http://127.0.0.1:19002/ "$PWD/tests/bench/rotate.lua" 1
	measure "POST x$BATCH nginx->fcgi" http://127.0.0.1:19080/ "$tmp/post.lua" "$BATCH"
done
curl -fs http://127.0.0.1:19001/metrics | grep -E '^sudoku_requests_total' || true

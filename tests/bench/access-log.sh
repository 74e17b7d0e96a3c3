#!/usr/bin/env bash
# access-log.sh (make bench-access-log) measures what counting nginx's
# answers costs sudoku-edge: the host stack (nginx/render-host.sh, 2 nginx
# worker processes) run by sudoku-edge itself, in front of one sudoku-fcgi
# worker over TCP, with -access-log-socket off, with the default (a line
# per answer of status 400 and up) and with -access-log-all (a line per
# answer). For each it sends
# `sudoku-load load` at RATE GETs/s for DURATION twice: once answered 200
# by the worker, once answered 503 by nginx itself (the edge's worker is a
# listener that accepts and never answers, with -max-conns-per-worker 1:
# one request holds the only slot, nginx's concurrency cap turns the rest
# away). It
# prints sudoku-edge's and nginx's CPU (/proc/<pid>/schedstat, nanoseconds
# on CPU) per request, and the lines the edge counted.
#
# Env: RATE (1500), DURATION (15s), PUZZLES (tests/reliability/testdata/test1000).
# Ports 31800-31899 on 127.0.0.1.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
rate=${RATE:-1500} duration=${DURATION:-15s}
puzzles=${PUZZLES:-$root/tests/reliability/testdata/test1000}
work=$(mktemp -d)
chmod 755 "$work" # nginx's worker processes (another user when run as root) reach the log socket
pids=()
# shellcheck source=tests/lib.sh
source "$root/tests/lib.sh" # wait_for, say, stop_pids, oncpu
trap 'stop_pids "${pids[@]}"; [[ -n ${KEEP:-} ]] || rm -rf "$work"' EXIT

say "building into $work/bin"
go build -trimpath -o "$work/bin/" ./cmd/sudoku-fcgi ./cmd/sudoku-load ./cmd/sudoku-edge
SUDOKU_FCGI_LISTEN=127.0.0.1:31810 SUDOKU_FCGI_INTERNAL_LISTEN=127.0.0.1:31811 SUDOKU_FCGI_ID=w1 \
	"$work/bin/sudoku-fcgi" 2>>"$work/worker.log" &
pids+=($!)
wait_for http://127.0.0.1:31811/readyz
# A worker that accepts and never answers, for the 503 runs.
python3 -c 'import socket, time
s = socket.socket(); s.bind(("127.0.0.1", 31820)); s.listen(4096); time.sleep(3600)' &
pids+=($!)

run() { # name worker max-conns-per-worker edge-flags...: one load run, prints a table row
	local name=$1 worker=$2 maxconns=$3 edge e0 e1 n0 n1 nginx_pids
	shift 3
	rm -rf "$work/nginx"
	SUDOKU_EDGE=$work/bin/sudoku-edge nginx/render-host.sh "$work/nginx" 31880 31882 31881 >/dev/null
	sed -i "s#access_log /dev/stdout#access_log $work/nginx/logs/access.log#" "$work/nginx/nginx.conf"
	"$work/bin/sudoku-edge" -nginx-prefix "$work/nginx" -nginx-conf "$work/nginx/nginx.conf" -run-dir "$work/nginx/run" \
		-http-listen 127.0.0.1:31880 -status-listen 127.0.0.1:31882 -challenge-listen 127.0.0.1:31881 -metrics-listen 127.0.0.1:31885 \
		-workers "$worker" -max-conns-per-worker "$maxconns" -worker-processes 2 -log-level warn "$@" 2>>"$work/edge.log" &
	edge=$!
	pids+=("$edge")
	wait_for http://127.0.0.1:31882/stub_status
	mapfile -t nginx_pids < <(pgrep -P "$edge") # the master
	mapfile -t -O 1 nginx_pids < <(pgrep -P "${nginx_pids[0]}") # and its workers
	e0=$(oncpu "$edge") n0=$(oncpu "${nginx_pids[@]}")
	"$work/bin/sudoku-load" load -in "$puzzles" -url http://127.0.0.1:31880 -rate "$rate" -duration "$duration" \
		-c 64 -timeout 5s -progress=false -json >"$work/load.json" 2>/dev/null || true
	sleep 1 # the last lines reach the edge
	e1=$(oncpu "$edge") n1=$(oncpu "${nginx_pids[@]}")
	local sent counted
	sent=$(jq .sent "$work/load.json")
	counted=$(curl -fs http://127.0.0.1:31885/metrics | awk '/^sudoku_edge_nginx_responses_total/ {s += $2} END {print s + 0}')
	kill "$edge"
	wait "$edge" 2>/dev/null || true
	awk -v n="$name" -v s="$sent" -v c="$counted" -v e=$((e1 - e0)) -v g=$((n1 - n0)) \
		'BEGIN {printf "| %s | %d | %d | %.1f | %.1f |\n", n, s, c, e / s / 1000, g / s / 1000}'
}

printf '| run | requests | lines counted | sudoku-edge us/request | nginx us/request |\n| --- | ---: | ---: | ---: | ---: |\n'
for answers in 200 503; do
	if [[ $answers == 200 ]]; then worker=127.0.0.1:31810 maxconns=0; else worker=127.0.0.1:31820 maxconns=1; fi
	say "$answers answers: counting off"
	run "$answers, -access-log-socket ''" "$worker" "$maxconns" -access-log-socket ''
	say "$answers answers: default (400 and up)"
	run "$answers, default" "$worker" "$maxconns"
	say "$answers answers: -access-log-all"
	run "$answers, -access-log-all" "$worker" "$maxconns" -access-log-all
done

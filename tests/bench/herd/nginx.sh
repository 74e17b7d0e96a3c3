#!/usr/bin/env bash
# nginx.sh measures nginx's own balancing beside the simulation: host
# processes on loopback, nginx with the project's config and 2 worker
# processes in front of 4 sudoku-fcgi workers of one solver slot each, with
# the upstream's policy switched between least_conn, random two least_conn,
# random and round robin. Each policy gets the same open-loop load
# (sudoku-load load) ROUNDS times, in turns; the table gives p50/p99 and the
# busiest worker's share of the requests (from each worker's
# sudoku_requests_total).
#
#   tests/bench/herd/nginx.sh > out/herd/nginx.md
#
# Env: RATE (requests/s, default 1500), DURATION (per run, 15s), ROUNDS (2),
# PUZZLES (tests/reliability/testdata/test1000). Ports 31480-31530 on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/../../.."
rate=${RATE:-1500} duration=${DURATION:-15s} rounds=${ROUNDS:-2}
puzzles=${PUZZLES:-tests/reliability/testdata/test1000}
work=$(mktemp -d)
pids=()
nginx_pid=
stop_nginx() {
	if [[ -n $nginx_pid ]]; then
		kill "$nginx_pid" 2>/dev/null || true
		wait "$nginx_pid" 2>/dev/null || true
		nginx_pid=
	fi
}
cleanup() {
	stop_nginx
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
say() { echo "== $(date -u +%T) $*" >&2; }
ready() { curl -fs -o /dev/null --retry 50 --retry-delay 0 --retry-connrefused --retry-max-time 10 "$1"; } # url: a 200 within 10 s

go build -o "$work/" ./cmd/sudoku-fcgi ./cmd/sudoku-load
servers=
for i in 1 2 3 4; do
	port=$((31500 + 10 * i))
	GOMAXPROCS=1 "$work/sudoku-fcgi" -listen "127.0.0.1:$port" -internal-listen "127.0.0.1:$((port + 1))" -id "w$i" \
		-pool 1 -access-log=false 2>"$work/worker$i.log" &
	pids+=($!)
	servers+="127.0.0.1:$port "
	ready "http://127.0.0.1:$((port + 1))/readyz"
done
SUDOKU_WORKERS=$servers nginx/render-host.sh "$work/nginx" 31480 31482 31481 >/dev/null
grep -q '^        random two least_conn;$' "$work/nginx/nginx.conf" || {
	echo "nginx.conf has no 'random two least_conn;' line to switch" >&2
	exit 1
}
cp "$work/nginx/nginx.conf" "$work/nginx.conf.orig"

# served prints every worker's sudoku_requests_total, summed over codes.
served() {
	for i in 1 2 3 4; do
		curl -fs "http://127.0.0.1:$((31500 + 10 * i + 1))/metrics" |
			awk '/^sudoku_requests_total/ {s += $2} END {printf "%d ", s}'
	done
}

printf '| policy | round | sent | failed | p50 ms | p99 ms | busiest worker |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n'
for round in $(seq "$rounds"); do
	for policy in "least_conn" "random two least_conn" "random" "round robin"; do
		line="        $policy;"
		[[ $policy == "round robin" ]] && line=
		awk -v l="$line" '$0 == "        random two least_conn;" {if (l != "") print l; next} {print}' \
			"$work/nginx.conf.orig" >"$work/nginx/nginx.conf"
		nginx -p "$work/nginx" -c "$work/nginx/nginx.conf" -g 'daemon off; worker_processes 2;' >/dev/null 2>>"$work/nginx.err" &
		nginx_pid=$!
		ready "http://127.0.0.1:31480/sudoku?puzzle=$(head -1 "$puzzles")"
		read -ra before <<<"$(served)"
		say "$policy, round $round: $rate/s for $duration"
		"$work/sudoku-load" load -url http://127.0.0.1:31480 -in "$puzzles" -rate "$rate" -duration "$duration" \
			-c 64 -json -progress=false >"$work/out.json" 2>/dev/null
		read -ra after <<<"$(served)"
		stop_nginx
		total=0 most=0
		for i in 0 1 2 3; do
			n=$((after[i] - before[i]))
			total=$((total + n))
			((n > most)) && most=$n
		done
		jq -r --arg p "$policy" --arg r "$round" --arg share "$(awk -v m="$most" -v t="$total" 'BEGIN {printf "%.1f%%", t ? 100 * m / t : 0}')" \
			'(.result // .) | "| \($p) | \($r) | \(.sent) | \(.sent - .ok) | \(.latency_ms.p50 * 100 | round / 100) | \(.latency_ms.p99 * 100 | round / 100) | \($share) |"' \
			"$work/out.json"
	done
done

#!/usr/bin/env bash
# capacity-plan.sh (make capacity-plan) measures the capacity at p99 <= SLO
# on easy and on hard puzzles, with the cores and machines a PEAK needs, as
# host processes on loopback: Debian's nginx with the project's config
# (nginx/render-host.sh, 2 worker processes) in front of WORKERS sudoku-fcgi
# processes over FastCGI/TCP. Figures: tests/bench/RESULTS.md.
#
# Env: PUZZLES (tests/reliability/testdata/test1000), HARD
# (tests/reliability/testdata/hardest200), PEAK (100000 req/s), SLO (5ms),
# STEP (5s per capacity step), WORKERS (2), OUT (/tmp/sudoku-bench: the logs
# and each plan). Ports 30080-30999 on 127.0.0.1.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=${OUT:-/tmp/sudoku-bench}
slo=${SLO:-5ms} step=${STEP:-5s} nworkers=${WORKERS:-2} peak=${PEAK:-100000}
puzzles=${PUZZLES:-$root/tests/reliability/testdata/test1000}
hard=${HARD:-$root/tests/reliability/testdata/hardest200}
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
bin=$work/bin
pids=()
# shellcheck source=tests/lib.sh
source "$root/tests/lib.sh" # wait_for, say, stop_pids
trap 'stop_pids "${pids[@]}"; rm -rf "$work"' EXIT

say "building into $bin"
mkdir -p "$bin"
go build -trimpath -o "$bin/" ./cmd/sudoku-fcgi ./cmd/sudoku-load
p1=$(grep -m1 -E '^[0-9.]{81}$' "$puzzles")

say "starting $nworkers sudoku-fcgi workers"
servers=""
for i in $(seq "$nworkers"); do
	port=$((30900 + 10 * i))
	SUDOKU_FCGI_LISTEN=127.0.0.1:$port SUDOKU_FCGI_INTERNAL_LISTEN=127.0.0.1:$((port + 1)) SUDOKU_FCGI_ID=w$i \
		"$bin/sudoku-fcgi" 2>"$out/worker$i.log" &
	pids+=($!)
	servers+="127.0.0.1:$port "
	wait_for "http://127.0.0.1:$((port + 1))/readyz"
done

say "starting nginx (2 worker processes) on 127.0.0.1:30080"
SUDOKU_WORKERS=$servers nginx/render-host.sh "$work/nginx" 30080 30082 30081 >/dev/null
nginx -p "$work/nginx" -c "$work/nginx/nginx.conf" -g 'daemon off; worker_processes 2;' >/dev/null 2>"$out/nginx.err" &
pids+=($!)
wait_for "http://127.0.0.1:30080/sudoku?puzzle=$p1"

for set in "easy:$puzzles" "hard:$hard"; do
	say "capacity plan, ${set%%:*} puzzles (${set#*:})"
	"$bin/sudoku-load" capacity -in "${set#*:}" -url http://127.0.0.1:30080 -p99 "$slo" -rate 500 -duration "$step" \
		-c 64 -cores "$(nproc)" -peak "$peak" 2>"$out/plan-${set%%:*}.log" | tee "$out/plan-${set%%:*}.txt"
done

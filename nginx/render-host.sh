#!/usr/bin/env bash
# render-host.sh DIR [HTTP_PORT] [STATUS_PORT] [ACME_PORT] renders the
# project's nginx config for a host-process run (benchmarks, tests without
# Docker) into DIR: the same files as the image, rendered by the same code
# (sudoku-edge -render-conf and -render-only) with the host's paths and
# ports, listening on 127.0.0.1 only. Start nginx with
#   nginx -p DIR -c DIR/nginx.conf -g 'daemon off; worker_processes 2;'
# (nginx.conf leaves worker_processes to sudoku-edge's -worker-processes)
# or let sudoku-edge do it with -run-dir DIR/run -nginx-conf DIR/nginx.conf
# -http-listen 127.0.0.1:HTTP_PORT (it rewrites listen.conf at start).
# DIR/run holds the files nginx.conf includes (sudoku-edge -help, -run-dir),
# with servers.conf listing SUDOKU_WORKERS (default 127.0.0.1:9000) as
# given: sudoku-edge, when it runs nginx, rewrites it.
# $SUDOKU_EDGE names a built binary; without it, go run
# builds one.
set -euo pipefail
dir=${1:?usage: render-host.sh DIR [HTTP_PORT] [STATUS_PORT] [ACME_PORT]}
http=${2:-28080} status=${3:-28082} acme=${4:-28081}
src=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dir/run" "$dir/tmp" "$dir/logs"
dir=$(cd "$dir" && pwd)
workers=${SUDOKU_WORKERS:-127.0.0.1:9000}
workers=${workers// /,}
# Temp files under DIR, so no root-owned /var/lib/nginx is needed.
render=(-render-conf "$dir" -render-only "$dir/run" -www-root "$src/www" -nginx-temp-dir "$dir/tmp"
	-http-listen "127.0.0.1:$http" -status-listen "127.0.0.1:$status" -challenge-listen "127.0.0.1:$acme"
	-workers "$workers" -log-level warn)
if [[ -n ${SUDOKU_EDGE:-} ]]; then
	"$SUDOKU_EDGE" "${render[@]}"
else
	(cd "$src/.." && go run ./cmd/sudoku-edge "${render[@]}")
fi
echo "$dir/nginx.conf"

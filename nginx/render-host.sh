#!/usr/bin/env bash
# render-host.sh DIR [HTTP_PORT] [STATUS_PORT] [ACME_PORT] renders the
# project's nginx config for a host-process run (benchmarks, tests without
# Docker) into DIR: the same files as the image, with the container paths and
# ports rewritten, listening on 127.0.0.1 only. Start nginx with
#   nginx -p DIR -c DIR/nginx.conf -g 'daemon off; worker_processes 2;'
# (nginx.conf leaves worker_processes to sudoku-edge's -worker-processes)
# or let sudoku-edge do it with -run-dir DIR/run -nginx-conf DIR/nginx.conf.
# DIR/run/servers.conf points at 127.0.0.1:9000 until sudoku-edge, when it
# runs nginx, rewrites it (set SUDOKU_WORKERS="127.0.0.1:9000 127.0.0.1:9002").
set -euo pipefail
dir=${1:?usage: render-host.sh DIR [HTTP_PORT] [STATUS_PORT] [ACME_PORT]}
http=${2:-28080} status=${3:-28082} acme=${4:-28081}
src=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dir/run" "$dir/tmp" "$dir/logs"
dir=$(cd "$dir" && pwd)
for f in nginx.conf sudoku-locations.conf sudoku-fastcgi.conf sudoku-www.conf; do
	sed -e "s#/run/sudoku-edge#$dir/run#g" \
		-e "s#/usr/share/sudoku-www#$src/www#g" \
		-e "s#listen 8080 #listen 127.0.0.1:$http #" \
		-e "s#listen 8082;#listen 127.0.0.1:$status;#" \
		-e "s#127.0.0.1:8081#127.0.0.1:$acme#" \
		"$src/$f" >"$dir/$f"
done
# Temp files under DIR, so no root-owned /var/lib/nginx is needed.
sed -i "s#^http {#http {\n    client_body_temp_path $dir/tmp/body;\n    fastcgi_temp_path $dir/tmp/fastcgi;\n    proxy_temp_path $dir/tmp/proxy;\n    scgi_temp_path $dir/tmp/scgi;\n    uwsgi_temp_path $dir/tmp/uwsgi;#" "$dir/nginx.conf"
# The files nginx.conf includes come from sudoku-edge itself, the same code
# as in the container (-render-only): servers.conf for SUDOKU_WORKERS,
# admission.conf, tls.conf (TLS off), trusted-clients.conf, real-ip.conf.
# $SUDOKU_EDGE names a built binary; without it, go run builds one.
workers=${SUDOKU_WORKERS:-127.0.0.1:9000}
workers=${workers// /,}
render=(-render-only "$dir/run" -workers "$workers" -upstream-params max_fails=0 -log-level warn)
if [[ -n ${SUDOKU_EDGE:-} ]]; then
	"$SUDOKU_EDGE" "${render[@]}"
else
	(cd "$src/.." && go run ./cmd/sudoku-edge "${render[@]}")
fi
echo "$dir/nginx.conf"

#!/usr/bin/env bash
# render-host.sh DIR [HTTP_PORT] [STATUS_PORT] [ACME_PORT] renders the
# project's nginx config for a host-process run (benchmarks, tests without
# Docker) into DIR: the same files as the image, with the container paths and
# ports rewritten, listening on 127.0.0.1 only. Start nginx with
#   nginx -p DIR -c DIR/nginx.conf -g 'daemon off;'
# or let sudoku-edge do it with -run-dir DIR/run -nginx-conf DIR/nginx.conf.
# Until sudoku-edge writes DIR/run/servers.conf, a stand-in points at
# 127.0.0.1:9000 (override with SUDOKU_WORKERS="127.0.0.1:9000 127.0.0.1:9002").
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
if [[ ! -s $dir/run/servers.conf ]]; then
	for w in ${SUDOKU_WORKERS:-127.0.0.1:9000}; do
		echo "server $w max_fails=0;"
	done >"$dir/run/servers.conf"
fi
# TLS off until sudoku-edge writes tls.conf: the locations still name $sudoku_hsts.
# shellcheck disable=SC2016 # nginx variables, written as they are
[[ -s $dir/run/tls.conf ]] || printf 'map $https $sudoku_hsts {\n    default "";\n}\n' >"$dir/run/tls.conf"
touch "$dir/run/trusted-clients.conf" "$dir/run/admission.conf" "$dir/run/admission-http.conf" "$dir/run/admission-queue.conf"
echo "$dir/nginx.conf"

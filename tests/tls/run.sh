#!/usr/bin/env bash
# make test-tls: the compose stack with Pebble (tests/tls/compose.tls.yml) under
# its own project and loopback ports; the Go end-to-end test in this directory
# checks the certificate (sudoku-edge trusts Pebble through the system store
# alone: the listener certificate is a file in /etc/ssl/certs), HTTPS with
# Pebble's root and a forced renewal under load. Tears the stack down afterwards (SUDOKU_TLS_KEEP=1 keeps it).
#
# Env (optional): SUDOKU_TLS_PROJECT (edge-tls), SUDOKU_TLS_HTTP_PORT (27080),
# SUDOKU_TLS_HTTPS_PORT (27443), SUDOKU_TLS_EXPORTER_PORT (27113),
# SUDOKU_TLS_PEBBLE_MGMT_PORT (27150), SUDOKU_TLS_UP_TIMEOUT (300 s).
set -euo pipefail
cd "$(dirname "$0")/../.."

project=${SUDOKU_TLS_PROJECT:-edge-tls}
https_port=${SUDOKU_TLS_HTTPS_PORT:-27443}
mgmt_port=${SUDOKU_TLS_PEBBLE_MGMT_PORT:-27150}
up_timeout=${SUDOKU_TLS_UP_TIMEOUT:-300}
export SUDOKU_HTTP_PORT=127.0.0.1:${SUDOKU_TLS_HTTP_PORT:-27080}
export SUDOKU_HTTPS_PORT=127.0.0.1:$https_port
export SUDOKU_EXPORTER_PORT=127.0.0.1:${SUDOKU_TLS_EXPORTER_PORT:-27113}
export SUDOKU_TLS_PEBBLE_MGMT_PORT=$mgmt_port

start=$SECONDS
log() { printf 'test-tls: [%3ds] %s\n' $((SECONDS - start)) "$*" >&2; }
# shellcheck source=tests/lib.sh
source tests/lib.sh

if docker compose version >/dev/null 2>&1; then
	compose_cmd=(docker compose)
else
	compose_cmd=(docker-compose)
fi
compose() { "${compose_cmd[@]}" -p "$project" -f docker-compose.yml -f tests/tls/compose.tls.yml "$@"; }

work=$(mktemp -d)
chmod 755 "$work"
export SUDOKU_TLS_PEBBLE_DIR=$work
teardown() {
	local rc=$?
	if ((rc != 0)); then
		log "failed; last sudoku-edge/nginx (access log left out) and pebble log lines:"
		compose logs --no-color --tail=2000 nginx 2>&1 | grep -v '"request_id"' | tail -40 >&2 || true
		compose logs --no-color --tail=40 pebble >&2 || true
	fi
	if [[ ${SUDOKU_TLS_KEEP:-} == 1 ]]; then
		log "SUDOKU_TLS_KEEP=1: leaving project $project up (files in $work)"
	else
		log "tearing down project $project"
		compose down -v --remove-orphans >"$work/down.log" 2>&1 || cat "$work/down.log" >&2
		rm -rf "$work"
	fi
	exit "$rc"
}
trap teardown EXIT

# Debian's pebble ships no certificate for its own listener: make one that
# sudoku-edge (https://pebble:14000) and this script (127.0.0.1) accept.
log "making Pebble's listener certificate"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
	-subj /CN=pebble -addext "subjectAltName=DNS:pebble,DNS:localhost,IP:127.0.0.1" \
	-keyout "$work/listener.key" -out "$work/listener.pem" 2>/dev/null
chmod 644 "$work/listener.key" "$work/listener.pem" # throwaway test key, read by pebble's container

log "building and starting project $project (pebble, workers, nginx with sudoku-edge)"
compose up -d --build 2>&1 | sed -u 's/^/    /' >&2

container=$(compose ps -q nginx)
wait_healthy "$container" nginx "$up_timeout"

log "running the end-to-end test"
SUDOKU_E2E_HTTPS=127.0.0.1:$https_port \
	SUDOKU_E2E_PEBBLE_MGMT=https://127.0.0.1:$mgmt_port \
	SUDOKU_E2E_PEBBLE_LISTENER=$work/listener.pem \
	SUDOKU_E2E_NGINX_CONTAINER=$container \
	go test -tags e2e -count=1 -v -timeout 10m ./tests/tls/
log "passed"

#!/usr/bin/env bash
# make test-scale: the compose stack with two workers under its own project
# and loopback ports; the Go end-to-end test in this directory scales the
# workers 2 -> 3 (the new one must answer within 10 s) and 3 -> 2 under steady
# load (no request may fail). Tears the stack down afterwards
# (SUDOKU_SCALE_KEEP=1 keeps it).
#
# Env (optional): SUDOKU_SCALE_PROJECT (edge-scale), SUDOKU_SCALE_HTTP_PORT
# (26180), SUDOKU_SCALE_HTTPS_PORT (26543), SUDOKU_SCALE_EXPORTER_PORT (26213),
# SUDOKU_SCALE_UP_TIMEOUT (300 s).
set -euo pipefail
cd "$(dirname "$0")/../.."

project=${SUDOKU_SCALE_PROJECT:-edge-scale}
http_port=${SUDOKU_SCALE_HTTP_PORT:-26180}
up_timeout=${SUDOKU_SCALE_UP_TIMEOUT:-300}
export SUDOKU_HTTP_PORT=127.0.0.1:$http_port
export SUDOKU_HTTPS_PORT=127.0.0.1:${SUDOKU_SCALE_HTTPS_PORT:-26543}
export SUDOKU_EXPORTER_PORT=127.0.0.1:${SUDOKU_SCALE_EXPORTER_PORT:-26213}

start=$SECONDS
log() { printf 'test-scale: [%3ds] %s\n' $((SECONDS - start)) "$*" >&2; }
# shellcheck source=tests/lib.sh
source tests/lib.sh

if docker compose version >/dev/null 2>&1; then
	compose_cmd="docker compose"
else
	compose_cmd=docker-compose
fi
# An absolute file path: the Go test runs the same command from its own directory.
compose_cmd="$compose_cmd -p $project -f $PWD/docker-compose.yml"
# shellcheck disable=SC2086 # compose_cmd is a command line
compose() { $compose_cmd "$@"; }

teardown() {
	local rc=$?
	if ((rc != 0)); then
		log "failed; last sudoku-edge log lines and nginx errors:"
		compose logs --no-color --tail=2000 nginx 2>&1 | grep -v '"request_id"' | tail -40 >&2 || true
	fi
	if [[ ${SUDOKU_SCALE_KEEP:-} == 1 ]]; then
		log "SUDOKU_SCALE_KEEP=1: leaving project $project up"
	else
		log "tearing down project $project"
		compose down -v --remove-orphans >/dev/null 2>&1 || log "compose down failed"
	fi
	exit "$rc"
}
trap teardown EXIT

log "building and starting project $project (2 workers, nginx with sudoku-edge)"
compose up -d --build --scale sudoku=2 2>&1 | sed -u 's/^/    /' >&2

container=$(compose ps -q nginx)
wait_healthy "$container" nginx "$up_timeout"

log "running the end-to-end test"
SUDOKU_E2E_HTTP=127.0.0.1:$http_port SUDOKU_E2E_COMPOSE="$compose_cmd" \
	go test -tags e2e -count=1 -v -timeout 10m ./tests/scale/
log "passed"

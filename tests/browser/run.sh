#!/usr/bin/env bash
# make test-browser: the web page in headless Chromium (Debian's chromium)
# against a compose stack of its own (project sudoku-browser, loopback ports
# 24080/24443/24113). The Go test in this directory drives the page and
# saves a screenshot; SUDOKU_BROWSER_UPDATE=1 makes it rewrite the README's
# tests/browser/testdata/screenshot.png. Tears the stack down afterwards
# (SUDOKU_BROWSER_KEEP=1 keeps it).
#
# Env (optional): SUDOKU_BROWSER_PROJECT (sudoku-browser),
# SUDOKU_BROWSER_HTTP_PORT (24080), SUDOKU_BROWSER_HTTPS_PORT (24443),
# SUDOKU_BROWSER_EXPORTER_PORT (24113), SUDOKU_BROWSER_UP_TIMEOUT (300 s),
# SUDOKU_E2E_CHROMIUM (the browser binary; default chromium on PATH).
set -euo pipefail
cd "$(dirname "$0")/../.."

start=$SECONDS
log() { printf 'test-browser: [%3ds] %s\n' $((SECONDS - start)) "$*" >&2; }
# shellcheck source=tests/lib.sh
source tests/lib.sh

project=${SUDOKU_BROWSER_PROJECT:-sudoku-browser}
http_port=${SUDOKU_BROWSER_HTTP_PORT:-24080}
# The ports docker-compose.yml publishes, on loopback only.
export SUDOKU_HTTP_PORT=127.0.0.1:$http_port \
	SUDOKU_HTTPS_PORT=127.0.0.1:${SUDOKU_BROWSER_HTTPS_PORT:-24443} \
	SUDOKU_EXPORTER_PORT=127.0.0.1:${SUDOKU_BROWSER_EXPORTER_PORT:-24113}

compose=(docker compose)
docker compose version >/dev/null 2>&1 || compose=(docker-compose)
# An absolute file path: the Go test scales the workers with the same command.
compose+=(-p "$project" -f "$PWD/docker-compose.yml")

finish() {
	local rc=$?
	((rc == 0)) || "${compose[@]}" logs --no-color --tail=30 nginx >&2 || true
	if [[ ${SUDOKU_BROWSER_KEEP:-} == 1 ]]; then
		log "SUDOKU_BROWSER_KEEP=1: leaving project $project up on 127.0.0.1:$http_port"
	else
		"${compose[@]}" down -v --remove-orphans >/dev/null 2>&1 || log "compose down failed"
	fi
	exit "$rc"
}
trap finish EXIT

log "building and starting project $project"
"${compose[@]}" up -d --build 2>&1 | sed -u 's/^/    /' >&2
wait_healthy "$("${compose[@]}" ps -q nginx)" nginx "${SUDOKU_BROWSER_UP_TIMEOUT:-300}"

log "running the browser test"
update=()
[[ ${SUDOKU_BROWSER_UPDATE:-} == 1 ]] && update=(-args -update)
SUDOKU_E2E_HTTP=127.0.0.1:$http_port SUDOKU_E2E_COMPOSE="${compose[*]}" go test -tags e2e -count=1 -v -timeout 6m ./tests/browser/ "${update[@]}"
log "passed"

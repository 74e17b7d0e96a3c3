#!/usr/bin/env bash
# Integration suite: brings the compose stack up (--build) under its own project
# name and loopback ports, waits for every container to be healthy, drives it
# with curl through nginx only, tears it down, and prints `N passed, N failed`
# as its last line (exit 1 on any failure).
#
# Env (all optional):
#   SUDOKU_IT_PROJECT        compose project name        (sudoku-it)
#   SUDOKU_IT_HTTP_PORT      host port for nginx :8080   (28080, bound to 127.0.0.1)
#   SUDOKU_IT_HTTPS_PORT     host port for nginx :8443   (28443)
#   SUDOKU_IT_EXPORTER_PORT  host port for the exporter  (29113)
#   SUDOKU_IT_COMPOSE_FILES  extra `-f file` arguments, e.g. an override file
#   SUDOKU_IT_KEEP=1         leave the stack running afterwards (for debugging)
#   SUDOKU_IT_UP_TIMEOUT     seconds to wait for health  (300)
set -uo pipefail
cd "$(dirname "$0")/../.."

project=${SUDOKU_IT_PROJECT:-sudoku-it}
http_port=${SUDOKU_IT_HTTP_PORT:-28080}
https_port=${SUDOKU_IT_HTTPS_PORT:-28443}
exporter_port=${SUDOKU_IT_EXPORTER_PORT:-29113}
up_timeout=${SUDOKU_IT_UP_TIMEOUT:-300}
base=http://127.0.0.1:$http_port
data=tests/integration/testdata
work=$(mktemp -d)

export SUDOKU_HTTP_PORT=127.0.0.1:$http_port
export SUDOKU_HTTPS_PORT=127.0.0.1:$https_port
export SUDOKU_EXPORTER_PORT=127.0.0.1:$exporter_port

if docker compose version >/dev/null 2>&1; then
	compose_cmd=(docker compose)
elif command -v docker-compose >/dev/null; then
	compose_cmd=(docker-compose)
else
	echo "integration: neither 'docker compose' nor docker-compose found" >&2
	echo "0 passed, 1 failed"
	exit 1
fi
# shellcheck disable=SC2206 # word splitting of the extra -f arguments is wanted
compose() { "${compose_cmd[@]}" -p "$project" -f docker-compose.yml ${SUDOKU_IT_COMPOSE_FILES:-} "$@"; }

log() { printf 'integration: %s\n' "$*" >&2; }

passed=0 failed=0
declare -a failures=()
run_case() { # name function
	local name=$1 start=$SECONDS
	printf -- '--- %s\n' "$name"
	if "$2"; then
		passed=$((passed + 1))
		printf 'ok   %s (%ds)\n' "$name" $((SECONDS - start))
	else
		failed=$((failed + 1))
		failures+=("$name")
		printf 'FAIL %s (%ds)\n' "$name" $((SECONDS - start))
	fi
}
# fail prints why a case failed and returns 1, so a case can `|| fail ...`.
fail() { printf '     %s\n' "$*"; return 1; }

teardown() {
	if [[ ${SUDOKU_IT_KEEP:-} == 1 ]]; then
		log "SUDOKU_IT_KEEP=1: leaving project $project up ($base)"
	else
		log "tearing down project $project"
		compose down -v --remove-orphans >"$work/down.log" 2>&1 || cat "$work/down.log" >&2
	fi
	rm -rf "$work"
}
trap teardown EXIT

# req METHOD URL [curl args...]: sets $status, body in $work/body, headers in
# $work/headers. Never follows redirects; 10 s cap per request.
req() {
	local method=$1 url=$2
	shift 2
	status=$(curl -s -m 10 -X "$method" -o "$work/body" -D "$work/headers" -w '%{http_code}' "$@" "$url")
}
body() { cat "$work/body"; }
header() { # header NAME: value of the last response's header, without CR
	awk -v h="$(tr '[:upper:]' '[:lower:]' <<<"$1")" -F': ' \
		'tolower($1) == h { sub(/\r$/, "", $2); print $2 }' "$work/headers" | tail -1
}
expect_status() { # want
	[[ $status == "$1" ]] || fail "status $status, want $1; body: $(head -c 300 "$work/body")"
}
expect_json_error() { # every error body is JSON with a non-empty "error"
	jq -e '.error | type == "string" and length > 0' "$work/body" >/dev/null ||
		fail "body is not a JSON error: $(head -c 300 "$work/body")"
}

puzzle() { sed -n "${1}p" "$data/puzzles.txt"; }
solution() { sed -n "${1}p" "$data/solutions.txt"; }
empty_grid=$(printf '0%.0s' $(seq 81))

# ---------------------------------------------------------------- bring-up
bring_up() {
	log "building and starting project $project (nginx on $base)"
	compose down -v --remove-orphans >/dev/null 2>&1
	if ! compose up -d --build >"$work/up.log" 2>&1; then
		tail -40 "$work/up.log" >&2
		return 1
	fi
	local deadline=$((SECONDS + up_timeout)) ids states
	while :; do
		ids=$(compose ps -q)
		states=$(for id in $ids; do
			docker inspect -f '{{.Name}} {{if .State.Health}}{{.State.Health.Status}}{{else}}{{.State.Status}}{{end}}' "$id"
		done)
		if [[ -n $ids ]] && ! grep -qv ' healthy$' <<<"$states"; then
			break
		fi
		if ((SECONDS > deadline)); then
			log "stack not healthy after ${up_timeout}s:"
			printf '%s\n' "$states" >&2
			compose logs --tail=30 >&2
			return 1
		fi
		log "waiting for health: $(tr '\n' ' ' <<<"$states")"
		sleep 2
	done
	log "all containers healthy: $(tr '\n' ' ' <<<"$states")"
	# Health says each part runs; wait until a request makes it end to end.
	for _ in $(seq 60); do
		[[ $(curl -s -m 5 -o /dev/null -w '%{http_code}' "$base/sudoku?puzzle=$(puzzle 1)") == 200 ]] && return 0
		sleep 1
	done
	log "nginx never answered 200 through to a worker"
	return 1
}

# ------------------------------------------------------------------ cases
case_solve_json() {
	req GET "$base/sudoku?puzzle=$(puzzle 1)&id=a1"
	expect_status 200 || return 1
	[[ $(header Content-Type) == application/json* ]] || fail "Content-Type $(header Content-Type)" || return 1
	jq -e --arg s "$(solution 1)" --arg p "$(puzzle 1)" \
		'.solution == $s and .puzzle == $p and .id == "a1"' "$work/body" >/dev/null ||
		fail "unexpected body $(body)"
}

case_solve_text() {
	req GET "$base/sudoku?puzzle=$(puzzle 2)&id=t2" -H 'Accept: text/plain'
	expect_status 200 || return 1
	[[ $(body | tr -d '\r\n') == "t2:$(solution 2)" ]] || fail "Accept: text/plain body '$(body)'" || return 1
	req GET "$base/sudoku?puzzle=$(puzzle 3)&format=text"
	expect_status 200 || return 1
	[[ $(body | tr -d '\r\n') == "$(solution 3)" ]] || fail "format=text body '$(body)'"
}

case_id_echo() {
	local id='client-42_x'
	req GET "$base/sudoku?puzzle=$(puzzle 4)&id=$id"
	expect_status 200 || return 1
	jq -e --arg id "$id" '.id == $id' "$work/body" >/dev/null || fail "200 body lost the id: $(body)" || return 1
	req GET "$base/sudoku?puzzle=x$(puzzle 4 | cut -c2-)&id=$id"
	expect_status 400 || return 1
	jq -e --arg id "$id" '.id == $id' "$work/body" >/dev/null || fail "400 body lost the id: $(body)"
}

case_unique() {
	req GET "$base/sudoku?puzzle=$(puzzle 5)&unique=1"
	expect_status 200 || return 1
	jq -e --arg s "$(solution 5)" '.unique == true and .solution == $s' "$work/body" >/dev/null ||
		fail "17-clue puzzle not reported unique: $(body)" || return 1
	req GET "$base/sudoku?puzzle=$empty_grid&unique=1"
	expect_status 200 || return 1
	jq -e '.unique == false' "$work/body" >/dev/null || fail "empty grid reported unique: $(body)" || return 1
	# Without unique=1 the field is absent.
	req GET "$base/sudoku?puzzle=$(puzzle 5)"
	jq -e 'has("unique") | not' "$work/body" >/dev/null || fail "unique present without unique=1: $(body)"
}

case_batch_post() {
	# Ids in shuffled order; the answers may come back in any order, so the
	# check is by id: every id answered exactly once, with the right answer.
	local n=12 i order unsolvable=123456780000000009000000000000000000000000000000000000000000000000000000000000000
	order=$(seq $n | shuf)
	{
		for i in $order; do echo "b$i:$(puzzle "$i")"; done
		echo "none:$unsolvable"
	} >"$work/batch"
	req POST "$base/sudoku" --data-binary "@$work/batch" -H 'Content-Type: text/plain'
	expect_status 200 || return 1
	tr -d '\r' <"$work/body" | grep -v '^$' >"$work/answers"
	[[ $(wc -l <"$work/answers") == $((n + 1)) ]] || fail "$(wc -l <"$work/answers") answer lines for $((n + 1)) puzzles: $(body)" || return 1
	for i in $(seq $n); do
		[[ $(grep -c "^b$i:" "$work/answers") == 1 ]] || fail "id b$i answered $(grep -c "^b$i:" "$work/answers") times" || return 1
		grep -qx "b$i:$(solution "$i")" "$work/answers" || fail "wrong answer for b$i: $(grep "^b$i:" "$work/answers")" || return 1
	done
	grep -qx 'none:NoSolution' "$work/answers" || fail "unsolvable puzzle: $(grep '^none:' "$work/answers")"
}

case_bad_characters() {
	req GET "$base/sudoku?puzzle=$(puzzle 1 | sed 's/^./x/')"
	expect_status 400 && expect_json_error || return 1
	grep -qi 'cell 1' "$work/body" || fail "error does not say where: $(body)"
}

case_80_cells() {
	req GET "$base/sudoku?puzzle=$(puzzle 1 | cut -c2-)"
	expect_status 400 && expect_json_error || return 1
	grep -q '80' "$work/body" || fail "error does not give the count: $(body)"
}

case_conflicting_givens() {
	req GET "$base/sudoku?puzzle=11$(printf '0%.0s' $(seq 79))"
	expect_status 400 && expect_json_error || return 1
	grep -qi 'row 1' "$work/body" || fail "error does not name the row: $(body)"
}

case_unsolvable() {
	req GET "$base/sudoku?puzzle=123456780000000009$(printf '0%.0s' $(seq 63))"
	expect_status 422 && expect_json_error
}

case_missing_puzzle() {
	req GET "$base/sudoku"
	expect_status 400 && expect_json_error
}

case_wrong_method() {
	local m
	for m in PUT DELETE PATCH; do
		req "$m" "$base/sudoku" --data x
		expect_status 405 && expect_json_error || return 1
		[[ -n $(header Allow) ]] || fail "$m: 405 without an Allow header" || return 1
	done
}

case_unknown_path() {
	local p
	for p in / /sudoku/ /sudokus /metrics /healthz /readyz /debug/pprof/ /stub_status /sudoku/stats/x; do
		req GET "$base$p"
		expect_status 404 && expect_json_error || fail "path $p" || return 1
	done
}

case_huge_uri() {
	req GET "$base/sudoku?puzzle=$(head -c 20000 /dev/zero | tr '\0' 0)"
	expect_status 414 && expect_json_error
}

case_huge_body() {
	head -c 3000000 /dev/zero | tr '\0' 0 >"$work/huge"
	req POST "$base/sudoku" --data-binary "@$work/huge"
	expect_status 413 && expect_json_error
}

case_huge_header() {
	req GET "$base/sudoku?puzzle=$(puzzle 1)" -H "X-Junk: $(head -c 20000 /dev/zero | tr '\0' a)"
	expect_status 400 && expect_json_error
}

case_bad_host() {
	local h
	for h in 'a%zz' '[::1' 'bad host' 'x/y'; do
		req GET "$base/sudoku?puzzle=$(puzzle 1)" -H "Host: $h"
		[[ $status == 4* ]] || fail "Host '$h': status $status, want 4xx" || return 1
		expect_json_error || return 1
	done
	# An ordinary name with a port is fine.
	req GET "$base/sudoku?puzzle=$(puzzle 1)" -H 'Host: Sudoku.Example.COM:8080'
	expect_status 200
}

case_stats() {
	req GET "$base/sudoku/stats"
	expect_status 200 || return 1
	jq -e 'type == "object"' "$work/body" >/dev/null || fail "not a JSON object: $(body)" || return 1
	local missing
	missing=$(jq -r '[paths | map(tostring) | join(".")] as $have
		| ["worker", "uptime", "rate", "totals", "in_flight", "queue", "latency", "goroutines", "memory"]
		| map(select(. as $k | $have | any(ascii_downcase | contains($k)) | not)) | join(",")' "$work/body")
	[[ -z $missing ]] || fail "stats lack fields matching: $missing; body: $(body)"
}

case_headers() {
	req GET "$base/sudoku?puzzle=$(puzzle 1)" -H 'X-Request-Id: chosen-by-client'
	expect_status 200 || return 1
	[[ $(header Server) == nginx ]] || fail "Server header '$(header Server)' (server_tokens off)" || return 1
	[[ $(header X-Request-Id) =~ ^[0-9a-f]{32}$ ]] || fail "X-Request-Id '$(header X-Request-Id)'" || return 1
	[[ -n $(header X-Sudoku-Worker) ]] || fail "no X-Sudoku-Worker header"
}

case_request_id_logged() {
	# nginx's $request_id reaches the worker (HTTP_X_REQUEST_ID) and both log it.
	req GET "$base/sudoku?puzzle=$(puzzle 6)&id=trace"
	expect_status 200 || return 1
	local rid i
	rid=$(header X-Request-Id)
	for i in $(seq 20); do
		compose logs --no-color nginx 2>/dev/null | grep -F "\"request_id\":\"$rid\"" >"$work/nginxlog" &&
			compose logs --no-color sudoku 2>/dev/null | grep -qF "$rid" && break
		sleep 0.5
	done
	[[ -s $work/nginxlog ]] || fail "request id $rid not in nginx's access log" || return 1
	sed 's/^[^{]*//' "$work/nginxlog" | tail -1 |
		jq -e '.status == 200 and (.upstream_addr | length > 0) and (.request_time | type == "number")' >/dev/null ||
		fail "nginx access log line is not the expected JSON: $(cat "$work/nginxlog")" || return 1
	compose logs --no-color sudoku 2>/dev/null | grep -qF "$rid" || fail "request id $rid not in any worker's log"
}

case_rate_limit() {
	# Batch POSTs have a low per-client rate (20/s, burst 40): 150 at once
	# must see some JSON 429s with Retry-After, and no 5xx.
	seq 150 | xargs -P 30 -I{} curl -s -m 10 -o /dev/null -w '%{http_code}\n' \
		-X POST --data-binary "r{}:$(puzzle 1)" "$base/sudoku" >"$work/codes"
	sort "$work/codes" | uniq -c | tr '\n' ' '
	echo
	grep -q '^429$' "$work/codes" || fail "no 429 among 150 concurrent batch POSTs" || return 1
	! grep -q '^5' "$work/codes" || fail "5xx among rate-limited requests" || return 1
	sleep 3 # let the bucket drain
	req POST "$base/sudoku" --data-binary "one:$(puzzle 1)"
	expect_status 200
	local i
	for i in $(seq 60); do
		req POST "$base/sudoku" --data-binary "r:$(puzzle 1)"
		[[ $status == 429 ]] && break
	done
	expect_status 429 && expect_json_error || return 1
	[[ -n $(header Retry-After) ]] || fail "429 without Retry-After"
}

case_burst_503_no_502() {
	# Far more slow puzzles at once than the pools and queues take: some 503
	# (busy), no other 5xx. Then, the max_fails trap: right after the burst,
	# not one 502 ("no live upstreams"): every request succeeds.
	local round
	: >"$work/codes"
	for round in 1 2 3; do
		sed 's/^/puzzle=/' "$data/hard.txt" | head -64 | xargs -P 64 -I{} \
			curl -s -m 20 -o /dev/null -w '%{http_code}\n' "$base/sudoku?{}" >>"$work/codes"
		grep -q '^503$' "$work/codes" && break
	done
	sort "$work/codes" | uniq -c | tr '\n' ' '
	echo
	grep -q '^503$' "$work/codes" || fail "no 503 in $(wc -l <"$work/codes") concurrent hard requests" || return 1
	grep -v '^503$' "$work/codes" | grep -q '^5' && fail "5xx other than 503 in the burst" && return 1
	local i
	: >"$work/after"
	for i in $(seq 40); do
		curl -s -m 10 -o /dev/null -w '%{http_code}\n' "$base/sudoku?puzzle=$(puzzle $((i % 12 + 1)))" >>"$work/after"
	done
	[[ $(grep -c '^200$' "$work/after") == 40 ]] || fail "after the burst: $(sort "$work/after" | uniq -c | tr '\n' ' ')"
}

case_every_worker() {
	local n i
	n=$(compose ps -q sudoku | wc -l)
	: >"$work/workers"
	for i in $(seq 60); do
		req GET "$base/sudoku?puzzle=$(puzzle $((i % 12 + 1)))"
		header X-Sudoku-Worker >>"$work/workers"
	done
	local seen
	seen=$(sort -u "$work/workers" | grep -c .)
	echo "     $n worker containers, answers from: $(sort "$work/workers" | uniq -c | tr '\n' ' ')"
	((n >= 2)) || fail "only $n worker containers (scale: 2 expected)" || return 1
	[[ $seen == "$n" ]] || fail "$seen distinct X-Sudoku-Worker values for $n workers"
}

case_worker_stopped() {
	# Stop one worker while requests flow: every request still succeeds
	# (nginx retries on the other; sudoku-edge drops the gone address).
	local victim i
	victim=$(compose ps -q sudoku | head -1)
	: >"$work/during"
	(
		for i in $(seq 150); do
			curl -s -m 10 -o /dev/null -w '%{http_code}\n' "$base/sudoku?puzzle=$(puzzle $((i % 12 + 1)))"
			sleep 0.05
		done >"$work/during"
	) &
	local loop=$!
	sleep 1
	docker stop -t 15 "$victim" >/dev/null
	wait "$loop"
	echo "     during and after the stop: $(sort "$work/during" | uniq -c | tr '\n' ' ')"
	[[ $(grep -c '^200$' "$work/during") == 150 ]] || fail "requests failed while a worker stopped" || return 1
	docker start "$victim" >/dev/null
}

case_exporter() {
	local i
	for i in $(seq 20); do
		curl -s -m 5 "http://127.0.0.1:$exporter_port/metrics" >"$work/metrics" &&
			grep -q '^nginx_connections_accepted [1-9]' "$work/metrics" && return 0
		sleep 1
	done
	fail "exporter /metrics lacks a non-zero nginx_connections_accepted: $(grep '^nginx_' "$work/metrics" | tr '\n' ' ')"
}

# -------------------------------------------------------------------- main
start=$SECONDS
if ! bring_up; then
	compose ps >&2
	echo "0 passed, 1 failed"
	exit 1
fi
log "stack up after $((SECONDS - start))s"

run_case "solve, JSON" case_solve_json
run_case "solve, text" case_solve_text
run_case "id echo" case_id_echo
run_case "unique=1" case_unique
run_case "batch POST, ids out of order" case_batch_post
run_case "400 bad characters" case_bad_characters
run_case "400 80 cells" case_80_cells
run_case "400 conflicting givens" case_conflicting_givens
run_case "400 no puzzle" case_missing_puzzle
run_case "422 unsolvable" case_unsolvable
run_case "405 wrong method" case_wrong_method
run_case "404 unknown paths (internal endpoints unreachable)" case_unknown_path
run_case "414 huge URI" case_huge_uri
run_case "413 huge body" case_huge_body
run_case "400 huge header" case_huge_header
run_case "bad Host is 4xx, not 500" case_bad_host
run_case "stats JSON fields" case_stats
run_case "headers: server_tokens off, request id, worker" case_headers
run_case "request id in nginx's JSON log and the worker's log" case_request_id_logged
run_case "429 per-client limit with JSON body" case_rate_limit
run_case "burst: some 503, no other 5xx, then no 502" case_burst_503_no_502
run_case "requests reach every worker" case_every_worker
run_case "a worker stops, requests keep succeeding" case_worker_stopped
run_case "exporter shows nginx_connections_accepted" case_exporter

log "suite took $((SECONDS - start))s"
if ((failed > 0)); then
	log "failed: ${failures[*]}"
fi
echo "$passed passed, $failed failed"
((failed == 0))

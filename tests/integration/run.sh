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
#   SUDOKU_IT_PROMETHEUS_PORT host port for Prometheus   (29090; the stack
#                            runs with the compose profile "monitoring")
#   SUDOKU_IT_ALERTMANAGER_PORT host port for Alertmanager (29093)
#   SUDOKU_IT_COMPOSE_FILES  extra `-f file` arguments, e.g. an override file
#   SUDOKU_IT_KEEP=1         leave the stack running afterwards (for debugging)
#   SUDOKU_IT_REUSE=1        use the project's running stack as is: no build,
#                            no bring-up, no teardown (fast iteration on cases)
#   SUDOKU_IT_UP_TIMEOUT     seconds to wait for health  (300)
#   SUDOKU_IT_CASES          regex: run only the cases whose name matches
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1

project=${SUDOKU_IT_PROJECT:-sudoku-it}
http_port=${SUDOKU_IT_HTTP_PORT:-28080}
https_port=${SUDOKU_IT_HTTPS_PORT:-28443}
exporter_port=${SUDOKU_IT_EXPORTER_PORT:-29113}
prometheus_port=${SUDOKU_IT_PROMETHEUS_PORT:-29090}
alertmanager_port=${SUDOKU_IT_ALERTMANAGER_PORT:-29093}
up_timeout=${SUDOKU_IT_UP_TIMEOUT:-300}
base=http://127.0.0.1:$http_port
data=tests/integration/testdata
work=$(mktemp -d)

export SUDOKU_HTTP_PORT=127.0.0.1:$http_port
export SUDOKU_PROMETHEUS_PORT=127.0.0.1:$prometheus_port
export SUDOKU_HTTPS_PORT=127.0.0.1:$https_port
export SUDOKU_EXPORTER_PORT=127.0.0.1:$exporter_port
export SUDOKU_ALERTMANAGER_PORT=127.0.0.1:$alertmanager_port

if docker compose version >/dev/null 2>&1; then
	compose_cmd=(docker compose)
elif command -v docker-compose >/dev/null; then
	compose_cmd=(docker-compose)
else
	echo "integration: neither 'docker compose' nor docker-compose found" >&2
	echo "0 passed, 1 failed"
	exit 1
fi
# shellcheck disable=SC2086 # word splitting of the extra -f arguments is wanted
compose() { "${compose_cmd[@]}" --profile monitoring -p "$project" -f docker-compose.yml ${SUDOKU_IT_COMPOSE_FILES:-} "$@"; }

# Container ids of a service (or all), by compose's labels: much faster than
# `docker-compose ps -q`, and the same labels under compose v1 and v2.
containers() { # [service]
	docker ps -q --filter "label=com.docker.compose.project=$project" ${1:+--filter "label=com.docker.compose.service=$1"}
}
service_logs() { # service: its containers' logs, stdout and stderr
	local id
	for id in $(containers "$1"); do docker logs "$id" 2>&1; done
}

log() { printf 'integration: %s\n' "$*" >&2; }
# shellcheck source=tests/lib.sh
source tests/lib.sh # wait_healthy, setuid_files

passed=0 failed=0
declare -a failures=()
run_case() { # name function
	local name=$1 start=$SECONDS
	if [[ -n ${SUDOKU_IT_CASES:-} && ! $name =~ $SUDOKU_IT_CASES ]]; then
		return # not selected: counted neither way
	fi
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
	if [[ ${SUDOKU_IT_KEEP:-} == 1 || ${SUDOKU_IT_REUSE:-} == 1 ]]; then
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
# nginx's own answers carry nosniff as the workers' do; a nested location
# with an add_header of its own drops it unless it repeats it.
expect_nosniff() { # [headers file, default the last response's]
	local f=${1:-$work/headers}
	tr -d '\r' <"$f" | grep -qix 'X-Content-Type-Options: nosniff' ||
		fail "no X-Content-Type-Options: nosniff in $(tr -d '\r' <"$f" | sed '/^$/q' | tr '\n' '|')"
}

# parallel N [curl args...] < urls: one curl process runs every URL read from
# stdin, N at a time, and prints one status code per line (000: no answer).
# With par_out=DIR set, each response (headers and body) goes to DIR/<line>.
parallel() {
	local n=$1
	shift
	if [[ -n ${par_out:-} ]]; then
		mkdir -p "$par_out"
		awk -v d="$par_out" '{printf "url = \"%s\"\noutput = \"%s/%d\"\n", $0, d, NR}' >"$work/parallel.cfg"
		set -- -i "$@"
	else
		awk '{printf "url = \"%s\"\noutput = \"/dev/null\"\n", $0}' >"$work/parallel.cfg"
	fi
	curl -s --no-progress-meter -m 30 --parallel --parallel-immediate --parallel-max "$n" \
		-w '%{http_code}\n' "$@" -K "$work/parallel.cfg"
}

puzzle() { sed -n "${1}p" "$data/puzzles.txt"; }
solution() { sed -n "${1}p" "$data/solutions.txt"; }
empty_grid=$(printf '0%.0s' $(seq 81))

# ---------------------------------------------------------------- bring-up
bring_up() {
	log "building and starting project $project (nginx on $base)"
	compose down -v --remove-orphans >/dev/null 2>&1
	# Build output goes to a file; its step lines show progress.
	compose up -d --build 2>&1 | tee "$work/up.log" |
		grep --line-buffered -E '^Step [0-9]+/|^Successfully tagged|^(Creating|Starting|Recreating) |^#[0-9]+ \[' |
		sed -u 's/^/integration: build: /' >&2
	if ((PIPESTATUS[0] != 0)); then
		tail -40 "$work/up.log" >&2
		return 1
	fi
	local deadline=$((SECONDS + up_timeout)) ids states
	while :; do
		ids=$(docker ps -aq --filter "label=com.docker.compose.project=$project")
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
case_openapi() {
	SUDOKU_API_URL=$base go test -tags e2e -count=1 -skip '^TestRecordedAnswersMatchDescription$' ./tests/openapi 2>&1 | sed 's/^/     /'
	return "${PIPESTATUS[0]}"
}

# The answers the burst case recorded (one 503 of each kind) against the
# description: answers a calm stack never gives.
case_openapi_recorded() {
	SUDOKU_API_RECORDED=$work/recorded go test -tags e2e -count=1 -run '^TestRecordedAnswersMatchDescription$' ./tests/openapi 2>&1 | sed 's/^/     /'
	return "${PIPESTATUS[0]}"
}

case_monitoring() {
	tests/monitoring/check.sh "http://127.0.0.1:$prometheus_port" 2>&1 | sed 's/^/     /'
	return "${PIPESTATUS[0]}"
}

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

# expect_bad_puzzle PUZZLE PATTERN WHAT: GET with PUZZLE answers a JSON 400
# whose message matches PATTERN (case-insensitive), i.e. says WHAT.
expect_bad_puzzle() {
	req GET "$base/sudoku?puzzle=$1"
	expect_status 400 && expect_json_error || return 1
	grep -qi "$2" "$work/body" || fail "error does not $3: $(body)"
}

case_bad_characters() { expect_bad_puzzle "$(puzzle 1 | sed 's/^./x/')" 'cell 1' 'say where'; }
case_80_cells() { expect_bad_puzzle "$(puzzle 1 | cut -c2-)" '80' 'give the count'; }
case_conflicting_givens() { expect_bad_puzzle "11$(printf '0%.0s' $(seq 79))" 'row 1' 'name the row'; }

case_unsolvable() {
	req GET "$base/sudoku?puzzle=123456780000000009$(printf '0%.0s' $(seq 63))"
	expect_status 422 && expect_json_error
}

case_missing_puzzle() {
	req GET "$base/sudoku"
	expect_status 400 && expect_json_error
}

case_wrong_method() {
	local m p
	for m in PUT DELETE PATCH; do
		req "$m" "$base/sudoku" --data x
		expect_status 405 && expect_json_error && expect_nosniff || return 1
		[[ $(header Allow) == "GET, HEAD, POST" ]] || fail "$m /sudoku: 405 with Allow '$(header Allow)'" || return 1
	done
	# The files nginx serves take GET and HEAD only, and say so.
	for p in /openapi.yaml /; do
		for m in POST PUT DELETE; do
			req "$m" "$base$p"
			expect_status 405 && expect_json_error || fail "$m $p" || return 1
			[[ $(header Allow) == "GET, HEAD" ]] || fail "$m $p: 405 with Allow '$(header Allow)'" || return 1
		done
	done
}

case_unknown_path() {
	local p
	for p in /sudoku/ /sudokus /metrics /healthz /readyz /debug/pprof/ /stub_status /sudoku/stats/x; do
		req GET "$base$p"
		expect_status 404 && expect_json_error && expect_nosniff || fail "path $p" || return 1
	done
	# The 404 names what exists.
	jq -e '.error | test("/sudoku/stats") and test("/openapi.yaml")' "$work/body" >/dev/null ||
		fail "the 404 does not name the routes: $(body)"
}

case_index() {
	# curl at / gets the API's index, pointing to its description; a
	# browser gets the page.
	req GET "$base/"
	expect_status 200 && expect_nosniff || return 1
	jq -e '.description == "/openapi.yaml" and (.routes | has("POST /sudoku"))' "$work/body" >/dev/null ||
		fail "GET / as curl: $(body)" || return 1
	req GET "$base/openapi.yaml"
	expect_status 200 || return 1
	req GET "$base/" -H 'Accept: text/html'
	expect_status 200 || return 1
	grep -q '<html' "$work/body" || fail "GET / as a browser: $(head -c 200 "$work/body")"
}

case_huge_uri() {
	req GET "$base/sudoku?puzzle=$(head -c 20000 /dev/zero | tr '\0' 0)"
	expect_status 414 && expect_json_error
}

case_huge_body() {
	head -c 3000000 /dev/zero | tr '\0' 0 >"$work/huge"
	req POST "$base/sudoku?from=huge-body" --data-binary "@$work/huge"
	expect_status 413 && expect_json_error || return 1
	# nginx's log names the client's request, not its internal error page.
	local rid i line=
	rid=$(header X-Request-Id)
	for i in $(seq 20); do
		line=$(service_logs nginx | grep -F "\"request_id\":\"$rid\"" | sed 's/^[^{]*//' | tail -1)
		[[ -n $line ]] && break
		sleep 0.5
	done
	jq -e '.method == "POST" and .uri == "/sudoku?from=huge-body" and .status == 413' <<<"$line" >/dev/null ||
		fail "nginx's log line for the 413: ${line:-none}"
}

case_huge_header() {
	req GET "$base/sudoku?puzzle=$(puzzle 1)" -H "X-Junk: $(head -c 20000 /dev/zero | tr '\0' a)"
	expect_status 400 && expect_json_error
}

workers_started() { # each worker container's id, start time and restart count
	local ids
	mapfile -t ids < <(containers sudoku)
	((${#ids[@]} > 0)) || return 0
	docker inspect -f '{{.Id}} {{.State.StartedAt}} {{.RestartCount}}' "${ids[@]}" | sort | tr '\n' ' '
}
case_largest_request() {
	# The largest request nginx takes (large_client_header_buffers 4 8k): a
	# request line just under 8 KiB, then three header lines of 8,000 bytes,
	# each in a buffer of its own. As FastCGI params that is over 40 KiB (the
	# URI twice, HTTP_ before each header), within the worker's cap: a
	# worker whose cap is lower closes the connection and the client gets
	# nginx's 503. The answer is a worker's, and the workers still run.
	local line pad started i
	started=$(workers_started)
	[[ -n $started ]] || fail "no worker container" || return 1
	line="GET /sudoku?puzzle=$(puzzle 1)&pad= HTTP/1.1"
	pad=$(head -c $((8100 - ${#line} - 2)) /dev/zero | tr '\0' p)
	req GET "$base/sudoku?puzzle=$(puzzle 1)&pad=$pad" -H 'User-Agent: it' -H 'Accept: */*' \
		-H "X-Pad-A: $(head -c 7989 /dev/zero | tr '\0' a)" \
		-H "X-Pad-B: $(head -c 7989 /dev/zero | tr '\0' b)" \
		-H "X-Pad-C: $(head -c 7989 /dev/zero | tr '\0' c)"
	echo "     request line $((${#line} + ${#pad} + 2)) bytes, 3 headers of 8000: $status $(head -c 120 "$work/body")"
	[[ $status =~ ^(200|400|414|431)$ ]] || fail "status $status, want 200, 400, 414 or 431; body: $(head -c 300 "$work/body")" || return 1
	[[ $status == 200 ]] || expect_json_error || return 1
	# nginx passed it on: smaller than the largest, it would test nothing.
	[[ -n $(header X-Sudoku-Worker) ]] || fail "nginx answered $status itself: not the largest request it accepts" || return 1
	[[ $(workers_started) == "$started" ]] || fail "a worker restarted: $started, now $(workers_started)" || return 1
	for i in $(seq 4); do
		req GET "$base/sudoku?puzzle=$(puzzle "$i")"
		expect_status 200 || return 1
	done
}

case_bad_host() {
	local h
	for h in 'a%zz' '[::1' 'bad host' 'x/y'; do
		req GET "$base/sudoku?puzzle=$(puzzle 1)" -H "Host: $h"
		[[ $status == 4* ]] || fail "Host '$h': status $status, want 4xx" || return 1
		expect_json_error && expect_nosniff || return 1
	done
	# The 400 of the route itself (nginx parses this Host; the workers could not).
	req GET "$base/sudoku?puzzle=$(puzzle 1)" -H 'Host: a%zz'
	grep -q 'invalid Host header' "$work/body" || fail "Host 'a%zz': $status $(body)" || return 1
	# An ordinary name with a port is fine.
	req GET "$base/sudoku?puzzle=$(puzzle 1)" -H 'Host: Sudoku.Example.COM:8080'
	expect_status 200
}

case_stats() {
	req GET "$base/sudoku/stats"
	expect_status 200 || return 1
	[[ $(header Content-Type) == application/json* ]] || fail "Content-Type $(header Content-Type)" || return 1
	local missing
	missing=$(jq -r '. as $root | [
		["worker"], ["uptime_seconds"],
		["requests_per_second", "1s"], ["requests_per_second", "10s"], ["requests_per_second", "60s"],
		["totals", "solved"], ["totals", "no_solution"], ["totals", "bad_request"], ["totals", "too_busy"],
		["in_flight"], ["queue_depth"],
		["latency_seconds", "p50"], ["latency_seconds", "p90"], ["latency_seconds", "p99"], ["latency_seconds", "p99.9"],
		["goroutines"],
		["memory", "heap_inuse_bytes"], ["memory", "heap_idle_bytes"], ["memory", "heap_released_bytes"], ["memory", "rss_bytes"]
	] | map(. as $p | select(($root | getpath($p) | type) as $t | ($p == ["worker"] and $t != "string") or ($p != ["worker"] and $t != "number")) | join("."))
	| join(", ")' "$work/body")
	[[ -z $missing ]] || fail "stats lack (or mistype) $missing; body: $(body)" || return 1
	jq -e --arg w "$(header X-Sudoku-Worker)" '.worker == $w' "$work/body" >/dev/null ||
		fail "stats .worker differs from X-Sudoku-Worker $(header X-Sudoku-Worker)"
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
		service_logs nginx | grep -F "\"request_id\":\"$rid\"" >"$work/nginxlog" &&
			service_logs sudoku >"$work/workerlog" && grep -qF "\"$rid\"" "$work/workerlog" && break
		sleep 0.5
	done
	[[ -s $work/nginxlog ]] || fail "request id $rid not in nginx's access log" || return 1
	sed 's/^[^{]*//' "$work/nginxlog" | tail -1 |
		jq -e '.status == 200 and (.upstream_addr | length > 0) and (.request_time | type == "number")' >/dev/null ||
		fail "nginx access log line is not the expected JSON: $(cat "$work/nginxlog")" || return 1
	grep -qF "\"$rid\"" "$work/workerlog" || fail "request id $rid not in any worker's log"
}

case_rate_limit() {
	# Batch POSTs have a low per-client rate (20/s, burst 40): 150, 4 at
	# once (the per-client count of batches in flight), must see some JSON
	# 429s with Retry-After, and no 5xx.
	echo "r:$(puzzle 1)" >"$work/one"
	for _ in $(seq 150); do echo "$base/sudoku"; done |
		parallel 4 -X POST --data-binary "@$work/one" >"$work/codes"
	echo "     150 batch POSTs, 4 at once: $(sort "$work/codes" | uniq -c | tr '\n' ' ')"
	grep -q '^429$' "$work/codes" || fail "no 429 among 150 concurrent batch POSTs" || return 1
	! grep -q '^5' "$work/codes" || fail "5xx among rate-limited requests" || return 1
	# One of the 429 answers in full: JSON body and Retry-After.
	for _ in $(seq 60); do echo "$base/sudoku"; done |
		par_out=$work/limited parallel 60 -X POST --data-binary "@$work/one" >/dev/null
	local f
	f=$(grep -l '^HTTP/1.1 429' "$work"/limited/* | head -1)
	[[ -n $f ]] || fail "no 429 in a second burst of 60" || return 1
	tr -d '\r' <"$f" | grep -qix 'Retry-After: [123]' || fail "429 without a Retry-After of 1-3: $(cat "$f")" || return 1
	tr -d '\r' <"$f" | grep -qiFx 'RateLimit-Policy: "client";q=100;w=1, "batch";q=20;w=1' ||
		fail "429 without the batch's RateLimit-Policy: $(cat "$f")" || return 1
	expect_nosniff "$f" || return 1
	sed '1,/^\r\?$/d' "$f" | jq -e '.error | test("too many")' >/dev/null || fail "429 body: $(cat "$f")" || return 1
	# Turned-away clients do not all retry in the same second.
	echo "     Retry-After of the 429s: $(grep -hi '^Retry-After:' "$work"/limited/* | tr -d '\r' | sort | uniq -c | tr '\n' ' ')"
	(($(grep -hi '^Retry-After:' "$work"/limited/* | sort -u | wc -l) > 1)) || fail "every 429 has the same Retry-After" || return 1
	sleep 3 # the bucket drains: single POSTs are fine again
	req POST "$base/sudoku" --data-binary "@$work/one"
	expect_status 200
}

# announce_body METHOD PATH: the status line nginx answers to headers that
# announce a body of 1 MB that never comes ("" if none within 15 s). A route
# that reads the body first waits for it until client_body_timeout (10 s)
# and answers 408.
announce_body() {
	local fd line=
	exec {fd}<>"/dev/tcp/127.0.0.1/$http_port" || return 1
	printf '%s %s HTTP/1.1\r\nHost: localhost\r\nAccept: text/html\r\nContent-Length: 1000000\r\n\r\n' "$1" "$2" >&"$fd"
	read -r -t 15 line <&"$fd"
	exec {fd}>&-
	printf '%s\n' "${line%$'\r'}"
}

case_no_body_routes() {
	# Every route but the batch POST refuses a body before it reads it:
	# 413 (405 for a method the route does not take), as JSON.
	local p line
	for p in "/sudoku/stats" "/sudoku?puzzle=$(puzzle 1)" "/" "/assets/app.js" "/openapi.yaml"; do
		line=$(announce_body GET "$p")
		[[ $line == "HTTP/1.1 413 "* ]] || fail "GET $p announcing a 1 MB body that never comes: '$line', want 413 without waiting for it" || return 1
	done
	line=$(announce_body PUT /sudoku/stats)
	[[ $line == "HTTP/1.1 405 "* ]] || fail "PUT /sudoku/stats announcing a body: '$line', want 405" || return 1
	req GET "$base/sudoku/stats" --data-binary x
	expect_status 413 && expect_json_error || return 1
	grep -q 'takes no request body' "$work/body" || fail "413 does not say the route takes no body: $(body)" || return 1
	req GET "$base/sudoku?puzzle=$(puzzle 1)" -H 'Transfer-Encoding: chunked' --data-binary x
	expect_status 413 && expect_json_error || fail "chunked body on GET /sudoku" || return 1
	req PUT "$base/sudoku/stats" --data-binary x
	expect_status 405 && expect_json_error || return 1
	[[ $(header Allow) == 'GET, HEAD' ]] || fail "405 on /sudoku/stats: Allow '$(header Allow)', want 'GET, HEAD'" || return 1
	# Content-Length: 0 is no body.
	req GET "$base/sudoku/stats" -H 'Content-Length: 0'
	expect_status 200
}

# hold_bodies SPEC...: a container from the nginx image on the project's
# network (an address of its own, not the host's) opens requests with
# bodies and holds them: all but the last 100 bytes at once, then one byte
# per request every 2-3 s, from the start, so no client_body_timeout (5 s
# on batches) ends them and frees their slots. Each SPEC is
# "METHOD PATH COUNT SIZE PACE" (PACE: seconds between two opens). Prints
# the container's id; it logs "opened N answered: <status lines>" once
# every request is open.
hold_bodies() {
	local net image ip
	net=$(docker network ls -q --filter "label=com.docker.compose.project=$project" | head -1)
	image=$(docker inspect -f '{{.Config.Image}}' "$(containers nginx | head -1)")
	ip=$(docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}' "$(containers nginx | head -1)" | awk '{print $1}')
	[[ -n $net && -n $image && -n $ip ]] || { echo "hold_bodies: no network, image or address" >&2; return 1; }
	# shellcheck disable=SC2016 # the script runs in the container
	docker run -d --rm --network "$net" --entrypoint bash "$image" -c '
		trap "" PIPE
		host=$1
		shift
		fds=()
		trickle() { for fd in "${fds[@]}"; do printf 0 >&"$fd" 2>/dev/null; done; last=$SECONDS; }
		last=$SECONDS
		for spec in "$@"; do
			read -r method path n size pace <<<"$spec"
			for ((i = 0; i < n; i++)); do
				exec {fd}<>"/dev/tcp/$host/8080" || break
				{ printf "%s %s HTTP/1.1\r\nHost: hold\r\nContent-Length: %d\r\n\r\n" "$method" "$path" "$size"
					head -c $((size - 100)) /dev/zero; } >&"$fd" 2>/dev/null
				fds+=("$fd")
				sleep "$pace"
				((SECONDS - last < 2)) || trickle
			done
		done
		answered=$(for fd in "${fds[@]}"; do read -r -t 0.01 line <&"$fd" && echo "${line:9:3}"; done | sort | uniq -c | tr "\n" " ")
		echo "opened ${#fds[@]} answered: $answered"
		for ((r = 0; r < 30; r++)); do
			sleep 2
			trickle
		done' hold "$ip" "$@"
}
wait_held() { # container: waits (60 s at most) until hold_bodies has opened every request, prints its line
	local i
	for i in $(seq 120); do
		docker logs "$1" 2>/dev/null | grep '^opened ' && return 0
		sleep 0.5
	done
	fail "the holding client never opened its requests: $(docker logs "$1" 2>&1 | tail -3)"
}

mem_bytes() { # container: its memory use as docker stats reports it, in bytes
	docker stats --no-stream --format '{{.MemUsage}}' "$1" | awk '{
		v = $1; u = $1; sub(/[A-Za-z]+$/, "", v); sub(/^[0-9.]+/, "", u)
		f["B"] = 1; f["KiB"] = 1024; f["MiB"] = 1048576; f["GiB"] = 1073741824; f["kB"] = 1e3; f["MB"] = 1e6; f["GB"] = 1e9
		printf "%d\n", v * f[u] }'
}

case_held_bodies_memory() {
	# One client (a container on the network) holds nearly 1 MiB bodies on
	# every route: GET /sudoku/stats and /sudoku, the page, and batch POSTs.
	# nginx refuses the first at once and takes at most 4 batches from one
	# address, so its memory stays within idle + 32 MiB. A memory bound,
	# measured by docker stats, not a timing.
	local nginx_id restarts idle peak m holder line i mib=1048576
	nginx_id=$(containers nginx | head -1)
	restarts=$(docker inspect -f '{{.RestartCount}}' "$nginx_id")
	idle=$(mem_bytes "$nginx_id")
	holder=$(hold_bodies "GET /sudoku/stats 60 $mib 0" "GET /sudoku?puzzle=$(puzzle 1) 60 $mib 0" \
		"GET / 20 $mib 0" "POST /sudoku 30 $mib 0.1") || fail "cannot start the holding client" || return 1
	line=$(wait_held "$holder") || { docker rm -f "$holder" >/dev/null; return 1; }
	peak=$idle
	for i in 1 2 3; do
		m=$(mem_bytes "$nginx_id")
		((m > peak)) && peak=$m
	done
	docker rm -f "$holder" >/dev/null
	echo "     one client, 140 GETs and 30 batch POSTs of 1 MiB bodies held: $line"
	echo "     nginx memory idle $((idle / mib)) MiB, peak while held $((peak / mib)) MiB (docker stats)"
	[[ $(docker inspect -f '{{.State.OOMKilled}} {{.RestartCount}}' "$nginx_id") == "false $restarts" ]] ||
		fail "nginx was OOM-killed or restarted" || return 1
	((peak <= idle + 32 * mib)) || fail "nginx grew by $(((peak - idle) / mib)) MiB, past 32 MiB"
}

case_slow_batches_second_client() {
	# One address (a container) opens 80 batch POSTs paced within its rate
	# limit and sends their bodies a byte every 3 s. It keeps 4 of the 64
	# batch slots; another address (the host) meanwhile gets every batch
	# and GET answered, not one error.
	local holder line i
	holder=$(hold_bodies "POST /sudoku 80 100000 0.07") || fail "cannot start the holding client" || return 1
	line=$(wait_held "$holder") || { docker rm -f "$holder" >/dev/null; return 1; }
	echo "r:$(puzzle 2)" >"$work/one"
	: >"$work/second"
	for i in $(seq 10); do
		curl -s -m 10 -o /dev/null -w '%{http_code}\n' -X POST --data-binary "@$work/one" "$base/sudoku" >>"$work/second"
	done
	for i in $(seq 20); do echo "$base/sudoku?puzzle=$(puzzle $((i % 12 + 1)))"; done | parallel 4 >>"$work/second"
	docker rm -f "$holder" >/dev/null
	echo "     slow client: $line"
	echo "     other client, 10 batch POSTs and 20 GETs meanwhile: $(sort "$work/second" | uniq -c | tr '\n' ' ')"
	! grep -qv '^200$' "$work/second" || fail "the other client got errors while one address held slow bodies"
}

# access_lines TAG N: nginx's access-log lines (JSON) of the requests whose
# id starts with TAG- into $work/TAG.log, once all N are there. nginx buffers
# its log (buffer=64k flush=1s) per worker process, so this polls, bounded.
access_lines() {
	local tag=$1 n=$2 i got=0
	for i in $(seq 40); do
		service_logs nginx | sed -n "s/^[^{]*//; /\"uri\":\"[^\"]*[?&]id=$tag-/p" >"$work/$tag.log"
		got=$(wc -l <"$work/$tag.log")
		((got >= n)) && return 0
		sleep 0.5
	done
	fail "$got of $n access-log lines for $tag after 20 s"
}

case_limit_nodelay() {
	# nginx's per-client limit (sudoku_req: 100 r/s, burst 200, nodelay) from
	# a client it counts (the host, seen as the compose network's gateway):
	# nginx logs what the limit did to each request ($limit_req_status).
	# Within the limit every request is PASSED, never DELAYED (nodelay:
	# no added latency); over it the excess is REJECTED with 429 at once,
	# again with none DELAYED. No timing is measured.
	local tag="lim$RANDOM$RANDOM" i round sent=0 ps
	mapfile -t ps < <(head -12 "$data/puzzles.txt")
	sleep 3 # earlier cases' excess drains (200 at 100 r/s take 2 s)
	# 150 one after another over one connection: fewer than the burst of
	# 200, so within the limit however fast they come.
	for i in $(seq 150); do echo "$base/sudoku?puzzle=${ps[i % 12]}&id=${tag}s-$i"; done |
		parallel 1 >"$work/seq"
	echo "     150 sequential GETs: $(sort "$work/seq" | uniq -c | tr '\n' ' ')"
	[[ $(grep -c '^200$' "$work/seq") == 150 ]] || fail "not every sequential GET got 200" || return 1
	access_lines "${tag}s" 150 || return 1
	echo "     logged: $(jq -r '"\(.status) limit_req=\(.limit_req) from \(.remote_addr)"' "$work/${tag}s.log" | sort | uniq -c | tr '\n' ' ')"
	jq -se 'length == 150 and all(.status == 200 and .limit_req == "PASSED")' "$work/${tag}s.log" >/dev/null ||
		fail "a request within the limit was not logged 200 PASSED (DELAYED: nginx paced it; empty: the client is exempt)" || return 1
	# Past the limit: rounds of 600 from the same client, 50 at once, until
	# nginx turns some away (the bucket takes 200 at once plus 100 per second).
	: >"$work/burst"
	for ((round = 1; round <= 5; round++)); do
		for i in $(seq 600); do echo "$base/sudoku?puzzle=${ps[i % 12]}&id=${tag}b-$round-$i"; done |
			parallel 50 >>"$work/burst"
		sent=$((sent + 600))
		grep -q '^429$' "$work/burst" && break
	done
	echo "     $sent GETs, 50 at once: $(sort "$work/burst" | uniq -c | tr '\n' ' ')"
	grep -q '^429$' "$work/burst" || fail "no 429 in $sent requests" || return 1
	access_lines "${tag}b" "$sent" || return 1
	echo "     logged: $(jq -r '"\(.status) limit_req=\(.limit_req)"' "$work/${tag}b.log" | sort | uniq -c | tr '\n' ' ')"
	jq -se 'any(.status == 429)' "$work/${tag}b.log" >/dev/null || fail "no 429 in nginx's log" || return 1
	jq -se 'all(.limit_req != "DELAYED")' "$work/${tag}b.log" >/dev/null || fail "nginx DELAYED requests over the limit" || return 1
	# A 429 is the limit's REJECTED, and everything else passed it (a worker
	# may still answer 503 under the burst: that request was not limited).
	jq -se 'all((.status == 429 and .limit_req == "REJECTED") or (.status != 429 and .limit_req == "PASSED"))' "$work/${tag}b.log" >/dev/null ||
		fail "a 429 not REJECTED by the limit, or a request neither PASSED nor REJECTED" || return 1
	# A 429 is logged as the client's own limit, never as a full service.
	jq -se 'all(.status != 429 or .refused == "client_limit")' "$work/${tag}b.log" >/dev/null ||
		fail "a 429 not logged refused=client_limit" || return 1
	sleep 3 # later cases start with an empty bucket
}

# trust_host recreates nginx with the host's address on the compose network
# in SUDOKU_TRUSTED_CLIENTS, so nginx's per-client limit (100 r/s) leaves
# this one address alone: from here on it stands for many clients.
trust_host() {
	local net gw
	net=$(docker network ls -q --filter "label=com.docker.compose.project=$project" | head -1)
	gw=$(docker network inspect -f '{{range .IPAM.Config}}{{.Gateway}} {{end}}' "$net" | tr ' ' '\n' | grep -v : | grep . | head -1)
	[[ -n $gw ]] || fail "no IPv4 gateway on the compose network" || return 1
	echo "     trusting the host's address $gw (nginx recreated)"
	SUDOKU_TRUSTED_CLIENTS=$gw compose up -d --no-deps nginx >/dev/null 2>&1 || fail "recreating nginx" || return 1
	local i
	for i in $(seq 60); do
		[[ $(curl -s -m 5 -o /dev/null -w '%{http_code}' "$base/sudoku?puzzle=$(puzzle 1)") == 200 ]] && return 0
		sleep 1
	done
	fail "nginx did not answer after it was recreated"
}

# record_503s keeps one 503 of each kind (by its error message) from the
# burst's answers in $work/recorded/*.http: the request line, then the answer.
record_503s() {
	local f n url msg
	local -A seen=()
	mkdir -p "$work/recorded"
	while read -r f; do
		msg=$(sed '1,/^\r\?$/d' "$f" | jq -r '.error // empty' 2>/dev/null)
		[[ -n ${seen[x$msg]:-} ]] && continue
		seen[x$msg]=1
		n=${#seen[@]}
		url=$(sed -n "$(basename "$f")p" "$(dirname "$f").urls")
		{ echo "GET ${url#"$base"}"; cat "$f"; } >"$work/recorded/burst-503-$n.http"
		echo "     recorded a 503 for the OpenAPI check: ${msg:-no JSON error}"
	done < <(grep -l '^HTTP/[0-9.]* 503' "$work"/burst-*/* 2>/dev/null)
}

case_burst_503_no_502() {
	# Overload: the workers are throttled to 1% of a CPU (docker update), so a
	# burst of hard puzzles outgrows their pools and queues (shipped settings):
	# some 503 (busy), no other 5xx, and every request answered. Then, with
	# the CPU back, the max_fails trap: right after the burst not one 502
	# ("no live upstreams"), all 200. A burst from one address is paced by
	# nginx's per-client limit (the 429 case): the host is trusted first, as
	# the stand-in for many clients.
	trust_host || return 1
	local ids cpus round
	mapfile -t ids < <(containers sudoku)
	cpus=$(docker inspect -f '{{.HostConfig.NanoCpus}}' "${ids[@]}" | head -1)
	cpus=$(awk -v n="${cpus:-0}" 'BEGIN {print (n > 0 ? n / 1e9 : 1)}')
	# 1%, Docker's floor: at 5% the fast solver sometimes kept up well enough
	# that nginx's retry on the other worker hid every 503 from the client.
	docker update --cpus 0.01 "${ids[@]}" >/dev/null || fail "docker update --cpus failed" || return 1
	: >"$work/codes"
	# Up to six rounds of 400 at once (below nginx's admission limit of 512,
	# so the 503s come from the workers): nginx retries a busy worker's 503
	# on the other, which sometimes has room, so one round may show none.
	# Every answer is kept (par_out) for case_openapi_recorded.
	for ((round = 0; round < 6; round++)); do
		for _ in 1 2 3 4 5 6 7; do sed "s|^|$base/sudoku?puzzle=|" "$data/hard.txt"; done >"$work/burst-$round.urls"
		par_out=$work/burst-$round parallel 400 <"$work/burst-$round.urls" >>"$work/codes"
		grep -q '^503$' "$work/codes" && break
	done
	record_503s
	docker update --cpus "$cpus" "${ids[@]}" >/dev/null || fail "cannot give the workers their $cpus CPUs back" || return 1
	echo "     $(wc -l <"$work/codes") hard puzzles, 400 at once, workers at 1% CPU: $(sort "$work/codes" | uniq -c | tr '\n' ' ')"
	echo "     answers nginx retried on another worker after a 503: $(service_logs nginx | grep -c '"upstream_status":"503, ')"
	grep -q '^503$' "$work/codes" || fail "no 503 at all" || return 1
	! grep -v '^503$' "$work/codes" | grep '^5' >/dev/null || fail "5xx other than 503 in the burst" || return 1
	! grep -q '^000$' "$work/codes" || fail "requests without an answer in the burst" || return 1
	local i
	for i in $(seq 40); do echo "$base/sudoku?puzzle=$(puzzle $((i % 12 + 1)))"; done | parallel 1 >"$work/after"
	echo "     right after the burst, one at a time: $(sort "$work/after" | uniq -c | tr '\n' ' ')"
	[[ $(grep -c '^200$' "$work/after") == 40 ]] || fail "not every request after the burst got 200"
}

case_batch_body_flood() {
	# 150 batch POSTs of almost 1 MiB each at once (comment lines and one
	# puzzle) from a trusted address: nginx admits 64 bodies at a time and
	# answers the rest 503 at once, so nginx is not OOM-killed and every
	# request gets 200 or 503.
	trust_host || return 1
	local nginx_id restarts codes
	nginx_id=$(containers nginx)
	restarts=$(docker inspect -f '{{.RestartCount}}' "$nginx_id")
	{
		echo "f:$(puzzle 1)"
		yes '# padding to make the body large, skipped by the worker' | head -c 990000
		echo
	} >"$work/bigbatch"
	for _ in $(seq 150); do echo "$base/sudoku"; done |
		parallel 150 --data-binary "@$work/bigbatch" >"$work/flood"
	codes=$(sort "$work/flood" | uniq -c | tr '\n' ' ')
	echo "     150 POSTs of $(wc -c <"$work/bigbatch") bytes at once: $codes; nginx memory $(docker stats --no-stream --format '{{.MemUsage}}' "$nginx_id")"
	[[ $(docker inspect -f '{{.State.OOMKilled}} {{.RestartCount}}' "$nginx_id") == "false $restarts" ]] ||
		fail "nginx was OOM-killed or restarted" || return 1
	! grep -qv -e '^200$' -e '^503$' "$work/flood" || fail "answers other than 200 or 503: $codes" || return 1
	grep -q '^200$' "$work/flood" || fail "no batch admitted" || return 1
	req GET "$base/sudoku?puzzle=$(puzzle 1)"
	expect_status 200
}

case_no_https_without_tls() {
	# TLS is off in the base compose file, so HTTPS is not published: a
	# client gets "connection refused", not a handshake that fails silently.
	local published
	published=$(docker port "$(containers nginx)" 8443/tcp 2>/dev/null || true)
	[[ -z $published ]] || fail "8443 published without TLS: $published"
}

case_every_worker() {
	local n seen i
	n=$(containers sudoku | wc -l)
	for i in $(seq 60); do echo "$base/sudoku?puzzle=$(puzzle $((i % 12 + 1)))"; done |
		parallel 4 -w '%{http_code} %header{x-sudoku-worker}\n' >"$work/workers"
	echo "     $n worker containers; status and worker of 60 answers: $(sort "$work/workers" | uniq -c | tr '\n' ' ')"
	((n >= 2)) || fail "only $n worker containers (scale: 2 expected)" || return 1
	! grep -qv '^200 ' "$work/workers" || fail "not every request got 200" || return 1
	seen=$(awk '{print $2}' "$work/workers" | sort -u | grep -c .)
	[[ $seen == "$n" ]] || fail "$seen distinct X-Sudoku-Worker values for $n workers"
}

case_worker_stopped() {
	# Stop one worker while requests flow, 4 at a time: every request still
	# succeeds (nginx retries on the other; sudoku-edge drops the gone address).
	local victim i
	victim=$(containers sudoku | head -1)
	: >"$work/during"
	for i in $(seq 20); do echo "$base/sudoku?puzzle=$(puzzle $((i % 12 + 1)))"; done >"$work/urls"
	(while [[ ! -e $work/stopped ]]; do parallel 4 <"$work/urls" >>"$work/during"; done) &
	local loop=$!
	sleep 1
	docker stop -t 15 "$victim" >/dev/null
	sleep 4 # past sudoku-edge's next resolve rounds (-resolve-interval): traffic after the reload too
	touch "$work/stopped"
	wait "$loop"
	echo "     $(wc -l <"$work/during") requests during and after the stop: $(sort "$work/during" | uniq -c | tr '\n' ' ')"
	docker start "$victim" >/dev/null
	(($(wc -l <"$work/during") >= 40)) || fail "too few requests to tell" || return 1
	! grep -qv '^200$' "$work/during" || fail "requests failed while a worker stopped"
}

# answered_ids FILE: the ids of the answer lines of a batch response body in FILE that
# solve a puzzle ("b<n>:<81 digits>"), one a line.
# answer_kinds FILE: how many of a batch answer's lines are solutions,
# ServerTooBusy and anything else, in one line.
answer_kinds() {
	tr -d '\r' <"$1" | awk -F: '$NF ~ /^[1-9]{81}/ { s++; next } $NF == "ServerTooBusy" { b++; next } { o++ }
		END { printf "%d solved, %d ServerTooBusy, %d other\n", s, b, o }'
}
answered_ids() { tr -d '\r' <"$1" | grep -E '^b[0-9]+:[1-9]{81}$' | cut -d: -f1 | sort -u; }

# edge_metric NAME: the value of sudoku-edge's metric NAME (its
# -metrics-listen, 9145, read from inside the nginx container); empty if none.
edge_metric() {
	docker exec "$(containers nginx | head -1)" bash -c "exec 3<>/dev/tcp/127.0.0.1/9145 && printf 'GET /metrics HTTP/1.0\\r\\nHost: e\\r\\n\\r\\n' >&3 && cat <&3" |
		awk -v n="$1" '$1 == n { print $2 }'
}

# slow_reader: copies standard input to standard output, about 1,000 lines a
# second, so that a client holds its server back once the buffers between
# them are full.
slow_reader() {
	local line k=0
	while IFS= read -r line; do
		printf '%s\n' "$line"
		((++k % 100)) || sleep 0.1
	done
	[[ -z $line ]] || printf '%s' "$line"
}

# kill_batch_midstream N: sends a batch of N lines ($work/long) and kills
# its worker (SIGKILL) once the answer's headers arrive; the answer goes to
# $work/long.out, curl's exit status to $work/long.rc.
kill_batch_midstream() {
	local n=$1 victim='' w id i fillers=() hosts=()
	for id in $(containers sudoku); do
		hosts+=("$(docker inspect -f '{{.Config.Hostname}}' "$id")=$id")
	done
	# The stack solves a batch in a fraction of a second. Two more batches
	# beside it share the workers' pools, and the client reads the answer
	# at about 1,000 lines a second (slow_reader; curl's --limit-rate would
	# slow the upload too): once nginx's buffers (256 KiB,
	# sudoku-fastcgi.conf) are full the worker waits for the reader, so it
	# still streams when it dies.
	rm -f "$work/long.headers"
	for i in 1 2; do
		curl -s -m 60 -o /dev/null -X POST --data-binary "@$work/long" "$base/sudoku" &
		fillers+=($!)
	done
	(
		curl -s -m 60 -D "$work/long.headers" -X POST --data-binary "@$work/long" "$base/sudoku" | slow_reader >"$work/long.out"
		echo "${PIPESTATUS[0]}" >"$work/long.rc"
	) &
	local pid=$!
	for i in $(seq 500); do
		grep -qi '^x-sudoku-worker:' "$work/long.headers" 2>/dev/null && break
		sleep 0.02
	done
	w=$(awk -F': ' 'tolower($1) == "x-sudoku-worker" { sub(/\r$/, "", $2); print $2 }' "$work/long.headers")
	for id in "${hosts[@]}"; do
		[[ ${id%%=*} == "$w" ]] && victim=${id#*=}
	done
	[[ -n $victim ]] || { kill "$pid" "${fillers[@]}"; fail "no worker container named '$w' answers the batch"; return 1; }
	docker kill "$victim" >/dev/null
	wait "$pid" "${fillers[@]}"
	docker start "$victim" >/dev/null
	answered_ids "$work/long.out" >"$work/long.ids"
	echo "     $n lines, worker $w killed mid-stream: curl exit $(<"$work/long.rc") (18: the answer ended without its last chunk), $(wc -l <"$work/long.ids") solved; the answer's lines: $(answer_kinds "$work/long.out")"
}

case_batch_stream_broken() {
	# A batch whose worker dies mid-stream. nginx ends the client's answer
	# without its last chunk (the batch location buffers, so the worker's
	# closed connection is an error): curl exits non-zero (18), the broken
	# batch does not look whole, and sudoku-edge counts it. The lines
	# without an answer, sent again as the page does, are all answered.
	# A worker that answered every line before the kill (the pool busy
	# for the fillers' lines: each answered ServerTooBusy at once) leaves
	# nothing to tell: the batch is sent again, up to three times.
	local n=10000 rc i id attempt truncated
	truncated=$(edge_metric sudoku_edge_nginx_truncated_answers_total)
	awk -v n=$n '{ p[NR] = $0 } END { for (i = 1; i <= n; i++) print "b" i ":" p[(i - 1) % NR + 1] }' "$data/hard.txt" >"$work/long"
	for attempt in 1 2 3; do
		kill_batch_midstream $n || return 1
		rc=$(<"$work/long.rc")
		((rc == 0 && $(grep -c . "$work/long.out") == n)) || break
		echo "     every line had its answer before the kill: nothing to tell (attempt $attempt of 3)"
		((attempt < 3)) || fail "every line answered before the kill, three times" || return 1
		for id in $(containers sudoku); do
			wait_healthy "$id" worker 30 || return 1
		done
	done
	((rc != 0)) || fail "curl exit 0 with $(grep -c . "$work/long.out") of $n lines: the broken batch ended like a whole one" || return 1
	for i in $(seq 20); do
		(($(edge_metric sudoku_edge_nginx_truncated_answers_total) > ${truncated:-0})) && break
		sleep 0.5
	done
	echo "     sudoku_edge_nginx_truncated_answers_total: ${truncated:-none} before, $(edge_metric sudoku_edge_nginx_truncated_answers_total) after"
	(($(edge_metric sudoku_edge_nginx_truncated_answers_total) > ${truncated:-0})) || fail "the truncated answer was not counted" || return 1
	# Send the unanswered lines again (to the other worker).
	awk -F: 'NR == FNR { done[$1]; next } !($1 in done)' "$work/long.ids" "$work/long" >"$work/again"
	curl -s -m 60 -o "$work/again.out" -X POST --data-binary "@$work/again" "$base/sudoku"
	rc=$?
	((rc == 0)) || fail "the resent batch ended with curl exit $rc, not a clean end" || return 1
	sort -u "$work/long.ids" <(answered_ids "$work/again.out") >"$work/all.ids"
	echo "     resent $(wc -l <"$work/again") lines: clean end, $(wc -l <"$work/all.ids") of $n answered in all"
	[[ $(wc -l <"$work/all.ids") == "$n" ]] || fail "$((n - $(wc -l <"$work/all.ids"))) lines never answered"
}

case_worker_metrics() {
	# Each worker's internal listener (9001: /metrics, /healthz, /readyz) is
	# reachable inside the compose network only (the 404 case shows nginx does
	# not route it). Scrape every worker from the nginx container and check
	# that the solves this suite made are counted.
	local nginx_id ip
	nginx_id=$(containers nginx | head -1)
	for ip in $(for id in $(containers sudoku); do
		docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}' "$id"
	done); do
		docker exec "$nginx_id" bash -c "exec 3<>/dev/tcp/$ip/9001 && printf 'GET /metrics HTTP/1.0\\r\\nHost: w\\r\\n\\r\\n' >&3 && cat <&3" >"$work/wmetrics" ||
			fail "cannot scrape $ip:9001 from the nginx container" || return 1
		grep -q '^HTTP/1.[01] 200' "$work/wmetrics" || fail "$ip:9001/metrics: $(head -1 "$work/wmetrics")" || return 1
		grep -Eq '^sudoku_requests_total\{outcome="solved",route="get"\} [1-9]' "$work/wmetrics" ||
			fail "$ip: no solved requests counted: $(grep '^sudoku_requests_total' "$work/wmetrics" | tr '\n' ' ')" || return 1
		echo "     $ip: $(grep '^sudoku_requests_total{outcome="solved",route="get"}' "$work/wmetrics")"
	done
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

# No container of the stack has a setuid or setgid file: nothing in it gains
# a privilege on exec, where no-new-privileges is not set (Swarm). Every
# image strips them as docker/nginx.Dockerfile does.
case_no_setuid() {
	local id name files bad=0 n=0
	for id in $(containers); do
		name=$(docker inspect -f '{{index .Config.Labels "com.docker.compose.service"}}' "$id")
		n=$((n + 1))
		files=$(setuid_files "$id") || true
		[[ -z $files ]] || { fail "$name: $(tr '\n' ' ' <<<"$files")"; bad=1; }
	done
	((n >= 5)) || fail "scanned $n containers, want every service's (5 or more)" || return 1
	((bad == 0)) || return 1
	echo "     $n containers scanned, none has a setuid or setgid file"
}

# Alerts reach Alertmanager: with nginx stopped, the exporter reads
# nginx_up 0, SudokuNginxDown fires after its production `for:` (1m) and
# Prometheus sends it on; Alertmanager's API lists it. nginx is started
# again (and healthy) before the case ends.
case_alert_reaches_alertmanager() {
	local am=http://127.0.0.1:$alertmanager_port t0=$SECONDS got=
	curl -fs -m 5 "$am/-/ready" >/dev/null || fail "Alertmanager not ready on $am" || return 1
	[[ $(curl -fs -m 5 "$am/api/v2/alerts?filter=alertname%3DSudokuNginxDown" | jq length) == 0 ]] ||
		fail "SudokuNginxDown active before nginx stopped" || return 1
	compose stop nginx >/dev/null 2>&1 || fail "could not stop nginx" || return 1
	while ((SECONDS - t0 < 180)); do
		got=$(curl -fs -m 5 "$am/api/v2/alerts?filter=alertname%3DSudokuNginxDown" |
			jq -r '[.[] | select(.status.state == "active") | .labels.severity] | first // empty')
		[[ -n $got ]] && break
		sleep 2
	done
	local waited=$((SECONDS - t0))
	compose start nginx >/dev/null 2>&1
	wait_healthy "$(containers nginx)" nginx 60 || fail "nginx not healthy again after the case" || return 1
	[[ -n $got ]] || fail "SudokuNginxDown not in Alertmanager's /api/v2/alerts ${waited}s after nginx stopped; Prometheus: $(curl -s -m 5 "http://127.0.0.1:$prometheus_port/api/v1/alerts" | head -c 400)" || return 1
	[[ $got == critical ]] || fail "SudokuNginxDown reached Alertmanager with severity '$got', want critical" || return 1
	echo "     SudokuNginxDown (critical) in Alertmanager ${waited}s after nginx stopped; nginx healthy again"
}

case_stop_refuses() {
	# A graceful stop (SIGTERM, as docker stop sends) while a batch is in
	# flight: nginx drains it, and meanwhile a new connection to its port is
	# refused at once (tried from inside the container: the host's published
	# port goes through docker-proxy, which accepts anything). The batch
	# still gets a 200. nginx is started again afterwards. The batch's body
	# comes at 200 KB/s (about 4 s, within nginx's 12 s
	# worker_shutdown_timeout and its 5 s between two reads of a body): the
	# stack answers a whole batch faster than the stop takes effect.
	local id n=10000 i out refused='' pid
	id=$(containers nginx | head -1)
	awk -v n=$n '{ p[NR] = $0 } END { for (i = 1; i <= n; i++) print "s" i ":" p[(i - 1) % NR + 1] }' "$data/hard.txt" >"$work/stopbatch"
	curl -s -m 60 --limit-rate 200k -o "$work/stopbatch.out" -w '%{http_code}' -X POST --data-binary "@$work/stopbatch" "$base/sudoku" >"$work/stopbatch.code" &
	pid=$!
	sleep 1
	docker kill -s TERM "$id" >/dev/null || fail "cannot signal nginx's container" || return 1
	for i in $(seq 20); do
		out=$(docker exec "$id" bash -c 'exec 3<>/dev/tcp/127.0.0.1/8080 && echo accepted' 2>&1)
		if grep -q 'Connection refused' <<<"$out"; then
			refused=1
			break
		fi
		sleep 0.2
	done
	wait "$pid"
	echo "     during the drain a new connection: ${out:-nothing} (try $i); the batch in flight: $(cat "$work/stopbatch.code"), $(grep -c '^s[0-9]*:' "$work/stopbatch.out") lines"
	compose up -d --no-deps nginx >/dev/null 2>&1 || fail "starting nginx again" || return 1
	for i in $(seq 60); do
		[[ $(curl -s -m 5 -o /dev/null -w '%{http_code}' "$base/sudoku?puzzle=$(puzzle 1)") == 200 ]] && break
		sleep 1
	done
	[[ -n $refused ]] || fail "a new connection during the drain was not refused" || return 1
	[[ $(cat "$work/stopbatch.code") == 200 ]] || fail "the batch in flight during the stop got $(cat "$work/stopbatch.code")"
}

# stack_make TARGET: the Makefile's TARGET (make down, make clean-stack) as a
# user runs it, pointed at this suite's project by compose's own environment
# variables; its output goes to $work/make-TARGET.log.
stack_make() {
	COMPOSE_PROJECT_NAME=$project COMPOSE_PROFILES=monitoring COMPOSE_FILE=docker-compose.yml \
		make --no-print-directory "$1" >"$work/make-$1.log" 2>&1 ||
		fail "make $1 failed: $(tail -5 "$work/make-$1.log")"
}

case_down_keeps_volumes() {
	# Last case: it takes the stack down. `make down` keeps the named volumes
	# (edge-data holds the ACME account and certificates), `make clean-stack`
	# (the stack part of make clean) removes them and says so.
	local vol
	vol=$(docker volume ls -q --filter "label=com.docker.compose.project=$project" --filter "label=com.docker.compose.volume=edge-data")
	[[ -n $vol ]] || fail "no edge-data volume for project $project before make down" || return 1
	stack_make down || return 1
	[[ -z $(docker ps -aq --filter "label=com.docker.compose.project=$project") ]] ||
		fail "make down left containers: $(docker ps -a --filter "label=com.docker.compose.project=$project" --format '{{.Names}}' | tr '\n' ' ')" || return 1
	docker volume inspect "$vol" >/dev/null 2>&1 || fail "make down removed the volume $vol" || return 1
	echo "     after make down: no containers, volume $vol kept"
	stack_make clean-stack || return 1
	grep -q 'edge-data' "$work/make-clean-stack.log" || fail "make clean-stack does not say it removes edge-data: $(cat "$work/make-clean-stack.log")" || return 1
	! docker volume inspect "$vol" >/dev/null 2>&1 || fail "make clean-stack left the volume $vol" || return 1
	echo "     after make clean-stack: volume $vol removed; it said: $(head -1 "$work/make-clean-stack.log")"
}

# -------------------------------------------------------------------- main
start=$SECONDS
if [[ ${SUDOKU_IT_REUSE:-} == 1 ]]; then
	log "SUDOKU_IT_REUSE=1: using the running project $project"
elif ! bring_up; then
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
run_case "404 unknown paths (internal endpoints unreachable), naming what exists" case_unknown_path
run_case "GET / is an index of the API for curl, the page for a browser" case_index
run_case "414 huge URI" case_huge_uri
run_case "413 huge body" case_huge_body
run_case "400 huge header" case_huge_header
run_case "the largest URI and headers nginx accepts: their own answer, never 503" case_largest_request
run_case "routes without a body refuse one before reading it (413/405, JSON)" case_no_body_routes
run_case "one client holding bodies on every route: nginx within idle + 32 MiB" case_held_bodies_memory
run_case "one address holding slow batch bodies: another client gets no error" case_slow_batches_second_client
run_case "bad Host is 4xx, not 500" case_bad_host
run_case "stats JSON fields" case_stats
run_case "headers: server_tokens off, request id, worker" case_headers
run_case "request id in nginx's JSON log and the worker's log" case_request_id_logged
run_case "answers match the OpenAPI description (nginx/www/openapi.yaml)" case_openapi
run_case "Prometheus: every target up, rules and dashboard queries run" case_monitoring
run_case "429 per-client limit with JSON body" case_rate_limit
run_case "per-client limit: within it PASSED (never DELAYED), over it 429 REJECTED (nginx's log)" case_limit_nodelay
run_case "burst: some 503, no other 5xx, then no 502" case_burst_503_no_502
run_case "503 answers from the burst match the OpenAPI description" case_openapi_recorded
run_case "a flood of large batch POSTs: 200 or 503, nginx not OOM-killed" case_batch_body_flood
run_case "requests reach every worker" case_every_worker
run_case "worker /metrics on the internal port counts the solves" case_worker_metrics
run_case "a worker stops, requests keep succeeding" case_worker_stopped
run_case "a batch whose worker dies mid-stream: truncated (curl non-zero), counted, resent, every line answered" case_batch_stream_broken
run_case "exporter shows nginx_connections_accepted" case_exporter
run_case "no setuid or setgid file in any container" case_no_setuid
run_case "nginx stopped: SudokuNginxDown reaches Alertmanager's API" case_alert_reaches_alertmanager
run_case "HTTPS not published without TLS" case_no_https_without_tls
run_case "a graceful stop refuses new connections at once while it drains" case_stop_refuses
# Takes the stack down, so it runs last, and not when the stack is to stay up.
if [[ ${SUDOKU_IT_KEEP:-} == 1 || ${SUDOKU_IT_REUSE:-} == 1 ]]; then
	log "SUDOKU_IT_KEEP/REUSE: not running \"make down keeps volumes\" (it takes the stack down)"
else
	run_case "make down keeps the edge-data volume, make clean-stack removes it" case_down_keeps_volumes
fi

log "suite took $((SECONDS - start))s"
if ((failed > 0)); then
	log "failed: ${failures[*]}"
fi
echo "$passed passed, $failed failed"
((failed == 0))

#!/usr/bin/env bash
# overload-levers.sh measures what each lever on nginx's rejection path does
# to the overload's bound: for each lever it runs `make bench-overload` (the
# reliability suite's -bench-overload: a, b, r = b / a, (1 - k r) / (1 - r)
# and the goodput at k = 2 and 3, from the containers' cgroups) on a stack
# whose nginx files are the image's, changed by one sed script and mounted
# over them by a compose override. It prints one line per lever and k.
#
# Levers: shipped (as built), static-body (the 503's JSON without
# $request_id), headers (the 503 with Retry-After and X-Request-Id only), no-log (no
# stdout line for nginx's own 503s, not even the sample), no-error-page
# (nginx's built-in 503 page: no JSON, no Retry-After; the floor, not
# shippable), published (the client through the published port instead of
# nginx's address on the compose network).
# Env: LEVERS (all of the above), OUT (a temp dir; each run's output).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-$(mktemp -d /tmp/overload-levers.XXXXXX)}
read -ra levers <<<"${LEVERS:-shipped static-body headers no-log no-error-page published}"
project=sudoku-reliability
image=${project}_nginx
say() { printf 'overload-levers: %s\n' "$*" >&2; }

say "building the nginx image ($image)"
docker-compose -p "$project" build nginx >"$out/build.log" 2>&1 ||
	docker compose -p "$project" build nginx >"$out/build.log" 2>&1
for lever in "${levers[@]}"; do
	dir=$out/$lever
	mkdir -p "$dir"
	for f in nginx.conf sudoku-locations.conf; do
		docker run --rm --entrypoint cat "$image" "/etc/nginx/$f" >"$dir/$f"
	done
	block='/location = \/_sudoku_error\/503 {/,/^    }/'
	via=direct
	case $lever in
	shipped | published) ;;
	static-body) sed -i "$block s/,\"request_id\":\"\$request_id\"//" "$dir/sudoku-locations.conf" ;;
	headers) sed -i "$block {/Strict-Transport-Security/d; /X-Content-Type-Options/d}" "$dir/sudoku-locations.conf" ;;
	no-log) sed -i "s/\"503:\" \\\$sudoku_in_sample;/\"503:\" 0;/" "$dir/nginx.conf" ;;
	no-error-page) sed -i '/error_page 503 \/_sudoku_error\/503;/d' "$dir/nginx.conf" ;;
	*) say "unknown lever $lever"; exit 2 ;;
	esac
	[[ $lever == published ]] && via=published
	if [[ $lever != shipped && $lever != published ]] && cmp -s "$dir/nginx.conf" <(docker run --rm --entrypoint cat "$image" /etc/nginx/nginx.conf) &&
		cmp -s "$dir/sudoku-locations.conf" <(docker run --rm --entrypoint cat "$image" /etc/nginx/sudoku-locations.conf); then
		say "$lever: the sed script changed nothing"
		exit 1
	fi
	cat >"$dir/override.yml" <<YAML
version: "2.4"
services:
  nginx:
    volumes:
      - $dir/nginx.conf:/etc/nginx/nginx.conf:ro
      - $dir/sudoku-locations.conf:/etc/nginx/sudoku-locations.conf:ro
YAML
	say "$lever (load via $via), output in $dir/run.log"
	go run ./tests/reliability -bench-overload -capacity 1 -via "$via" -compose-override "$dir/override.yml" >"$dir/run.log" 2>&1 || true
	grep -o 'saturation [0-9]*/s with 32 in flight; [^;]*(a)' "$dir/run.log" | sed "s/^/$lever: /" || say "$lever: no saturation figure (see $dir/run.log)"
	grep -o 'offered [0-9]* x: [^;]*; the stack used [^;]*; [^;]*; other failures: [^;]*' "$dir/run.log" | sed "s/^/$lever: /" || say "$lever: no figures (see $dir/run.log)"
done

#!/usr/bin/env bash
# levers.sh (make bench-levers) runs tests/bench/path.sh on host processes
# once per lever below, ROUNDS times in turn (so that the machine's drift
# spreads over all of them), and prints one table: each lever's c32 and
# c480 answers/s and nginx and worker CPU per answer. Unix sockets, no
# rejection runs. Env: N (30000), ROUNDS (2), LEVERS (names, default all).
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${ROUNDS:-2}
declare -A sed_of env_of
names=(baseline no-access-log no-worker-access-log no-client-limit no-host-check no-admission fastcgi-buffer-4k gc-100 gc-1600)
sed_of[no-access-log]='s/^ *access_log .*/access_log off;/'
sed_of[no-client-limit]='/limit_req zone=sudoku_req /d'
# shellcheck disable=SC2016 # an nginx variable in a sed script
sed_of[no-host-check]='/if ($sudoku_bad_host)/,/^ *}$/d'
sed_of[no-admission]='/include .*admission.conf;/d'
sed_of[fastcgi-buffer-4k]='s/^fastcgi_buffer_size 16k;/fastcgi_buffer_size 4k;/'
env_of[no-worker-access-log]='SUDOKU_FCGI_ACCESS_LOG=false'
env_of[gc-100]='SUDOKU_FCGI_GC_PERCENT=100'
env_of[gc-1600]='SUDOKU_FCGI_GC_PERCENT=1600'
read -r -a names <<<"${LEVERS:-${names[*]}}"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for r in $(seq "$rounds"); do
	for l in "${names[@]}"; do
		echo "== $(date -u +%T) round $r/$rounds: $l" >&2
		NGINX_SED=${sed_of[$l]:-} WORKER_ENV=${env_of[$l]:-} N=${N:-30000} ROUNDS=1 TRANSPORTS=unix REJECT=0 \
			tests/bench/path.sh 2>"$out/path.log" | sed -n "s/^| unix |/| $l |/p" >>"$out/rows.md"
		grep -q "^| $l |" "$out/rows.md" || { echo "$l: no figures; path.sh said:" >&2; tail -5 "$out/path.log" >&2; }
	done
done
echo "| lever | c32 answers/s | c480 answers/s | c480 / c32 | nginx us/answer c32 | c480 | workers us/answer c32 | c480 |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
awk -F'|' '
	{ for (i = 2; i <= NF; i++) gsub(/^ +| +$/, "", $i) }
	{ k = $2 SUBSEP $3; n[k]++; tp[k] += $4; ng[k] += $7; wk[k] += $8; if (!($2 in seen)) { seen[$2] = 1; order[++m] = $2 } }
	END {
		for (i = 1; i <= m; i++) {
			l = order[i]; a = l SUBSEP 32; b = l SUBSEP 480
			printf "| %s | %.0f | %.0f | %.2f | %.1f | %.1f | %.1f | %.1f |\n", l, tp[a] / n[a], tp[b] / n[b], (tp[b] / n[b]) / (tp[a] / n[a]), ng[a] / n[a], ng[b] / n[b], wk[a] / n[a], wk[b] / n[b]
		}
	}' "$out/rows.md"

#!/usr/bin/env bash
# check.sh PROMETHEUS_URL: checks a running stack's Prometheus (the compose
# profile "monitoring"): every scrape job has all its targets up, every rule
# evaluates without error, and every query of the Grafana dashboard
# (docker/grafana/sudoku-dashboard.json) runs. Waits up to 60 s for the
# first scrapes. Prints what it checks; exits 1 on the first failure.
set -euo pipefail
url=${1:?usage: check.sh PROMETHEUS_URL}
cd "$(dirname "$0")/../.."
say() { printf 'monitoring: %s\n' "$*" >&2; }

query() { # expr: the JSON answer of an instant query
	curl -fsS --max-time 5 --data-urlencode "query=$1" "$url/api/v1/query"
}

say "waiting for every target of sudoku-workers, sudoku-edge, nginx and alertmanager to be up"
for i in $(seq 60); do
	targets=$(curl -fsS --max-time 5 "$url/api/v1/targets" 2>/dev/null) || targets='{}'
	jobs=$(jq -r '[.data.activeTargets[]? | select(.health == "up") | .labels.job] | unique | join(" ")' <<<"$targets" 2>/dev/null) || jobs=
	down=$(jq -r '[.data.activeTargets[]? | select(.health != "up")] | length' <<<"$targets" 2>/dev/null) || down=1
	if [[ $jobs == "alertmanager nginx sudoku-edge sudoku-workers" && $down == 0 ]]; then
		break
	fi
	((i % 10 == 0)) && say "after ${i}s: up jobs [$jobs], targets not up: $down"
	sleep 1
done
[[ $jobs == "alertmanager nginx sudoku-edge sudoku-workers" && $down == 0 ]] || {
	say "FAIL: targets: $(jq -c '[.data.activeTargets[] | {job: .labels.job, instance: .labels.instance, health, lastError}]' <<<"$targets")"
	exit 1
}
workers=$(jq '[.data.activeTargets[] | select(.labels.job == "sudoku-workers")] | length' <<<"$targets")
say "targets up: $(jq '.data.activeTargets | length' <<<"$targets") ($workers workers)"

# Prometheus sends its alerts somewhere: Alertmanager (prometheus.yml).
ams=$(curl -fsS --max-time 5 "$url/api/v1/alertmanagers" | jq -r '[.data.activeAlertmanagers[].url] | join(" ")')
[[ -n $ams ]] || { say "FAIL: Prometheus has no active Alertmanager"; exit 1; }
say "alerts go to: $ams"

rules=$(curl -fsS --max-time 5 "$url/api/v1/rules")
bad=$(jq -r '[.data.groups[].rules[] | select(.health == "err") | "\(.name): \(.lastError)"] | join("; ")' <<<"$rules")
[[ -z $bad ]] || { say "FAIL: rules in error: $bad"; exit 1; }
say "rules loaded: $(jq '[.data.groups[].rules[]] | length' <<<"$rules"), none in error"

n=0
while IFS= read -r expr; do
	answer=$(query "$expr") || { say "FAIL: dashboard query did not run: $expr"; exit 1; }
	[[ $(jq -r .status <<<"$answer") == success ]] || { say "FAIL: $expr: $answer"; exit 1; }
	n=$((n + 1))
done < <(jq -r '.panels[].targets[].expr' docker/grafana/sudoku-dashboard.json)
say "dashboard queries run: $n"

up=$(query 'sum(up{job="sudoku-workers"})' | jq -r '.data.result[0].value[1]')
[[ $up == "$workers" ]] || { say "FAIL: sum(up) of the workers is $up, want $workers"; exit 1; }
build=$(query 'count(sudoku_build_info)' | jq -r '.data.result[0].value[1] // 0')
[[ $build -ge 1 ]] || { say "FAIL: no sudoku_build_info series"; exit 1; }
say "ok: $workers workers up, sudoku_build_info from $build targets"

#!/usr/bin/env bash
# path.sh (make bench-path) measures the request path at two depths on host
# processes: Debian's nginx with the project's config (nginx/render-host.sh,
# 2 worker processes) in front of 2 sudoku-fcgi workers, and `sudoku-load
# batch` GETs rotating the puzzle file, with 32 and then 480 requests in
# flight. For each run it prints verified answers/s, p99, the CPU that nginx
# (master and workers) and the sudoku-fcgi processes spent per answer (from
# /proc/<pid>/schedstat, nanoseconds on CPU) and the FastCGI connections the
# workers accepted per 10,000 answers. Runs alternate between the transports
# in TRANSPORTS (tcp: 127.0.0.1 ports; unix: socket files), ROUNDS times.
# Each depth is warmed up first (a short batch at that depth), so the
# figures are of the steady state, not of the connections opened at the
# start. Two last runs per transport (first round) measure rejections, 32 in
# flight each: nginx's concurrency cap set to 1, so nearly every request is
# turned away by nginx with 503 (nginx us/request against nginx us/answer),
# and workers with one solver slot and no queue, so most GETs get a
# worker's busy 503 (workers us/GET: every GET the workers answered).
# On compose every run also prints what dockerd and containerd-shim spent;
# a rejection's cost there is make bench-overload's (tests/reliability).
# Transport "anchor" runs the proxy_pass alternative instead (start_anchor).
# The summary is the best c32 run of the first transport, and then its
# ratios to the anchor's best:
#   path: c32 N req/s p99 X ms, c480 M req/s, nginx A us, workers B us per answer
#   against the anchor: c32 R, c480 S of its answers/s; nginx + workers C us per answer against D (E)
#
# COMPOSE=1 measures the compose stack instead (project sudoku-path, built
# from this checkout, brought up afresh for each transport: unix sockets as
# it ships, TCP with SUDOKU_FCGI_LISTEN=:9000 SUDOKU_WORKERS=sudoku:9000),
# once through its published port (127.0.0.1:31780, Docker's port proxy)
# and once straight to nginx's address on the compose network; CPU from
# each container's cgroup (cpuacct), the client trusted
# (SUDOKU_TRUSTED_CLIENTS) so the per-client limits do not apply.
#
# Env: PUZZLES (tests/reliability/testdata/test1000), N (60000 GETs per run),
# TRANSPORTS ("unix tcp anchor"), ROUNDS (3), DEPTHS ("32 480"), OUT (a temp dir;
# raw JSON per run), COMPOSE (0), WORKER_ENV (more SUDOKU_FCGI_*=value words
# for the workers, e.g. SUDOKU_FCGI_GC_PERCENT=100), NGINX_SED (a sed script
# run on the host stack's rendered nginx.conf, sudoku-locations.conf and
# sudoku-fastcgi.conf, to measure a change of the config: 's/^ *access_log .*/access_log off;/'),
# PROCS (1: GOMAXPROCS of each worker and anchor server), REJECT (1; 0
# skips the rejection runs), CLIENT (sudoku-load, which checks
# every answer; wrk: `wrk -t1 -c<depth> -d$WRK_DURATION` (10s) rotating the
# puzzles with a Lua script, lighter on the shared cores but it checks only the
# status). Ports 31600-31799 on 127.0.0.1.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
puzzles=${PUZZLES:-$root/tests/reliability/testdata/test1000}
n=${N:-60000} rounds=${ROUNDS:-3}
read -r -a transports <<<"${TRANSPORTS:-unix tcp anchor}"
read -r -a depths <<<"${DEPTHS:-32 480}"
work=$(mktemp -d)
chmod 755 "$work" # nginx's worker processes (another user when run as root) reach the sockets
out=${OUT:-$work/out}
mkdir -p "$out"
pids=()
# shellcheck source=tests/lib.sh
source "$root/tests/lib.sh" # wait_for, say, stop_pids, oncpu
trap 'stop_pids "${pids[@]}"; rm -rf "$work"' EXIT

say "building into $work/bin"
go build -trimpath -o "$work/bin/" ./cmd/sudoku-fcgi ./cmd/sudoku-load ./tests/bench/anchor
load=$work/bin/sudoku-load
big=$work/puzzles.txt
grep -E '^[0-9.]{81}$' "$puzzles" | awk -v n="$n" '{p[c++] = $0} END {for (i = 0; i < n; i++) print p[i % c]}' >"$big"

# Run as root, nginx's worker processes run as another user, which needs
# the workers' sockets (0660) to be of its group: nginx is told the user and
# group, and the workers the group (-socket-group).
nginx_user="" socket_group=""
if ((EUID == 0)); then
	socket_group=$(id -gn nobody)
	nginx_user="user nobody $socket_group;"
fi

# The anchor (transport "anchor"): what an engineer would write instead of
# FastCGI. Two tests/bench/anchor servers (the same fcgi.Service over
# net/http, with the worker's GC defaults) behind a minimal nginx: no log,
# no limits, proxy_pass with HTTP/1.1 keep-alive to the upstream.
start_anchor() {
	local i port servers=""
	worker_pids=() internal=()
	for i in 1 2; do
		port=$((31600 + 10 * i))
		env GOMAXPROCS="$procs" "$work/bin/anchor" -listen 127.0.0.1:$port -id a$i 2>>"$out/anchor$i.log" &
		worker_pids+=($!)
		pids+=($!)
		servers+="server 127.0.0.1:$port; "
		wait_for "http://127.0.0.1:$port/sudoku/stats"
	done
	rm -rf "$work/nginx"
	mkdir -p "$work/nginx/logs"
	cat >"$work/nginx/nginx.conf" <<-CONF
		events { worker_connections 4096; }
		http {
		    access_log off;
		    upstream anchor { $servers keepalive 64; }
		    server {
		        listen 127.0.0.1:31680 backlog=4096;
		        location / {
		            proxy_pass http://anchor;
		            proxy_http_version 1.1;
		            proxy_set_header Connection "";
		        }
		    }
		}
	CONF
	nginx -p "$work/nginx" -c "$work/nginx/nginx.conf" -g "daemon off; worker_processes 2; $nginx_user" >/dev/null 2>"$out/nginx-anchor.err" &
	nginx_master=$!
	pids+=($!)
	wait_for "http://127.0.0.1:31680/sudoku/stats"
	mapfile -t nginx_pids < <(echo "$nginx_master"; pgrep -P "$nginx_master")
}

start_stack() { # transport: 2 workers (with $worker_env) and nginx; sets nginx_pids, worker_pids, internal, nginx_master
	local tr=$1 i addr servers="" port
	[[ $tr != anchor ]] || { start_anchor; return; }
	worker_pids=() internal=()
	for i in 1 2; do
		port=$((31600 + 10 * i))
		if [[ $tr == unix ]]; then addr=$work/w$i.sock; servers+="unix:$addr "; else addr=127.0.0.1:$port; servers+="$addr "; fi
		rm -f "$work/w$i.sock"
		# shellcheck disable=SC2086 # WORKER_ENV is a list of VAR=value words
		env GOMAXPROCS="$procs" SUDOKU_FCGI_LISTEN="$addr" SUDOKU_FCGI_INTERNAL_LISTEN=127.0.0.1:$((port + 1)) SUDOKU_FCGI_ID=w$i SUDOKU_FCGI_SOCKET_GROUP="$socket_group" $worker_env \
			"$work/bin/sudoku-fcgi" 2>>"$out/worker$i-$tr.log" &
		worker_pids+=($!)
		pids+=($!)
		internal+=($((port + 1)))
		wait_for "http://127.0.0.1:$((port + 1))/readyz"
	done
	rm -rf "$work/nginx"
	SUDOKU_WORKERS=$servers nginx/render-host.sh "$work/nginx" 31680 31682 31681 >/dev/null
	# servers.conf and admission.conf carry sudoku-edge's defaults, as the stack runs them.
	# Access log to a file on the host run, as /dev/stdout would be a terminal or a pipe here.
	sed -i "s#access_log /dev/stdout#access_log $work/nginx/logs/access.log#" "$work/nginx/nginx.conf"
	[[ -z ${NGINX_SED:-} ]] || sed -i -e "$NGINX_SED" "$work/nginx/nginx.conf" "$work/nginx/sudoku-locations.conf" "$work/nginx/sudoku-fastcgi.conf"
	nginx -p "$work/nginx" -c "$work/nginx/nginx.conf" -g "daemon off; worker_processes 2; $nginx_user" >/dev/null 2>"$out/nginx-$tr.err" &
	nginx_master=$!
	pids+=($!)
	wait_for "http://127.0.0.1:31680/sudoku/stats"
	mapfile -t nginx_pids < <(echo "$nginx_master"; pgrep -P "$nginx_master")
}
stop_stack() {
	kill "${worker_pids[@]}" "$nginx_master" 2>/dev/null || true
	wait "${worker_pids[@]}" "$nginx_master" 2>/dev/null || true
}

# Host stack CPU and connection counters (the measure hooks).
host_cpu_nginx() { oncpu "${nginx_pids[@]}"; }
host_cpu_workers() { oncpu "${worker_pids[@]}"; }
host_conns() { conns_at "${internal[@]/#/127.0.0.1:}"; }
conns_at() { # host:port...: FastCGI connections accepted, closed so far (accepted - open), GETs the workers answered, GCs and the largest heap in use (MiB), summed
	local a acc=0 closed=0 gets=0 gcs=0 heap=0 v o g n h
	for a in "$@"; do
		read -r v o g n h < <(curl -fs "http://$a/metrics" | awk '
			/^sudoku_fastcgi_connections_accepted_total / {a = $2}
			/^sudoku_fastcgi_connections / {o = $2}
			/^sudoku_requests_total\{.*route="get"/ {g += $2}
			/^go_gc_duration_seconds_count / {n = $2}
			/^go_memstats_heap_inuse_bytes / {h = $2 / 1048576}
			END {printf "%d %d %d %d %d\n", a, o, g, n, h}')
		acc=$((acc + v)) closed=$((closed + v - o)) gets=$((gets + g)) gcs=$((gcs + n))
		((h > heap)) && heap=$h
	done
	echo "$acc $closed $gets $gcs $heap"
}

measure() { # label url depth prefix: one batch run, one table row; prefix names the CPU hooks
	local label=$1 url=$2 c=$3 hook=$4 a0 a1 x0 x1 g0 g1 gc0 gc1 h1 n0 n1 w0 w1 tp p99 ok errs line name
	name=$(tr -c 'a-z0-9\n' - <<<"$label")-c$c-$round
	read -r a0 x0 g0 gc0 _ < <("${hook}_conns")
	n0=$("${hook}_cpu_nginx") w0=$("${hook}_cpu_workers")
	[[ $hook != compose ]] || d0=$(compose_cpu_daemons)
	if [[ $client == wrk ]]; then
		wrk -t1 -c"$c" -d"$wrk_duration" --latency -s "$lua" "$url" >"$out/$name.wrk" 2>&1 || true
	else
		"$load" batch -url "$url" -in "$big" -c "$c" -json -progress=false >"$out/$name.json" 2>"$out/$name.log" || true
	fi
	n1=$("${hook}_cpu_nginx") w1=$("${hook}_cpu_workers")
	[[ $hook != compose ]] || d1=$(compose_cpu_daemons)
	read -r a1 x1 g1 gc1 h1 < <("${hook}_conns")
	if [[ $client == wrk ]]; then
		# wrk counts requests and non-2xx answers; it does not check the solutions.
		read -r tp p99 ok errs < <(awk '
			function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
			/requests in/ {n = $1} /Requests\/sec/ {r = $2} $1 == "99%" {p = ms($2)} /Non-2xx/ {e += $5} /Socket errors/ {e += 0}
			END {printf "%s %s %d %d\n", r, p, n - e, e}' "$out/$name.wrk")
	else
		read -r tp p99 ok errs < <(jq -r '[.throughput, .latency_ms.p99, .ok, ([.errors[]] | add // 0)] | @tsv' "$out/$name.json")
	fi
	line=$(awk -v l="$label" -v c="$c" -v tp="$tp" -v p99="$p99" -v ok="$ok" -v e="$errs" \
		-v dn=$((n1 - n0)) -v dw=$((w1 - w0)) -v da=$((a1 - a0)) -v dx=$((x1 - x0)) -v dg=$((g1 - g0)) -v dgc=$((gc1 - gc0)) -v heap="$h1" 'BEGIN {
		a = ok > 0 ? ok : 1; all = ok + e > 0 ? ok + e : 1; g = dg > 0 ? dg : 1
		printf "| %s | %d | %.0f | %.2f | %d | %.1f | %.1f | %.1f | %d | %.1f | %.1f | %.1f | %.1f | %d |", l, c, tp, p99, e, dn / a / 1000, dw / a / 1000, dn / all / 1000, dg, (dg > 0 ? dw / g / 1000 : 0), da * 10000 / a, dx * 10000 / a, dgc * 10000 / g, heap }')
	echo "$line"
	echo "$line" >>"$out/table.md"
	# What the container runtime spends beside the containers (the access
	# log's lines through containerd-shim into dockerd's json-file).
	[[ $hook != compose ]] || awk -v d=$((d1 - d0)) -v all=$((ok + errs)) 'BEGIN {
		printf "  dockerd + containerd-shim: %.1f us/request\n", d / (all > 0 ? all : 1) / 1000 }'
}
depth_runs() { # label url hook
	local c
	for c in "${depths[@]}"; do
		say "round $round/$rounds, $1: warm-up and sudoku-load batch -c $c over $n GETs"
		if [[ $client == wrk ]]; then
			wrk -t1 -c"$c" -d2s -s "$lua" "$2" >/dev/null 2>&1 || true
		else
			"$load" batch -url "$2" -in "$warm" -c "$c" -progress=false >/dev/null 2>&1 || true
		fi
		measure "$1" "$2" "$c" "$3"
	done
}
worker_env=${WORKER_ENV:-}
# Each worker (and each anchor server) runs on PROCS cores, one by default
# as compose runs them (cpus: 1.0 per worker: the Go runtime sets
# GOMAXPROCS from the container's quota).
procs=${PROCS:-1}
client=${CLIENT:-sudoku-load} wrk_duration=${WRK_DURATION:-10s}
lua=$root/tests/bench/rotate.lua
export SUDOKU_PUZZLES=$puzzles
if [[ $client == wrk ]]; then
	command -v wrk >/dev/null || { echo "path.sh: CLIENT=wrk needs wrk (apt-get install wrk)" >&2; exit 1; }
fi
warm=$work/warm.txt
head -n 5000 "$big" >"$warm"

printf '| run | in flight | answers/s | p99 ms | errors (503) | nginx us/answer | workers us/answer | nginx us/request | GETs at the workers | workers us/GET | FastCGI conns opened per 10k answers | closed per 10k | worker GCs per 10k GETs | largest worker heap MiB |\n'
printf '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n'
if [[ ${COMPOSE:-0} != 1 ]]; then
	for round in $(seq "$rounds"); do
		for tr in "${transports[@]}"; do
			say "round $round/$rounds, $tr: starting 2 workers and nginx"
			start_stack "$tr"
			depth_runs "$tr" http://127.0.0.1:31680 host
			if ((round == 1)) && [[ ${REJECT:-1} == 1 && $tr != anchor ]]; then
				say "rejection: concurrency cap 1, 32 in flight"
				echo "limit_conn sudoku_admission 1;" >"$work/nginx/run/admission.conf"
				nginx -p "$work/nginx" -c "$work/nginx/nginx.conf" -s reload
				sleep 1
				mapfile -t nginx_pids < <(echo "$nginx_master"; pgrep -P "$nginx_master")
				measure "$tr, cap 1" http://127.0.0.1:31680 32 host
				stop_stack
				say "rejection: workers with one solver slot and no queue, 32 in flight"
				worker_env="SUDOKU_FCGI_POOL=1 SUDOKU_FCGI_QUEUE=0" start_stack "$tr"
				measure "$tr, workers pool 1 queue 0" http://127.0.0.1:31680 32 host
			fi
			stop_stack
		done
	done
	summary_of=${transports[0]}
else
	project=sudoku-path override=
	compose=(docker-compose)
	docker compose version >/dev/null 2>&1 && compose=(docker compose)
	dc() { "${compose[@]}" -p "$project" "$@"; }
	trap 'dc down -v --remove-orphans >/dev/null 2>&1 || true; stop_pids "${pids[@]}"; rm -rf "$work"' EXIT
	up() { # transport: the stack from this checkout, FastCGI over unix sockets or TCP
		local env=()
		[[ $1 == tcp ]] && env=(SUDOKU_FCGI_LISTEN=:9000 SUDOKU_WORKERS=sudoku:9000)
		say "starting the compose stack, $1 (project $project, 127.0.0.1:31780)"
		env "${env[@]}" SUDOKU_HTTP_PORT=127.0.0.1:31780 SUDOKU_EXPORTER_PORT=127.0.0.1:31713 \
			SUDOKU_TRUSTED_CLIENTS=172.16.0.0/12,192.168.0.0/16,10.0.0.0/8 SUDOKU_LOG_LEVEL=warn \
			"${compose[@]}" -p "$project" -f docker-compose.yml ${override:+-f "$override"} up -d --build 2>&1 | sed -u 's/^/    /' >&2
		wait_for_long http://127.0.0.1:31780/sudoku/stats
		nginx_id=$(docker inspect -f '{{.Id}}' "$(dc ps -q nginx)")
		mapfile -t worker_ids < <(dc ps -q sudoku | xargs docker inspect -f '{{.Id}}')
		worker_metrics=()
		for id in "${worker_ids[@]}"; do worker_metrics+=("$(ip_of "$id"):9001"); done
		direct=http://$(ip_of "$nginx_id"):8080
	}
	wait_for_long() { local i; for i in $(seq 120); do curl -fs -o /dev/null "$1" && return 0; sleep 1; done; echo "not answering: $1" >&2; return 1; }
	cgcpu() { # container ids...: nanoseconds of CPU from cpuacct (cgroup v1) or cpu.stat (v2)
		local id sum=0 v
		for id in "$@"; do
			if [[ -r /sys/fs/cgroup/cpuacct/docker/$id/cpuacct.usage ]]; then
				v=$(cat "/sys/fs/cgroup/cpuacct/docker/$id/cpuacct.usage")
			elif [[ -r /sys/fs/cgroup/system.slice/docker-$id.scope/cpu.stat ]]; then
				v=$(($(awk '/^usage_usec/ {print $2}' "/sys/fs/cgroup/system.slice/docker-$id.scope/cpu.stat") * 1000))
			else
				v=$(($(awk '/^usage_usec/ {print $2}' "/sys/fs/cgroup/docker/$id/cpu.stat") * 1000))
			fi
			sum=$((sum + v))
		done
		echo "$sum"
	}
	ip_of() { docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$1"; }
	compose_cpu_nginx() { cgcpu "$nginx_id"; }
	compose_cpu_workers() { cgcpu "${worker_ids[@]}"; }
	compose_conns() { conns_at "${worker_metrics[@]}"; }
	compose_cpu_daemons() { oncpu $(pgrep -x 'dockerd|containerd-shim'); } # comm is cut to 15 bytes: containerd-shim-runc-v2 too
	for round in $(seq "$rounds"); do
		for tr in "${transports[@]}"; do
			[[ $tr != anchor ]] || continue # the anchor is a host row
			up "$tr"
			depth_runs "compose $tr, published port" http://127.0.0.1:31780 compose
			depth_runs "compose $tr, direct" "$direct" compose
			dc down -v --remove-orphans >/dev/null 2>&1
		done
	done
	summary_of="compose ${transports[0]}, published port"
fi
# Summary: the round with the highest c32 rate of the first run kind.
awk -F'|' -v tr="$summary_of" -v hi="${depths[-1]}" '
	{ for (i = 2; i <= NF; i++) gsub(/^ +| +$/, "", $i) }
	$2 == tr && $3 == 32 { r++; c32[r] = $4; p99[r] = $5; ng[r] = $7; wk[r] = $8 }
	$2 == tr && $3 == hi { deep[r] = $4 }
	END {
		b = 1; for (i = 1; i <= r; i++) if (c32[i] + 0 > c32[b] + 0) b = i
		printf "path: c32 %s req/s p99 %s ms, c%s %s req/s, nginx %s us, workers %s us per answer (%s)\n", c32[b], p99[b], hi, deep[b], ng[b], wk[b], tr
	}' "$out/table.md"
# The shipped path against the anchor: each one's round with the highest c32
# rate, and the ratios (the target is >= 1 for the rates, <= 1 for the CPU).
if [[ " ${transports[*]} " == *" anchor "* && ${transports[0]} != anchor ]]; then
	awk -F'|' -v tr="${transports[0]}" -v hi="${depths[-1]}" '
		{ for (i = 2; i <= NF; i++) gsub(/^ +| +$/, "", $i) }
		($2 == tr || $2 == "anchor") && $3 == 32 { k = $2; r[k]++; c32[k, r[k]] = $4; cpu[k, r[k]] = $7 + $8 }
		($2 == tr || $2 == "anchor") && $3 == hi { deep[$2, r[$2]] = $4 }
		function best(k,   b, i) { b = 1; for (i = 1; i <= r[k]; i++) if (c32[k, i] + 0 > c32[k, b] + 0) b = i; return b }
		END {
			s = best(tr); a = best("anchor")
			printf "against the anchor: c32 %.2f, c%s %.2f of its answers/s; nginx + workers %.1f us per answer against %.1f (%.2f)\n",
				c32[tr, s] / c32["anchor", a], hi, (deep["anchor", a] > 0 ? deep[tr, s] / deep["anchor", a] : 0),
				cpu[tr, s], cpu["anchor", a], cpu[tr, s] / cpu["anchor", a]
		}' "$out/table.md"
fi

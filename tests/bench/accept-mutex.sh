#!/usr/bin/env bash
# accept-mutex.sh measures how nginx's accept modes share new connections
# among workers: `accept_mutex on` (one worker accepts at a time), `on` with
# `multi_accept on` (the worker holding the mutex accepts all that wait: the
# shipped nginx.conf), `off` (EPOLLEXCLUSIVE on Linux) and `reuseport` (one
# listening socket per worker).
# Host nginx with `return 200` and short connections (`Connection: close`), so
# accepting dominates. Prints a Markdown table: requests/s, context switches
# per request of all nginx workers, and the busiest worker's share of requests.
# Env: WORKERS (4), CLIENTS ("8 64"), DURATION (10s), PORT (28090).
set -euo pipefail
workers=${WORKERS:-4} clients=${CLIENTS:-8 64} duration=${DURATION:-10s} port=${PORT:-28090}
dir=$(mktemp -d)
pid=
cleanup() { [[ -n $pid ]] && kill "$pid" 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT

ctxsw() { # sum of context switches of the nginx workers
	local total=0 p
	for p in $(pgrep -P "$pid"); do
		total=$((total + $(awk '/ctxt_switches/ {s += $2} END {print s}' "/proc/$p/status")))
	done
	echo "$total"
}

run() { # mode clients
	local mode=$1 c=$2 listen="listen 127.0.0.1:$port;" mutex=on multi=off
	case $mode in
	on+multi_accept) multi=on ;;
	off) mutex=off ;;
	reuseport) mutex=off listen="listen 127.0.0.1:$port reuseport;" ;;
	esac
	mkdir -p "$dir/tmp"
	cat >"$dir/nginx.conf" <<CONF
worker_processes $workers;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { accept_mutex $mutex; multi_accept $multi; worker_connections 4096; }
http {
    client_body_temp_path $dir/tmp;
    log_format w '\$pid';
    access_log $dir/access.log w buffer=256k flush=1s;
    server { $listen location / { return 200 'ok\n'; } }
}
CONF
	: >"$dir/access.log"
	nginx -p "$dir" -c "$dir/nginx.conf" -g 'daemon off;' &
	pid=$!
	for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done
	sleep 0.5
	: >"$dir/access.log"
	local before after out rps reqs share
	before=$(ctxsw)
	out=$(wrk -t1 -c"$c" -d"$duration" -H 'Connection: close' "http://127.0.0.1:$port/")
	after=$(ctxsw)
	kill -QUIT "$pid"; wait "$pid" || true; pid=
	rps=$(awk '/Requests\/sec/ {printf "%.0f", $2}' <<<"$out")
	reqs=$(wc -l <"$dir/access.log")
	share=$(sort "$dir/access.log" | uniq -c | sort -rn | awk -v n="$reqs" 'NR==1 {printf "%.0f%%", 100*$1/n}')
	printf '| %s | %s | %s | %.2f | %s |\n' "$mode" "$c" "$rps" "$(bc -l <<<"($after - $before) / $reqs")" "$share"
}

echo "nginx $(nginx -v 2>&1 | sed 's/.*\///'), $workers workers, wrk -t1 -d$duration, Connection: close, $(nproc) CPUs" >&2
echo '| mode | clients | req/s | ctx switches / req | busiest worker |'
echo '| --- | --- | --- | --- | --- |'
for c in $clients; do
	for mode in on on+multi_accept off reuseport; do
		echo "accept-mutex: $mode, $c clients" >&2
		run "$mode" "$c"
	done
done

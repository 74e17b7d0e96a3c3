#!/usr/bin/env bash
# run.sh deploys docker/stack.yml on Docker Swarm and checks it end to end:
# requests through nginx reach all 3 workers; nginx runs on a read-only
# root with its own tmpfs volumes; every service has its pids limit and the
# exporter publishes no port; two clients with their own addresses (network
# namespaces of the host) get a per-client budget each; `docker service scale` to 5
# is picked up within 10 s of the new tasks running; scaling back to 2 and
# a rolling restart (`docker service update --force`) each lose no request
# under load. On a host outside any swarm it makes a single-node swarm
# first (works offline with the locally built images) and leaves it again
# at the end; it deploys under its own stack name and removes only that
# stack. Run it with
#
#   tests/swarm/run.sh (make test-swarm)
#
# Env: SUDOKU_SWARM_STACK (stack name, default sudoku-swarm-test),
# SUDOKU_SWARM_PORT (published HTTP port, default 28480; HTTPS takes the
# next one), SUDOKU_SWARM_RATE (load, requests/s,
# default 200), SUDOKU_SWARM_KEEP=1 (keep the stack for a look afterwards),
# SUDOKU_PUBLISH_MODE (host, the stack's default, keeps client addresses;
# ingress, the routing mesh, needs the kernel's IPVS), SUDOKU_SWARM_OUT (where the load results
# and, after a failure, the services' logs go; default /tmp/sudoku-swarm).
set -euo pipefail

cd "$(dirname "$0")/../.."
STACK=${SUDOKU_SWARM_STACK:-sudoku-swarm-test}
PORT=${SUDOKU_SWARM_PORT:-28480}
RATE=${SUDOKU_SWARM_RATE:-200}
URL=http://127.0.0.1:$PORT
SERVICE=${STACK}_sudoku
PUZZLES=tests/reliability/testdata/test1000
PUZZLE=$(head -1 "$PUZZLES")
WORK=$(mktemp -d)
OUT=${SUDOKU_SWARM_OUT:-/tmp/sudoku-swarm}
mkdir -p "$OUT"
MADE_SWARM=0
START=$SECONDS
FAILED=0

log() { printf '[swarm %3ds] %s\n' $((SECONDS - START)) "$*" >&2; }
fail() { log "FAIL: $*"; FAILED=1; }
die() { log "FAIL: $*"; exit 1; }
# shellcheck source=tests/lib.sh
source tests/lib.sh # setuid_files, answering_workers, build_images

cleanup() {
	local rc=$?
	if ((rc != 0 || FAILED)); then
		for s in sudoku nginx exporter; do
			docker service logs --timestamps "${STACK}_$s" >"$OUT/$s.log" 2>&1 || true
		done
		log "the services' logs are in $OUT"
	fi
	if [[ ${SUDOKU_SWARM_KEEP:-} == 1 ]]; then
		log "keeping stack $STACK (SUDOKU_SWARM_KEEP=1)"
	elif docker stack ls --format '{{.Name}}' 2>/dev/null | grep -qx "$STACK"; then
		log "removing stack $STACK"
		docker stack rm "$STACK" >/dev/null || true
		# Its network goes only after its tasks: wait, or a leave or the
		# next deploy races with the removal.
		for _ in $(seq 60); do
			docker network ls --format '{{.Name}}' | grep -q "^${STACK}_" || break
			sleep 1
		done
		# stack rm leaves the stack's named volumes (edge-data); a test's go
		# too, once the last task's container has let go of them.
		for _ in $(seq 30); do
			mapfile -t vols < <(docker volume ls -q --filter "label=com.docker.stack.namespace=$STACK")
			((${#vols[@]} == 0)) && break
			docker volume rm "${vols[@]}" >/dev/null 2>&1 || sleep 1
		done
		left=$(docker volume ls -q --filter "label=com.docker.stack.namespace=$STACK" | tr "\n" " ")
		[[ -z $left ]] || log "volumes $left are still in use: not removed"
	fi
	if [[ $MADE_SWARM == 1 && ${SUDOKU_SWARM_KEEP:-} != 1 ]]; then
		log "leaving the swarm this run made"
		docker swarm leave --force >/dev/null || true
	fi
	for i in 0 1; do
		ip netns del "sudoku-client-$i" 2>/dev/null || true # its veth goes with it
	done
	rm -rf "$WORK"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

# --- a swarm to deploy on --------------------------------------------------
case $(docker info --format '{{.Swarm.LocalNodeState}}') in
inactive)
	# The address of the default route, or any non-loopback one: swarm
	# init refuses to choose when the host has several.
	addr=$(ip -4 route get 1.1.1.1 2>/dev/null | awk '{for (i = 1; i < NF; i++) if ($i == "src") print $(i + 1)}')
	addr=${addr:-$(ip -4 -o addr show scope global | awk '{sub("/.*", "", $4); print $4; exit}')}
	log "making a single-node swarm (advertise $addr)"
	docker swarm init --advertise-addr "$addr" >/dev/null
	MADE_SWARM=1
	;;
active)
	[[ $(docker info --format '{{.Swarm.ControlAvailable}}') == true ]] || die "this node is in a swarm but not a manager"
	log "using the swarm this node is in"
	;;
*) die "swarm state $(docker info --format '{{.Swarm.LocalNodeState}}')" ;;
esac
if docker stack ls --format '{{.Name}}' | grep -qx "$STACK"; then
	die "stack $STACK exists already (a run still going, or one left with SUDOKU_SWARM_KEEP=1)"
fi

# --- images and tools ------------------------------------------------------
export SUDOKU_FCGI_IMAGE=sudoku-fcgi:swarm-test SUDOKU_EDGE_IMAGE=sudoku-edge:swarm-test SUDOKU_EXPORTER_IMAGE=sudoku-exporter:swarm-test
build_images "$SUDOKU_FCGI_IMAGE docker/sudoku-fcgi.Dockerfile" "$SUDOKU_EDGE_IMAGE docker/nginx.Dockerfile" \
	"$SUDOKU_EXPORTER_IMAGE docker/exporter.Dockerfile"
go build -o "$WORK/sudoku-load" ./cmd/sudoku-load

# --- deploy ----------------------------------------------------------------
export SUDOKU_HTTP_PORT=$PORT SUDOKU_HTTPS_PORT=$((PORT + 1))
# The routing mesh forwards with the kernel's IPVS; where the kernel has
# none (some VMs and containers), only host mode (the default) works.
if [[ ${SUDOKU_PUBLISH_MODE:-host} == ingress && ! -e /proc/sys/net/ipv4/vs ]]; then
	log "this kernel has no IPVS, so no routing mesh: publishing in host mode"
	export SUDOKU_PUBLISH_MODE=host
fi
# The load tool is one client standing for many: exempt the address nginx
# sees it from (the host's gateway on docker_gwbridge; in host mode the
# source address is kept) from the per-client limits, and through the
# routing mesh the ingress network, which every client comes from there.
gw=$(docker network inspect docker_gwbridge --format '{{range .IPAM.Config}}{{.Gateway}}{{end}}')
mesh=
if [[ ${SUDOKU_PUBLISH_MODE:-host} == ingress ]]; then
	mesh=$(docker network inspect ingress --format '{{range .IPAM.Config}}{{.Subnet}}{{end}}')
fi
export SUDOKU_TRUSTED_CLIENTS=$gw${mesh:+,$mesh}
log "nginx trusts $SUDOKU_TRUSTED_CLIENTS (the load client, through the gateway or the mesh)"
log "deploying stack $STACK on port $PORT"
docker stack deploy --resolve-image never -c docker/stack.yml "$STACK" >/dev/null

# workers N prints the distinct X-Sudoku-Worker values of N requests, one a
# line; a request that fails prints "failed".
workers() { answering_workers "$URL" "$PUZZLE" "$1"; }

# client_netns I makes client I: a network namespace sudoku-client-I whose
# veth link has 198.18.I.2, the host's end 198.18.I.1, its default route.
client_netns() {
	local i=$1 ns=sudoku-client-$1
	ip netns del "$ns" 2>/dev/null || true # left by a run that was killed
	ip netns add "$ns" &&
		ip link add "sudoku-c$i" type veth peer name "sudoku-c$i-in" &&
		ip link set "sudoku-c$i-in" netns "$ns" &&
		ip addr add "198.18.$i.1/30" dev "sudoku-c$i" &&
		ip link set "sudoku-c$i" up &&
		ip -n "$ns" addr add "198.18.$i.2/30" dev "sudoku-c$i-in" &&
		ip -n "$ns" link set lo up &&
		ip -n "$ns" link set "sudoku-c$i-in" up &&
		ip -n "$ns" route add default via "198.18.$i.1"
}

# client_requests I N sends N GETs, 8 at a time, from client I to the host's
# end of its link and prints each status, one a line.
client_requests() {
	local i=$1 n=$2 args=() k
	for ((k = 0; k < n; k++)); do
		args+=(-o /dev/null "http://198.18.$i.1:$PORT/sudoku?puzzle=$PUZZLE")
	done
	ip netns exec "sudoku-client-$i" curl -s -m 60 --parallel --parallel-max 8 -w '%{http_code}\n' "${args[@]}" || true
}

# running prints how many of the service's tasks are running.
running() {
	docker service ps "$SERVICE" --filter desired-state=running --format '{{.CurrentState}}' | grep -c '^Running' || true
}

# wait_workers N SECS waits until requests reach exactly N distinct workers
# and none fails; it prints the seconds it took.
wait_workers() {
	local want=$1 limit=$2 t0=$SECONDS got
	while ((SECONDS - t0 < limit)); do
		got=$(workers $((want * 8)))
		if ! grep -qx failed <<<"$got" && (($(wc -l <<<"$got") == want)); then
			echo $((SECONDS - t0))
			return 0
		fi
		sleep 0.5
	done
	return 1
}

log "waiting for 3 workers to answer through nginx"
wait_workers 3 180 >/dev/null || die "requests through nginx never reached 3 workers: $(workers 24 | tr '\n' ' ')"
log "3 replicas answer: $(workers 24 | tr '\n' ' ')"

# --- nginx's container: read-only root, its own tmpfs volumes ----------------
# docker/stack.yml: a read-only root; /run/sudoku-edge and /var/lib/nginx
# are tmpfs volumes of uid 33 named after the task; no setuid or setgid
# file stands in for no-new-privileges, which a stack cannot set.
edge=$(docker ps -q --filter "label=com.docker.swarm.service.name=${STACK}_nginx" | head -1)
task=$(docker inspect -f '{{index .Config.Labels "com.docker.swarm.task.id"}}' "$edge")
[[ $(docker inspect -f '{{.HostConfig.ReadonlyRootfs}}' "$edge") == true ]] || fail "nginx's root filesystem is writable"
if docker exec "$edge" bash -c ': >/etc/nginx/probe' 2>/dev/null; then fail "nginx's container wrote to /etc/nginx"; fi
for pair in /run/sudoku-edge:run /var/lib/nginx:temp; do
	dir=${pair%%:*} want="${STACK}_nginx-${pair#*:}-$task"
	got=$(docker inspect -f "{{range .Mounts}}{{if eq .Destination \"$dir\"}}{{.Name}}{{end}}{{end}}" "$edge")
	[[ $got == "$want" ]] || fail "nginx's $dir is volume '$got', want $want"
	[[ $(docker exec "$edge" stat -f -c %T "$dir") == tmpfs && $(docker exec "$edge" stat -c %u "$dir") == 33 ]] ||
		fail "nginx's $dir: $(docker exec "$edge" stat -f -c %T "$dir"), owner $(docker exec "$edge" stat -c %u "$dir"); want tmpfs of uid 33"
done
docker exec "$edge" test -S /run/sudoku-edge/access-log.sock || fail "sudoku-edge has no log socket in /run/sudoku-edge"
suid=$(setuid_files "$edge") || true
[[ -z $suid ]] || fail "setuid or setgid files in nginx's container (or no scan): $(tr '\n' ' ' <<<"$suid")"
log "nginx: read-only root, tmpfs volumes of uid 33 for task $task, no setuid file"
# The exporter's image strips them as nginx's does (docker/exporter.Dockerfile).
# Its task may start after nginx's: wait for its container.
exporter=
for _ in $(seq 60); do
	exporter=$(docker ps -q --filter "label=com.docker.swarm.service.name=${STACK}_exporter" | head -1)
	[[ -n $exporter ]] && break
	sleep 1
done
[[ -n $exporter ]] || log "exporter tasks: $(docker service ps --no-trunc --format '{{.CurrentState}} {{.Error}}' "${STACK}_exporter" | head -3 | tr '\n' ';')"
suid=$(setuid_files "$exporter") || true
[[ -n $exporter && -z $suid ]] || fail "setuid or setgid files in the exporter's container '$exporter' (or no scan): $(tr '\n' ' ' <<<"$suid")"

# --- pids limits in force, the exporter unpublished ---------------------------
# Each service's deploy.resources.limits.pids in docker/stack.yml reaches its
# spec and its task's container (an engine too old for the field drops it).
limits=0
while read -r svc want; do
	limits=$((limits + 1))
	got=$(docker service inspect -f '{{.Spec.TaskTemplate.Resources.Limits.Pids}}' "${STACK}_$svc" 2>&1) || true
	for _ in $(seq 60); do
		id=$(docker ps -q --filter "label=com.docker.swarm.service.name=${STACK}_$svc" | head -1)
		[[ -n $id ]] && break
		sleep 1
	done
	ctr=$(docker inspect -f '{{json .HostConfig.PidsLimit}}' "$id" 2>&1) || ctr="(no container: $ctr)"
	[[ $got == "$want" && $ctr == "$want" ]] || fail "$svc: pids limit $got in its spec, $ctr in its container; stack.yml says $want"
done < <(awk '/^services:/ {s = 1; next} /^[a-z]/ {s = 0} s && /^  [a-z-]+:$/ {n = $1; sub(":", "", n)} s && $1 == "pids:" {print n, $2}' docker/stack.yml)
((limits == 3)) || fail "$limits pids limits in docker/stack.yml, want one for each of the 3 services"
ports=$(docker service inspect -f '{{json .Endpoint.Ports}}' "${STACK}_exporter")
[[ $ports == null || $ports == '[]' ]] || fail "the exporter publishes $ports"
log "pids limits in force: $(docker service inspect -f '{{.Spec.Name}}={{.Spec.TaskTemplate.Resources.Limits.Pids}}' "${STACK}_sudoku" "${STACK}_nginx" "${STACK}_exporter" | tr '\n' ' '); exporter ports: $ports"

# --- two clients, two budgets -------------------------------------------------
# Two clients outside the swarm, each a network namespace of the host with
# its own address (198.18.<i>.2, the benchmarking range), reach the
# published port as a remote client does, through the host's own address on
# their link. nginx trusts neither. With the port published in host mode
# nginx sees each client's own address: the first, 600 requests 8 at a
# time, goes past its rate and burst (-client-rate, -client-burst) and gets
# 429s; the second, straight after, sends 100 (under its burst) and gets
# 200s only. Had they shared one address, as behind the routing mesh, the
# second would find the first's budget spent.
if [[ ${SUDOKU_PUBLISH_MODE:-host} == host ]]; then
	for i in 0 1; do
		client_netns "$i" || die "cannot make client $i's network namespace (ip netns needs root)"
	done
	t0=${EPOCHREALTIME/./}
	a=$(client_requests 0 600 | sort | uniq -c | tr -s ' \n' ' ')
	t1=${EPOCHREALTIME/./}
	b=$(client_requests 1 100 | sort | uniq -c | tr -s ' \n' ' ')
	t2=${EPOCHREALTIME/./}
	log "client 198.18.0.2, 600 requests in $(((t1 - t0) / 1000)) ms (count and status):$a; then client 198.18.1.2, 100 requests in $(((t2 - t1) / 1000)) ms:$b"
	[[ $a =~ \ 429\  ]] || fail "client 198.18.0.2 was never held to its rate:$a"
	[[ $b == " 100 200 " ]] || fail "client 198.18.1.2 did not have a budget of its own:$b"
	seen=0
	for _ in $(seq 20); do
		seen=$(docker service logs --raw "${STACK}_nginx" 2>/dev/null | grep -c '"remote_addr":"198.18.0.2".*"status":429' || true)
		((seen > 0)) && break
		sleep 0.5
	done
	log "nginx's log: $seen lines of 429 for remote_addr 198.18.0.2"
	((seen > 0)) || fail "nginx's log has no 429 for remote_addr 198.18.0.2"
else
	log "publish mode $SUDOKU_PUBLISH_MODE: clients share the routing mesh's address (per-client budgets not checked)"
fi

# --- scale up: picked up within 10 s -----------------------------------------
log "scaling to 5"
t0=$SECONDS
docker service scale -d "$SERVICE=5" >/dev/null
until (($(running) == 5)); do
	((SECONDS - t0 < 120)) || die "5 tasks not running after 120 s"
	sleep 0.5
done
t_run=$((SECONDS - t0))
pickup=$(wait_workers 5 30) || die "5 running workers, but requests reached $(workers 40 | wc -l) after 30 s"
log "scale to 5: tasks running after ${t_run}s, all 5 answering ${pickup}s later"
((pickup <= 10)) || fail "scale-up picked up ${pickup}s after the tasks ran, want <= 10 s"

# load_during SECS NAME CMD... runs the load tool for SECS at RATE, runs CMD
# 3 s in, waits for both, and fails unless every request succeeded.
load_during() {
	local secs=$1 name=$2
	shift 2
	"$WORK/sudoku-load" load -url "$URL" -in "$PUZZLES" -rate "$RATE" -c 64 -duration "${secs}s" -timeout 5s \
		-json -progress=false >"$OUT/$name.json" 2>"$OUT/$name.log" &
	local pid=$! t0=$SECONDS
	sleep 3
	timeout 120 "$@" >/dev/null || fail "$name: $* failed or took over 120 s"
	local took=$((SECONDS - t0 - 3))
	wait "$pid" || fail "$name: the load tool failed: $(tail -3 "$OUT/$name.log")"
	local sent ok wrong
	read -r sent ok wrong < <(jq -r '(.result // .) | "\(.sent) \(.ok) \(.wrong)"' "$OUT/$name.json")
	log "$name: $* took ${took}s; load: $sent sent, $ok ok, $((sent - ok)) failed, $wrong wrong ($(jq -c "(.result // .).errors" "$OUT/$name.json"))"
	((took + 3 < secs)) || fail "$name: the change outlasted the load (${took}s of ${secs}s)"
	((sent > 0 && ok == sent && wrong == 0)) || fail "$name: $((sent - ok)) of $sent requests failed"
}

# --- scale down under load ---------------------------------------------------
load_during 30 scale-down docker service scale "$SERVICE=2"
wait_workers 2 15 >/dev/null || fail "after scaling to 2, requests reach $(workers 24 | tr '\n' ' ')"

# --- rolling restart under load ------------------------------------------------
load_during 50 rolling-restart docker service update --force "$SERVICE"
wait_workers 2 15 >/dev/null || fail "after the rolling restart, requests reach $(workers 24 | tr '\n' ' ')"

if ((FAILED)); then
	log "FAILED after $((SECONDS - START))s"
	exit 1
fi
log "PASS in $((SECONDS - START))s"

#!/usr/bin/env bash
# cluster.sh deploys docker/stack.yml on a three-node Swarm and checks what
# one node cannot show. The nodes are Docker engines in containers of the
# host (tests/swarm/node.Dockerfile), each with its own address on a bridge
# network of its own, all three managers, so that losing one keeps the
# quorum; the project's images reach them with docker save | docker load, as
# there is no registry. The load client is the host, outside the cluster.
#
# It checks: workers on every node and two edges on two nodes, each edge
# reaching workers on the other nodes over the overlay; two clients with
# their own addresses get a per-client budget each, and nginx trusts only
# the load client's address; then, under load at half the measured
# capacity, a worker node cut off and healed, a rolling update and a
# scale-out, a worker node killed and an edge node killed: the failures
# (count and window), the tasks rescheduled on the survivors, the edges'
# upstream lists without the dead addresses, and the seconds until the
# answer rate is back. Run it with
#
#   tests/swarm/cluster.sh (make test-swarm-cluster)
#
# Env: SUDOKU_CLUSTER_NAME (prefix of the nodes' and the network's names,
# default sudoku-cluster), SUDOKU_CLUSTER_KEEP=1 (keep the cluster for a
# look afterwards), SUDOKU_CLUSTER_OUT (the load results and, after a
# failure, the services' logs; default /tmp/sudoku-cluster).
set -euo pipefail

cd "$(dirname "$0")/../.."
NAME=${SUDOKU_CLUSTER_NAME:-sudoku-cluster}
NET=$NAME
STACK=sudoku
PORT=8080
PUZZLES=tests/reliability/testdata/test1000
PUZZLE=$(head -1 "$PUZZLES")
OUT=${SUDOKU_CLUSTER_OUT:-/tmp/sudoku-cluster}
WORK=$(mktemp -d)
mkdir -p "$OUT"
START=$SECONDS
FAILED=0
NODES=(1 2 3)

log() { printf '[cluster %3ds] %s\n' $((SECONDS - START)) "$*" >&2; }
fail() { log "FAIL: $*"; FAILED=1; }
die() { log "FAIL: $*"; exit 1; }
# shellcheck source=tests/lib.sh
source tests/lib.sh # answering_workers, build_images

# node N CMD... runs CMD in node N's container.
node() {
	local n=$1
	shift
	docker exec "$NAME-node$n" "$@"
}

# MGR is a node whose manager answers; a kill test moves it off the victim.
MGR=1

cleanup() {
	local rc=$?
	if ((rc != 0 || FAILED)); then
		# Each container's own log, from each node still up: service logs
		# need a manager quorum, which the last scenario takes away.
		local n c
		for n in "${NODES[@]}"; do
			for c in $(docker exec "$NAME-node$n" docker ps -aq --filter "label=com.docker.stack.namespace=$STACK" 2>/dev/null); do
				docker exec "$NAME-node$n" docker logs --timestamps "$c" >"$OUT/node$n-$(docker exec "$NAME-node$n" docker inspect -f '{{index .Config.Labels "com.docker.swarm.task.name"}}' "$c").log" 2>&1 || true
			done
		done
		log "the services' logs are in $OUT"
	fi
	if [[ ${SUDOKU_CLUSTER_KEEP:-} == 1 ]]; then
		log "keeping the cluster (SUDOKU_CLUSTER_KEEP=1): docker rm -f ${NODES[*]/#/$NAME-node}; docker network rm $NET"
	else
		docker rm -f "${NODES[@]/#/$NAME-node}" "$NAME-client1" "$NAME-client2" >/dev/null 2>&1 || true
		docker network rm "$NET" >/dev/null 2>&1 || true
	fi
	rm -rf "$WORK"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

if docker ps -a --format '{{.Names}}' | grep -q "^$NAME-node"; then
	die "containers $NAME-node* exist already (a run still going, or one left with SUDOKU_CLUSTER_KEEP=1)"
fi

# --- images --------------------------------------------------------------------
images=(sudoku-fcgi:cluster-test sudoku-edge:cluster-test)
build_images "sudoku-swarm-node:local tests/swarm/node.Dockerfile" "${images[0]} docker/sudoku-fcgi.Dockerfile" \
	"${images[1]} docker/nginx.Dockerfile"
go build -o "$WORK/sudoku-load" ./cmd/sudoku-load
docker save "${images[@]}" -o "$WORK/images.tar"

# --- three engines, one swarm ----------------------------------------------------
# What the nested engines need on this kind of host (../shared is not
# needed: docker/README.md "A cluster on one machine" says why): every
# capability but CAP_SYS_RESOURCE, which the host's bounding set lacks (so
# no --privileged); the host's cgroups, with a parent of its own for each
# engine; the engine's data in tmpfs, gone with the container, which also
# lets overlay2 work inside (not on the host's fuse-overlayfs; vfs there
# leaves an image's root directory 0700, which a non-root user cannot
# enter).
docker network create "$NET" >/dev/null
for n in "${NODES[@]}"; do
	docker run -d --name "$NAME-node$n" --hostname "node$n" --network "$NET" \
		--cap-add ALL --cap-drop SYS_RESOURCE \
		--security-opt seccomp=unconfined --security-opt apparmor=unconfined \
		--security-opt systempaths=unconfined \
		--cgroupns host -v /sys/fs/cgroup:/sys/fs/cgroup:rw \
		--tmpfs /var/lib/docker:exec --tmpfs /run \
		sudoku-swarm-node:local dockerd --storage-driver=overlay2 --exec-root /run/dnd --cgroup-parent "/$NAME-node$n" >/dev/null
done
declare -A IP
for n in "${NODES[@]}"; do
	IP[$n]=$(docker inspect -f "{{(index .NetworkSettings.Networks \"$NET\").IPAddress}}" "$NAME-node$n")
	for _ in $(seq 60); do
		node "$n" docker info >/dev/null 2>&1 && break
		sleep 0.5
	done
	node "$n" docker info >/dev/null 2>&1 || die "node $n's engine did not start: $(docker logs --tail 5 "$NAME-node$n" 2>&1)"
done
# The load client's address as the nodes see it: the bridge's gateway.
CLIENT=$(docker network inspect -f '{{range .IPAM.Config}}{{.Gateway}}{{end}}' "$NET")
node 1 docker swarm init --advertise-addr "${IP[1]}" >/dev/null
token=$(node 1 docker swarm join-token -q manager)
for n in 2 3; do
	node "$n" docker swarm join --token "$token" "${IP[1]}:2377" >/dev/null
done
log "swarm of 3 managers: ${IP[1]} ${IP[2]} ${IP[3]}; loading the images into each"
for n in "${NODES[@]}"; do
	docker exec -i "$NAME-node$n" docker load -q <"$WORK/images.tar" >/dev/null &
done
wait

# --- deploy: 3 workers, 2 edges ------------------------------------------------------
docker exec -i "$NAME-node1" sh -c 'cat >/tmp/stack.yml' <docker/stack.yml
node 1 env SUDOKU_FCGI_IMAGE="${images[0]}" SUDOKU_EDGE_IMAGE="${images[1]}" SUDOKU_EDGE_REPLICAS=2 \
	SUDOKU_TRUSTED_CLIENTS="$CLIENT" docker stack deploy --resolve-image never -c /tmp/stack.yml "$STACK" >/dev/null 2>&1 ||
	die "docker stack deploy failed"
# The exporter is left out: it scrapes one edge, and Prometheus is not part of this test.
node 1 docker service scale -d "${STACK}_exporter=0" >/dev/null

# tasks SERVICE prints "node address" for each running task of SERVICE.
tasks() {
	node "$MGR" docker service ps "${STACK}_$1" --filter desired-state=running \
		--format '{{.Node}} {{.CurrentState}}' | awk '$2 == "Running" {print $1}'
}

# workers ADDR N prints the distinct X-Sudoku-Worker values of N requests to
# the edge at ADDR, one a line; a request that fails prints "failed".
workers() { answering_workers "http://$1:$PORT" "$PUZZLE" "$2"; }

# edges prints the nodes (by number) that run an edge.
edges() {
	tasks nginx | sed 's/^node//' | sort -n
}

log "waiting for 2 edges and 3 workers"
t0=$SECONDS
until (($(tasks nginx | wc -l) == 2 && $(tasks sudoku | wc -l) == 3)); do
	((SECONDS - t0 < 300)) || die "not 2 edges and 3 workers after 300 s: $(node 1 docker service ls --format '{{.Name}} {{.Replicas}}' | tr '\n' ' ')"
	sleep 1
done
mapfile -t EDGES < <(edges)
for e in "${EDGES[@]}"; do
	until (($(workers "${IP[$e]}" 24 | grep -vcx failed) == 3)); do
		((SECONDS - t0 < 300)) || die "edge on node $e reaches $(workers "${IP[$e]}" 24 | tr '\n' ' ')"
		sleep 1
	done
done
log "running after $((SECONDS - t0))s"

# --- spread ------------------------------------------------------------------------
# Each edge answers from all 3 workers, and the workers are on 3 nodes: so
# each edge's FastCGI crosses to the 2 nodes it does not run on.
wnodes=$(tasks sudoku | sort -u | wc -l)
log "workers on nodes: $(tasks sudoku | sort | tr '\n' ' '); edges on nodes: ${EDGES[*]}"
((wnodes == 3)) || fail "the 3 workers are on $wnodes nodes, want 3"
((${#EDGES[@]} == 2)) || fail "${#EDGES[@]} edges on distinct nodes, want 2"
for e in "${EDGES[@]}"; do
	got=$(workers "${IP[$e]}" 24 | tr '\n' ' ')
	log "edge on node $e (${IP[$e]}) answers from workers: $got"
done

# --- two clients, two budgets ---------------------------------------------------------
# Two clients outside the swarm, containers on the cluster's network with
# addresses of their own, send to the same edge; nginx trusts only the load
# client ($CLIENT). The first sends 600 requests 8 at a time, past its rate
# and burst, and gets 429s; the second, straight after, 100 (under its
# burst), 200s only.
e=${EDGES[0]}
declare -A CIP
for c in 1 2; do
	docker run -d --name "$NAME-client$c" --network "$NET" --entrypoint sleep sudoku-swarm-node:local infinity >/dev/null
	CIP[$c]=$(docker inspect -f "{{(index .NetworkSettings.Networks \"$NET\").IPAddress}}" "$NAME-client$c")
done
# client C N sends N GETs from client C to the first edge, 8 at a time, and
# prints how many got each status.
client() {
	local args=() k
	for ((k = 0; k < $2; k++)); do
		args+=(-o /dev/null "http://${IP[$e]}:$PORT/sudoku?puzzle=$PUZZLE")
	done
	docker exec "$NAME-client$1" curl -s -m 60 --parallel --parallel-max 8 -w '%{http_code}\n' "${args[@]}" 2>/dev/null |
		sort | uniq -c | tr -s ' \n' ' '
}
a=$(client 1 600)
b=$(client 2 100)
log "client ${CIP[1]}, 600 requests (count and status):$a; then client ${CIP[2]}, 100 requests:$b"
[[ $a =~ \ 429\  ]] || fail "client ${CIP[1]} was never held to its rate:$a"
[[ $b == " 100 200 " ]] || fail "client ${CIP[2]} did not have a budget of its own:$b"

# --- FastCGI open to the stack's services only -------------------------------------------
# The backend overlay is not attachable: a container that is not one of the
# stack's tasks cannot join it to reach the workers' FastCGI port.
if node "$e" docker run --rm --network "${STACK}_backend" --entrypoint true "${images[1]}" >/dev/null 2>&1; then
	fail "a stranger's container joined ${STACK}_backend"
else
	log "a stranger's container cannot join ${STACK}_backend: $(node "$e" docker run --rm --network "${STACK}_backend" --entrypoint true "${images[1]}" 2>&1 | tail -1)"
fi

# --- capacity ------------------------------------------------------------------------
cat "$PUZZLES" "$PUZZLES" "$PUZZLES" "$PUZZLES" >"$WORK/cap.txt"
cap=$("$WORK/sudoku-load" batch -url "http://${IP[$e]}:$PORT" -in "$WORK/cap.txt" -c 32 -json -progress=false |
	jq -r '(.result // .) | .throughput // empty')
[[ -n $cap ]] || die "no capacity figure from sudoku-load batch"
RATE=$(awk -v c="$cap" 'BEGIN {printf "%d", c / 2}')
log "capacity through one edge with 32 in flight: ${cap%.*}/s; the load runs at $RATE/s"

# per_second FILE prints "second answered failed" from the timeline of
# sudoku-load's JSON result, one line a second.
per_second() {
	jq -r '(.result // .).timeline[] | "\(.second) \(.received - .errors) \(.errors)"' "$1"
}

# LOADS are the load runs of under_load, each "NAME URL RATE [RETRY]": with
# RETRY, a GET answered 429 or 503 or not at all is sent again up to RETRY
# times, after its Retry-After (sudoku-load load -retry).
LOADS=()

# under_load SCENARIO SECS AT CMD... runs each of LOADS for SECS, runs CMD
# AT s in, and judges each run's answers: the failures, the milliseconds
# from the first to the last (sudoku-load's "failed") and the whole
# seconds they fall in, the slowest answer, and the seconds from
# AT until every later 5 s answers at least 0.9 of the rate before AT.
# It writes "sent ok window_ms back max_ms timed_out_tries" to
# $WORK/NAME.res for each.
under_load() {
	local scenario=$1 secs=$2 at=$3 pids=() l name url rate retry
	shift 3
	for l in "${LOADS[@]}"; do
		read -r name url rate retry <<<"$l"
		"$WORK/sudoku-load" load -url "$url" -in "$PUZZLES" -rate "$rate" -c 256 -retry "${retry:-0}" \
			-duration "${secs}s" -timeout "$TIMEOUT" -json -progress=false >"$OUT/$name.json" 2>"$OUT/$name.log" &
		pids+=($!)
	done
	sleep "$at"
	log "$scenario: $*"
	"$@" || fail "$scenario: $* failed"
	wait "${pids[@]}" || true
	for l in "${LOADS[@]}"; do
		read -r name url rate _ <<<"$l"
		local sent ok max
		read -r sent ok max < <(jq -r '(.result // .) | "\(.sent) \(.ok) \(.latency_ms.max | floor)"' "$OUT/$name.json")
		local base first last back
		read -r base first last back < <(per_second "$OUT/$name.json" | awk -v at="$at" -v secs="$secs" '
			{ rec[$1] = $2; err[$1] = $3 }
			END {
				for (s = 2; s < at; s++) { base += rec[s]; nb++ }
				base /= nb
				first = last = -1
				for (s = 1; s <= secs; s++) if (err[s] > 0) { if (first < 0) first = s; last = s }
				# Back: from s on, every 5 s window answers 0.9 of the
				# rate before and fails nothing (one second may lag behind
				# a scheduling stall on 2 cores and catch up in the next).
				back = -1
				for (s = at; s <= secs - 5; s++) {
					ok = 1
					for (t = s; t <= secs - 5; t++) {
						sum = 0
						for (u = t; u < t + 5; u++) { sum += rec[u]; if (err[u] > 0) ok = 0 }
						if (sum < 0.9 * 5 * base) ok = 0
					}
					if (ok) { back = s - at; break }
				}
				printf "%.0f %d %d %d\n", base, first, last, back
			}')
		local window when=
		window=$(jq -r '(.result // .).failed // {first_ms: 0, last_ms: 0} | .last_ms - .first_ms | floor' "$OUT/$name.json")
		((first < 0)) || when=" (seconds $first-$last of the run)"
		local kinds
		kinds=$(jq -r '[(.result // .).errors // {} | to_entries[] | select(.value > 0) | "\(.value) \(.key)"] | join(", ") | if . == "" then "" else " (\(.))" end' "$OUT/$name.json")
		local resent hung
		read -r resent hung < <(jq -r '(.result // .) | "\(.resent) \(.resent_after.timeout // 0)"' "$OUT/$name.json")
		((resent == 0)) || kinds+="; resent $resent after $(jq -r '(.result // .).resent_after | to_entries | map("\(.value) \(.key)") | join(", ")' "$OUT/$name.json")"
		log "$scenario: $name ($url, $rate/s): $sent sent, $ok ok, $((sent - ok)) failed$kinds, over ${window} ms$when; slowest ${max} ms; answers ${base}/s before, back to 0.9 of it ${back} s after"
		echo "$sent $ok $window $back $max $hung" >"$WORK/$name.res"
	done
}

# judge NAME MAXWINDOW [RECOVERS]: fails unless NAME's failures, first to
# last, span at most MAXWINDOW ms (0: unless none failed; "retry": none
# failed after the load's retry, see LOADS), no request took longer than
# the FastCGI read timeout and a retry's connect (nginx/conf/site.go), and,
# with RECOVERS, its rate was back within 30 s (a rolling update's new
# tasks slow the answers on 2 cores without failing any, so it is judged
# on failures only). A request sent again may take two such times and
# the Retry-After between them (nginx's is at most 3 s), so with "retry"
# the bound is on each try: none timed out; "failover" is "retry" for a
# client of both edges, whose tries to the dead one may time out.
judge() {
	local sent ok window back max hung
	read -r sent ok window back max hung <"$WORK/$1.res"
	((sent > 0)) || fail "$1: nothing sent"
	case $2 in
	retry | failover)
		((ok == sent)) || fail "$1: $((sent - ok)) failed after a retry, want none"
		# A try in flight to an edge whose host dies gets no answer and no
		# reset: only the client's timeout ends it, and the client that
		# knows both edges resends it to the other (failover).
		[[ $2 == failover ]] || ((hung == 0)) || fail "$1: $hung tries timed out ($TIMEOUT), want none"
		;;
	0) ((ok == sent)) || fail "$1: $((sent - ok)) failed, want none" ;;
	*) ((window <= $2)) || fail "$1: failures over ${window} ms, want at most $2 ms" ;;
	esac
	[[ -z ${3:-} ]] || ((back >= 0 && back <= 30)) || fail "$1: the answer rate was not back within 30 s ($back)"
	[[ $2 == retry || $2 == failover ]] || ((max <= HANG_MS)) || fail "$1: a request took ${max} ms, longer than $HANG_MS ms"
}
# nginx's read timeout of a GET (contract.ReadTimeout) and a retry's
# connect timeout (nginx/sudoku-fastcgi.conf), with room for the load
# client's own scheduling on a busy machine.
HANG_MS=3000
TIMEOUT=4s

# worker_addrs N prints the backend addresses of the workers on node N.
worker_addrs() {
	local c
	for c in $(node "$1" docker ps -q --filter "label=com.docker.swarm.service.name=${STACK}_sudoku"); do
		node "$1" docker inspect -f "{{(index .NetworkSettings.Networks \"${STACK}_backend\").IPAddress}}" "$c"
	done
}

# listed N ADDR... succeeds if the edge on node N lists one of ADDR in its
# upstream.
listed() {
	local n=$1 ctr servers a
	shift
	ctr=$(node "$n" docker ps -q --filter "label=com.docker.swarm.service.name=${STACK}_nginx" | head -1)
	servers=$(node "$n" docker exec "$ctr" cat /run/sudoku-edge/servers.conf)
	for a in "$@"; do
		grep -q "server $a:" <<<"$servers" && return 0
	done
	return 1
}

# dropped SCENARIO LIMIT EDGE... waits until no edge of EDGE lists the
# addresses in DEAD, at most LIMIT s, and logs how long it took.
dropped() {
	local scenario=$1 limit=$2 t0=$SECONDS e2
	shift 2
	for e2 in "$@"; do
		while listed "$e2" "${DEAD[@]}"; do
			((SECONDS - t0 < limit)) || {
				fail "$scenario: the edge on node $e2 still lists ${DEAD[*]} after $limit s"
				return
			}
			sleep 0.5
		done
	done
	log "$scenario: the edges on nodes $* dropped ${DEAD[*]} within $((SECONDS - t0)) s"
}

# Each scenario below keeps a manager quorum (2 of 3) until the last, the
# edge node's loss, which leaves one node: serving goes on without it.
victim=
for n in "${NODES[@]}"; do
	[[ " ${EDGES[*]} " == *" $n "* ]] || victim=$n
done
[[ -n $victim ]] || die "every node runs an edge"
MGR=${EDGES[0]}
e1=${EDGES[0]} e2=${EDGES[1]}
LOADS=("$STACK-edge$e1 http://${IP[$e1]}:$PORT $RATE")

# --- a worker node is cut off, then healed ----------------------------------------
# Its interface drops every packet, the overlay's included, for 20 s.
cut() {
	node "$victim" sh -c 'iptables -I INPUT -i eth0 -j DROP && iptables -I OUTPUT -o eth0 -j DROP'
	mapfile -t DEAD < <(worker_addrs "$victim")
	dropped node-cut-off 19 "$e1" "$e2"
	sleep $((SECONDS - cut_at < 20 ? 20 - (SECONDS - cut_at) : 0))
	node "$victim" sh -c 'iptables -D INPUT -i eth0 -j DROP && iptables -D OUTPUT -o eth0 -j DROP'
	log "node-cut-off: node $victim healed"
}
log "node $victim runs workers at $(worker_addrs "$victim" | tr '\n' ' ')and no edge: it is cut off 10 s into 60 s of load at $RATE/s, for 20 s"
cut_at=$((SECONDS + 10))
under_load node-cut-off 60 10 cut
judge "$STACK-edge$e1" 1000 recovers

# The healed node's manager comes back with a raised raft term and can
# call an election: the managers have no leader for a while. The next
# scenario is about an update, not an election, so wait for a leader and
# every node Ready and reachable first (at most 60 s).
t0=$SECONDS
until node "$MGR" docker node ls --format '{{.Status}} {{.ManagerStatus}}' 2>/dev/null |
	awk '$1 == "Ready" { r++ } $2 == "Leader" { l++ } $2 == "Reachable" { m++ } END { exit !(r == 3 && l == 1 && m == 2) }'; do
	((SECONDS - t0 < 60)) || die "no leader or a node not Ready 60 s after the heal"
	sleep 1
done
log "after the heal: a leader and 3 nodes Ready within $((SECONDS - t0)) s"

# --- a rolling update and a scale-out under load ----------------------------------------
# After them the workers are on all 3 nodes again, the healed one included.
# A manager may still refuse a command while the managers elect a leader;
# swarm_cmd says why and tries again every 3 s for up to 30 s.
swarm_cmd() {
	local out t0=$SECONDS
	until out=$(node "$MGR" "$@" 2>&1 >/dev/null); do
		((SECONDS - t0 < 30)) || { log "$*: $out"; return 1; }
		log "$*: $out; again in 3 s"
		sleep 3
	done
}
update() {
	swarm_cmd docker service update -d=false -q --force "${STACK}_sudoku" &&
		swarm_cmd docker service scale -d=false "${STACK}_sudoku=5"
}
LOADS=("$STACK-update http://${IP[$e1]}:$PORT $RATE")
under_load update-and-scale 80 5 update
judge "$STACK-update" 0
wnodes=$(tasks sudoku | sort -u | wc -l)
log "after the update and the scale-out, workers on nodes: $(tasks sudoku | sort | tr '\n' ' ')"
((wnodes == 3)) || fail "5 workers on $wnodes nodes after the update, want 3"
for e in "$e1" "$e2"; do
	mapfile -t addrs < <(worker_addrs "$victim")
	listed "$e" "${addrs[@]}" || fail "the edge on node $e sends nothing to node $victim after the heal"
done

# --- a worker node dies under load ---------------------------------------------------
die_node() {
	mapfile -t DEAD < <(worker_addrs "$1")
	docker kill "$NAME-node$1" >/dev/null
	shift
	dropped "$SCENARIO" 30 "$@"
}
SCENARIO=worker-node-dies
LOADS=("$STACK-node-dies http://${IP[$e1]}:$PORT $RATE")
under_load "$SCENARIO" 60 10 die_node "$victim" "$e1" "$e2"
judge "$STACK-node-dies" 1000 recovers
# Swarm reschedules the dead node's workers on the survivors.
t0=$SECONDS
until (($(tasks sudoku | grep -vcx "node$victim") == 5)); do
	((SECONDS - t0 < 60)) || {
		fail "5 workers not running on the survivors 60 s after the load: $(tasks sudoku | tr '\n' ' ')"
		break
	}
	sleep 1
done
log "workers now on: $(tasks sudoku | sort | tr '\n' ' ')"

# --- an edge node dies -----------------------------------------------------------------
# One client sends to the surviving edge's address only; another knows both
# addresses and starts on the edge that dies (sudoku-load fails over by
# itself). Each at half the rate, and each sends a GET answered busy or not
# at all once more, as a client of the service should: the node takes the
# edge and most workers with it (after the last scenario, 3 of 5), so for
# a moment requests in flight on the surviving edge find two dead workers
# in their two tries and get nginx's 503 with Retry-After.
SCENARIO=edge-node-dies
LOADS=("$STACK-other-edge http://${IP[$e1]}:$PORT $((RATE / 2)) 1"
	"$STACK-both-edges http://${IP[$e2]}:$PORT,http://${IP[$e1]}:$PORT $((RATE / 2)) 1")
under_load "$SCENARIO" 40 10 die_node "$e2" "$e1"
judge "$STACK-other-edge" retry recovers
judge "$STACK-both-edges" failover recovers
if ((FAILED)); then
	log "FAILED after $((SECONDS - START))s"
	exit 1
fi
log "PASS in $((SECONDS - START))s"

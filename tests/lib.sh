# shellcheck shell=bash
# Shell helpers shared by the end-to-end runners (tests/tls/run.sh,
# tests/scale/run.sh). Source it after defining log().

# wait_healthy CONTAINER NAME TIMEOUT waits until Docker reports CONTAINER
# healthy, or fails after TIMEOUT seconds.
wait_healthy() {
	local container=$1 name=$2 timeout=$3 deadline
	log "waiting for $name to be healthy (up to ${timeout}s)"
	deadline=$((SECONDS + timeout))
	until [[ $(docker inspect -f '{{.State.Health.Status}}' "$container" 2>/dev/null) == healthy ]]; do
		if ((SECONDS > deadline)); then
			log "$name not healthy after ${timeout}s"
			return 1
		fi
		sleep 1
	done
}

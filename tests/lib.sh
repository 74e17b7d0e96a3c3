# shellcheck shell=bash
# Shell helpers shared by the end-to-end runners (tests/tls/run.sh, tests/swarm,
# tests/scale/run.sh) and the benchmarks (tests/bench). Source it after
# defining log() (wait_healthy uses it).

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

# wait_for URL waits up to 10 s for URL to answer 2xx (curl -f).
wait_for() {
	local _
	for _ in $(seq 100); do
		curl -fs -o /dev/null "$1" && return 0
		sleep 0.1
	done
	echo "not answering: $1" >&2
	return 1
}

# say MESSAGE... writes a progress line with the UTC time to stderr.
say() { echo "== $(date -u +%T) $*" >&2; }

# stop_pids PID... kills the processes and waits for this shell's
# children: the benchmarks' EXIT trap.
stop_pids() {
	local p
	for p in "$@"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
}

# oncpu PID... prints the nanoseconds the processes spent on CPU, summed
# over their threads (/proc/<pid>/task/*/schedstat).
oncpu() {
	local p t sum=0 ns
	for p in "$@"; do
		for t in /proc/"$p"/task/*/schedstat; do
			read -r ns _ <"$t" 2>/dev/null || continue
			sum=$((sum + ns))
		done
	done
	echo "$sum"
}

# setuid_files CONTAINER prints the container's setuid and setgid files,
# one "mode path" a line, read from its exported filesystem: no shell or
# find needed in the image (the worker's is FROM scratch); volumes are not
# part of it. Fails, printing why, when the export does: no scan.
setuid_files() {
	local list
	list=$(
		set -o pipefail
		docker export "$1" | tar -tvf - | awk '$1 ~ /^-(..[sS]|.....[sS])/ {print $1, $NF}'
	) || {
		echo "export of $1 failed"
		return 1
	}
	[[ -z $list ]] || printf '%s\n' "$list"
}

# answering_workers BASE PUZZLE N prints the distinct X-Sudoku-Worker values
# of N GETs of PUZZLE to BASE/sudoku, one a line; a request that fails
# prints "failed".
answering_workers() {
	local _
	for _ in $(seq "$3"); do
		curl -s -m 2 -o /dev/null -D - "$1/sudoku?puzzle=$2" 2>/dev/null |
			awk 'BEGIN {w = "failed"} tolower($1) == "x-sudoku-worker:" {w = $2} END {sub("\r", "", w); print w}'
	done | sort -u
}

# build_images "TAG DOCKERFILE"... builds each image from the repository
# root, after seeding the base images where they are missing.
build_images() {
	docker image inspect debian:bookworm-slim golang:1.26-bookworm >/dev/null 2>&1 || bash docker/seed-images.sh
	local pair tag file
	for pair in "$@"; do
		read -r tag file <<<"$pair"
		log "building $tag"
		docker build -q -t "$tag" -f "$file" . >/dev/null
	done
}

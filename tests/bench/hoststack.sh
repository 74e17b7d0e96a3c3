#!/usr/bin/env bash
# hoststack.sh measures the service with sudoku-load, as host processes on
# loopback: Debian's nginx with the project's config (nginx/render-host.sh,
# 2 worker processes) in front of WORKERS sudoku-fcgi processes over FastCGI,
# and beside it the same handler served by plain net/http (the worker's own -bench-http listener),
# so the cost of nginx + FastCGI shows as a ratio. Optionally (COMPOSE=1) the
# compose stack too, under its own project name and port.
#
# Runs: local (1 and 2 goroutines), capacity at p99 <= SLO, load at half the
# capacity (with an HTML report), batch (GETs and POSTs), stress (reading and
# never reading). Writes every result as JSON into OUT, a Markdown summary to
# OUT/summary.md (and stdout) and, when chromium is installed, a PNG of the
# nginx half-capacity report.
#
# On a busy shared machine p99 <= 5ms may be out of reach at any rate, so each
# target also gets a capacity at LOOSE_SLO, and the half-capacity run uses the
# strict capacity when there is one, else the loose one (the summary says which).
#
# Env: PUZZLES (tests/reliability/testdata/test1000),
# OUT (/tmp/sudoku-bench), SLO (5ms), LOOSE_SLO (50ms), STEP (5s per capacity step), HOLD (20s for
# the half-capacity run), WORKERS (2), HOST (1: measure the host processes),
# COMPOSE (0; 1: also the compose stack, project load-bench, port 30180),
# PLAN (0; 1: only the capacity plan: capacity on PUZZLES and on HARD
# (tests/reliability/testdata/hardest200) with the plan for PEAK (100000) req/s).
# Ports 30080-30999 on 127.0.0.1.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=${OUT:-/tmp/sudoku-bench}
slo=${SLO:-5ms} loose=${LOOSE_SLO:-50ms} step=${STEP:-5s} hold=${HOLD:-20s} nworkers=${WORKERS:-2} compose=${COMPOSE:-0} host=${HOST:-1}
puzzles=${PUZZLES:-$root/tests/reliability/testdata/test1000}
plan=${PLAN:-0} peak=${PEAK:-100000} hard=${HARD:-$root/tests/reliability/testdata/hardest200}
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
bin=$work/bin
pids=()
cproject="load-bench"
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	if [[ $compose == 1 ]]; then docker-compose -p "$cproject" down -v --remove-orphans >/dev/null 2>&1 || true; fi
	rm -rf "$work"
}
trap cleanup EXIT
say() { echo "== $(date -u +%T) $*" >&2; }

say "building into $bin"
mkdir -p "$bin"
go build -trimpath -o "$bin/" ./cmd/sudoku-fcgi ./cmd/sudoku-load
load=$bin/sudoku-load
p1=$(grep -m1 -E '^[0-9.]{81}$' "$puzzles")
big=$work/puzzles-x10 # the file ten times over, so a batch lasts a few seconds
for _ in $(seq 10); do cat "$puzzles"; done >"$big"

# shellcheck source=tests/lib.sh
source "$root/tests/lib.sh" # wait_for

sl() { # name mode args...: run sudoku-load, JSON result to OUT/name.json, progress to OUT/name.log
	local name=$1 mode=$2
	shift 2
	say "sudoku-load $mode $* -> $name.json"
	"$load" "$mode" -in "$puzzles" "$@" -json >"$out/$name.json" 2>"$out/$name.log"
}
capacity_of() { python3 -c 'import json,sys; print(int(json.load(open(sys.argv[1]))["capacity"]["rate"]))' "$1"; }


target() { # name url
	local name=$1 url=$2 cap half
	sl "capacity-$name" capacity -url "$url" -p99 "$slo" -rate 1000 -duration "$step" -c 64 -cores "$(nproc)" -peak 1000000
	sl "capacity-loose-$name" capacity -url "$url" -p99 "$loose" -rate 1000 -duration "$step" -c 64 -cores "$(nproc)" -peak 1000000
	cap=$(capacity_of "$out/capacity-$name.json")
	echo "strict" >"$out/half-$name.basis"
	if ((cap == 0)); then
		cap=$(capacity_of "$out/capacity-loose-$name.json")
		echo "loose" >"$out/half-$name.basis"
	fi
	half=$((cap / 2))
	if ((half < 1)); then half=1; fi
	sl "half-$name" load -url "$url" -rate "$half" -duration "$hold" -c 64 -html "$out/half-$name.html"
	sl "batch-get-$name" batch -url "$url" -c 16 -in "$big"
	sl "batch-post-$name" batch -url "$url" -c 2 -b 100 -in "$big"
}
if [[ $host == 1 ]]; then
	if [[ $plan != 1 ]]; then
		sl local-1 local -c 1 -n 1000000 -duration 5s
		sl local-2 local -c 2 -n 1000000 -duration 5s
	fi
	say "starting $nworkers sudoku-fcgi workers"
	servers=""
	for i in $(seq "$nworkers"); do
		port=$((30900 + 10 * i))
		SUDOKU_FCGI_LISTEN=127.0.0.1:$port SUDOKU_FCGI_INTERNAL_LISTEN=127.0.0.1:$((port + 1)) SUDOKU_FCGI_ID=w$i \
			"$bin/sudoku-fcgi" 2>"$out/worker$i.log" &
		pids+=($!)
		servers+="127.0.0.1:$port "
		wait_for "http://127.0.0.1:$((port + 1))/readyz"
	done

	say "starting nginx (2 worker processes) on 127.0.0.1:30080"
	SUDOKU_WORKERS=$servers nginx/render-host.sh "$work/nginx" 30080 30082 30081 >/dev/null
	nginx -p "$work/nginx" -c "$work/nginx/nginx.conf" -g 'daemon off; worker_processes 2;' >/dev/null 2>"$out/nginx.err" &
	pids+=($!)
	wait_for "http://127.0.0.1:30080/sudoku?puzzle=$p1"

	say "starting the worker's plain net/http mode on 127.0.0.1:30990"
	SUDOKU_FCGI_LISTEN=127.0.0.1:30988 SUDOKU_FCGI_INTERNAL_LISTEN=127.0.0.1:30989 SUDOKU_FCGI_ID=plain \
		SUDOKU_FCGI_BENCH_HTTP=127.0.0.1:30990 "$bin/sudoku-fcgi" 2>"$out/plainhttp.log" &
	pids+=($!)
	wait_for "http://127.0.0.1:30990/sudoku?puzzle=$p1"

	if [[ $plan == 1 ]]; then
		# The capacity plan: the capacity at the SLO on easy and on hard
		# puzzles, each with the cores and machines a PEAK needs.
		for set in "easy:$puzzles" "hard:$hard"; do
			say "capacity plan, ${set%%:*} puzzles (${set#*:})"
			"$load" capacity -in "${set#*:}" -url http://127.0.0.1:30080 -p99 "$slo" -rate 500 -duration "$step" \
				-c 64 -cores "$(nproc)" -peak "$peak" 2>"$out/plan-${set%%:*}.log" | tee "$out/plan-${set%%:*}.txt"
		done
		exit 0
	fi
	target nginx http://127.0.0.1:30080
	target plain http://127.0.0.1:30990
	sl stress-nginx stress -url http://127.0.0.1:30080 -c 8 -n 200000 -duration 10s
	sl stress-noread-nginx stress -url http://127.0.0.1:30080 -c 8 -n 200000 -duration 5s -no-read
fi

if [[ $compose == 1 ]]; then
	say "starting the compose stack as project $cproject on 127.0.0.1:30180"
	SUDOKU_HTTP_PORT=127.0.0.1:30180 SUDOKU_HTTPS_PORT=127.0.0.1:30443 SUDOKU_EXPORTER_PORT=127.0.0.1:30113 \
		docker-compose -p "$cproject" up -d --build >"$out/compose.log" 2>&1
	for i in $(seq 120); do curl -fs -o /dev/null "http://127.0.0.1:30180/sudoku?puzzle=$p1" && break; sleep 1; done
	target compose http://127.0.0.1:30180
fi

say "summary"
python3 - "$out" "$compose" >"$out/summary.md" <<'PY'
import json, os, sys
out, compose = sys.argv[1], sys.argv[2] == "1"
def r(name):
    p = os.path.join(out, name + ".json")
    return json.load(open(p)) if os.path.exists(p) else None
def errs(d):
    return ", ".join(f"{k} {v}" for k, v in sorted(d["errors"].items()) if v) or "none"
print(f"machine: {os.cpu_count()} cores, shared with other jobs\n")
print("| run | rate asked | verified answers/s | p50 ms | p99 ms | p99.9 ms | max ms | errors |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
names = ["local-1", "local-2"]
targets = ["nginx", "plain"] + (["compose"] if compose else [])
for t in targets:
    names += [f"half-{t}", f"batch-get-{t}", f"batch-post-{t}"]
names += ["stress-nginx", "stress-noread-nginx"]
for n in names:
    d = r(n)
    if not d:
        continue
    l = d["latency_ms"]
    rate = f"{d['rate']:.0f}" if d["rate"] else "-"
    print(f"| {n} | {rate} | {d['throughput']:.0f} | {l['p50']:.3f} | {l['p99']:.3f} | {l['p999']:.3f} | {l['max']:.1f} | {errs(d)} |")
print()
caps, loose = {}, {}
for t in targets:
    for prefix, store in ((f"capacity-{t}", caps), (f"capacity-loose-{t}", loose)):
        d = r(prefix)
        if not d:
            continue
        c = d["capacity"]
        store[t] = c["rate"]
        peak = f"a 1M/s peak needs {c['plan']['cores']} cores, {c['plan']['machines']} machines of 8 with 1 spare, at 70% per core" if c["plan"] else "objective not met at any rate tried"
        print(f"- capacity {t}: {c['rate']:.0f} requests/s at p99 <= {c['slo_p99_ms']:g} ms "
              f"({c['per_core']:.0f}/s per core on {c['cores']} cores; {peak}), {len(c['steps'])} steps")
    b = os.path.join(out, f"half-{t}.basis")
    if os.path.exists(b):
        print(f"- half-{t} ran at half of the {open(b).read().strip()} capacity")
l1, l2 = r("local-1"), r("local-2")
if l1 and l2:
    print(f"- local: {l1['throughput']:.0f} puzzles/s on 1 goroutine, {l2['throughput']:.0f} on 2")
for name, cs in (("strict", caps), ("loose", loose)):
    if cs.get("nginx") and cs.get("plain"):
        print(f"- plain net/http / nginx + FastCGI capacity ({name}): {cs['plain'] / cs['nginx']:.2f}x")
if caps.get("nginx") and l2:
    print(f"- nginx + FastCGI capacity / local puzzles/s (2 goroutines): {caps['nginx'] / l2['throughput']:.3f}")
PY
cat "$out/summary.md"

browser=$(command -v chromium || command -v chromium-browser || true)
for name in half-nginx half-compose; do
	[[ -f $out/$name.html ]] || continue
	if [[ -z $browser ]]; then
		echo "chromium not installed: no PNG of $name.html (apt-get install chromium)" >&2
		break
	fi
	say "rendering $name.html to $name.png"
	"$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1000,1560 \
		--screenshot="$out/$name.png" "file://$out/$name.html" >/dev/null 2>&1 || echo "chromium failed on $name.html" >&2
done

#!/usr/bin/env bash
# Solver figures for RESULTS.md, from the repository alone:
#   1. BenchmarkSolve on the sets in solver/testdata/sets (SOLVER_SETS may
#      name a directory with the full sets), COUNT rounds: per set and limit
#      the best CPU time per puzzle, the median and the guesses per puzzle;
#   2. instructions per puzzle under valgrind's callgrind, counted inside
#      the solver only (solver.solveWith), for the first SAMPLE puzzles of each
#      set, solved one by one by `sudoku solve -jobs 1` (limit 1) and
#      `sudoku solve -jobs 1 -unique` (limit 2). Skipped without valgrind.
# Usage: solver/bench.sh   (COUNT=10, SAMPLE=200, BENCHTIME=1s; OUT=dir keeps the raw output; GO=go)
#        GOFLAGS=-tags=purego solver/bench.sh   measures the scalar engine (amd64 runs the
#        assembly one otherwise)
set -euo pipefail

cd "$(dirname "$0")/.."
go=${GO:-go}
count=${COUNT:-10}
sample=${SAMPLE:-200}
sets_dir=${SOLVER_SETS:-solver/testdata/sets}
out=${OUT:-$(mktemp -d /tmp/solver-bench.XXXXXX)}
mkdir -p "$out"
sets=(puzzles2_17_clue puzzles3_magictour_top1465 "puzzles5_forum_hardest_1905_11+" puzzles6_forum_hardest_1106)

echo "== BenchmarkSolve, $count rounds ($(date -u +%FT%TZ), $(nproc) CPUs, $("$go" env GOVERSION), GOFLAGS=${GOFLAGS:-})"
"$go" test -run '^$' -bench Solve -count "$count" -benchtime "${BENCHTIME:-1s}" ./solver >"$out/bench.txt"
awk '
	/^BenchmarkSolve\// {
		name = $1; sub(/^BenchmarkSolve\//, "", name); sub(/-[0-9]+$/, "", name)
		for (i = 3; i < NF; i++) {
			if ($(i + 1) == "cpu-us/puzzle") cpu[name] = cpu[name] " " $i
			if ($(i + 1) == "guesses/puzzle") g[name] = $i
		}
		if (!(name in seen)) { seen[name] = 1; order[++n] = name }
	}
	END {
		printf "%-45s %10s %10s %10s\n", "set/limit", "best us", "median us", "guesses"
		for (k = 1; k <= n; k++) {
			name = order[k]
			m = split(substr(cpu[name], 2), v, " ")
			for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
			printf "%-45s %10.2f %10.2f %10.2f\n", name, v[1], v[int((m + 1) / 2)], g[name]
		}
	}' "$out/bench.txt"

if ! command -v valgrind >/dev/null; then
	echo "== callgrind: valgrind not found, skipped (apt-get install -y valgrind)"
	exit 0
fi
echo "== callgrind: instructions per puzzle in solver.solveWith, first $sample puzzles of each set"
"$go" build -o "$out/sudoku" ./cmd/sudoku
printf "%-45s %14s %14s\n" "set" "limit 1" "limit 2"
for set in "${sets[@]}"; do
	awk -v n="$sample" '!/^#/ && NF && k++ < n' "$sets_dir/$set" >"$out/sample.txt"
	puzzles=$(wc -l <"$out/sample.txt")
	row=$(printf "%-45s" "$set")
	for flags in "" "-unique"; do
		# cpu.rdtscp=off: valgrind 3.19 offers RDTSCP to the program on CPUs
		# that lack it, then cannot run it (the runtime's cputicks); the
		# solver's own CPU checks (golang.org/x/sys/cpu) ignore GODEBUG.
		# shellcheck disable=SC2086 # $flags is empty or one word
		GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off valgrind --tool=callgrind --callgrind-out-file="$out/callgrind.out" \
			--toggle-collect='sudoku-fcgi/solver.solveWith' \
			"$out/sudoku" solve -jobs 1 $flags "$out/sample.txt" >/dev/null 2>"$out/valgrind.log" ||
			{ echo "valgrind failed on $set $flags; its log: $out/valgrind.log" >&2; grep -m3 -i -e unrecognised -e error "$out/valgrind.log" >&2; exit 1; }
		ir=$(awk '/^summary:/ { print $2 }' "$out/callgrind.out")
		row+=$(printf " %14d" $((ir / puzzles)))
	done
	echo "$row"
done
echo "raw output in $out"

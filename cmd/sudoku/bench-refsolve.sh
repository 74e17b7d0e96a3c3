#!/usr/bin/env bash
# Whole-process comparison of `sudoku solve` with ../shared/tools/refsolve,
# run in one hyperfine session so the ratio survives a busy machine.
#   - 20,000 17-clue puzzles and 4,000 puzzles of the 11+ set;
#   - every answer of `sudoku solve` is first checked with sudokucheck.
# Usage: cmd/sudoku/bench-refsolve.sh  (from the repository root; needs
# hyperfine and ../shared). RUNS=10 sets hyperfine's run count.
set -euo pipefail

shared=${SHARED:-../shared}
runs=${RUNS:-10}
data=$shared/data/solver
work=$(mktemp -d /tmp/sudoku-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

for tool in hyperfine go; do
	command -v "$tool" >/dev/null || { echo "bench-refsolve: $tool not found" >&2; exit 1; }
done
[[ -d $data ]] || { echo "bench-refsolve: $data not found (is ../shared there?)" >&2; exit 1; }

echo "building sudoku, refsolve and sudokucheck into $work"
go build -trimpath -o "$work/sudoku" ./cmd/sudoku
(cd "$shared/tools/refsolve" && go build -o "$work/refsolve" .)
(cd "$shared/tools/sudokucheck" && go build -o "$work/sudokucheck" .)

# The first N puzzle lines (no comments, no blank lines) of each set.
awk '!/^#/ && NF && n++ < 20000' "$data/puzzles2_17_clue" >"$work/17clue.txt"
awk '!/^#/ && NF && n++ < 4000' "$data/puzzles5_forum_hardest_1905_11+" >"$work/11plus.txt"

for set in 17clue 11plus; do
	in=$work/$set.txt
	echo "== $set: $(wc -l <"$in") puzzles"
	"$work/sudoku" solve -jobs 1 <"$in" >"$work/$set.sudoku.out"
	"$work/sudokucheck" "$in" "$work/$set.sudoku.out"
	"$work/refsolve" <"$in" >"$work/$set.refsolve.out"
	"$work/sudokucheck" "$in" "$work/$set.refsolve.out"
	hyperfine --style basic -w 2 -r "$runs" --export-markdown "$work/$set.md" \
		-n "sudoku solve -jobs 1" "$work/sudoku solve -jobs 1 <$in >/dev/null" \
		-n "sudoku solve -jobs $(nproc)" "$work/sudoku solve -jobs $(nproc) <$in >/dev/null" \
		-n "sudoku solve -unique -jobs 1" "$work/sudoku solve -unique -jobs 1 <$in >/dev/null" \
		-n refsolve "$work/refsolve <$in >/dev/null"
	cat "$work/$set.md"
done

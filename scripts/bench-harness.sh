#!/usr/bin/env bash
# Agent harness benchmark: its own cost per turn (policy answers at once,
# the command is the shell no-op), medians over runs. Target <= 50 ms/turn.
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT=${COUNT:-3}
echo "== harness overhead per turn (BenchmarkHarnessTurn, 50 turns x 3 episodes x $COUNT) =="
out=$(go test -run '^$' -bench 'HarnessTurn' -benchtime 3x -count "$COUNT" ./agent/)
echo "$out" | grep -E '^Benchmark' || { echo "$out"; exit 1; }
echo "$out" | awk '/^BenchmarkHarnessTurn/ {for (i = 1; i < NF; i++) if ($(i+1) == "ms/turn-median") print $i}' | sort -n | awk '{a[NR]=$1} END {
	printf "median of medians: %.2f ms per turn (target <= 50 ms): %s\n", a[int((NR+1)/2)], (a[int((NR+1)/2)] <= 50 ? "met" : "NOT met") }'

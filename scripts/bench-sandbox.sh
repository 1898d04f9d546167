#!/usr/bin/env bash
# Sandbox benchmarks, printed as ratios (medians of interleaved runs):
#  1. per-run cost of a sandbox (create -> run a trivial verifier -> remove)
#     through otcurate's backend vs a plain `docker run --rm` CLI loop;
#  2. N verifier repeats on one post-solution state vs a fresh sandbox per
#     repeat (otcurate run --repeats N vs --isolate).
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT=${COUNT:-3}
REPEATS=${REPEATS:-5}

echo "== sandbox per-run cost (BenchmarkSandboxRun, 10 runs x $COUNT) =="
out=$(go test -run '^$' -bench 'SandboxRun' -benchtime 10x -count "$COUNT" ./sandbox/docker/)
echo "$out" | grep -E '^Benchmark' || { echo "$out"; exit 1; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
api=$(echo "$out" | awk '/SandboxRun\/api-/ {print $3}' | median)
files=$(echo "$out" | awk '/SandboxRun\/api\+files-/ {print $3}' | median)
cli=$(echo "$out" | awk '/SandboxRun\/cli-/ {print $3}' | median)
awk -v a="$api" -v f="$files" -v c="$cli" 'BEGIN {
	printf "median per run: api %.0f ms, api+files %.0f ms, docker CLI %.0f ms\n", a/1e6, f/1e6, c/1e6
	printf "ratio api / CLI: %.2fx   api+files / CLI: %.2fx   (target <= 0.8x)\n", a/c, f/c }'

echo
echo "== $REPEATS verifier repeats: one post-solution sandbox vs one per repeat =="
bin/otcurate gen-pool -n 1 --seed 5 --rates none -o /tmp/otcurate-bench-repeat.parquet --log-level warn >/dev/null
task="/tmp/otcurate-bench-repeat.parquet#task-00000"
bin/otcurate run "$task" --log-level warn >/dev/null || true # warm the image cache
bin/otcurate run "$task" --repeats "$REPEATS" --log-level warn >/dev/null || { echo "the benchmark task does not pass its oracle"; exit 1; }
shared=() isolated=()
for i in $(seq "$COUNT"); do
	s=$(date +%s.%N); bin/otcurate run "$task" --repeats "$REPEATS" --log-level warn >/dev/null || true; e=$(date +%s.%N)
	shared+=("$(awk -v e="$e" -v s="$s" 'BEGIN {print e - s}')")
	s=$(date +%s.%N); bin/otcurate run "$task" --repeats "$REPEATS" --isolate --log-level warn >/dev/null || true; e=$(date +%s.%N)
	isolated+=("$(awk -v e="$e" -v s="$s" 'BEGIN {print e - s}')")
done
ms=$(printf '%s\n' "${shared[@]}" | median); mi=$(printf '%s\n' "${isolated[@]}" | median)
awk -v s="$ms" -v i="$mi" -v n="$REPEATS" 'BEGIN {
	printf "median wall: shared %.2f s (1 container start), isolated %.2f s (%d starts); ratio %.2fx\n", s, i, n, i/s }'
rm -f /tmp/otcurate-bench-repeat.parquet /tmp/otcurate-bench-repeat.labels.jsonl

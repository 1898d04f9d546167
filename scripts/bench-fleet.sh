#!/usr/bin/env bash
# Fleet scaling: the same flaky-stage run on 1, 2 and 3 Docker engines of
# capacity CAP each (workers = combined capacity), on tasks whose verifier
# waits SLEEP seconds (I/O-bound, like verifiers that wait on a service).
# Prints wall time and speed-up over one engine, medians of ROUNDS runs,
# the three fleet sizes interleaved. Starts the extra engines itself
# (scripts/fleet.sh) and stops them at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
TASKS=${TASKS:-24}
CAP=${CAP:-2}
SLEEP=${SLEEP:-3}
ROUNDS=${ROUNDS:-3}
work=$(mktemp -d /tmp/otcurate-bench-fleet.XXXXXX)
trap 'rm -rf "$work"; scripts/fleet.sh down' EXIT

for ((i = 0; i < TASKS; i++)); do
	d="$work/pool/t$i"
	mkdir -p "$d/environment" "$d/tests" "$d/solution"
	echo "create /app/done ($i)" >"$d/instruction.md"
	: >"$d/task.toml"
	printf 'FROM debian:bookworm\nWORKDIR /app\n' >"$d/environment/Dockerfile"
	printf '#!/bin/bash\nsleep %s\n[ -f /app/done ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n' "$SLEEP" >"$d/tests/test.sh"
	printf '#!/bin/bash\ntouch /app/done\n' >"$d/solution/solve.sh"
	chmod +x "$d/tests/test.sh" "$d/solution/solve.sh"
done
hosts=$(scripts/fleet.sh up 2)
IFS=, read -r -a all <<<"$hosts"
declare -A walls
for ((r = 1; r <= ROUNDS; r++)); do
	for n in 1 2 3; do
		list=""
		for ((k = 0; k < n; k++)); do list+="${list:+,}${all[$k]}=$CAP"; done
		t0=$(date +%s.%N)
		bin/otcurate filter --stage flaky --in "$work/pool" -o "$work/out-$n-$r.parquet" --run-dir "$work/run-$n-$r" \
			--flaky-repeats 2 --sandbox "$list" --workers $((n * CAP)) --log-level warn >/dev/null
		t1=$(date +%s.%N)
		w=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
		walls[$n]+="$w "
		echo "round $r: $n engine(s) x $CAP: $w s" >&2
	done
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
base=$(echo "${walls[1]}" | median)
echo "== fleet scaling: $TASKS tasks, verifier sleeps ${SLEEP}s, nop + 2 oracle runs each, capacity $CAP per engine, $(nproc) cores =="
for n in 1 2 3; do
	m=$(echo "${walls[$n]}" | median)
	awk -v n="$n" -v c="$CAP" -v m="$m" -v b="$base" 'BEGIN { printf "%d engine(s), %2d sandboxes at once: median %6.1f s  speed-up %.2fx (ideal %dx)\n", n, n*c, m, b/m, n }'
done

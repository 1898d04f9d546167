#!/usr/bin/env bash
# The static pass on bundles of real pools' sizes (issue 22 item 6): a
# gen-pool padded by bench/internal/realsize to about 6-7 KB compressed /
# 35 KB inflated per task with a long tail, then, side by side in
# interleaved rounds, single-process `gzip -dc` of the same blobs,
# `otcurate validate` and `otcurate build --stages validate,dedup`. Prints
# medians of wall and CPU time and their ratios to gzip (target: build's
# rate >= 1.5x gzip's, both cores busy). On a shared machine the CPU ratio
# is the steadier figure; the load average is printed beside them.
#
#   scripts/bench-realistic.sh            # 3,566 tasks, 5 rounds
#   N=20000 ROUNDS=3 scripts/bench-realistic.sh
#   PROFILE=/tmp/build.prof scripts/bench-realistic.sh   # and one profiled build
#   SOURCES=40 scripts/bench-realistic.sh   # many small files per task
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-3566}
ROUNDS=${ROUNDS:-5}
[ -x bin/otcurate ] || { echo "bench-realistic: bin/otcurate missing: run make build first" >&2; exit 1; }
echo "cores: $(nproc)"
args=(-realistic -n "$N" -rounds "$ROUNDS" -bin bin/otcurate)
[ -n "${PROFILE:-}" ] && args+=(-cpuprofile "$PROFILE")
[ -n "${SOURCES:-}" ] && args+=(-sources "$SOURCES") # median padding files per task (default 4)
exec go run ./bench/validate "${args[@]}"

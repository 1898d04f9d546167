#!/usr/bin/env bash
# Measure what the verifier sandbox modes (--verifier-sandbox fresh|shared|separate)
# change (issue 35), on the Docker backend:
#  1. the oracle (solution/solve.sh) of every task that ships one, in the sample pool,
#     the Harbor example fixtures and testdata/realism, REPEATS isolated attempts per
#     mode (`otcurate run --agent oracle --isolate`): pass rate and tampered flags;
#  2. the demo build (as `make demo` runs it) once per mode in BUILD_MODES: the tasks
#     whose final decision differs from the default (fresh) run, and each run's wall time.
#     Run part 1 first: it builds the pool's images, so every build starts with a warm
#     image cache except for the tasks without a solution (built by the first build).
# Everything lands under out/verifier-modes/. Idempotent: finished results are kept
# (FORCE=1 redoes them); the tables are printed at the end from the files.
#
# Env: REPEATS (3), JOBS (concurrent tasks in part 1, 2), BUILD_MODES ("fresh shared
# separate"), PARTS ("oracle build"), SKIP_BUILD=1 (reuse bin/otcurate), FORCE=1,
# HARBOR (the Harbor fixtures, /work/shared/fixtures/harbor-examples).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH

OUT=out/verifier-modes
REPEATS=${REPEATS:-3}
JOBS=${JOBS:-2}
MODES="fresh shared separate"
# A name MODE-N is a repeat of MODE (fresh-2: a second default run, the noise floor:
# the pool has injected flaky verifiers, so some decisions differ by chance).
BUILD_MODES=${BUILD_MODES:-fresh shared separate fresh-2}
PARTS=${PARTS:-oracle build}
HARBOR=${HARBOR:-/work/shared/fixtures/harbor-examples}
POOL=testdata/sample-pool.parquet
BIN=$OUT/bin/otcurate
mkdir -p "$OUT/bin"

# One binary for the whole measurement, frozen under OUT (the tree may change meanwhile).
if [[ ${SKIP_BUILD:-} != 1 || ! -x $BIN ]]; then
	make build >&2
	cp bin/otcurate "$BIN"
	git rev-parse HEAD >"$OUT/bin/commit" 2>/dev/null || true
fi

# ---- part 1: the oracle under each mode --------------------------------------------

# oracle_one SOURCE NAME SPEC: REPEATS isolated oracle attempts in every mode, one JSON
# (the trial results of `run --json`) per mode, plus its stderr and exit code.
oracle_one() {
	local src=$1 name=$2 spec=$3 mode dir
	for mode in $MODES; do
		dir=$OUT/oracle/$mode/$src
		mkdir -p "$dir"
		if [[ ${FORCE:-} != 1 && -s $dir/$name.rc ]]; then # done (an error, e.g. an unloadable task, is final too)
			continue
		fi
		local rc=0 t0 t1
		t0=$(date +%s.%N)
		"$BIN" run "$spec" --agent oracle --repeats "$REPEATS" --isolate --json \
			--verifier-sandbox "$mode" --no-progress --log-level warn \
			>"$dir/$name.json" 2>"$dir/$name.stderr" || rc=$?
		t1=$(date +%s.%N)
		echo "$rc" >"$dir/$name.rc"
		awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f\n", b - a}' >"$dir/$name.sec"
		echo "oracle $mode $src/$name rc=$rc $(cat "$dir/$name.sec")s" >&2
	done
}
export -f oracle_one
export OUT REPEATS MODES BIN FORCE

if [[ " $PARTS " == *" oracle "* ]]; then
	# The tasks that ship solution/solve.sh; pool rows are run from the pool's own bytes.
	"$BIN" unpack "$POOL" -d "$OUT/pool" --overwrite --log-level error >"$OUT/unpack.log" 2>&1 || true
	{
		for d in "$OUT"/pool/*/; do
			[[ -f $d/solution/solve.sh ]] && printf 'pool\t%s\t%s\n' "$(basename "$d")" "$POOL#$(basename "$d")"
		done
		for d in "$HARBOR"/*/; do
			[[ -f $d/solution/solve.sh ]] && printf 'harbor\t%s\t%s\n' "$(basename "$d")" "${d%/}"
		done
		for d in testdata/realism/*/; do
			[[ -f $d/solution/solve.sh ]] && printf 'realism\t%s\t%s\n' "$(basename "$d")" "${d%/}"
		done
	} >"$OUT/oracle-tasks.tsv"
	echo "part 1: $(wc -l <"$OUT/oracle-tasks.tsv") tasks with an oracle x {$MODES} x $REPEATS attempts" >&2
	t0=$(date +%s)
	tr '\t' '\n' <"$OUT/oracle-tasks.tsv" | xargs -d '\n' -n 3 -P "$JOBS" bash -c 'oracle_one "$@"' _
	# Kept from the run that did the work (a re-run that finds everything done is quick).
	[[ ${FORCE:-} == 1 || ! -s $OUT/oracle-wall.sec ]] && echo "$(($(date +%s) - t0))" >"$OUT/oracle-wall.sec"
fi

# ---- part 2: the demo build under each mode ----------------------------------------

if [[ " $PARTS " == *" build "* ]]; then
	for mode in $BUILD_MODES; do
		dir=$OUT/build-$mode
		if [[ ${FORCE:-} != 1 && -s $dir/rc && -s $dir/run/decisions.jsonl ]]; then continue; fi
		rm -rf "$dir"
		mkdir -p "$dir"
		flag=()
		[[ ${mode%%-*} != fresh ]] && flag=(--verifier-sandbox "${mode%%-*}") # fresh: the default, as make demo runs it
		echo "$BIN build --pool $POOL -o $dir/tasks.parquet --run-dir $dir/run --flaky-repeats 3 --target 25 --seed 1 ${flag[*]}" >"$dir/cmd"
		rc=0
		/usr/bin/time -v -o "$dir/time.txt" "$BIN" build --pool "$POOL" -o "$dir/tasks.parquet" --run-dir "$dir/run" \
			--flaky-repeats 3 --target 25 --seed 1 --no-progress "${flag[@]}" >"$dir/stdout" 2>"$dir/stderr" || rc=$?
		echo "$rc" >"$dir/rc"
		echo "build $mode rc=$rc $(grep 'Elapsed (wall' "$dir/time.txt" | awk '{print $NF}')" >&2
	done
fi

# is_results FILE: FILE holds one JSON array (jq 1.6 -e passes an empty file).
is_results() { [[ $(jq -s 'length == 1 and (.[0] | type == "array")' "$1" 2>/dev/null) == true ]]; }

# ---- tables ------------------------------------------------------------------------

# One line per task and mode: source, task, mode, passed/attempts, tampered (path rule).
summ=$OUT/oracle-summary.tsv
: >"$summ"
if [[ -s $OUT/oracle-tasks.tsv ]]; then
	while IFS=$'\t' read -r src name _; do
		for mode in $MODES; do
			f=$OUT/oracle/$mode/$src/$name.json
			if is_results "$f"; then
				jq -r --arg s "$src" --arg n "$name" --arg m "$mode" '
					[$s, $n, $m,
					 "\(map(select(.outcome == "scored" and (.reward // 0) >= 1)) | length)/\(length)",
					 (map(.outcome) | unique | join(",")),
					 ([.[].tampered // [] | .[] | "\(.path) (\(.rule))"] | unique | join("; ") | if . == "" then "-" else . end),
					 ([.[] | select(.outcome != "scored" or (.reward // 0) < 1) | .detail // empty] | unique | first // "-" | gsub("[\t\n]"; " ") | .[0:160])
					] | @tsv' "$f" >>"$summ"
			else
				err=$(grep -v '^time=.*level=INFO' "$OUT/oracle/$mode/$src/$name.stderr" 2>/dev/null | tail -1 | tr '\t\n' '  ' | cut -c1-160)
				printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$src" "$name" "$mode" "0/0" "error(rc=$(cat "$OUT/oracle/$mode/$src/$name.rc" 2>/dev/null || echo -))" "-" "${err:--}" >>"$summ"
			fi
		done
	done <"$OUT/oracle-tasks.tsv"

	echo
	echo "== oracle pass rate per task and mode ($REPEATS isolated attempts; T = an attempt flagged tampered) =="
	awk -F'\t' '
		{ k = $1 "/" $2; if (!(k in seen)) { seen[k] = 1; order[++n] = k }
		  split($4, a, "/"); full[k, $3] = (a[1] == a[2] && a[2] > 0); zero[k, $3] = (a[1] == 0)
		  cell[k, $3] = $4 ($6 != "-" ? " T" : ""); outc[k, $3] = $5 }
		END {
			printf "%-44s %-10s %-10s %-10s %s\n", "task", "fresh", "shared", "separate", "note"
			for (i = 1; i <= n; i++) {
				k = order[i]; f = cell[k, "fresh"]; s = cell[k, "shared"]; p = cell[k, "separate"]
				if (f == s && s == p && full[k, "fresh"] && f !~ /T/) same++
				note = ""
				if (f != s || s != p) note = "MODES DIFFER"
				else if (zero[k, "fresh"]) note = "fails in every mode (" outc[k, "fresh"] ")"
				else if (!full[k, "fresh"]) note = "flaky"
				printf "%-44s %-10s %-10s %-10s %s\n", k, f, s, p, note
			}
			printf "(%d of %d tasks pass every attempt in every mode, untampered)\n", same, n
		}' "$summ"

	echo
	echo "== tampered flags (neutralised paths and rules) =="
	awk -F'\t' '$6 != "-" { printf "%s/%s [%s]: %s\n", $1, $2, $3, $6 }' "$summ" | sort -u
	awk -F'\t' '$6 != "-" {n++} END {if (!n) print "(none)"}' "$summ"

	echo
	echo "== fails in fresh, passes in shared: the reason (trial result detail) =="
	awk -F'\t' '
		{ k = $1 "/" $2; split($4, a, "/"); pass[k, $3] = a[1] + 0; tot[k, $3] = a[2] + 0; det[k, $3] = $7; tam[k, $3] = $6; if (!(k in seen)) { seen[k] = 1; order[++n] = k } }
		END { for (i = 1; i <= n; i++) { k = order[i]
			if (pass[k, "fresh"] < tot[k, "fresh"] && pass[k, "shared"] == tot[k, "shared"] && tot[k, "shared"] > 0) {
				m++; printf "%s: fresh %d/%d, shared %d/%d; tampered: %s; detail: %s\n", k, pass[k, "fresh"], tot[k, "fresh"], pass[k, "shared"], tot[k, "shared"], tam[k, "fresh"], det[k, "fresh"] } }
			if (!m) print "(none)" }' "$summ"
	for mode in $MODES; do
		c=$(for f in "$OUT"/oracle/"$mode"/*/*.json; do is_results "$f" && jq '[.[].durations | (.start // 0) + (.solve // 0) + (.carry // 0) + (.verify // 0) + (.teardown // 0)] | add' "$f"; done | awk '{t += $1} END {printf "%.0f", t}')
		cat "$OUT"/oracle/"$mode"/*/*.sec | awk -v m="$mode" -v c="$c" '{t += $1} END {printf "part 1 %s: %.0f s of oracle runs (process wall), %s s of start+solve+carry+verify+teardown (no image builds)\n", m, t, c}'
	done
	[[ -s $OUT/oracle-wall.sec ]] && echo "part 1 wall time: $(cat "$OUT/oracle-wall.sec") s (JOBS=$JOBS)"
fi

# Final decision per task: its last decisions.jsonl line (the stage that dropped it, or select).
final() { jq -r '[.path, .stage, .verdict, .reason // ""] | @tsv' "$1" | awk -F'\t' '{ d[$1] = $2 " " $3 " " $4; if (!($1 in s)) { s[$1] = 1; o[++n] = $1 } } END { for (i = 1; i <= n; i++) print o[i] "\t" d[o[i]] }' | sort; }

echo
echo "== demo build wall times =="
printf '%-9s %-4s %-10s %-8s %-6s %s\n' mode rc wall maxRSS kept funnel
for mode in $BUILD_MODES; do
	dir=$OUT/build-$mode
	[[ -s $dir/rc ]] || continue
	wall=$(grep 'Elapsed (wall' "$dir/time.txt" | awk '{print $NF}')
	rss=$(grep 'Maximum resident' "$dir/time.txt" | awk '{printf "%dMB", $NF / 1024}')
	kept=$(final "$dir/run/decisions.jsonl" | awk -F'\t' '$2 ~ /^select keep/' | wc -l)
	funnel=$(final "$dir/run/decisions.jsonl" | awk -F'\t' '{ split($2, a, " "); if (a[2] != "keep") c[a[1] ":" a[3]]++ } END { for (k in c) printf "%s=%d ", k, c[k] }' | tr ' ' '\n' | sort | tr '\n' ' ')
	printf '%-9s %-4s %-10s %-8s %-6s %s\n' "$mode" "$(cat "$dir/rc")" "$wall" "$rss" "$kept" "drops: $funnel"
done

echo
echo "== final decisions that differ from the default (fresh) build =="
if [[ -s $OUT/build-fresh/run/decisions.jsonl ]]; then
	final "$OUT/build-fresh/run/decisions.jsonl" >"$OUT/final-fresh.tsv"
	for mode in $BUILD_MODES; do
		[[ $mode == fresh || ! -s $OUT/build-$mode/run/decisions.jsonl ]] && continue
		final "$OUT/build-$mode/run/decisions.jsonl" >"$OUT/final-$mode.tsv"
		echo "-- fresh vs $mode:"
		join -t $'\t' -a1 -a2 -e '(absent)' -o 0,1.2,2.2 "$OUT/final-fresh.tsv" "$OUT/final-$mode.tsv" |
			awk -F'\t' -v m="$mode" '$2 != $3 { kk = ($2 ~ /^select keep/ && $3 ~ /^select keep/); if (kk) k++; else n++
				printf "%-16s fresh: %-40s %s: %s%s\n", $1, $2, m, $3, kk ? "  (kept in both)" : "" }
				END { printf "(%d tasks with a different outcome, %d kept in both with another select reason)\n", n, k }'
	done
	# The reasons behind a flaky-stage difference: the flaky decision's detail in each run.
	for mode in $BUILD_MODES; do
		[[ $mode == fresh || ! -s $OUT/final-$mode.tsv ]] && continue
		join -t $'\t' "$OUT/final-fresh.tsv" "$OUT/final-$mode.tsv" | awk -F'\t' '$2 != $3 {print $1}' | while read -r p; do
			for m in fresh "$mode"; do
				jq -r --arg p "$p" --arg m "$m" 'select(.path == $p and .verdict != "keep") | "   \($p) [\($m)] \(.stage) \(.reason): \(.detail // "" | tostring | .[0:200])"' "$OUT/build-$m/run/decisions.jsonl"
			done
		done
	done
fi

#!/usr/bin/env bash
# Proof of learning for `otcurate train` with the built-in policy (a learnt
# selector over a fixed vocabulary of command templates, see
# policy/builtin): does training on generated nl2bash-like tasks raise the
# greedy pass rate on tasks it was not trained on, and more than two
# controls that can fail?
#
# Splits (task directories under $OUT/splits, all drawn from seeds no other
# split uses):
#   train            phrasing 1 of the 26 training variants (balanced)
#   val              same distribution, other draws: the learning curve, and
#                    the only split any configuration choice may look at
#   test-id          same distribution again: the in-distribution test
#   test-phrasing    phrasing 2 of the training variants: no instruction
#                    template in common with training (held out by phrasing)
#   test-variant     the 8 held-out variants (HELDOUT_VARIANTS), both
#                    phrasings: never trained on (held out by whole variant)
#   test-paraphrase  30 instructions written by hand for this purpose
#                    (testdata/paraphrases/nl2bash.jsonl) over training
#                    variants, with those variants' files and verifiers
# Test splits are evaluated once before step 1 and once after the last step
# (train --test), never in between.
#
# Arms, each on every seed in SEEDS:
#   trained   --lr $LR
#   lr0       --lr 0: rolls out and scores, never updates (cannot move)
#   shuffled  --lr $LR --shuffle-rewards: the same kind of rollouts, the
#             rewards permuted across each step's samples before the
#             advantages (can move: it updates on noise)
#
# The runs use the fake sandbox backend by default (SANDBOX=fake: tasks run
# as host processes in a private root, ~1 s per sandbox under load; needs
# root); SANDBOX=docker runs the same thing in containers (~20x slower).
# SKIP_BEFORE=1 leaves out the evaluations before step 1: greedy decoding of
# the cold-start weights gives the same numbers in every arm and seed, so the
# summary takes "before" from a run that made it (and checks that all the
# runs that made it agree).
# Prints one table per split and writes $OUT/summary.json.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out/proof}
SANDBOX=${SANDBOX:-fake}
SEEDS=${SEEDS:-1 2 3 4 5}
JOBS=${JOBS:-2} # runs in flight
ARMS=${ARMS:-trained lr0 shuffled}
LR=${LR:-20}
STEPS=${STEPS:-12}
EPOCHS=${EPOCHS:-2}
OPTIMIZER=${OPTIMIZER:-sgd}
DECAY=${DECAY:-6}
SKIP_SOLVED=${SKIP_SOLVED:-1}
EVAL_EVERY=${EVAL_EVERY:-6}
K=${K:-8}
B=${B:-8}
N_TRAIN=${N_TRAIN:-96}
BIN=${BIN:-bin/otcurate}
make -s build >/dev/null # always: a stale binary lacks flags the script passes
. scripts/splits.sh
lock_out proof-of-learning.sh

gen train 101 "$N_TRAIN" --balanced --phrasings 1 --exclude-variants "$HELDOUT_VARIANTS"
gen val 202 52 --balanced --phrasings 1 --exclude-variants "$HELDOUT_VARIANTS"
gen test-id 303 52 --balanced --phrasings 1 --exclude-variants "$HELDOUT_VARIANTS"
gen test-phrasing 404 52 --balanced --phrasings 2 --exclude-variants "$HELDOUT_VARIANTS"
gen test-variant 505 32 --balanced --variants "$HELDOUT_VARIANTS"
gen test-paraphrase 606 60 --paraphrases testdata/paraphrases/nl2bash.jsonl

run() { # SEED ARM
	local seed=$1 arm=$2 lr=$LR extra=()
	case $arm in
	lr0) lr=0 ;;
	shuffled) extra=(--shuffle-rewards) ;;
	esac
	[ "${SKIP_BEFORE:-0}" = 1 ] && extra+=(--skip-eval-before)
	local dir="$OUT/runs/seed-$seed/$arm"
	rm -rf "$dir"
	mkdir -p "$(dirname "$dir")"
	echo "$(date -u +%T) start seed $seed arm $arm"
	"$BIN" train --sandbox "$SANDBOX" --data "$OUT/splits/train" --eval "$OUT/splits/val" --run-dir "$dir" \
		--test id="$OUT/splits/test-id" --test phrasing="$OUT/splits/test-phrasing" \
		--test variant="$OUT/splits/test-variant" --test paraphrase="$OUT/splits/test-paraphrase" \
		--group-size "$K" --batch-tasks "$B" --steps "$STEPS" --lr "$lr" --optimizer "$OPTIMIZER" \
		--lr-decay-steps "$DECAY" --skip-solved "$SKIP_SOLVED" --ppo-epochs "$EPOCHS" --eval-every "$EVAL_EVERY" \
		--seed "$seed" "${extra[@]}" --log-level warn >"$dir.log" 2>&1 || { echo "seed $seed arm $arm failed: see $dir.log"; return 1; }
	echo "$(date -u +%T) done seed $seed arm $arm"
}
if [ "${SKIP_RUNS:-0}" != 1 ]; then
	for seed in $SEEDS; do
		for arm in $ARMS; do
			while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
			run "$seed" "$arm" &
		done
	done
	wait
fi

python3 scripts/proof-summary.py "$OUT" "$SEEDS" "$STEPS"

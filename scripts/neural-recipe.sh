#!/usr/bin/env bash
# The SFT-then-RL recipe in miniature, with a real neural policy: the
# reference PyTorch model of integrations/tinylm, trained from scratch on
# this machine's CPU, served over the OpenAI protocol, and trained with RL
# by `otcurate train --policy openai` and the model's own learner.
#
#   1. splits    generated nl2bash-like tasks (as scripts/proof-of-learning.sh):
#                sft (teacher data), train (RL), val, test-phrasing (held
#                out by phrasing), test-paraphrase (hand-written instructions)
#   2. traces    the built-in policy (the teacher) solves the sft split through
#                the harness with the compact prompt; solved trajectories
#                become $OUT/sft.jsonl (otcurate traces)
#   3. sft       tinylm.sft trains a random-init model on them, the replies'
#                free-text "analysis" and "plan" emptied (--blank-reasoning: the
#                harness never reads them, and imitating the teacher's prose
#                costs a small model most of its capacity)
#                ($OUT/ckpt/sft, loss curve $OUT/sft-loss.jsonl)
#   4. rl        per seed and arm: a server on the SFT weights, the learner,
#                and otcurate train on the train split, evaluated greedily on
#                val before, during and after, and on the test splits before
#                and after. Arms: trained (--lr $LR), lr0 (the learner's lr 0:
#                it publishes the same weights every step), shuffled
#                (--shuffle-rewards: the same kind of rollouts, rewards
#                permuted before the advantages)
#   5. summary   scripts/proof-summary.py: before → after per split, arm, seed
#
# PHASES picks phases (default all); each phase reuses the previous ones'
# files. Measured at the defaults on 2 cores: SFT 19-34 min (idle to loaded),
# the three arms of one seed in parallel ~20 min.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out/neural}
PY=${PY:-/usr/bin/python3}
SANDBOX=${SANDBOX:-fake}
PHASES=${PHASES:-splits traces sft rl summary}
SEEDS=${SEEDS:-1 2 3}
ARMS=${ARMS:-trained lr0 shuffled}
JOBS=${JOBS:-3}
N_SFT=${N_SFT:-600}
N_TRAIN=${N_TRAIN:-64}
N_EVAL=${N_EVAL:-26}
# the model and its SFT
D_MODEL=${D_MODEL:-192}
LAYERS=${LAYERS:-3}
HEADS=${HEADS:-4}
MAX_SEQ=${MAX_SEQ:-2048}
SFT_STEPS=${SFT_STEPS:-1500}
SFT_BATCH=${SFT_BATCH:-4}
SFT_LR=${SFT_LR:-3e-3}
THREADS=${THREADS:-1}
# RL
LR=${LR:-1e-4}
STEPS=${STEPS:-6}
K=${K:-8}
B=${B:-4}
EPOCHS=${EPOCHS:-2}
EVAL_EVERY=${EVAL_EVERY:-3}
TEMPERATURE=${TEMPERATURE:-1}
MAX_TOKENS=${MAX_TOKENS:-320}
MAX_TURNS=${MAX_TURNS:-4}
BIN=${BIN:-bin/otcurate}
TINYLM=integrations/tinylm
export PYTHONPATH="$PWD/$TINYLM${PYTHONPATH:+:$PYTHONPATH}"
"$PY" -c 'import torch' 2>/dev/null || { echo "$PY cannot import torch: run make setup (python3-torch)" >&2; exit 1; }
make -s build >/dev/null
. scripts/splits.sh
lock_out neural-recipe.sh
has() { [[ " $PHASES " == *" $1 "* ]]; }
say() { echo "$(date -u +%T) $*"; }

if has splits; then
	say "splits"
	gen sft 111 "$N_SFT" --balanced --phrasings 1 --exclude-variants "$HELDOUT_VARIANTS"
	gen train 101 "$N_TRAIN" --balanced --phrasings 1 --exclude-variants "$HELDOUT_VARIANTS"
	gen val 202 "$N_EVAL" --balanced --phrasings 1 --exclude-variants "$HELDOUT_VARIANTS"
	gen test-phrasing 404 "$N_EVAL" --balanced --phrasings 2 --exclude-variants "$HELDOUT_VARIANTS"
	gen test-paraphrase 606 30 --paraphrases testdata/paraphrases/nl2bash.jsonl
fi

if has traces; then
	say "traces: the built-in teacher on $N_SFT tasks"
	"$BIN" traces --sandbox "$SANDBOX" --data "$OUT/splits/sft" -o "$OUT/sft.jsonl" --prompt compact \
		--attempts 2 --max-turns "$MAX_TURNS" --temperature 1 --workers 2 --log-level warn | tee "$OUT/traces.log"
fi

if has sft; then
	say "sft: d_model $D_MODEL, $LAYERS layers, $SFT_STEPS steps of $SFT_BATCH"
	rm -rf "$OUT/ckpt/sft"
	"$PY" -m tinylm.sft --data "$OUT/sft.jsonl" --out "$OUT/ckpt/sft" --d-model "$D_MODEL" --layers "$LAYERS" \
		--heads "$HEADS" --max-seq-len "$MAX_SEQ" --steps "$SFT_STEPS" --batch "$SFT_BATCH" --lr "$SFT_LR" \
		--seed 1 --threads "$THREADS" --blank-reasoning --log "$OUT/sft-loss.jsonl" 2>&1 | tee "$OUT/sft.log" | grep -E "step [0-9]+0{2,}/|wrote|conversations" || true
fi

# serve CKPT NAME PORTFILE LOG: a server in the background; prints its pid.
serve() {
	rm -f "$3"
	"$PY" -m tinylm.serve --checkpoint "$1" --served-model-name "$2" --host 127.0.0.1 --port 0 \
		--port-file "$3" --threads "$THREADS" --quiet >"$4" 2>&1 &
	local pid=$!
	for _ in $(seq 600); do
		[ -s "$3" ] && curl -fsS "http://127.0.0.1:$(cat "$3")/health" >/dev/null 2>&1 && { echo "$pid"; return 0; }
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	echo "the tinylm server did not start: see $4" >&2
	return 1
}

rl() { # SEED ARM
	local seed=$1 arm=$2 lr=$LR extra=()
	case $arm in
	lr0) lr=0 ;;
	shuffled) extra=(--shuffle-rewards) ;;
	esac
	# Greedy evaluations before step 1 depend only on the SFT weights: the
	# first run makes them, the others skip them (the summary reuses them).
	local first_seed=${SEEDS%% *} first_arm=${ARMS%% *}
	if [ "$seed" != "$first_seed" ] || [ "$arm" != "$first_arm" ]; then
		extra+=(--skip-eval-before)
	fi
	local dir="$OUT/runs/seed-$seed/$arm"
	rm -rf "$dir"
	mkdir -p "$dir"
	local spid lpid
	spid=$(serve "$OUT/ckpt/sft" sft "$dir/port" "$dir/server.log") || return 1
	"$PY" -m tinylm.learner --learner-dir "$dir/learner" --init "$OUT/ckpt/sft" --out "$dir/ckpt" --lr "$lr" \
		--ppo-epochs "$EPOCHS" --seed "$seed" --threads "$THREADS" --poll 0.5 --max-steps "$STEPS" >"$dir/learner.log" 2>&1 &
	lpid=$!
	say "start seed $seed arm $arm"
	local status=0
	"$BIN" train --sandbox "$SANDBOX" --policy openai --base-url "http://127.0.0.1:$(cat "$dir/port")/v1" --model sft \
		--prompt compact --temperature "$TEMPERATURE" --max-tokens "$MAX_TOKENS" --max-turns "$MAX_TURNS" \
		--data "$OUT/splits/train" --eval "$OUT/splits/val" --run-dir "$dir/run" \
		--test phrasing="$OUT/splits/test-phrasing" --test paraphrase="$OUT/splits/test-paraphrase" \
		--group-size "$K" --batch-tasks "$B" --steps "$STEPS" --eval-every "$EVAL_EVERY" --seed "$seed" \
		--learner-dir "$dir/learner" --learner-timeout 20m --policy-concurrency 2 --rollouts 4 "${extra[@]}" \
		--log-level warn >"$dir/train.log" 2>&1 || status=$?
	kill "$spid" "$lpid" 2>/dev/null || true
	wait "$spid" "$lpid" 2>/dev/null || true
	# the summary reads the splits' files where the proof's script keeps them
	for f in eval.jsonl test-phrasing.jsonl test-paraphrase.jsonl; do
		[ -f "$dir/run/$f" ] && cp "$dir/run/$f" "$dir/$f"
	done
	[ "$status" = 0 ] || { echo "seed $seed arm $arm failed ($status): see $dir/train.log" >&2; return 1; }
	say "done seed $seed arm $arm"
}
if has rl; then
	for seed in $SEEDS; do
		for arm in $ARMS; do
			while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
			rl "$seed" "$arm" &
		done
	done
	wait
fi

if has summary; then
	"$PY" - "$OUT" <<'PY'
import json, os, sys
out = sys.argv[1]
curve = [json.loads(l) for l in open(os.path.join(out, "sft-loss.jsonl"))]
pick = [c for i, c in enumerate(curve) if i % max(1, len(curve) // 8) == 0 or i == len(curve) - 1]
print("SFT loss: " + "  ".join(f"{c['step']}:{c['loss']:.3f}" for c in pick) + f"  ({curve[-1].get('seconds', 0):.0f} s)")
PY
	python3 scripts/proof-summary.py "$OUT" "$SEEDS" "$STEPS"
fi

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
# Held out by whole variant: variant 2 of every other template (fixed before
# any measurement; see `go doc poolgen.ShellVariantIDs` for the list).
HELDOUT_VARIANTS=${HELDOUT_VARIANTS:-grep_count/v2,sort_unique/v2,csv_sum/v2,word_count/v2,rename_files/v2,top_words/v2,count_files/v2,case_convert/v2}
BIN=${BIN:-bin/otcurate}
make -s build >/dev/null # always: a stale binary lacks flags the script passes
mkdir -p "$OUT/splits"
# One script per OUT: a second one would regenerate the splits and clear the
# run directories under the first one's runs.
exec 9>"$OUT/.lock"
flock -n 9 || { echo "another proof-of-learning.sh is using $OUT" >&2; exit 1; }

gen() { # NAME SEED N FLAGS...
	local name=$1 seed=$2 n=$3
	shift 3
	rm -rf "$OUT/splits/$name"
	"$BIN" gen-pool -n "$n" --kata-share -1 --rates none --seed "$seed" --prefix "$name" "$@" \
		--dir "$OUT/splits/$name" --labels "$OUT/splits/$name.labels.jsonl" --log-level warn >/dev/null
}
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

python3 - "$OUT" "$SEEDS" "$STEPS" <<'PY'
import glob, json, os, re, statistics, sys
out, seeds, steps = sys.argv[1], [int(s) for s in sys.argv[2].split()], int(sys.argv[3])
arms = ("trained", "lr0", "shuffled")
splits = [("val", "eval.jsonl"), ("test-id", "test-id.jsonl"), ("test-phrasing", "test-phrasing.jsonl"),
          ("test-variant", "test-variant.jsonl"), ("test-paraphrase", "test-paraphrase.jsonl")]

def instructions(split):
    d = os.path.join(out, "splits", split)
    return {t: open(os.path.join(d, t, "instruction.md")).read() for t in sorted(os.listdir(d))}
mask = lambda s: re.sub(r"\d+", "N", re.sub(r"`[^`]*`", "`X`", s)).strip()
train = instructions("train")
train_masked = {mask(s) for s in train.values()}
print("overlap with the training split (share of a split's instructions):")
for split, _ in splits:
    ins = instructions(split)
    same = sum(s in set(train.values()) for s in ins.values()) / len(ins)
    masked = sum(mask(s) in train_masked for s in ins.values()) / len(ins)
    print(f"  {split:16} {len(ins):3} tasks  word for word {same:5.1%}  once code spans and numbers are masked {masked:5.1%}")

def load(path):
    return [json.loads(l) for l in open(path)]
res, before = {}, {}
for split, f in splits:  # before: step 0, the same in every run (greedy, cold start)
    for d in sorted(glob.glob(os.path.join(out, "runs", "seed-*", "*", f))):
        ev = load(d)
        if ev[0]["step"] == 0:
            before.setdefault(split, set()).add(ev[0]["pass_rate"])
    if len(before.get(split, ())) > 1:
        print(f"WARNING {split}: the runs disagree before step 1: {sorted(before[split])}")
for split, f in splits:
    for arm in arms:
        for s in seeds:
            p = os.path.join(out, "runs", f"seed-{s}", arm, f)
            if os.path.exists(p):
                ev = load(p)
                if ev[-1]["step"] != steps:
                    continue  # an unfinished run: its last line is not "after"
                b = ev[0]["pass_rate"] if ev[0]["step"] == 0 else min(before[split])
                res[(split, arm, s)] = (b, ev[-1]["pass_rate"], ev[-1]["step"])
fmt = lambda xs: f"{statistics.mean(xs):+.3f} ± {statistics.stdev(xs):.3f}" if len(xs) > 1 else (f"{xs[0]:+.3f}" if xs else "-")
summary = {}
for split, _ in splits:
    print(f"\n== {split}: greedy pass rate before → after, per seed; gain mean ± sd over seeds")
    for arm in arms:
        rows = [(s, *res[(split, arm, s)]) for s in seeds if (split, arm, s) in res]
        cells = "  ".join(f"s{s}:{b:.3f}→{a:.3f}" for s, b, a, _ in rows)
        gains = [a - b for _, b, a, _ in rows]
        print(f"  {arm:9} {cells}   gain {fmt(gains)}")
        summary.setdefault(split, {})[arm] = {"seeds": [s for s, *_ in rows], "before": [b for _, b, _, _ in rows],
                                              "after": [a for _, _, a, _ in rows], "gain": gains}
    for ctl in ("lr0", "shuffled"):
        d = [res[(split, "trained", s)][1] - res[(split, ctl, s)][1] for s in seeds
             if (split, "trained", s) in res and (split, ctl, s) in res]
        if d:
            wins = sum(x > 0 for x in d)
            print(f"  trained − {ctl:8} after: {fmt(d)}   trained ahead on {wins}/{len(d)} seeds")
            summary[split][f"trained_minus_{ctl}"] = d
json.dump(summary, open(os.path.join(out, "summary.json"), "w"), indent=1)
print(f"\nwrote {out}/summary.json")
PY

#!/usr/bin/env python3
"""The proof-of-learning summary (scripts/proof-of-learning.sh, scripts/neural-recipe.sh):
greedy pass rate before and after per split, arm and seed, gains over the controls.

    proof-summary.py OUT "SEEDS" STEPS

Splits whose directory is missing under OUT/splits are left out."""
import glob, json, os, re, statistics, sys
out, seeds, steps = sys.argv[1], [int(s) for s in sys.argv[2].split()], int(sys.argv[3])
arms = ("trained", "lr0", "shuffled")
splits = [("val", "eval.jsonl"), ("test-id", "test-id.jsonl"), ("test-phrasing", "test-phrasing.jsonl"),
          ("test-variant", "test-variant.jsonl"), ("test-paraphrase", "test-paraphrase.jsonl")]
splits = [(s, f) for s, f in splits if os.path.isdir(os.path.join(out, "splits", s))]

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

"""RL learner for otcurate's external-learner handshake (integrations/learner/README.md).

    python3 -m tinylm.learner --learner-dir RUN/learner --init CKPT --out CKPT_ROOT --lr 1e-4

For each step N: wait for DIR/experience/step-NNNNN.ready, read the step's JSON Lines
experience, train on the loss_mask==1 rows with the token-mean PPO-clip loss on the
stored advantages and behaviour log-probs (E epochs, M mini-batches each), save
CKPT_ROOT/policy-step-N and publish DIR/policy/version.json atomically. The first
epoch's forward, before any update, measures the server/learner log-prob agreement.
Everything is appended to DIR/learner-log.jsonl. On start an existing version.json is
resumed from (its checkpoint, optimizer.pt beside it, step+1).
"""
import argparse
import json
import os
import random
import sys
import time

import torch

from . import tokenizer as tok
from .model import CheckpointError, load_checkpoint, pick_device, save_checkpoint, sequence_logprobs

AGREEMENT_WARN = 1e-3


def warn(msg):
    """A loud line on stderr."""
    print(f"tinylm.learner: WARNING: {msg}", file=sys.stderr, flush=True)


def wait_ready(exp_dir, step, poll):
    """The parsed step-NNNNN.ready of step, waiting (polling) until it exists and parses."""
    path = os.path.join(exp_dir, f"step-{step:05d}.ready")
    while True:
        try:
            with open(path) as f:
                return json.load(f)
        except (FileNotFoundError, ValueError):
            time.sleep(poll)


def read_experience(exp_dir, ready):
    """The rows of a step's JSON Lines experience (the file the .ready's `jsonl` names)."""
    name = ready.get("jsonl") or os.path.splitext(ready.get("file", ""))[0] + ".jsonl"
    path = os.path.join(exp_dir, os.path.basename(name))
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except ValueError as e:
                    raise ValueError(f"{path}:{n}: {e}") from e
    return rows, path


def usable_rows(rows, max_seq_len):
    """(rows to train on, {reason: count} of loss_mask rows left out)."""
    used, skipped = [], {}
    for r in rows:
        if r.get("loss_mask") != 1:
            continue
        p, resp, old = r.get("prompt_token_ids"), r.get("response_token_ids"), r.get("behaviour_logprobs")
        if not p or not resp:
            reason = "no_token_ids"
        elif not isinstance(old, list) or len(old) != len(resp):
            reason = "logprobs_length_mismatch"
        elif any(not (0 <= t < tok.EMIT_BYTES or t == tok.END) for t in resp):
            reason = "not_emittable"
        elif len(p) + len(resp) - 1 > max_seq_len:
            reason = "too_long"
        else:
            used.append(r)
            continue
        skipped[reason] = skipped.get(reason, 0) + 1
    return used, skipped


def ppo_terms(logp, old, adv, clip_low, clip_high):
    """Per-token PPO-clip losses, ratios and clipped flags (ratio = exp(logp - old))."""
    ratio = torch.exp(torch.clamp(logp - old, max=20.0))
    clipped_ratio = torch.clamp(ratio, 1 - clip_low, 1 + clip_high)
    loss = -torch.minimum(ratio * adv, clipped_ratio * adv)
    clipped = (ratio * adv) > (clipped_ratio * adv)  # the clip is the active branch
    return loss, ratio, clipped


def run_epoch(model, opt, rows, args, rng, measure):
    """One pass over rows in args.mini_batches optimiser steps.

    Returns (record, agreement diffs): the diffs |logp - behaviour| are collected when
    measure is true, for the rows seen before the first optimiser step."""
    rows = rows[:]
    rng.shuffle(rows)
    m = max(1, min(args.mini_batches, len(rows)))
    minis = [rows[i * len(rows) // m:(i + 1) * len(rows) // m] for i in range(m)]
    tot = {"loss": 0.0, "tokens": 0, "dev_sum": 0.0, "dev_max": 0.0, "clipped": 0}
    diffs = []
    device = next(model.parameters()).device
    for mini in minis:
        n_tok = sum(len(r["response_token_ids"]) for r in mini)
        opt.zero_grad(set_to_none=True)
        for i in range(0, len(mini), args.micro_batch):
            micro = mini[i:i + args.micro_batch]
            logps = sequence_logprobs(model, [(r["prompt_token_ids"], r["response_token_ids"]) for r in micro])
            loss_sum = 0.0
            for r, lp in zip(micro, logps):
                old = torch.tensor(r["behaviour_logprobs"], dtype=torch.float32, device=device)
                loss, ratio, clipped = ppo_terms(lp, old, float(r["advantage"]), args.clip_low, args.clip_high)
                loss_sum = loss_sum + loss.sum()
                dev = (ratio.detach() - 1).abs()
                tot["dev_sum"] += dev.sum().item()
                tot["dev_max"] = max(tot["dev_max"], dev.max().item())
                tot["clipped"] += int(clipped.sum())
                if measure:
                    diffs += (lp.detach() - old).abs().tolist()
            (loss_sum / n_tok).backward()
            tot["loss"] += loss_sum.item()
        tot["tokens"] += n_tok
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
        opt.step()
        measure = False
    t = max(1, tot["tokens"])
    return ({"loss": tot["loss"] / t, "tokens": tot["tokens"], "rows": len(rows), "mini_batches": m,
             "ratio_dev_mean": tot["dev_sum"] / t, "ratio_dev_max": tot["dev_max"],
             "clip_frac": tot["clipped"] / t}, diffs)


def train_step(model, opt, step, rows, args, log):
    """E epochs on a step's usable rows; logs each epoch; returns the epoch records."""
    rng = random.Random(args.seed * 1000003 + step)
    records = []
    model.train()
    for epoch in range(1, args.ppo_epochs + 1):
        start = time.time()
        rec, diffs = run_epoch(model, opt, rows, args, rng, measure=epoch == 1)
        rec = {"step": step, "epoch": epoch, **rec, "seconds": round(time.time() - start, 3)}
        if diffs:
            rec.update(logprob_agreement_mean=sum(diffs) / len(diffs), logprob_agreement_max=max(diffs),
                       agreement_tokens=len(diffs))
            if rec["logprob_agreement_mean"] > AGREEMENT_WARN:
                warn(f"step {step}: mean |logp_learner - behaviour| = {rec['logprob_agreement_mean']:.3g} > "
                     f"{AGREEMENT_WARN:g}: the server and the learner disagree (different weights, template "
                     "or logprob mode?); the PPO ratios are off")
        log(rec)
        print(f"tinylm.learner: step {step} epoch {epoch}: loss {rec['loss']:.5f} tokens {rec['tokens']} "
              f"|r-1| mean {rec['ratio_dev_mean']:.2e} max {rec['ratio_dev_max']:.2e} clip {rec['clip_frac']:.3f}"
              + (f" agreement {rec['logprob_agreement_mean']:.2e}" if diffs else ""), file=sys.stderr, flush=True)
        records.append(rec)
    model.eval()
    return records


def optimizer_blob(opt):
    """The optimizer state in a form torch.load(weights_only=True) reads back (tensors + JSON)."""
    sd = opt.state_dict()
    return {"state": sd["state"], "param_groups_json": json.dumps(sd["param_groups"])}


def restore_optimizer(opt, path, device, lr, weight_decay):
    """Load optimizer_blob's file into opt, keeping the command line's lr and weight decay."""
    blob = torch.load(path, map_location=device, weights_only=True)
    opt.load_state_dict({"state": blob["state"], "param_groups": json.loads(blob["param_groups_json"])})
    for g in opt.param_groups:
        g["lr"], g["weight_decay"] = lr, weight_decay


def publish(policy_dir, step, name, path):
    """Write policy/version.json atomically (temp file + os.replace)."""
    os.makedirs(policy_dir, exist_ok=True)
    tmp = os.path.join(policy_dir, f"version.json.tmp-{os.getpid()}")
    with open(tmp, "w") as f:
        json.dump({"step": step, "model": name, "lora_name": name, "lora_path": os.path.abspath(path)}, f)
    os.replace(tmp, os.path.join(policy_dir, "version.json"))


def start_point(args):
    """(first step, checkpoint path, resumed?) from version.json when present, else --init/--first-step."""
    vpath = os.path.join(args.learner_dir, "policy", "version.json")
    if os.path.exists(vpath):
        with open(vpath) as f:
            v = json.load(f)
        if v.get("lora_path"):
            return int(v["step"]) + 1, v["lora_path"], True
        warn(f"{vpath} has no lora_path; starting from --init")
    if not args.init:
        raise ValueError("--init is required when there is no published version to resume from")
    return args.first_step, args.init, False


def make_logger(path):
    """A function appending one JSON record per call to path."""
    def log(rec):
        with open(path, "a") as f:
            f.write(json.dumps(rec) + "\n")
    return log


def learn_one(model, opt, step, args, exp_dir, log, parent):
    """Wait for step's experience, train, save and publish; returns the checkpoint path."""
    ready = wait_ready(exp_dir, step, args.poll)
    start = time.time()
    if ready.get("step", step) != step:
        warn(f"step-{step:05d}.ready says step {ready.get('step')}")
    rows, src = read_experience(exp_dir, ready)
    used, skipped = usable_rows(rows, model.cfg.max_seq_len)
    for reason, count in skipped.items():
        warn(f"step {step}: {count} loss_mask rows left out ({reason})")
    if used:
        train_step(model, opt, step, used, args, log)
    else:
        warn(f"step {step}: no usable rows of {len(rows)}; the weights are NOT updated, published again")
    name = f"policy-step-{step}"
    path = save_checkpoint(os.path.join(args.out, name), model,
                           {"kind": "rl", "step": step, "parent": parent, "experience": src, "rows_used": len(used)},
                           extra={"optimizer.pt": optimizer_blob(opt)})
    publish(os.path.join(args.learner_dir, "policy"), step, name, path)
    log({"step": step, "event": "published", "model": name, "lora_path": path, "rows": len(rows),
         "rows_used": len(used), "skipped": skipped, "updated": bool(used), "seconds": round(time.time() - start, 3)})
    print(f"tinylm.learner: published {name} ({len(used)}/{len(rows)} rows)", file=sys.stderr, flush=True)
    return path


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m tinylm.learner", description="tinylm RL learner (PPO-clip, RLOO)")
    ap.add_argument("--learner-dir", required=True)
    ap.add_argument("--init", help="checkpoint to start from (unless resuming from version.json)")
    ap.add_argument("--out", required=True, help="directory of the policy-step-N checkpoints")
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--weight-decay", type=float, default=0.0)
    ap.add_argument("--ppo-epochs", type=int, default=1)
    ap.add_argument("--mini-batches", type=int, default=1, help="optimiser steps per epoch")
    ap.add_argument("--micro-batch", type=int, default=4, help="rows per forward pass")
    ap.add_argument("--clip-low", type=float, default=0.2)
    ap.add_argument("--clip-high", type=float, default=0.2)
    ap.add_argument("--max-grad-norm", type=float, default=1.0)
    ap.add_argument("--first-step", type=int, default=1)
    ap.add_argument("--poll", type=float, default=2.0)
    ap.add_argument("--max-steps", type=int, help="exit after this many steps")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="auto")
    args = ap.parse_args(argv)
    torch.set_num_threads(max(1, args.threads))
    device = pick_device(args.device)
    try:
        step, path, resumed = start_point(args)
        model, _ = load_checkpoint(path, device)
    except (OSError, ValueError, CheckpointError) as e:
        ap.error(str(e))
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    opt_path = os.path.join(path, "optimizer.pt")
    if resumed and os.path.exists(opt_path):
        restore_optimizer(opt, opt_path, device, args.lr, args.weight_decay)
    elif resumed:
        warn(f"no optimizer state in {path}; the optimizer starts fresh")
    print(f"tinylm.learner: {'resuming' if resumed else 'starting'} at step {step} from {path}", file=sys.stderr)
    exp_dir = os.path.join(args.learner_dir, "experience")
    log = make_logger(os.path.join(args.learner_dir, "learner-log.jsonl"))
    done = 0
    try:
        while args.max_steps is None or done < args.max_steps:
            path = learn_one(model, opt, step, args, exp_dir, log, path)
            step, done = step + 1, done + 1
    except KeyboardInterrupt:
        print("tinylm.learner: interrupted", file=sys.stderr)
    except (OSError, ValueError) as e:
        print(f"tinylm.learner: error at step {step}: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()

"""Supervised fine-tuning of a tinylm checkpoint on chat trajectories.

    python3 -m tinylm.sft --data TRACES.jsonl --out CKPT --steps 1000 --batch 8 --lr 1e-3

Input: JSON Lines, one trajectory a line: {"task", "conversations": [{role, content}], "reward", ...}.
The loss is the token-mean cross entropy over assistant tokens (each reply's bytes and
its <|end|>; the <|assistant|> role token is prompt). A conversation longer than
max_seq_len keeps its longest prefix of whole messages; if that prefix has no assistant
reply it is skipped. Assistant bytes outside the emit vocabulary (non-ASCII) stay in the
input but are left out of the loss. All three are counted and recorded in meta.json.
"""
import argparse
import dataclasses
import json
import math
import random
import sys
import time

import torch
import torch.nn.functional as F

from . import tokenizer as tok
from .init import add_arch_args, config_from_args, random_model
from .model import CheckpointError, load_checkpoint, pick_device, save_checkpoint


@dataclasses.dataclass
class Example:
    """One training sequence: inputs, emit-index targets and the loss mask (same length)."""
    inputs: list
    targets: list
    mask: list


def load_conversations(paths):
    """The `conversations` of every line of the JSONL files; ValueError naming file:line if malformed."""
    out = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    conv = json.loads(line)["conversations"]
                    if not isinstance(conv, list) or not all(
                            isinstance(m, dict) and m.get("role") in tok.ROLE_TOKENS and isinstance(m.get("content"), str)
                            for m in conv):
                        raise ValueError(f"conversations must be [{{role in {sorted(tok.ROLE_TOKENS)}, content}}]")
                except (ValueError, KeyError, TypeError) as e:
                    raise ValueError(f"{path}:{n}: {e}") from e
                out.append(conv)
    return out


def blank_reasoning(messages):
    """messages with the free-text fields of each terminus-2 reply emptied.

    An assistant reply that is a JSON object with "analysis" or "plan" keeps its keys, order
    and every other field (commands, task_complete) and gets "" for those two: the harness
    requires them but never reads them, and a small model spends most of its capacity
    imitating a teacher's prose. Replies that are not such objects are kept as they are."""
    out = []
    for m in messages:
        if m["role"] == "assistant":
            try:
                obj = json.loads(m["content"])
            except ValueError:
                obj = None
            if isinstance(obj, dict) and ("analysis" in obj or "plan" in obj):
                for k in ("analysis", "plan"):
                    if k in obj:
                        obj[k] = ""
                m = {**m, "content": json.dumps(obj, separators=(",", ":"), ensure_ascii=False)}
        out.append(m)
    return out


def encode_conversation(messages, max_seq_len):
    """(Example or None, truncated, unlearnable tokens) for one conversation."""
    ids, learn, truncated, unlearnable = [], [], False, 0
    for m in messages:
        part = tok.render_message(m["role"], m["content"])
        if len(ids) + len(part) > max_seq_len + 1:  # inputs are ids[:-1]
            truncated = True
            break
        ids += part
        for i, t in enumerate(part):
            target = m["role"] == "assistant" and i > 0
            emittable = t < tok.EMIT_BYTES or t == tok.END
            unlearnable += target and not emittable
            learn.append(target and emittable)
    if not any(learn):
        return None, truncated, unlearnable
    targets = [tok.emit_index(t) if ok else 0 for t, ok in zip(ids[1:], learn[1:])]
    return Example(ids[:-1], targets, learn[1:]), truncated, unlearnable


def encode_all(conversations, max_seq_len):
    """(examples, stats) for a list of conversations."""
    examples, stats = [], {"conversations": len(conversations), "truncated": 0, "skipped": 0, "unlearnable_tokens": 0}
    for conv in conversations:
        ex, truncated, unlearnable = encode_conversation(conv, max_seq_len)
        stats["truncated"] += truncated and ex is not None
        stats["skipped"] += ex is None
        stats["unlearnable_tokens"] += unlearnable
        if ex is not None:
            examples.append(ex)
    stats["examples"] = len(examples)
    return examples, stats


def batches(examples, batch, rng):
    """Endless batches drawn without replacement within each shuffled epoch."""
    order = []
    while True:
        if len(order) < batch:
            more = list(range(len(examples)))
            rng.shuffle(more)
            order += more
        yield [examples[i] for i in order[:batch]]
        order = order[batch:]


def collate(exs, device):
    """Right-padded (inputs, targets, mask) tensors of a batch."""
    width = max(len(e.inputs) for e in exs)
    x = torch.zeros(len(exs), width, dtype=torch.long)
    y = torch.zeros(len(exs), width, dtype=torch.long)
    m = torch.zeros(len(exs), width, dtype=torch.bool)
    for i, e in enumerate(exs):
        n = len(e.inputs)
        x[i, :n], y[i, :n], m[i, :n] = torch.tensor(e.inputs), torch.tensor(e.targets), torch.tensor(e.mask)
    return x.to(device), y.to(device), m.to(device)


def lr_at(step, steps, warmup, lr, floor=0.1):
    """Linear warmup to lr, then cosine decay to floor*lr (step is 1-based)."""
    if step <= warmup:
        return lr * step / max(1, warmup)
    t = (step - warmup) / max(1, steps - warmup)
    return lr * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * t)))


def make_optimizer(model, lr, weight_decay):
    """AdamW with weight decay on matrices only."""
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.95))


def train(model, examples, args, log=None):
    """Run args.steps optimiser steps; return the list of per-step records."""
    device = next(model.parameters()).device
    opt = make_optimizer(model, args.lr, args.weight_decay)
    warmup = args.warmup if args.warmup is not None else min(100, args.steps // 10)
    model.train()
    gen, records, start = batches(examples, args.batch, random.Random(args.seed)), [], time.time()
    seen = 0
    for step in range(1, args.steps + 1):
        exs = next(gen)
        x, y, m = collate(exs, device)
        for g in opt.param_groups:
            g["lr"] = lr_at(step, args.steps, warmup, args.lr)
        loss = F.cross_entropy(model(x)[m], y[m])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
        opt.step()
        real = sum(len(e.inputs) for e in exs)  # tokens without padding
        seen += real
        rec = {"step": step, "loss": loss.item(), "tokens": int(m.sum()), "input_tokens": real,
               "lr": opt.param_groups[0]["lr"], "seconds": round(time.time() - start, 3)}
        records.append(rec)
        if log:
            log.write(json.dumps(rec) + "\n")
            log.flush()
        if step % args.print_every == 0 or step == args.steps:
            print(f"tinylm.sft: step {step}/{args.steps} loss {rec['loss']:.4f} "
                  f"({seen / max(1e-9, rec['seconds']):.0f} tok/s)", file=sys.stderr, flush=True)
    model.eval()
    return records


def build_model(args, device):
    """The starting model: --init's checkpoint (architecture flags must agree) or a random init."""
    if not args.init:
        return random_model(config_from_args(args), args.seed).to(device)
    model, _ = load_checkpoint(args.init, device)
    given = {"d_model": args.d_model, "n_layers": args.layers, "n_heads": args.heads, "max_seq_len": args.max_seq_len}
    clash = {k: v for k, v in given.items() if v is not None and getattr(model.cfg, k) != v}
    if clash:
        raise ValueError(f"--init {args.init} has a different architecture than the flags {clash}")
    return model


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m tinylm.sft", description="SFT on chat trajectories (JSONL)")
    ap.add_argument("--data", action="append", required=True, help="JSONL file (repeatable)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--init", help="start from this checkpoint (default: random init)")
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--warmup", type=int, help="default min(100, steps/10)")
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--grad-clip", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--log", help="loss curve JSONL (step, loss, tokens, seconds, lr)")
    ap.add_argument("--print-every", type=int, default=10)
    ap.add_argument("--blank-reasoning", action="store_true",
                    help='empty the "analysis" and "plan" of JSON replies (the harness never reads them)')
    add_arch_args(ap)
    args = ap.parse_args(argv)
    torch.set_num_threads(max(1, args.threads))
    try:
        model = build_model(args, pick_device(args.device))
        conversations = load_conversations(args.data)
        if args.blank_reasoning:
            conversations = [blank_reasoning(c) for c in conversations]
        examples, stats = encode_all(conversations, model.cfg.max_seq_len)
    except (OSError, ValueError, CheckpointError) as e:
        ap.error(str(e))
    print(f"tinylm.sft: {stats}", file=sys.stderr, flush=True)
    if not examples:
        ap.error("no usable conversation (need an assistant reply within max_seq_len)")
    log = open(args.log, "w") if args.log else None
    try:
        records = train(model, examples, args, log)
    finally:
        if log:
            log.close()
    meta = {"kind": "sft", "step": args.steps, "init": args.init, "data": args.data, "seed": args.seed,
            "lr": args.lr, "batch": args.batch, "blank_reasoning": args.blank_reasoning,
            "final_loss": records[-1]["loss"], **stats}
    print(f"tinylm.sft: wrote {save_checkpoint(args.out, model, meta)}", file=sys.stderr)


if __name__ == "__main__":
    main()

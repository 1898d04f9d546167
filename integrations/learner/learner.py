"""Reference external learner for `otcurate train --policy openai`.

Waits for LEARNER_DIR/experience/step-NNNNN.ready, trains a LoRA adapter on the step's
experience with a token-mean PPO-clip loss, saves it and publishes
LEARNER_DIR/policy/version.json. See README.md for the handshake and the schema.
"""
import argparse
import json
import os
import sys
import time

# torch, peft, transformers and pyarrow are imported where they are used, so
# the bookkeeping below (and its test, test_learner.py) runs without them.


def wait_ready(exp_dir, step, poll=2.0):
    path = os.path.join(exp_dir, f"step-{step:05d}.ready")
    while not os.path.exists(path):
        time.sleep(poll)
    with open(path) as f:
        return json.load(f)


def publish(policy_dir, step, name, lora_path):
    os.makedirs(policy_dir, exist_ok=True)
    tmp = os.path.join(policy_dir, "version.json.tmp")
    with open(tmp, "w") as f:
        json.dump({"step": step, "model": name, "lora_name": name, "lora_path": lora_path}, f)
    os.replace(tmp, os.path.join(policy_dir, "version.json"))


def with_token_ids(rows):
    """The rows the loss can use: those carrying prompt and response token ids.
    A server started without token ids (vLLM return_token_ids) gives none; such
    rows would have to be re-tokenised from prompt_messages, which this
    reference learner does not do."""
    return [r for r in rows if r.get("prompt_token_ids") and r.get("response_token_ids")]


def ppo_loss(model, rows, clip_low, clip_high, device):
    """Token-mean PPO-clip over the response tokens of rows (with token ids)."""
    import torch

    total, tokens = None, 0
    for r in with_token_ids(rows):
        prompt, resp = r["prompt_token_ids"], r["response_token_ids"]
        ids = torch.tensor([prompt + resp], device=device)
        logits = model(ids).logits[0, len(prompt) - 1 : -1]
        logp = torch.log_softmax(logits.float(), -1).gather(-1, ids[0, len(prompt):, None])[:, 0]
        old = torch.tensor(r["behaviour_logprobs"], device=device)
        ratio = torch.exp(torch.clamp(logp - old, max=20.0))
        adv = r["advantage"]
        per_token = -torch.minimum(ratio * adv, torch.clamp(ratio, 1 - clip_low, 1 + clip_high) * adv)
        total = per_token.sum() if total is None else total + per_token.sum()
        tokens += len(resp)
    if total is None:
        return None, 0
    return total / tokens, tokens


def update(model, opt, rows, clip_low, clip_high, device):
    """One optimiser step on the step's loss_mask rows. Returns (loss, tokens);
    loss is None, and the weights are left alone, when no row carries token ids
    (there is no graph to differentiate: the old code called backward() on a
    float and crashed)."""
    if not with_token_ids(rows):
        return None, 0
    opt.zero_grad()
    loss, tokens = ppo_loss(model, rows, clip_low, clip_high, device)
    loss.backward()
    opt.step()
    return loss.item(), tokens


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--learner-dir", required=True)
    ap.add_argument("--base-model", required=True)
    ap.add_argument("--out", required=True, help="where adapters are saved")
    ap.add_argument("--lr", type=float, default=5e-6)
    ap.add_argument("--clip-low", type=float, default=0.2)
    ap.add_argument("--clip-high", type=float, default=0.2)
    ap.add_argument("--first-step", type=int, default=1)
    args = ap.parse_args()

    import pyarrow.parquet as pq
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = AutoModelForCausalLM.from_pretrained(args.base_model, torch_dtype=torch.bfloat16).to(device)
    model = get_peft_model(model, LoraConfig(r=16, lora_alpha=32, target_modules="all-linear"))
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=args.lr, weight_decay=0.0)
    exp_dir = os.path.join(args.learner_dir, "experience")
    step = args.first_step
    while True:
        ready = wait_ready(exp_dir, step)
        table = pq.read_table(os.path.join(exp_dir, ready["file"]))
        rows = [r for r in table.to_pylist() if r["loss_mask"] == 1]
        if rows:
            loss, tokens = update(model, opt, rows, args.clip_low, args.clip_high, device)
            if loss is None:
                print(f"WARNING step {step}: none of the {len(rows)} turns carries token ids "
                      "(start the server with token ids returned); the adapter is NOT updated this step",
                      file=sys.stderr, flush=True)
            else:
                print(f"step {step}: {len(rows)} turns, {tokens} tokens, loss {loss:.4f}", flush=True)
        name = f"policy-step-{step}"
        path = os.path.join(args.out, name)
        model.save_pretrained(path)
        publish(os.path.join(args.learner_dir, "policy"), step, name, path)
        step += 1


if __name__ == "__main__":
    main()

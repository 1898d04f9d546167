"""Measure training and sampling speed and the KV-cache/full-forward logprob agreement.

    python3 -m tinylm.bench [--d-model 256 --layers 4 --heads 4 --max-seq-len 2048] --threads 2
"""
import argparse
import json
import random
import time

import torch
import torch.nn.functional as F

from . import tokenizer as tok
from .init import add_arch_args, config_from_args, random_model
from .model import response_logprobs
from .sampling import SamplingParams, generate


def bench_training(model, batch, length, steps):
    """Training tokens/s of full-length random ASCII sequences (forward, backward, AdamW)."""
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randint(0, 128, (batch, length))
    model.train()
    times = []
    for _ in range(steps + 1):  # the first step warms up
        start = time.time()
        loss = F.cross_entropy(model(x).flatten(0, 1), x.flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.time() - start)
    model.eval()
    return batch * length / (sum(times[1:]) / steps)


def bench_sampling(model, prompt_len, new_tokens):
    """(prefill s, decode tokens/s, mean and max |logp_kv - logp_full|) from a prompt_len prompt."""
    rng = random.Random(0)
    text = "".join(rng.choice("abcdefghij klmnop\n") for _ in range(prompt_len - 3))
    prompt = tok.render([{"role": "user", "content": text}], True)
    params = SamplingParams(max_tokens=new_tokens, seed=0)
    start = time.time()
    generate(model, prompt, SamplingParams(max_tokens=1, seed=0))
    prefill = time.time() - start
    model.head.weight.data[tok.END_INDEX] = -1.0  # keep <|end|> unlikely so the run has its full length
    start = time.time()
    (s,) = generate(model, prompt, params)
    decode = (len(s.token_ids) - 1) / (time.time() - start - prefill)
    diff = (response_logprobs(model, prompt, s.token_ids) - torch.tensor(s.logprobs)).abs()
    return prefill, decode, diff.mean().item(), diff.max().item(), len(s.token_ids)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m tinylm.bench", description=__doc__.split("\n")[0])
    add_arch_args(ap)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--train-batch", type=int, default=2)
    ap.add_argument("--train-len", type=int, help="default max_seq_len")
    ap.add_argument("--train-steps", type=int, default=3)
    ap.add_argument("--prompt", type=int, default=600)
    ap.add_argument("--new-tokens", type=int, default=256)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    cfg = config_from_args(args)
    model = random_model(cfg, 0)
    train = bench_training(model, args.train_batch, args.train_len or cfg.max_seq_len, args.train_steps)
    with torch.no_grad():
        prefill, decode, mean, worst, n = bench_sampling(model, args.prompt, args.new_tokens)
    print(json.dumps({"config": vars(cfg), "threads": args.threads,
                      "parameters": sum(p.numel() for p in model.parameters()),
                      "train_tokens_per_s": round(train), "prefill_seconds": round(prefill, 3),
                      "sample_tokens_per_s": round(decode, 1), "sampled_tokens": n,
                      "logprob_kv_vs_full_mean_abs": mean, "logprob_kv_vs_full_max_abs": worst}, indent=1))


if __name__ == "__main__":
    main()

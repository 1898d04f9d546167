"""Sampling with the KV cache: greedy, temperature, top-k, top-p, seeded.

Reported log-probabilities are the raw model distribution (log-softmax of the
logits at temperature 1, before top-k/top-p), like vLLM's default
`logprobs_mode=raw_logprobs`; the learner recomputes exactly that.
"""
import dataclasses
import secrets

import torch
import torch.nn.functional as F

from . import tokenizer as tok
from .model import KVCache


@dataclasses.dataclass
class SamplingParams:
    """One request's sampling parameters (top_k <= 0 and top_p == 1 disable those filters)."""
    max_tokens: int
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = -1
    seed: int = None
    n: int = 1
    top_logprobs: int = 0


@dataclasses.dataclass
class Sample:
    """One generated choice: emitted token ids with their raw log-probs."""
    token_ids: list
    logprobs: list
    top: list  # per token: [(token_id, logprob)], best first (empty unless asked)
    finish_reason: str


def filter_logits(logits, params):
    """Temperature-scaled logits with top-k / top-p filtered entries set to -inf."""
    x = logits / params.temperature
    if 0 < params.top_k < x.shape[-1]:
        kth = torch.topk(x, params.top_k, dim=-1).values[:, -1:]
        x = x.masked_fill(x < kth, float("-inf"))
    if params.top_p < 1.0:
        sorted_x, order = torch.sort(x, dim=-1, descending=True)
        probs = sorted_x.softmax(-1)
        drop = probs.cumsum(-1) - probs > params.top_p  # the first token is always kept
        x = x.scatter(-1, order, sorted_x.masked_fill(drop, float("-inf")))
    return x


def choose(logits, params, gen):
    """The next emit index of each row: argmax at temperature ~0 (vLLM's 1e-5), else a seeded draw."""
    if params.temperature < 1e-5:
        return logits.argmax(-1)
    probs = filter_logits(logits, params).softmax(-1)
    return torch.multinomial(probs, 1, generator=gen)[:, 0]


@torch.no_grad()
def generate(model, prompt_ids, params):
    """params.n Samples continuing prompt_ids; each stops after END or max_tokens.

    The prompt is prefilled once; the choices then decode together, one row each.
    Same weights + prompt + params (with a seed) give the same Samples."""
    device = next(model.parameters()).device
    gen = torch.Generator(device=device)
    gen.manual_seed(params.seed if params.seed is not None else secrets.randbits(63))
    cache = KVCache(model.cfg, 1, len(prompt_ids) + params.max_tokens, device)
    logits = model(torch.tensor([prompt_ids], device=device), cache, 0)[:, -1].float()
    n = params.n
    cache.repeat(n)
    logits = logits.expand(n, -1)
    samples = [Sample([], [], [], "length") for _ in range(n)]
    live = list(range(n))
    pos = len(prompt_ids)
    for t in range(params.max_tokens):
        logp = F.log_softmax(logits, -1)
        nxt = choose(logits, params, gen)
        chosen = logp.gather(-1, nxt[:, None])[:, 0].tolist()
        top = torch.topk(logp, params.top_logprobs, -1) if params.top_logprobs else None
        for i in live:
            s = samples[i]
            s.token_ids.append(tok.emit_token(int(nxt[i])))
            s.logprobs.append(chosen[i])
            if top is not None:
                s.top.append([(tok.emit_token(int(j)), float(v)) for v, j in zip(top.values[i], top.indices[i])])
            if s.token_ids[-1] == tok.END:
                s.finish_reason = "stop"
        live = [i for i in live if samples[i].finish_reason != "stop"]
        if not live or t == params.max_tokens - 1:
            break
        ids = torch.tensor([[tok.emit_token(int(j))] for j in nxt], device=device)
        logits = model(ids, cache, pos)[:, -1].float()
        pos += 1
    return samples

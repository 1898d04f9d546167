"""The tinylm network: a pre-LN decoder-only transformer with learned positions,
hand-written causal self-attention, a GELU MLP and an untied output head over the
emit vocabulary (see tokenizer). Also: the KV cache, per-token log-probabilities
of a response, and checkpoint directories (config.json, model.pt, meta.json).
"""
import dataclasses
import json
import math
import os
import pickle
import shutil
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from . import tokenizer as tok


@dataclasses.dataclass
class Config:
    """Architecture of a tinylm model."""
    vocab_size: int = tok.VOCAB_SIZE
    emit_size: int = tok.EMIT_SIZE
    d_model: int = 256
    n_layers: int = 4
    n_heads: int = 4
    max_seq_len: int = 2048
    mlp_ratio: int = 4

    def validate(self):
        """Raise ValueError on an inconsistent configuration."""
        if self.vocab_size != tok.VOCAB_SIZE or self.emit_size != tok.EMIT_SIZE:
            raise ValueError(f"vocab_size/emit_size must be {tok.VOCAB_SIZE}/{tok.EMIT_SIZE} for this tokenizer")
        for f in ("d_model", "n_layers", "n_heads", "max_seq_len", "mlp_ratio"):
            if not isinstance(getattr(self, f), int) or getattr(self, f) < 1:
                raise ValueError(f"{f} must be a positive integer, got {getattr(self, f)!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model {self.d_model} is not a multiple of n_heads {self.n_heads}")
        return self

    @classmethod
    def from_dict(cls, d):
        """A validated Config from a dict; unknown keys are an error."""
        names = {f.name for f in dataclasses.fields(cls)}
        extra = set(d) - names
        if extra:
            raise ValueError(f"unknown config keys {sorted(extra)}")
        return cls(**d).validate()


class KVCache:
    """Preallocated keys and values of every layer: [batch, heads, length, head_dim]."""

    def __init__(self, cfg, batch, length, device, dtype=torch.float32):
        shape = (batch, cfg.n_heads, length, cfg.d_model // cfg.n_heads)
        self.k = [torch.zeros(shape, device=device, dtype=dtype) for _ in range(cfg.n_layers)]
        self.v = [torch.zeros(shape, device=device, dtype=dtype) for _ in range(cfg.n_layers)]

    def repeat(self, n):
        """Repeat a batch-1 cache n times along the batch (one row per choice)."""
        self.k = [k.repeat(n, 1, 1, 1) for k in self.k]
        self.v = [v.repeat(n, 1, 1, 1) for v in self.v]
        return self


def causal_attention(q, k, v, pos, block=512):
    """softmax(q k^T / sqrt(d)) v with query i (at position pos+i) seeing keys 0..pos+i.

    q: [B, H, T, D]; k, v: [B, H, pos+T, D]. Queries go in blocks of `block`, each
    against only the keys it may see, which skips most of the masked half of a long
    sequence's score matrix (time and memory)."""
    T = q.shape[2]
    q = q * (1.0 / math.sqrt(q.shape[-1]))
    out = []
    for s in range(0, T, block):
        e = min(T, s + block)
        att = q[:, :, s:e] @ k[:, :, :pos + e].transpose(-1, -2)
        if e - s > 1:  # a lone query sees every key it is given
            mask = torch.ones(e - s, pos + e, dtype=torch.bool, device=q.device).triu(pos + s + 1)
            att.masked_fill_(mask, float("-inf"))  # in place: matmul's backward does not need its output
        out.append(att.softmax(-1) @ v[:, :, :pos + e])
    return out[0] if len(out) == 1 else torch.cat(out, 2)


class Attention(nn.Module):
    """Multi-head causal self-attention, optionally reading/writing a KV cache."""

    def __init__(self, cfg):
        super().__init__()
        self.n_heads = cfg.n_heads
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)

    def forward(self, x, cache=None, layer=0, pos=0):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_heads, C // self.n_heads).permute(2, 0, 3, 1, 4)
        if cache is not None:
            cache.k[layer][:, :, pos:pos + T] = k
            cache.v[layer][:, :, pos:pos + T] = v
            k, v = cache.k[layer][:, :, :pos + T], cache.v[layer][:, :, :pos + T]
        y = causal_attention(q, k, v, pos)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


class Block(nn.Module):
    """Pre-LN transformer block: x + attn(ln(x)), then x + mlp(ln(x))."""

    def __init__(self, cfg):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.attn = Attention(cfg)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.mlp = nn.Sequential(nn.Linear(cfg.d_model, cfg.mlp_ratio * cfg.d_model), nn.GELU(),
                                 nn.Linear(cfg.mlp_ratio * cfg.d_model, cfg.d_model))

    def forward(self, x, cache=None, layer=0, pos=0):
        x = x + self.attn(self.ln1(x), cache, layer, pos)
        return x + self.mlp(self.ln2(x))


class TinyLM(nn.Module):
    """Decoder-only transformer returning logits over the emit vocabulary."""

    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg.validate()
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos_emb = nn.Embedding(cfg.max_seq_len, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.emit_size, bias=False)
        self.apply(self._init)
        for b in self.blocks:  # GPT-2 style scaled init of the residual projections
            for p in (b.attn.proj.weight, b.mlp[2].weight):
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * cfg.n_layers))

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def forward(self, ids, cache=None, pos=0):
        """Logits [B, T, emit_size] for ids [B, T] placed at positions pos..pos+T-1."""
        T = ids.shape[1]
        if pos + T > self.cfg.max_seq_len:
            raise ValueError(f"sequence of {pos + T} tokens exceeds max_seq_len {self.cfg.max_seq_len}")
        x = self.tok_emb(ids) + self.pos_emb(torch.arange(pos, pos + T, device=ids.device))
        for i, b in enumerate(self.blocks):
            x = b(x, cache, i, pos)
        return self.head(self.ln_f(x))


def emit_indices(ids, device):
    """A LongTensor of the emit-vocabulary indices of token ids."""
    return torch.tensor([tok.emit_index(i) for i in ids], dtype=torch.long, device=device)


def sequence_logprobs(model, pairs):
    """Per-token log-probs of each response after its prompt: one padded forward.

    pairs: [(prompt_ids, response_ids)], prompts non-empty. Returns a list of 1-D
    float tensors (differentiable when grad is enabled), log-softmax over the emit
    vocabulary at temperature 1, exactly what the server reports."""
    device = next(model.parameters()).device
    if not all(p for p, _ in pairs):
        raise ValueError("prompt ids must not be empty")
    # The last response token is never an input: len(prompt) + len(response) - 1 <= max_seq_len.
    seqs = [(list(p) + list(r))[:max(len(p), len(p) + len(r) - 1)] for p, r in pairs]
    width = max(len(s) for s in seqs)
    ids = torch.zeros(len(seqs), width, dtype=torch.long, device=device)
    for i, s in enumerate(seqs):
        ids[i, :len(s)] = torch.tensor(s, dtype=torch.long)
    logp = F.log_softmax(model(ids).float(), -1)  # right padding is invisible to causal attention
    out = []
    for i, (p, r) in enumerate(pairs):
        rows = logp[i, len(p) - 1:len(p) + len(r) - 1]
        out.append(rows.gather(-1, emit_indices(r, device)[:, None])[:, 0])
    return out


def response_logprobs(model, prompt_ids, response_ids):
    """Per-token log-probs of response_ids after prompt_ids (one full forward)."""
    return sequence_logprobs(model, [(prompt_ids, response_ids)])[0]


def pick_device(name="auto"):
    """torch.device for "auto" (CUDA when present), "cpu" or "cuda[:N]"."""
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(name)


class CheckpointError(ValueError):
    """A checkpoint directory that cannot be loaded."""


def save_checkpoint(path, model, meta, extra=None):
    """Write a checkpoint directory atomically (temp dir + rename).

    extra: {filename: object} saved with torch.save beside the weights
    (e.g. the optimizer state)."""
    path = os.path.abspath(path)
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    tmp = os.path.join(parent, f".{os.path.basename(path)}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    with open(os.path.join(tmp, "config.json"), "w") as f:
        json.dump(dataclasses.asdict(model.cfg), f, indent=1)
    torch.save({k: v.detach().cpu() for k, v in model.state_dict().items()}, os.path.join(tmp, "model.pt"))
    for name, obj in (extra or {}).items():
        torch.save(obj, os.path.join(tmp, name))
    meta = {"name": os.path.basename(path), "saved": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "parameters": sum(p.numel() for p in model.parameters()), **meta}
    with open(os.path.join(tmp, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    if os.path.exists(path):
        shutil.rmtree(path)
    os.replace(tmp, path)
    return path


def load_checkpoint(path, device="cpu"):
    """(model in eval mode, meta dict) from a checkpoint directory; CheckpointError if unusable."""
    if not isinstance(path, str) or not os.path.isdir(path):
        raise CheckpointError(f"checkpoint {path!r} is not a directory")
    try:
        with open(os.path.join(path, "config.json")) as f:
            cfg = Config.from_dict(json.load(f))
        meta = {}
        if os.path.exists(os.path.join(path, "meta.json")):
            with open(os.path.join(path, "meta.json")) as f:
                meta = json.load(f)
        state = torch.load(os.path.join(path, "model.pt"), map_location="cpu", weights_only=True)
        model = TinyLM(cfg)
        model.load_state_dict(state)
    except (OSError, ValueError, RuntimeError, TypeError, KeyError, EOFError, pickle.UnpicklingError) as e:
        raise CheckpointError(f"cannot load checkpoint {path}: {e}") from e
    return model.to(device).eval(), meta

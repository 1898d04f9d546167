"""Write a random-init tinylm checkpoint.

    python3 -m tinylm.init --out DIR [--d-model 256 --layers 4 --heads 4 --max-seq-len 2048 --seed 0]
"""
import argparse

import torch

from .model import Config, TinyLM, save_checkpoint


def add_arch_args(ap):
    """The architecture flags shared by init and sft (None = not given)."""
    ap.add_argument("--d-model", type=int)
    ap.add_argument("--layers", type=int)
    ap.add_argument("--heads", type=int)
    ap.add_argument("--max-seq-len", type=int)


def config_from_args(args):
    """A Config from the architecture flags, defaults for those not given."""
    d = Config()
    return Config(d_model=args.d_model or d.d_model, n_layers=args.layers or d.n_layers,
                  n_heads=args.heads or d.n_heads, max_seq_len=args.max_seq_len or d.max_seq_len).validate()


def random_model(cfg, seed):
    """A freshly initialised TinyLM, deterministic in seed."""
    torch.manual_seed(seed)
    return TinyLM(cfg)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m tinylm.init", description="write a random-init checkpoint")
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    add_arch_args(ap)
    args = ap.parse_args(argv)
    try:
        cfg = config_from_args(args)
    except ValueError as e:
        ap.error(str(e))
    path = save_checkpoint(args.out, random_model(cfg, args.seed), {"kind": "init", "step": 0, "seed": args.seed})
    print(f"tinylm.init: wrote {path}")


if __name__ == "__main__":
    main()

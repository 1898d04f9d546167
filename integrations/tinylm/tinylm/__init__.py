"""tinylm: a small from-scratch byte-level transformer policy for otcurate.

Modules: tokenizer (chat template, emit vocabulary), model (network, KV cache,
log-probabilities, checkpoints), sampling, serve (OpenAI-compatible server),
sft, init, learner (RL learner of otcurate's external-learner handshake), bench.
"""

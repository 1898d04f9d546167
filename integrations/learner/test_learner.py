"""Tests of learner.py's bookkeeping; run with `python3 -m unittest` in this
directory (train/learner_py_test.go runs them from `go test`). The no-token-ids
path needs neither torch nor a model; the loss test is skipped without torch."""
import importlib.util
import os
import unittest

import learner


class FakeOpt:
    def __init__(self):
        self.zero_grad_calls = 0
        self.step_calls = 0

    def zero_grad(self):
        self.zero_grad_calls += 1

    def step(self):
        self.step_calls += 1


def row(prompt, resp, adv=1.0):
    return {"prompt_token_ids": prompt, "response_token_ids": resp,
            "behaviour_logprobs": [-1.0] * len(resp or []), "advantage": adv, "loss_mask": 1}


class NoTokenIDs(unittest.TestCase):
    def test_update_skips_without_token_ids(self):
        # A server without token ids: every row lacks them (None or empty).
        for rows in ([row(None, None)], [row([], [])], [row([1, 2], [])], [row([], [3])]):
            opt = FakeOpt()
            loss, tokens = learner.update(model=None, opt=opt, rows=rows, clip_low=0.2, clip_high=0.2, device="cpu")
            self.assertIsNone(loss)
            self.assertEqual(tokens, 0)
            self.assertEqual((opt.zero_grad_calls, opt.step_calls), (0, 0), "no step on no signal")

    def test_with_token_ids_keeps_complete_rows(self):
        rows = [row(None, None), row([1], [2, 3]), row([4], [])]
        self.assertEqual(learner.with_token_ids(rows), [rows[1]])


@unittest.skipIf(importlib.util.find_spec("torch") is None, "torch is not installed: the loss itself is not exercised")
class WithTorch(unittest.TestCase):
    def test_update_steps_on_token_rows(self):
        import torch

        class Tiny(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = torch.nn.Embedding(8, 8)

            def forward(self, ids):
                return type("Out", (), {"logits": self.emb(ids)})()

        model = Tiny()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        before = model.emb.weight.detach().clone()
        loss, tokens = learner.update(model, opt, [row(None, None), row([1, 2], [3, 4])], 0.2, 0.2, "cpu")
        self.assertEqual(tokens, 2)
        self.assertIsInstance(loss, float)
        self.assertFalse(torch.equal(before, model.emb.weight))


if __name__ == "__main__":
    unittest.main()

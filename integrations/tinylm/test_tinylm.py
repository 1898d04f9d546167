"""Tests of tinylm: run `cd integrations/tinylm && /usr/bin/python3 -m unittest -v test_tinylm`."""
import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import torch

from tinylm import learner, sft
from tinylm import tokenizer as tok
from tinylm.init import random_model
from tinylm.model import Config, KVCache, load_checkpoint, response_logprobs, save_checkpoint
from tinylm.serve import Registry, make_server

CFG = Config(d_model=32, n_layers=2, n_heads=2, max_seq_len=192)
CONV = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Fix the bug in main.go"},
        {"role": "assistant", "content": "ls -la"}, {"role": "user", "content": "total 0 — café"}]
HERE = os.path.dirname(os.path.abspath(__file__))


def setUpModule():
    global TMP, BASE, OTHER, ENDER, CHATTY, SRV, PORT
    torch.set_num_threads(1)
    TMP = tempfile.TemporaryDirectory()
    BASE = save_checkpoint(os.path.join(TMP.name, "base"), random_model(CFG, 0), {"kind": "init", "step": 0})
    OTHER = save_checkpoint(os.path.join(TMP.name, "other"), random_model(CFG, 1), {"kind": "init", "step": 0})
    ender = random_model(CFG, 2)
    with torch.no_grad():  # a model whose every prediction is <|end|>
        ender.ln_f.weight.zero_()
        ender.ln_f.bias.fill_(1.0)
        ender.head.weight.zero_()
        ender.head.weight[tok.END_INDEX] = 1.0
    ENDER = save_checkpoint(os.path.join(TMP.name, "ender"), ender, {"kind": "test"})
    chatty = random_model(CFG, 3)
    with torch.no_grad():  # a model that never predicts <|end|>
        chatty.ln_f.bias.fill_(3.0)
        chatty.head.weight[tok.END_INDEX] = -10 * chatty.ln_f.bias
    CHATTY = save_checkpoint(os.path.join(TMP.name, "chatty"), chatty, {"kind": "test"})
    SRV = make_server(Registry("tiny", BASE, torch.device("cpu"), max_loaded=3), "127.0.0.1", 0, quiet=True)
    PORT = SRV.server_address[1]
    threading.Thread(target=SRV.serve_forever, daemon=True).start()


def tearDownModule():
    SRV.shutdown()
    SRV.server_close()
    TMP.cleanup()


def call(method, path, body=None, raw=None, port=None):
    """(status, decoded JSON or text) of one HTTP request to the test server."""
    conn = http.client.HTTPConnection("127.0.0.1", port or PORT, timeout=30)
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    text = resp.read().decode()
    conn.close()
    try:
        return resp.status, json.loads(text)
    except ValueError:
        return resp.status, text


def chat(messages=CONV, model="tiny", **kw):
    """A rollout-style request (logprobs and token ids), as policy/openai sends it."""
    body = {"model": model, "messages": messages, "n": 1, "temperature": 1.0, "max_tokens": 40,
            "logprobs": True, "return_token_ids": True, **kw}
    status, out = call("POST", "/v1/chat/completions", body)
    assert status == 200, out
    return out


def lps(choice):
    return [e["logprob"] for e in choice["logprobs"]["content"]]


def mean_abs(a, b):
    return (torch.tensor(a, dtype=torch.float64) - torch.tensor(b, dtype=torch.float64)).abs().mean().item()


class ServerTest(unittest.TestCase):
    def test_logprobs_match_learner_recomputation(self):
        model, _ = load_checkpoint(BASE)
        # Filters and temperature change the draw, never the reported (raw) logprobs.
        out = chat(seed=3, n=2, max_tokens=60, temperature=0.7, top_p=0.9, top_k=40)
        for ch in out["choices"]:
            self.assertEqual(len(ch["token_ids"]), len(lps(ch)))
            (rec,) = learner.sequence_logprobs(model, [(out["prompt_token_ids"], ch["token_ids"])])
            self.assertLessEqual(mean_abs(lps(ch), rec.tolist()), 1e-4)
        self.assertEqual(out["usage"]["completion_tokens"], sum(len(c["token_ids"]) for c in out["choices"]))

    def test_kv_cache_matches_full_forward(self):
        model, _ = load_checkpoint(BASE)
        ids = tok.render(CONV, True) + [ord(c) for c in "echo hi"]
        with torch.no_grad():
            full = model(torch.tensor([ids]))[0]
            cache, parts, pos = KVCache(CFG, 1, len(ids), "cpu"), [], 0
            for chunk in (ids[:20], ids[20:45], *[[t] for t in ids[45:]]):  # prefill in chunks, then one by one
                parts.append(model(torch.tensor([chunk]), cache, pos)[0])
                pos += len(chunk)
        self.assertLess((torch.cat(parts) - full).abs().max().item(), 1e-4)

    def test_template_and_no_retokenisation_drift(self):
        seen_stop = seen_length = False
        for seed in range(30):
            out = chat(seed=seed, max_tokens=30)
            self.assertEqual(out["prompt_token_ids"], tok.render(CONV, add_generation_prompt=True))
            ch = out["choices"][0]
            sampled = out["prompt_token_ids"] + ch["token_ids"]
            again = tok.render(CONV + [{"role": "assistant", "content": ch["message"]["content"]}])
            if ch["finish_reason"] == "stop":
                self.assertEqual(ch["token_ids"][-1], tok.END)
                self.assertNotIn("<|end|>", ch["message"]["content"])
                self.assertEqual(again, sampled)
                seen_stop = seen_stop or len(ch["token_ids"]) > 1
            else:
                self.assertEqual(ch["finish_reason"], "length")
                self.assertEqual(again[:len(sampled)], sampled)
                seen_length = True
        self.assertTrue(seen_stop and seen_length)

    def test_seed_determinism(self):
        a, b, c = chat(seed=7), chat(seed=7), chat(seed=8)
        self.assertEqual(a["choices"][0]["token_ids"], b["choices"][0]["token_ids"])
        self.assertEqual(lps(a["choices"][0]), lps(b["choices"][0]))
        self.assertNotEqual(a["choices"][0]["token_ids"], c["choices"][0]["token_ids"])

    def test_greedy(self):
        a, b = chat(temperature=0, top_logprobs=3), chat(temperature=0)
        ch = a["choices"][0]
        self.assertEqual(ch["token_ids"], b["choices"][0]["token_ids"])
        for e in ch["logprobs"]["content"]:
            self.assertEqual(e["token"], e["top_logprobs"][0]["token"])
            self.assertEqual(len(e["top_logprobs"]), 3)

    def test_stop_includes_end_token(self):
        self.assertEqual(call("POST", "/v1/load_lora_adapter", {"lora_name": "ender", "lora_path": ENDER})[0], 200)
        ch = chat(model="ender")["choices"][0]
        self.assertEqual((ch["token_ids"], ch["message"]["content"], ch["finish_reason"]), ([tok.END], "", "stop"))
        self.assertEqual(ch["logprobs"]["content"][0]["token"], "<|end|>")
        self.assertGreater(lps(ch)[0], -1e-6)

    def test_context_length(self):
        status, out = call("POST", "/v1/chat/completions", {"model": "tiny", "messages": CONV, "max_tokens": 1000})
        self.assertEqual(status, 400)
        self.assertIn("maximum context length is 192 tokens", out["error"]["message"])
        long = [{"role": "user", "content": "x" * 300}]
        status, out = call("POST", "/v1/chat/completions", {"model": "tiny", "messages": long})
        self.assertEqual(status, 400)
        self.assertIn("maximum context length", out["error"]["message"])
        # Without max_tokens the reply may fill the context; the learner can still score it.
        self.assertEqual(call("POST", "/v1/load_lora_adapter", {"lora_name": "chatty", "lora_path": CHATTY})[0], 200)
        out = chat(model="chatty", max_tokens=None, seed=0)
        ch = out["choices"][0]
        self.assertEqual((ch["finish_reason"], out["usage"]["total_tokens"]), ("length", CFG.max_seq_len))
        row = experience_row(1, 0, 0, out["prompt_token_ids"], ch["token_ids"], lps(ch), 1.0, CONV, "")
        self.assertEqual(learner.usable_rows([row], CFG.max_seq_len), ([row], {}))
        (rec,) = learner.sequence_logprobs(load_checkpoint(CHATTY)[0], [(row["prompt_token_ids"], ch["token_ids"])])
        self.assertLessEqual(mean_abs(lps(ch), rec.tolist()), 1e-4)

    def test_bad_requests(self):
        ok = {"model": "tiny", "messages": CONV}
        cases = [b"{not json", b"[1, 2]", b"",
                 json.dumps({**ok, "messages": "hi"}).encode(),
                 json.dumps({**ok, "messages": [{"role": "tool", "content": "x"}]}).encode(),
                 json.dumps({**ok, "temperature": "hot"}).encode(),
                 json.dumps({**ok, "max_tokens": True}).encode(),
                 json.dumps({**ok, "n": 0}).encode(),
                 json.dumps({**ok, "top_p": 0}).encode(),
                 json.dumps({**ok, "logprobs": "yes"}).encode(),
                 json.dumps({**ok, "stream": True}).encode()]
        for raw in cases:
            status, out = call("POST", "/v1/chat/completions", raw=raw)
            self.assertEqual(status, 400, raw)
            self.assertEqual(out["error"]["code"], 400)
            self.assertTrue(out["error"]["message"])
        status, out = call("POST", "/v1/chat/completions", {**ok, "model": "nope"})
        self.assertEqual(status, 404)
        self.assertIn("nope", out["error"]["message"])
        self.assertEqual(call("GET", "/v1/nothing")[0], 404)
        self.assertEqual(call("GET", "/health")[0], 200)

    def test_load_adapter_serves_new_weights(self):
        status, text = call("POST", "/v1/load_lora_adapter", {"lora_name": "v2", "lora_path": OTHER})
        self.assertEqual(status, 200, text)
        names = [m["id"] for m in call("GET", "/v1/models")[1]["data"]]
        self.assertIn("tiny", names)
        self.assertIn("v2", names)
        base, _ = load_checkpoint(BASE)
        other, _ = load_checkpoint(OTHER)
        new, old = chat(model="v2", seed=5)["choices"][0], chat(model="tiny", seed=5)["choices"][0]
        prompt = tok.render(CONV, True)
        self.assertLessEqual(mean_abs(lps(new), response_logprobs(other, prompt, new["token_ids"]).tolist()), 1e-4)
        self.assertGreater(mean_abs(lps(new), response_logprobs(base, prompt, new["token_ids"]).tolist()), 1e-2)
        self.assertLessEqual(mean_abs(lps(old), response_logprobs(base, prompt, old["token_ids"]).tolist()), 1e-4)
        bad = call("POST", "/v1/load_lora_adapter", {"lora_name": "v3", "lora_path": os.path.join(TMP.name, "nope")})
        self.assertEqual(bad[0], 400)
        self.assertIn("error", bad[1])
        self.assertEqual(call("POST", "/v1/load_lora_adapter", {"lora_name": "v3"})[0], 400)
        self.assertEqual(call("POST", "/v1/unload_lora_adapter", {"lora_name": "v2"})[0], 200)
        self.assertEqual(call("POST", "/v1/chat/completions", {"model": "v2", "messages": CONV})[0], 404)
        chat(model="tiny")

    def test_registry_evicts_oldest(self):
        reg = Registry("b", BASE, torch.device("cpu"), max_loaded=2)
        for name in ("a1", "a2", "a3"):
            reg.load(name, OTHER)
        self.assertEqual([m["id"] for m in reg.listing()["data"]], ["b", "a2", "a3"])

    def test_cli_server_subprocess(self):
        port_file = os.path.join(TMP.name, "port")
        cmd = [sys.executable, "-m", "tinylm.serve", "--checkpoint", BASE, "--served-model-name", "cli",
               "--port", "0", "--port-file", port_file, "--quiet"]
        proc = subprocess.Popen(cmd, cwd=HERE, stderr=subprocess.PIPE)
        try:
            deadline = time.time() + 30
            while not os.path.exists(port_file) and time.time() < deadline and proc.poll() is None:
                time.sleep(0.05)
            with open(port_file) as f:
                port = int(f.read())
            self.assertEqual(call("GET", "/v1/models", port=port)[1]["data"][0]["id"], "cli")
            status, out = call("POST", "/v1/chat/completions", {"model": "cli", "messages": CONV, "max_tokens": 5},
                               port=port)
            self.assertEqual(status, 200, out)
        finally:
            proc.terminate()
            proc.wait(10)
            proc.stderr.close()
        remote = subprocess.run(cmd[:-5] + ["--host", "0.0.0.0"], cwd=HERE, capture_output=True, text=True)
        self.assertNotEqual(remote.returncode, 0)
        self.assertIn("loopback", remote.stderr)


def experience_row(step, group, sample, prompt_ids, response_ids, logprobs, advantage, messages, text, mask=1):
    """One row with exactly the columns of the experience schema."""
    return {"step": step, "task": f"tasks/t{group}", "group": group, "sample": sample, "turn": 0,
            "prompt_token_ids": prompt_ids, "response_token_ids": response_ids, "behaviour_logprobs": logprobs,
            "loss_mask": mask, "advantage": advantage, "reward": float(advantage > 0), "included": True,
            "exclusion": "", "policy_version": "tiny", "prompt_messages": json.dumps(messages), "response_text": text}


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def write_step(learner_dir, step, rows):
    exp = os.path.join(learner_dir, "experience")
    os.makedirs(exp, exist_ok=True)
    name = f"step-{step:05d}"
    with open(os.path.join(exp, name + ".jsonl"), "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    with open(os.path.join(exp, name + ".ready"), "w") as f:
        json.dump({"step": step, "rows": len(rows), "file": name + ".parquet", "policy_version": "tiny",
                   "jsonl": name + ".jsonl"}, f)


class LearnerTest(unittest.TestCase):
    def test_learner_end_to_end(self):
        ldir, root = os.path.join(TMP.name, "learner"), os.path.join(TMP.name, "ckpts")
        rows = []
        for i in range(4):  # rollouts from the server, RLOO-style advantages
            out = chat(seed=100 + i, max_tokens=24)
            ch = out["choices"][0]
            rows.append(experience_row(1, 0, i, out["prompt_token_ids"], ch["token_ids"], lps(ch),
                                       [1.5, -0.5, -0.5, -0.5][i], CONV, ch["message"]["content"]))
        rows.append({**rows[0], "sample": 4, "prompt_token_ids": [], "response_token_ids": []})  # no token ids
        rows.append({**rows[1], "sample": 5, "loss_mask": 0})
        write_step(ldir, 1, rows)
        args = ["--learner-dir", ldir, "--init", BASE, "--out", root, "--lr", "1e-2", "--ppo-epochs", "2",
                "--poll", "0.05", "--max-steps", "1", "--threads", "1"]
        learner.main(args)
        log = read_jsonl(os.path.join(ldir, "learner-log.jsonl"))
        e1, e2, pub = log
        self.assertLessEqual(e1["ratio_dev_max"], 1e-5)
        self.assertLessEqual(e1["logprob_agreement_mean"], 1e-4)
        self.assertEqual(e1["agreement_tokens"], sum(len(r["response_token_ids"]) for r in rows[:4]))
        self.assertGreater(e2["ratio_dev_mean"], 1e-3)
        self.assertEqual((pub["rows_used"], pub["skipped"]), (4, {"no_token_ids": 1}))
        version = read_jsonl(os.path.join(ldir, "policy", "version.json"))[0]
        self.assertEqual(version, {"step": 1, "model": "policy-step-1", "lora_name": "policy-step-1",
                                   "lora_path": os.path.join(os.path.abspath(root), "policy-step-1")})
        status, text = call("POST", "/v1/load_lora_adapter", {"lora_name": version["lora_name"],
                                                              "lora_path": version["lora_path"]})
        self.assertEqual(status, 200, text)
        trained, _ = load_checkpoint(version["lora_path"])
        ch = chat(model="policy-step-1", seed=1)["choices"][0]
        rec = response_logprobs(trained, tok.render(CONV, True), ch["token_ids"]).tolist()
        self.assertLessEqual(mean_abs(lps(ch), rec), 1e-4)
        # Step 2 has no usable row: resumed from version.json, weights unchanged, published again.
        write_step(ldir, 2, [rows[4]])
        learner.main(args[:2] + args[4:])  # no --init: resumes
        version = read_jsonl(os.path.join(ldir, "policy", "version.json"))[0]
        self.assertEqual(version["step"], 2)
        again, _ = load_checkpoint(version["lora_path"])
        for k, v in trained.state_dict().items():
            self.assertTrue(torch.equal(v, again.state_dict()[k]), k)
        self.assertTrue(os.path.exists(os.path.join(version["lora_path"], "optimizer.pt")))

    def test_ppo_terms_clip(self):
        logp, old = torch.log(torch.tensor([1.5, 0.5, 1.0])), torch.zeros(3)
        loss, ratio, clipped = learner.ppo_terms(logp, old, 1.0, 0.2, 0.2)
        self.assertEqual(clipped.tolist(), [True, False, False])
        self.assertTrue(torch.allclose(loss, torch.tensor([-1.2, -0.5, -1.0])))


class SFTTest(unittest.TestCase):
    def test_sft_lowers_loss(self):
        data = os.path.join(TMP.name, "traces.jsonl")
        convs = [[{"role": "user", "content": f"say {w}"}, {"role": "assistant", "content": f"{w} {w}!"}]
                 for w in ("yes", "no", "maybe", "done")]
        convs.append([{"role": "user", "content": "x" * 500}, {"role": "assistant", "content": "too long"}])
        convs.append(convs[0] + [{"role": "user", "content": "y" * 500}, {"role": "assistant", "content": "cut"}])
        with open(data, "w") as f:
            f.writelines(json.dumps({"task": "t", "conversations": c, "reward": 1.0}) + "\n" for c in convs)
        out, log = os.path.join(TMP.name, "sft"), os.path.join(TMP.name, "sft-loss.jsonl")
        sft.main(["--data", data, "--out", out, "--steps", "60", "--batch", "4", "--lr", "1e-2", "--threads", "1",
                  "--d-model", "32", "--layers", "1", "--heads", "2", "--max-seq-len", "128", "--log", log,
                  "--print-every", "1000"])
        curve = read_jsonl(log)
        self.assertEqual(len(curve), 60)
        self.assertLess(sum(r["loss"] for r in curve[-5:]) / 5, 0.5 * curve[0]["loss"])
        model, meta = load_checkpoint(out)
        self.assertEqual((meta["skipped"], meta["truncated"], meta["examples"]), (1, 1, 5))
        ex, _, _ = sft.encode_conversation(convs[0], 128)
        self.assertEqual(sum(ex.mask), len("yes yes!") + 1)  # reply bytes + <|end|>
        self.assertEqual(ex.targets[-1], tok.END_INDEX)

    def test_blank_reasoning(self):
        reply = json.dumps({"analysis": "long prose", "plan": "more prose", "commands": [
            {"keystrokes": "wc -l < /app/a > /out\n", "duration": 0.1}], "task_complete": False})
        conv = [{"role": "user", "content": "task"}, {"role": "assistant", "content": reply},
                {"role": "user", "content": "obs"}, {"role": "assistant", "content": "not json"}]
        got = sft.blank_reasoning(conv)
        self.assertEqual(json.loads(got[1]["content"]), {"analysis": "", "plan": "", "commands": [
            {"keystrokes": "wc -l < /app/a > /out\n", "duration": 0.1}], "task_complete": False})
        self.assertTrue(got[1]["content"].startswith('{"analysis":"","plan":"","commands"'))
        self.assertEqual(got[3], conv[3])
        self.assertEqual(got[0], conv[0])
        self.assertIn("long prose", conv[1]["content"])  # the input is not modified


if __name__ == "__main__":
    unittest.main()

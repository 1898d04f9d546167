"""OpenAI-compatible chat-completions server for tinylm checkpoints (vLLM's dialect).

    python3 -m tinylm.serve --checkpoint DIR --served-model-name NAME --port 8000

Endpoints: GET /health, GET /v1/models, POST /v1/chat/completions,
POST /v1/load_lora_adapter and /v1/unload_lora_adapter. tinylm has no LoRA: a
"LoRA adapter" is a full checkpoint directory served under lora_name (a
full-weight reload). Logprobs are the raw model log-softmax (vLLM raw_logprobs).
"""
import argparse
import collections
import ipaddress
import json
import os
import socket
import sys
import threading
import time
import traceback
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import torch

from . import tokenizer as tok
from .model import CheckpointError, load_checkpoint, pick_device
from .sampling import SamplingParams, generate

MAX_BODY = 32 << 20
MAX_N = 16
MAX_TOP_LOGPROBS = 20
KNOWN_PATHS = {"/health", "/v1/models", "/v1/chat/completions", "/v1/load_lora_adapter", "/v1/unload_lora_adapter"}


class APIError(Exception):
    """An error answered as {"error": {message, type, param, code}}."""

    TYPES = {400: "BadRequestError", 404: "NotFoundError", 405: "MethodNotAllowed",
             413: "RequestTooLarge", 500: "InternalServerError"}

    def __init__(self, status, message):
        super().__init__(message)
        self.status, self.message = status, message

    def body(self):
        return {"error": {"message": self.message, "type": self.TYPES.get(self.status, "Error"),
                          "param": None, "code": self.status}}


class Registry:
    """The served models by name: the base one plus at most max_loaded reloaded checkpoints."""

    def __init__(self, base_name, base_path, device, max_loaded=4):
        self.device, self.max_loaded, self.base = device, max_loaded, base_name
        self.lock = threading.Lock()
        model, meta = load_checkpoint(base_path, device)
        self.models = collections.OrderedDict({base_name: (model, meta, os.path.abspath(base_path), time.time())})

    def get(self, name):
        """The model served as name; APIError 404 if none."""
        with self.lock:
            if name not in self.models:
                raise APIError(404, f"The model `{name}` does not exist.")
            return self.models[name][0]

    def load(self, name, path):
        """Load the checkpoint at path as name (replacing a previous one); evict the oldest beyond max_loaded."""
        if name == self.base:
            raise APIError(400, f"cannot replace the base model `{name}`")
        try:
            model, meta = load_checkpoint(path, self.device)
        except CheckpointError as e:
            raise APIError(400, f"Failed to load LoRA adapter '{name}': {e}") from e
        with self.lock:
            self.models.pop(name, None)
            self.models[name] = (model, meta, os.path.abspath(path), time.time())
            while len(self.models) - 1 > self.max_loaded:
                oldest = next(n for n in self.models if n != self.base)
                del self.models[oldest]

    def unload(self, name):
        """Forget a loaded checkpoint; the base model stays."""
        with self.lock:
            if name == self.base:
                raise APIError(400, f"cannot unload the base model `{name}`")
            if self.models.pop(name, None) is None:
                raise APIError(404, f"The lora adapter '{name}' cannot be found.")

    def listing(self):
        """The OpenAI /v1/models body."""
        with self.lock:
            data = [{"id": n, "object": "model", "created": int(t), "owned_by": "tinylm", "root": p,
                     "parent": None if n == self.base else self.base, "max_model_len": m.cfg.max_seq_len,
                     "step": meta.get("step")}
                    for n, (m, meta, p, t) in self.models.items()]
        return {"object": "list", "data": data}


def _field(body, name, kinds, default=None, check=None, what=None):
    """body[name] validated: of one of kinds (bool never counts as a number) and passing check."""
    v = body.get(name)
    if v is None:
        return default
    ok = isinstance(v, kinds) and not (isinstance(v, bool) and bool not in kinds)
    if not ok or (check and not check(v)):
        raise APIError(400, f"invalid `{name}`: {v!r} (want {what or ' or '.join(k.__name__ for k in kinds)})")
    return v


def _content(m, i):
    """A message's text: a string or a list of {"type": "text", "text"} parts."""
    c = m.get("content")
    if isinstance(c, str):
        return c
    if isinstance(c, list) and all(isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
                                   for p in c):
        return "".join(p["text"] for p in c)
    raise APIError(400, f"messages[{i}].content must be a string or a list of text parts")


def parse_messages(raw):
    """[{role, content}] from the request's messages, validated."""
    if not isinstance(raw, list) or not raw:
        raise APIError(400, "`messages` must be a non-empty list")
    out = []
    for i, m in enumerate(raw):
        if not isinstance(m, dict) or m.get("role") not in tok.ROLE_TOKENS:
            raise APIError(400, f"messages[{i}] must be an object with role in {sorted(tok.ROLE_TOKENS)}")
        out.append({"role": m["role"], "content": _content(m, i)})
    return out


def parse_params(body, prompt_len, max_len):
    """SamplingParams of a request body, with vLLM's context-length check."""
    if body.get("stream"):
        raise APIError(400, "streaming is not supported by tinylm.serve")
    for unsupported in ("stop", "tools", "logit_bias"):
        if body.get(unsupported):
            raise APIError(400, f"`{unsupported}` is not supported by tinylm.serve")
    num = (int, float)
    max_tokens = _field(body, "max_completion_tokens", (int,), None, lambda v: v >= 1, "a positive integer")
    if max_tokens is None:
        max_tokens = _field(body, "max_tokens", (int,), None, lambda v: v >= 1, "a positive integer")
    logprobs = _field(body, "logprobs", (bool,), False)
    _field(body, "return_token_ids", (bool,), False)
    top_lp = _field(body, "top_logprobs", (int,), 0, lambda v: 0 <= v <= MAX_TOP_LOGPROBS, f"0..{MAX_TOP_LOGPROBS}")
    if top_lp and not logprobs:
        raise APIError(400, "`top_logprobs` requires `logprobs` to be true")
    if prompt_len >= max_len or (max_tokens is not None and prompt_len + max_tokens > max_len):
        asked = prompt_len + (max_tokens or 0)
        raise APIError(400, f"This model's maximum context length is {max_len} tokens. However, you requested "
                            f"{asked} tokens ({prompt_len} in the messages, {max_tokens or 0} in the completion). "
                            "Please reduce the length of the messages or completion.")
    return SamplingParams(
        max_tokens=max_tokens if max_tokens is not None else max_len - prompt_len,
        temperature=float(_field(body, "temperature", num, 1.0, lambda v: 0 <= v <= 100, "a number in [0, 100]")),
        top_p=float(_field(body, "top_p", num, 1.0, lambda v: 0 < v <= 1, "a number in (0, 1]")),
        top_k=_field(body, "top_k", (int,), -1, lambda v: v >= -1, "an integer >= -1"),
        seed=_field(body, "seed", (int,), None, lambda v: -2**63 <= v < 2**64, "a 64-bit integer"),
        n=_field(body, "n", (int,), 1, lambda v: 1 <= v <= MAX_N, f"an integer in 1..{MAX_N}"),
        top_logprobs=top_lp)


def logprob_entries(sample):
    """OpenAI logprobs.content entries of a sample."""
    def entry(t, lp):
        return {"token": tok.token_text(t), "logprob": lp, "bytes": tok.token_bytes(t)}
    return [{**entry(t, lp), "top_logprobs": [entry(a, b) for a, b in (sample.top[i] if sample.top else [])]}
            for i, (t, lp) in enumerate(zip(sample.token_ids, sample.logprobs))]


def chat_completion(registry, infer_lock, body):
    """The chat.completion answer of a request body (a dict)."""
    name = body.get("model")
    if not isinstance(name, str):
        raise APIError(400, "`model` must be a string")
    model = registry.get(name)
    messages = parse_messages(body.get("messages"))
    try:
        prompt = tok.render(messages, add_generation_prompt=True)
    except UnicodeEncodeError as e:
        raise APIError(400, f"message content is not valid Unicode: {e}") from e
    params = parse_params(body, len(prompt), model.cfg.max_seq_len)
    with infer_lock:
        samples = generate(model, prompt, params)
    want_lp, want_ids = body.get("logprobs") is True, body.get("return_token_ids") is True
    choices = []
    for i, s in enumerate(samples):
        c = {"index": i, "message": {"role": "assistant", "content": tok.decode(s.token_ids), "tool_calls": []},
             "logprobs": {"content": logprob_entries(s)} if want_lp else None,
             "finish_reason": s.finish_reason, "stop_reason": None}
        if want_ids:
            c["token_ids"] = s.token_ids
        choices.append(c)
    completion_tokens = sum(len(s.token_ids) for s in samples)
    out = {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": int(time.time()),
           "model": name, "choices": choices,
           "usage": {"prompt_tokens": len(prompt), "completion_tokens": completion_tokens,
                     "total_tokens": len(prompt) + completion_tokens}}
    if want_ids:
        out["prompt_token_ids"] = prompt
    return out


def _name_and_path(body, need_path):
    name = body.get("lora_name")
    if not isinstance(name, str) or not name:
        raise APIError(400, "`lora_name` must be a non-empty string")
    path = body.get("lora_path")
    if need_path and (not isinstance(path, str) or not path):
        raise APIError(400, "`lora_path` must be a non-empty string")
    return name, path


class Handler(BaseHTTPRequestHandler):
    """HTTP/1.1 handler; the server object carries registry, infer_lock and quiet."""
    protocol_version = "HTTP/1.1"
    timeout = 120  # seconds a client may stall while sending

    def log_message(self, fmt, *args):
        if not self.server.quiet:
            sys.stderr.write("tinylm.serve: %s %s\n" % (self.address_string(), fmt % args))

    def _send(self, status, payload, text=False):
        data = (payload if text else json.dumps(payload)).encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8" if text else "application/json")
        self.send_header("Content-Length", str(len(data)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)

    def _body(self):
        """The request's JSON object; APIError on a missing, oversized or malformed body."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            self.close_connection = True
            raise APIError(400, "chunked request bodies are not supported; send Content-Length")
        try:
            length = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            length = -1
        if length < 0 or length > MAX_BODY:
            self.close_connection = True
            raise APIError(413 if length > MAX_BODY else 400, "bad or too large Content-Length")
        raw = self.rfile.read(length)
        self._body_read = True
        try:
            body = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as e:
            raise APIError(400, f"malformed JSON body: {e}") from e
        if not isinstance(body, dict):
            raise APIError(400, "the request body must be a JSON object")
        return body

    def _route(self, method):
        path = self.path.split("?", 1)[0].rstrip("/")
        reg = self.server.registry
        if method == "GET" and path == "/health":
            return 200, {"status": "ok"}, False
        if method == "GET" and path == "/v1/models":
            return 200, reg.listing(), False
        if method == "POST" and path == "/v1/chat/completions":
            return 200, chat_completion(reg, self.server.infer_lock, self._body()), False
        if method == "POST" and path == "/v1/load_lora_adapter":
            name, p = _name_and_path(self._body(), True)
            reg.load(name, p)
            return 200, f"Success: LoRA adapter '{name}' added successfully.", True
        if method == "POST" and path == "/v1/unload_lora_adapter":
            name, _ = _name_and_path(self._body(), False)
            reg.unload(name)
            return 200, f"Success: LoRA adapter '{name}' removed successfully.", True
        if path in KNOWN_PATHS:
            raise APIError(405, f"method {method} not allowed on {path}")
        raise APIError(404, f"no route {method} {path}")

    def _handle(self, method):
        self._body_read = False
        try:
            status, payload, text = self._route(method)
        except APIError as e:
            status, payload, text = e.status, e.body(), False
        except Exception as e:  # never leave a connection hanging
            traceback.print_exc()
            status, payload, text = 500, APIError(500, f"internal error: {e}").body(), False
        if method == "POST" and not self._body_read:
            self.close_connection = True  # unread body bytes would poison the next request
        self._send(status, payload, text)

    def do_GET(self):
        self._handle("GET")

    def do_POST(self):
        self._handle("POST")


def is_loopback(host):
    """Whether host names only loopback addresses."""
    try:
        infos = socket.getaddrinfo(host, None)
    except socket.gaierror:
        return False
    return all(ipaddress.ip_address(i[4][0].split("%")[0]).is_loopback for i in infos)


def make_server(registry, host="127.0.0.1", port=0, quiet=False):
    """A ThreadingHTTPServer serving registry (call serve_forever; port 0 picks a free port)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    cls = type("TinyLMServer", (ThreadingHTTPServer,), {"address_family": family, "daemon_threads": True})
    srv = cls((host, port), Handler)
    srv.registry, srv.infer_lock, srv.quiet = registry, threading.Lock(), quiet
    return srv


def write_port_file(path, port):
    """Write the bound port atomically."""
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(f"{port}\n")
    os.replace(tmp, path)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m tinylm.serve", description=__doc__.split("\n")[0])
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--served-model-name", help="default: the checkpoint's directory name")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8000, help="0 picks a free port (see --port-file)")
    ap.add_argument("--port-file", help="write the bound port here")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--max-loaded", type=int, default=4, help="reloaded checkpoints kept besides the base")
    ap.add_argument("--allow-remote", action="store_true", help="allow a non-loopback --host")
    ap.add_argument("--quiet", action="store_true", help="no per-request log lines")
    args = ap.parse_args(argv)
    if args.max_loaded < 1:
        ap.error("--max-loaded must be at least 1")
    if not args.allow_remote and not is_loopback(args.host):
        ap.error(f"--host {args.host} is not a loopback address; pass --allow-remote to serve it")
    torch.set_num_threads(max(1, args.threads))
    name = args.served_model_name or os.path.basename(os.path.abspath(args.checkpoint))
    try:
        registry = Registry(name, args.checkpoint, pick_device(args.device), args.max_loaded)
    except CheckpointError as e:
        ap.error(str(e))
    srv = make_server(registry, args.host, args.port, args.quiet)
    port = srv.server_address[1]
    if args.port_file:
        write_port_file(args.port_file, port)
    print(f"tinylm.serve: serving {name} on http://{args.host}:{port}/v1", file=sys.stderr, flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        srv.server_close()


if __name__ == "__main__":
    main()

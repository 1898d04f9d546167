"""Byte-level tokenizer and chat template.

Input ids 0..255 are raw bytes; 256..259 are the special tokens below. A
conversation renders as, per message, its role token, the UTF-8 bytes of its
content and END; the generation prompt appends ASSISTANT. Content is never
scanned for special-token strings, so a literal "<|end|>" in a message stays
seven bytes.

The *emit vocabulary* (what the output head scores) is bytes 0..127 plus END:
the model can only ever produce ASCII, which is always valid UTF-8, so the text
of a reply re-encodes to exactly the sampled bytes and re-rendering a
conversation that contains it reproduces the sampled ids (no retokenisation
drift). Log-probabilities are normalised over this emit vocabulary, by the
server and the learner alike.
"""

SYSTEM, USER, ASSISTANT, END = 256, 257, 258, 259
VOCAB_SIZE = 260
EMIT_BYTES = 128
EMIT_SIZE = EMIT_BYTES + 1  # ASCII bytes + END
END_INDEX = EMIT_BYTES  # END's position in the emit vocabulary

ROLE_TOKENS = {"system": SYSTEM, "user": USER, "assistant": ASSISTANT}
SPECIAL_NAMES = {SYSTEM: "<|system|>", USER: "<|user|>", ASSISTANT: "<|assistant|>", END: "<|end|>"}


def emit_index(token_id):
    """The emit-vocabulary index of a token id; ValueError if it cannot be emitted."""
    if 0 <= token_id < EMIT_BYTES:
        return token_id
    if token_id == END:
        return END_INDEX
    raise ValueError(f"token id {token_id} is not in the emit vocabulary (bytes 0..127 and {END})")


def emit_token(index):
    """The token id of an emit-vocabulary index."""
    return END if index == END_INDEX else index


def render_message(role, content):
    """The ids of one message: role token, content bytes, END."""
    if role not in ROLE_TOKENS:
        raise ValueError(f"unsupported role {role!r} (want one of {sorted(ROLE_TOKENS)})")
    return [ROLE_TOKENS[role], *content.encode("utf-8"), END]


def render(messages, add_generation_prompt=False):
    """The ids of a conversation [{role, content}], optionally with the generation prompt."""
    ids = []
    for m in messages:
        ids += render_message(m["role"], m["content"])
    if add_generation_prompt:
        ids.append(ASSISTANT)
    return ids


def decode(ids):
    """The text of ids, special tokens left out (vLLM's skip_special_tokens)."""
    return bytes(i for i in ids if i < 256).decode("utf-8", errors="replace")


def token_text(token_id):
    """The display string of one token (for logprobs entries)."""
    if token_id in SPECIAL_NAMES:
        return SPECIAL_NAMES[token_id]
    return bytes([token_id]).decode("utf-8", errors="replace")


def token_bytes(token_id):
    """The bytes of one token as a list of ints (OpenAI's logprobs `bytes`)."""
    if token_id in SPECIAL_NAMES:
        return list(SPECIAL_NAMES[token_id].encode())
    return [token_id]

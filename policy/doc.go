// Package policy defines what the agent harness asks a model for: the
// next assistant message of a chat, with the token ids and behaviour
// log-probabilities the trainer needs when the backend provides them.
//
// Backends live in sub-packages: policy/openai (any OpenAI-compatible
// chat-completions server: vLLM, SGLang, ...) and policy/builtin (a
// log-linear softmax policy over structured shell actions that runs on a
// CPU with no model).
package policy

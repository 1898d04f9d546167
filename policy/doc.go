// Package policy defines what the agent harness asks a model for: the
// next assistant message of a chat, with the token ids and behaviour
// log-probabilities the trainer needs when the backend provides them, and
// the two failures every backend classifies the same way: ErrContextLength
// (the conversation no longer fits; the episode ends and is still
// verified) and *Unavailable (an infrastructure failure, excluded from
// baselines and pass rates instead of scored 0).
//
// Backends live in sub-packages: policy/openai (any OpenAI-compatible
// chat-completions server: vLLM, SGLang, ...) and policy/builtin (a
// log-linear softmax policy over structured shell actions that runs on a
// CPU with no model).
package policy

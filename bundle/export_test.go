package bundle

// DecodeSimpleTOML exposes decodeSimpleTOML to the external tests, which
// compare it with go-toml on generated pools (poolgen imports bundle).
var DecodeSimpleTOML = decodeSimpleTOML

package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"sort"
	"strings"
)

// DefaultMaxOutput is the number of bytes an exec keeps per stream when
// ExecRequest.MaxOutput is 0.
const DefaultMaxOutput = 1 << 20

// ExecMarkerVar tags every process of one exec through its environment,
// which children inherit, so a timed-out command can be killed whole.
const ExecMarkerVar = "OTCURATE_EXEC"

// NewExecMarker is a random exec tag.
func NewExecMarker() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// KillScript kills every process whose environment holds the marker
// ($1), plus all their descendants, in a few passes (a process may fork
// between the scan and the kill). It needs only bash and /proc. A process
// of another user is visible to it only through its parent: reading
// /proc/PID/environ needs the same uid (containers lack CAP_SYS_PTRACE).
const KillScript = `m="$1"; self=$$
for pass in 1 2 3 4; do
  declare -A kids=(); roots=()
  for d in /proc/[0-9]*; do
    p=${d##*/}
    [ "$p" = "$self" ] && continue
    st=; read -r st 2>/dev/null < "$d/stat" || continue
    read -r -a f <<< "${st##*) }"
    kids[${f[1]}]+=" $p"
    while IFS= read -r -d '' kv; do
      if [ "$kv" = "$m" ]; then roots+=("$p"); break; fi
    done 2>/dev/null < "$d/environ"
  done
  [ ${#roots[@]} -eq 0 ] && exit 0
  all=(); queue=("${roots[@]}")
  while [ ${#queue[@]} -gt 0 ]; do
    p=${queue[0]}; queue=("${queue[@]:1}"); all+=("$p")
    for c in ${kids[$p]}; do queue+=("$c"); done
  done
  kill -KILL "${all[@]}" 2>/dev/null
  unset kids
done`

// EnvList renders an environment map as sorted KEY=value pairs.
func EnvList(env map[string]string) []string {
	if len(env) == 0 {
		return nil
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// ShellQuote quotes s as one word for bash (single quotes, embedded ones
// escaped), for commands a backend builds around paths and values.
func ShellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

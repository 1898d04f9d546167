// Command otcurate-sandbox-helper is the static helper that otcurate runs
// inside a Kubernetes or Daytona sandbox, by absolute path, for the
// verifier's isolation (kill the agent's processes, read a reward file,
// reset a directory) instead of the image's own tools. See package
// sandbox/helper/op for what it does and sandbox/helper for the host side.
// Build it static: CGO_ENABLED=0 go build -ldflags "-s -w".
package main

import (
	"os"

	"github.com/otcurate/otcurate/sandbox/helper/op"
)

func main() { os.Exit(op.Run(os.Args[1:], os.Stdin, os.Stdout)) }

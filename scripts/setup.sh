#!/usr/bin/env bash
# Idempotent setup for otcurate on a fresh Debian machine: checks Go,
# fetches the Go modules the build and the tests need, and makes a Docker
# engine with offline base images available (scripts/setup-docker.sh).
# Safe to re-run; the second run takes seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf 'setup: %s\n' "$*" >&2; }

if ! command -v go >/dev/null 2>&1; then
	if [ -x /usr/local/go/bin/go ]; then
		export PATH="/usr/local/go/bin:$PATH"
	else
		log "Go is not installed (expected /usr/local/go); install Go ≥ 1.26 first"
		exit 1
	fi
fi
log "$(go version)"

# Only the modules the packages and tests import (not every platform's
# DuckDB library that go.sum mentions).
log "fetching Go modules"
go list -deps -test ./... >/dev/null

# The sandbox: a Docker engine (installed and started when none answers)
# and the offline base images with their registry-free name map.
if [ "${OTCURATE_SKIP_DOCKER:-}" = "1" ]; then
	log "OTCURATE_SKIP_DOCKER=1: not setting up Docker (sandbox tests will fail or skip)"
else
	scripts/setup-docker.sh
fi

for tool in gzip python3; do
	command -v "$tool" >/dev/null 2>&1 || log "note: $tool not found (only the benchmark needs it)"
done
log "ready"

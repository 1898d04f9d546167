#!/usr/bin/env bash
# Idempotent setup for otcurate on a fresh Debian machine: checks Go,
# fetches the Go modules the build and the tests need, and makes a Docker
# engine with offline base images available (scripts/setup-docker.sh).
# Safe to re-run; the second run takes seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf 'setup: %s\n' "$*" >&2; }

# install_missing WHY CONSEQUENCE PACKAGE...: apt-get installs the Debian
# packages that are not installed yet (updating the lists once if the
# install fails); without root or apt-get, says what will fail.
install_missing() {
	local why=$1 consequence=$2 missing=() p
	shift 2
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
	done
	[ "${#missing[@]}" -gt 0 ] || return 0
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		log "installing ${missing[*]} ($why)"
		export DEBIAN_FRONTEND=noninteractive
		apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 ||
			{ apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }
	else
		log "note: ${missing[*]} missing and cannot be installed here: $consequence"
	fi
}

if ! command -v go >/dev/null 2>&1; then
	if [ -x /usr/local/go/bin/go ]; then
		export PATH="/usr/local/go/bin:$PATH"
	else
		log "Go is not installed (expected /usr/local/go); install Go ≥ 1.26 first"
		exit 1
	fi
fi
log "$(go version)"

# libdeflate (Debian's libdeflate-dev: header and static library) gives
# the bundle decoder its one-call inflater, about twice the Go inflater's
# rate on task-sized bundles. Without it `make build` falls back to a
# pure-Go binary, but `go test`/`go vet` need it (or -tags purego).
if ! scripts/have-libdeflate.sh; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		log "installing libdeflate-dev and gcc (cgo inflater)"
		export DEBIAN_FRONTEND=noninteractive
		apt-get install -y -qq --no-install-recommends libdeflate-dev gcc libc6-dev >/dev/null 2>&1 ||
			{ apt-get update -qq && apt-get install -y -qq --no-install-recommends libdeflate-dev gcc libc6-dev >/dev/null; }
	else
		log "libdeflate-dev is missing and cannot be installed here (not root or no apt-get): install it, or build with -tags purego"
		exit 1
	fi
fi

# The fake sandbox backend (sandbox/fake, the fast test tier) runs task
# commands with this machine's own programs, so the host needs what the
# offline base images carry (scripts/setup-docker.sh's BASE_PACKAGES) and
# util-linux's nsenter and setpriv.
FAKE_HOST_PACKAGES=(bash coreutils procps util-linux python3 python3-pip python3-pytest python3-venv
	python-is-python3 ca-certificates tmux)
install_missing "the fake sandbox backend's host programs" "fast-tier tests on the fake backend may fail" "${FAKE_HOST_PACKAGES[@]}"

# The reference policy model (integrations/tinylm: a small transformer
# trained from scratch, served over the OpenAI protocol) runs on Debian's
# PyTorch under /usr/bin/python3; OpenBLAS makes its matmuls ~14x faster
# than the reference BLAS Debian's torch falls back to.
TORCH_PACKAGES=(python3-torch python3-numpy libopenblas0-pthread)
install_missing "the reference policy model, integrations/tinylm" "the neural policy's tests will fail" "${TORCH_PACKAGES[@]}"

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

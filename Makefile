# otcurate — see README.md. Every target that needs the environment runs
# `setup` first; setup is idempotent.
SHELL := /bin/bash
export PATH := /usr/local/go/bin:$(PATH)
GO ?= go
BIN := bin/otcurate
DEMO := out/demo

.PHONY: neural redteam all setup build test test-fast test-fast-only test-engine test-engine-only test-kube test-short vet fmt demo bench proof clean

all: build

setup:
	@scripts/setup.sh

# A static binary either way. With libdeflate's header and static library
# (Debian's libdeflate-dev; `make setup` installs it) the bundle decoder
# inflates whole blobs through it, about twice the Go inflater's rate;
# without them the build falls back to pure Go (-tags purego) and says so.
build:
	@if scripts/have-libdeflate.sh; then \
		echo "$(GO) build (cgo, libdeflate, static) -o $(BIN)"; \
		CGO_ENABLED=1 $(GO) build -tags netgo,osusergo -ldflags '-linkmode external -extldflags "-static"' -o $(BIN) ./cmd/otcurate; \
	else \
		echo "build: libdeflate-dev not found: pure-Go inflater (validation about 20% slower; make setup installs it)" >&2; \
		CGO_ENABLED=0 $(GO) build -tags purego -o $(BIN) ./cmd/otcurate; \
	fi
	@# The static helper the kube and daytona backends run in a sandbox
	@# (see otcurate help sandbox), per architecture, next to $(BIN).
	@for arch in amd64 arm64; do \
		CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -trimpath -ldflags '-s -w' \
			-o bin/otcurate-sandbox-helper-linux-$$arch ./cmd/otcurate-sandbox-helper || exit 1; \
	done

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }

fmt:
	gofmt -w .

# The whole test suite (what CI runs): the fast tier, then the engine tier.
test: setup vet test-fast-only test-engine-only

# Packages whose tests run sandboxes (sandboxtest.Backend or .Engine).
ENGINE_PKGS := ./sandbox/docker/ ./sandbox/daytona/ ./sandbox/kube/ ./trial/ ./filters/ ./agent/ ./train/ ./traces/ ./cmd/...
# Packages that only the engine tier runs (their backends need an engine).
ENGINE_ONLY := /sandbox/(docker|daytona|kube)$$

# The fast tier needs no Docker engine: every package in parallel; tests of
# stages, trials, the harness and the trainer run on the fake backend
# (sandbox/fake: real commands in namespaces, root needed, no isolation),
# and tests that need the real engine skip (OTCURATE_SANDBOX=fake).
test-fast: setup vet test-fast-only
test-fast-only:
	$(GO) test -tags purego -count=1 ./bundle/
	OTCURATE_SANDBOX=fake OTCURATE_REQUIRE_FAKE=1 OTCURATE_REQUIRE_TORCH=1 $(GO) test -count=1 -timeout 20m \
		$$($(GO) list ./... | grep -v -E '$(ENGINE_ONLY)')

# The engine tier: the same sandbox tests, and the Docker, Daytona and
# Kubernetes backends' own, on the real engine (OTCURATE_SANDBOX=docker),
# packages one at a time so the timing-sensitive tests of different
# packages do not compete for the two cores. Two extra engines
# (scripts/fleet.sh) serve the fleet backend's tests, and an sshd in front
# of the main engine its ssh:// test. The Kubernetes tests skip here (no
# cluster): make test-kube runs them.
test-engine: setup vet test-engine-only
test-engine-only:
	@fleet=$$(scripts/fleet.sh up 2) && eval "$$(scripts/fleet.sh ssh)" && \
	OTCURATE_SANDBOX=docker OTCURATE_REQUIRE_DOCKER=1 OTCURATE_REQUIRE_TORCH=1 OTCURATE_FLEET=$$fleet $(GO) test -p 1 -count=1 -timeout 40m $(ENGINE_PKGS); \
	status=$$?; scripts/fleet.sh down; exit $$status

# The Kubernetes tier: a real single-node cluster built from source (once,
# ~15 minutes; cached in /var/cache/otcurate), the Kubernetes backend's
# tests, and Docker-vs-Kubernetes parity through an Indexed Job + merge.
test-kube: setup build
	scripts/test-kube.sh

# The red-team suite: the toolchain and integrity attacks (trial/toolchain_test.go)
# in the default fresh mode and the opt-in shared one, on the real engine and on
# the fake, and the older adversarial agents; prints the table (attack, mode,
# result). Every case of the default mode must score 0 (the tests fail otherwise).
redteam: setup
	@set -o pipefail; for s in docker fake; do echo "== $$s"; \
		OTCURATE_SANDBOX=$$s $(GO) test -count=1 -v -run 'TestToolchainAttacks|TestMaxAgentTimeCapsTheOracle|TestAdversarialAgents' ./trial/ \
		| grep -E '^\s+\||^(--- )?(FAIL|ok|PASS)' || exit 1; done

test-short: build
	$(GO) test -short ./...

# The main job on the bundled sample pool: the default stages (the flaky
# gate with 3 oracle runs per task to keep it to a few minutes), select 25
# tasks, write the report, then describe the result.
demo: setup build
	rm -rf $(DEMO)
	$(BIN) build --pool testdata/sample-pool.parquet -o $(DEMO)/tasks.parquet --run-dir $(DEMO)/run \
		--flaky-repeats 3 --target 25 --seed 1
	$(BIN) inspect $(DEMO)/tasks.parquet
	@printf 'flaky gate keeps: '; grep -o '"stage":"flaky","verdict":"keep","reason":"[a-z_]*"' $(DEMO)/run/decisions.jsonl | \
		sed 's/.*"reason":"//; s/"$$//' | sort | uniq -c | awk '{printf "%s=%s ", $$2, $$1} END {print ""}'; \
		echo '  (oracle_passes: proven by the oracle; verifier_unproven: no solution/, judged by the untouched environment alone, proof none)'
	@echo "decisions: $(DEMO)/run/decisions.jsonl   funnel: $(DEMO)/run/summary.json"

bench: setup build
	$(GO) run ./bench/validate
	scripts/bench-realistic.sh
	scripts/bench-sandbox.sh
	scripts/bench-harness.sh
	scripts/bench-fleet.sh
	$(GO) run ./bench/accuracy

# Proof of learning for `otcurate train` (built-in policy; trained, --lr 0 and
# --shuffle-rewards arms on 5 seeds; greedy pass rates before and after on
# validation and on test splits held out by phrasing, by variant and by
# hand-written paraphrase; fake sandbox backend, needs root; 15 runs of
# ~10 min of 2 cores each).
proof: setup build
	scripts/proof-of-learning.sh

# The SFT-then-RL recipe in miniature with the reference neural policy
# (integrations/tinylm, PyTorch on CPU): teacher traces, SFT, RL with the
# trained, lr0 and shuffled arms, and the proof's summary.
neural: setup build
	scripts/neural-recipe.sh

clean:
	rm -rf bin out

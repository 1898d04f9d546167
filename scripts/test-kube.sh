#!/usr/bin/env bash
# The Kubernetes tier of the tests (make test-kube; .ci/run runs it too):
#
#  1. start the single-node cluster (scripts/kube.sh up: the first run on a
#     machine builds Kubernetes, ~15 min; later runs reuse the binaries);
#  2. the Kubernetes backend's Go tests against it (sandbox/kube);
#  3. backend parity and sharding: a generated pool with deterministic
#     defects is curated once on the Docker backend, and once as an Indexed
#     Job of SHARDS shards whose sandboxes are pods of the cluster
#     (deploy/kubernetes/*.yaml, rendered) followed by the merge Job; the two
#     runs must agree on every decision (path, stage, verdict, reason), on
#     the kept set and on the output parquet's bytes, and leave no pod;
#  4. interrupts: Ctrl-C of a Kubernetes-backed build leaves no pod; after a
#     SIGKILL the resumed run's janitor removes the orphaned pods, and the
#     resumed run still gives the Docker run's decisions and output;
#  5. stop the cluster and remove what it leaves behind.
#
# Needs the Docker engine (make setup) and root.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export PATH=/usr/local/go/bin:$PATH
SHARDS=${SHARDS:-2}
TASKS=${TASKS:-16}
WORK=${WORK:-/var/lib/otcurate/kube-test}
BIN=bin/otcurate
log() { printf '[test-kube] %s\n' "$*" >&2; }

# The command that failed, repeated after the pods' logs so that the tail
# of a CI log says why (set -e stops without a word on a failed command).
failed_at=
trap 'failed_at="line $LINENO: $BASH_COMMAND"' ERR
cleanup() {
	local status=$? where=$failed_at
	if ((status != 0)) && [[ -x $KUBE_BIN_DIR/kubectl ]]; then
		log "failed; pods and jobs:"
		scripts/kube.sh kubectl get pods,jobs -A -o wide >&2 || true
		for p in $(scripts/kube.sh kubectl get pods -l app=otcurate -o name 2>/dev/null); do
			scripts/kube.sh kubectl logs "$p" --tail 40 >&2 || true
		done
	fi
	scripts/kube.sh down || true
	if ((status != 0)); then
		log "FAILED (exit $status)${where:+ at $where}${fail_reason:+: $fail_reason}"
	fi
	exit $status
}
fail() {
	fail_reason="$*"
	log "$*"
	exit 1
}
fail_reason=
KUBE_BIN_DIR=${KUBE_CACHE:-/var/cache/otcurate/kube-v1.37.2}/bin
trap cleanup EXIT

scripts/kube.sh up
eval "$(scripts/kube.sh env | sed 's/^/export /')"
kctl() { scripts/kube.sh kubectl "$@"; }
# job_wait NAME SECONDS: until the Job is Complete; fail at once when it
# is Failed.
job_wait() {
	local t0=$SECONDS conds
	while ((SECONDS - t0 < $2)); do
		conds=$(kctl get job "$1" -o jsonpath='{range .status.conditions[?(@.status=="True")]}{.type} {end}')
		case " $conds " in
		*" Complete "*) return 0 ;;
		*" Failed "*)
			fail_reason="job $1 failed"
			log "$fail_reason"
			return 1
			;;
		esac
		sleep 2
	done
	fail_reason="job $1 not complete after $2 s"
	log "$fail_reason"
	return 1
}

log "Go tests of the Kubernetes backend"
OTCURATE_KUBE_NETPOL_UNENFORCED="scripts/kube.sh uses the bridge CNI plugin, which does not implement NetworkPolicy" OTCURATE_REQUIRE_KUBE=1 OTCURATE_REQUIRE_DOCKER=1 go test -count=1 -timeout 20m ./sandbox/kube/

log "parity: $TASKS generated tasks on Docker vs $SHARDS Indexed-Job shards on Kubernetes + merge"
go build -o "$BIN" ./cmd/otcurate
# The sandbox helper the kube backend runs in pods, next to the binary.
HELPER=bin/otcurate-sandbox-helper-linux-$(go env GOARCH)
CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$HELPER" ./cmd/otcurate-sandbox-helper
rm -rf "$WORK"
mkdir -p "$WORK/data/out" "$WORK/image"
# Deterministic defects only (no timing-based ones: those depend on the load).
"$BIN" gen-pool -n "$TASKS" --seed 7 -o "$WORK/data/pool.parquet" \
	--rates "nop_passes=0.15,wrong_oracle=0.15,reward_missing=0.1,build_fails=0.1,tests_in_image=0.1,duplicate=0.1"
FLAGS="--flaky-repeats 2 --seed 3 --verifier-sandbox shared" # Kubernetes refuses the default fresh mode (it cannot list a pod's changes)
# shellcheck disable=SC2086 # FLAGS is a word list
"$BIN" build --pool "$WORK/data/pool.parquet" -o "$WORK/docker.parquet" --run-dir "$WORK/docker-run" $FLAGS --target 5 --log-level warn

cp "$BIN" "$HELPER" /usr/bin/ctr "$WORK/image/"
docker build -q -f deploy/kubernetes/Dockerfile -t otcurate-runner:test "$WORK/image" >/dev/null
scripts/kube.sh load otcurate-runner:test
export JOB_NAME=otc-parity IMAGE=otcurate-runner:test SHARDS PARALLELISM=$SHARDS POOL=pool.parquet OUT=out \
	REQUEST_RATIO=0.1 API_HOST=$OTCURATE_KUBE_HOST_IP API_PORT=6443 DATA_DIR="$WORK/data" \
	BUILD_FLAGS="$FLAGS --log-level warn" MERGE_FLAGS="--target 5 --seed 3"
kctl apply -f deploy/kubernetes/rbac.yaml >/dev/null
t0=$SECONDS
envsubst <deploy/kubernetes/indexed-job.yaml | kctl apply -f - >/dev/null
job_wait "$JOB_NAME" 1800
log "Indexed Job complete in $((SECONDS - t0)) s"
envsubst <deploy/kubernetes/merge-job.yaml | kctl apply -f - >/dev/null
job_wait "$JOB_NAME-merge" 300

left=$(kctl get pods -l otcurate=1 -o name)
[[ -z $left ]] || fail "sandbox pods left behind: $left"
verdicts() { python3 -c '
import json, sys
# near_dup_shards is the merge'"'"'s own pass over the shards'"'"' survivors: an
# unsharded run has no such row (its near_dup saw every task at once).
rows = sorted((d["path"], d["stage"], d["verdict"], d["reason"]) for d in map(json.loads, open(sys.argv[1])) if d["stage"] != "near_dup_shards")
print("\n".join("\t".join(r) for r in rows))' "$1"; }
if ! diff <(verdicts "$WORK/docker-run/decisions.jsonl") <(verdicts "$WORK/data/out/run/decisions.jsonl") >"$WORK/verdicts.diff"; then
	cat "$WORK/verdicts.diff" >&2
	fail "Docker and Kubernetes verdicts differ: $(grep -c '^[<>]' "$WORK/verdicts.diff") lines; first: $(grep -m1 '^[<>]' "$WORK/verdicts.diff")"
fi
cmp "$WORK/docker.parquet" "$WORK/data/out/tasks.parquet" || fail "the output parquets differ"
log "parity holds: $(verdicts "$WORK/docker-run/decisions.jsonl" | wc -l) decisions," \
	"$(verdicts "$WORK/docker-run/decisions.jsonl" | awk -F'\t' '$3=="drop"' | wc -l) drops, identical output"
kctl delete job "$JOB_NAME" "$JOB_NAME-merge" --wait=false >/dev/null

log "interrupts: Ctrl-C leaves no pod; SIGKILL leaves pods that the resumed run's janitor removes"
export OTCURATE_KUBE_REQUEST_RATIO=0.1
pods() { kctl get pods -l otcurate=1 -o name; }
wait_pod() {
	local t0=$SECONDS
	until [[ -n $(pods) ]]; do
		((SECONDS - t0 < 300)) || { fail_reason="no sandbox pod appeared"; log "$fail_reason"; return 1; }
		sleep 0.3
	done
}
# shellcheck disable=SC2206 # FLAGS is a word list
build_kube=("$BIN" build --pool "$WORK/data/pool.parquet" -o "$WORK/int.parquet" --run-dir "$WORK/int-run"
	--sandbox kube $FLAGS --target 5 --log-level warn --no-progress)
# Started directly (not through a function), so $! is otcurate itself.
"${build_kube[@]}" >/dev/null 2>&1 &
pid=$!
wait_pod
kill -INT "$pid"
status=0
wait "$pid" || status=$?
[[ $status == 130 ]] || fail "interrupted build exited $status, want 130"
left=$(pods)
[[ -z $left ]] || fail "Ctrl-C left pods: $left"
"${build_kube[@]}" >/dev/null 2>&1 &
pid=$!
wait_pod
kill -KILL "$pid"
wait "$pid" || true
[[ -n $(pods) ]] || log "(the SIGKILL came between two sandboxes: no pod to clean up)"
"${build_kube[@]}" >"$WORK/int.log" 2>&1 || {
	cat "$WORK/int.log" >&2
	fail "the resumed Kubernetes run failed: $(tail -1 "$WORK/int.log")"
}
left=$(pods)
[[ -z $left ]] || fail "the resumed run left pods: $left"
diff <(verdicts "$WORK/docker-run/decisions.jsonl") <(verdicts "$WORK/int-run/decisions.jsonl") >"$WORK/int-verdicts.diff" || {
	cat "$WORK/int-verdicts.diff" >&2
	fail "the interrupted and resumed Kubernetes run disagrees with the Docker run; first: $(grep -m1 '^[<>]' "$WORK/int-verdicts.diff")"
}
cmp "$WORK/docker.parquet" "$WORK/int.parquet" || fail "the interrupted and resumed run's output differs from the Docker run's"
log "interrupts: no pod left; the resumed run gives the Docker run's decisions and output ($(grep -o 'verdicts reused[^;]*\|[0-9]* verdicts reused from the ledger' "$WORK/int.log" | head -1))"

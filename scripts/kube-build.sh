#!/usr/bin/env bash
# Build the Kubernetes control plane and kubelet from source, offline, once.
#
#   scripts/kube-build.sh            build into $KUBE_BIN (no-op when present)
#
# k3s, kind and cri-dockerd are not reachable from here (see
# ../shared/notes/kubernetes-offline.md); the Go module proxy serves
# k8s.io/kubernetes and its published staging modules. `go install` of
# k8s.io/kubernetes is impossible (its go.mod points the staging modules at
# ./staging/...), so this builds from a small wrapper module whose go.mod
# copies kubernetes' requirements and replaces each k8s.io/<staging> module
# with its published v0.<minor>.<patch> release.
#
# Cold: about 15 minutes on 2 cores and ~4 GB of Go build cache, which is
# removed afterwards (the binaries, ~440 MB, are what is cached).
set -euo pipefail

KUBE_VERSION=${KUBE_VERSION:-v1.37.2}
STAGING_VERSION=v0.${KUBE_VERSION#v1.}
KUBE_CACHE=${KUBE_CACHE:-/var/cache/otcurate/kube-$KUBE_VERSION}
KUBE_BIN=$KUBE_CACHE/bin
COMPONENTS=(kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl)
# Staging modules the proxy does not serve; nothing built here needs them.
UNSERVED=(k8s.io/sample-cli-plugin k8s.io/sample-controller)

log() { printf '[kube-build] %s\n' "$*" >&2; }

have_all() {
	local c
	for c in "${COMPONENTS[@]}"; do [[ -x $KUBE_BIN/$c ]] || return 1; done
}

if have_all; then
	log "binaries present in $KUBE_BIN"
	exit 0
fi

export PATH=/usr/local/go/bin:$PATH
work=$(mktemp -d)
gocache=$(mktemp -d)
trap 'rm -rf "$work" "$gocache"' EXIT

log "fetching k8s.io/kubernetes@$KUBE_VERSION"
moddir=$(cd "$work" && go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
[[ -f $moddir/go.mod ]] || {
	log "cannot fetch k8s.io/kubernetes@$KUBE_VERSION"
	exit 1
}

# The wrapper module: kubernetes' go directive, godebug and require blocks,
# plus kubernetes itself, and the staging replacements.
{
	echo "module otcurate.local/kubebuild"
	echo
	grep -E '^(go|godebug) ' "$moddir/go.mod"
	echo
	echo "require k8s.io/kubernetes $KUBE_VERSION"
	echo
	awk '/^require \($/,/^\)$/' "$moddir/go.mod"
	echo
	echo "replace ("
	awk '/^replace \($/,/^\)$/' "$moddir/go.mod" | awk '$2 == "=>" {print $1}' | while read -r mod; do
		skip=
		for u in "${UNSERVED[@]}"; do [[ $mod == "$u" ]] && skip=1; done
		[[ -n $skip ]] || printf '\t%s => %s %s\n' "$mod" "$mod" "$STAGING_VERSION"
	done
	echo ")"
} >"$work/go.mod"
for u in "${UNSERVED[@]}"; do
	sed -i "\#^\t$u #d" "$work/go.mod"
done

mkdir -p "$KUBE_BIN.tmp"
cd "$work"
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1"
ldflags+=" -X k8s.io/component-base/version.gitMinor=$(cut -d. -f2 <<<"$KUBE_VERSION")"
ldflags+=" -X k8s.io/client-go/pkg/version.gitVersion=$KUBE_VERSION"
t0=$SECONDS
for c in "${COMPONENTS[@]}"; do
	log "building $c"
	GOFLAGS=-mod=mod GOCACHE=$gocache CGO_ENABLED=0 \
		go build -trimpath -ldflags "$ldflags" -o "$KUBE_BIN.tmp/$c" "k8s.io/kubernetes/cmd/$c"
done
rm -rf "$KUBE_BIN"
mv "$KUBE_BIN.tmp" "$KUBE_BIN"
log "built ${COMPONENTS[*]} in $((SECONDS - t0)) s into $KUBE_BIN ($(du -sh "$KUBE_BIN" | cut -f1))"

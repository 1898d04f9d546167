#!/usr/bin/env bash
# A real single-node Kubernetes cluster on this machine, offline, for the
# Kubernetes backend's tests (issue 7). It follows
# ../shared/notes/kubernetes-offline.md: the control plane and kubelet built
# from source by scripts/kube-build.sh (cached), etcd and the CNI plugins from
# Debian, and a containerd instance of its own with the CRI plugin (Docker's
# containerd is left alone). No kube-proxy and no CoreDNS: pods and Jobs do
# not need them.
#
#   scripts/kube.sh up        build (once), start everything, wait for the
#                             node to be Ready; idempotent
#   scripts/kube.sh down      stop everything and remove the state it leaves
#                             (mounts, netns, bridge, iptables chains, cgroups)
#   scripts/kube.sh env       print the variables the tests read
#   scripts/kube.sh load IMG  copy a Docker image into the node's runtime
#   scripts/kube.sh kubectl ARGS...
#
# Pods get addresses on the cni0 bridge (10.244.0.0/24) without NAT: they
# reach this host (the API server at HOST_IP:6443) but nothing beyond.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
KUBE_VERSION=${KUBE_VERSION:-v1.37.2}
KUBE_CACHE=${KUBE_CACHE:-/var/cache/otcurate/kube-$KUBE_VERSION}
BIN=$KUBE_CACHE/bin
STATE=/var/lib/otcurate/kube
RUN=/run/otcurate-kube
LOGS=/var/log/otcurate-kube
PKI=$STATE/pki
KUBECONFIG_FILE=$STATE/admin.kubeconfig
CTRD_SOCK=$RUN/containerd.sock
ETCD_PORT=23790
API_PORT=6443
POD_CIDR=10.244.0.0/24
SERVICE_CIDR=10.0.0.0/24
PAUSE_IMAGE=docker.io/otcurate/pause:1
# A local registry (Debian's docker-registry) that the node pulls from over
# plain HTTP, to test the registry image loader.
REGISTRY=127.0.0.1:5055
COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler registry containerd kubelet)
export PATH=/usr/local/go/bin:$PATH

log() { printf '[kube] %s\n' "$*" >&2; }
die() {
	log "$*"
	exit 1
}

host_ip() { ip -4 route get 1.1.1.1 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p' | head -1; }
node_name() { hostname | tr '[:upper:]_' '[:lower:]-'; }
kctl() { "$BIN/kubectl" --kubeconfig "$KUBECONFIG_FILE" "$@"; }

running() { [[ -f $RUN/$1.pid ]] && kill -0 "$(cat "$RUN/$1.pid")" 2>/dev/null; }

start() { # name cmd...
	local name=$1
	shift
	if running "$name"; then return; fi
	setsid nohup "$@" >>"$LOGS/$name.log" 2>&1 </dev/null &
	echo $! >"$RUN/$name.pid"
}

wait_for() { # what seconds cmd...
	local what=$1 secs=$2 t0=$SECONDS
	shift 2
	until "$@" >/dev/null 2>&1; do
		((SECONDS - t0 < secs)) || die "$what not ready after ${secs}s; logs in $LOGS"
		sleep 0.5
	done
}

packages() {
	local missing=() p
	for p in etcd-server containernetworking-plugins conntrack socat openssl iptables docker-registry; do
		dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
	done
	((${#missing[@]} == 0)) && return
	log "installing ${missing[*]}"
	# No init system here: keep the packages' services from starting.
	printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
	chmod +x /usr/sbin/policy-rc.d
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >"$LOGS/apt.log" 2>&1 ||
		{ DEBIAN_FRONTEND=noninteractive apt-get update -q >>"$LOGS/apt.log" 2>&1 &&
			DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >>"$LOGS/apt.log" 2>&1; } ||
		die "apt-get install failed; see $LOGS/apt.log"
	rm -f /usr/sbin/policy-rc.d
	pkill -x etcd 2>/dev/null || true # packaged services that started anyway
	pkill -x docker-registry 2>/dev/null || true
}

pki() {
	[[ -f $PKI/apiserver.crt ]] && return
	mkdir -p "$PKI"
	local ip
	ip=$(host_ip)
	log "creating certificates (API server at $ip:$API_PORT)"
	(
		cd "$PKI"
		openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3650 -subj "/CN=otcurate-kube-ca" 2>/dev/null
		openssl req -newkey rsa:2048 -nodes -keyout apiserver.key -out apiserver.csr -subj "/CN=kube-apiserver" 2>/dev/null
		printf 'subjectAltName=IP:127.0.0.1,IP:%s,IP:10.0.0.1,IP:10.244.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\n' "$ip" >san.ext
		openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out apiserver.crt -days 3650 -extfile san.ext 2>/dev/null
		openssl genrsa -out sa.key 2048 2>/dev/null
		openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
		echo "$(openssl rand -hex 24),admin,admin,system:masters" >tokens.csv
		chmod 600 ./*.key tokens.csv
	)
}

kubeconfig() {
	local token
	token=$(cut -d, -f1 "$PKI/tokens.csv")
	cat >"$KUBECONFIG_FILE" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: otcurate
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority: $PKI/ca.crt
users:
- name: admin
  user:
    token: $token
contexts:
- name: otcurate
  context: {cluster: otcurate, user: admin, namespace: default}
current-context: otcurate
EOF
	chmod 600 "$KUBECONFIG_FILE"
}

containerd_config() {
	mkdir -p "$STATE/cni" "$STATE/containerd"
	cat >"$STATE/containerd.toml" <<EOF
version = 2
root = "$STATE/containerd"
state = "$RUN/containerd"
[grpc]
  address = "$CTRD_SOCK"
[ttrpc]
  address = "$CTRD_SOCK.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$STATE/cni"
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."$REGISTRY"]
    endpoint = ["http://$REGISTRY"]
EOF
	cat >"$STATE/registry.yml" <<EOF
version: 0.1
log: {level: warn}
storage:
  filesystem: {rootdirectory: $STATE/registry}
  delete: {enabled: true}
http:
  addr: $REGISTRY
EOF
	cat >"$STATE/cni/10-otcurate.conflist" <<EOF
{"cniVersion": "0.4.0", "name": "otcurate",
 "plugins": [
  {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_CIDR"}]], "routes": [{"dst": "0.0.0.0/0"}],
            "dataDir": "$STATE/cni-ipam"}},
  {"type": "portmap", "capabilities": {"portMappings": true}},
  {"type": "loopback"}]}
EOF
}

kubelet_config() {
	cat >"$STATE/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
failSwapOn: false
containerRuntimeEndpoint: unix://$CTRD_SOCK
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
podPidsLimit: 4096
maxPods: 110
serializeImagePulls: false
localStorageCapacityIsolation: false
resolvConf: /etc/resolv.conf
EOF
}

pause_image() {
	if "/usr/bin/ctr" --address "$CTRD_SOCK" -n k8s.io images ls -q "name==$PAUSE_IMAGE" | grep -q .; then return; fi
	docker version >/dev/null 2>&1 || die "the Docker engine must answer (make setup) to make the pause image"
	log "making the pause image"
	local dir
	dir=$(mktemp -d)
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$dir/pause" "$SCRIPT_DIR/kube-pause"
	tar -C "$dir" -c pause | docker import -c 'ENTRYPOINT ["/pause"]' - "${PAUSE_IMAGE#docker.io/}" >/dev/null
	rm -rf "$dir"
	docker save "${PAUSE_IMAGE#docker.io/}" | /usr/bin/ctr --address "$CTRD_SOCK" -n k8s.io images import - >/dev/null
}

up() {
	[[ $(id -u) == 0 ]] || die "must run as root"
	mkdir -p "$STATE" "$RUN" "$LOGS"
	"$SCRIPT_DIR/kube-build.sh"
	packages
	pki
	kubeconfig
	containerd_config
	kubelet_config
	local ip t0=$SECONDS
	ip=$(host_ip)
	sysctl -qw net.ipv4.ip_forward=1 || true

	start etcd etcd --name otcurate --data-dir "$STATE/etcd" \
		--listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
		--listen-peer-urls http://127.0.0.1:23800 --initial-advertise-peer-urls http://127.0.0.1:23800 \
		--initial-cluster otcurate=http://127.0.0.1:23800
	start kube-apiserver "$BIN/kube-apiserver" --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
		--bind-address 0.0.0.0 --secure-port "$API_PORT" --advertise-address "$ip" \
		--tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" --client-ca-file "$PKI/ca.crt" \
		--token-auth-file "$PKI/tokens.csv" --authorization-mode Node,RBAC --allow-privileged=true \
		--service-account-issuer https://kubernetes.default.svc --service-account-key-file "$PKI/sa.pub" \
		--service-account-signing-key-file "$PKI/sa.key" --service-cluster-ip-range "$SERVICE_CIDR" \
		--kubelet-preferred-address-types InternalIP,Hostname
	wait_for "API server" 90 kctl get --raw /readyz
	start kube-controller-manager "$BIN/kube-controller-manager" --kubeconfig "$KUBECONFIG_FILE" \
		--service-account-private-key-file "$PKI/sa.key" --root-ca-file "$PKI/ca.crt" \
		--use-service-account-credentials=false --leader-elect=false
	start kube-scheduler "$BIN/kube-scheduler" --kubeconfig "$KUBECONFIG_FILE" --leader-elect=false
	start registry /usr/bin/docker-registry serve "$STATE/registry.yml"
	start containerd /usr/bin/containerd --config "$STATE/containerd.toml"
	wait_for containerd 30 /usr/bin/ctr --address "$CTRD_SOCK" version
	pause_image
	mkdir -p "$STATE/kubelet"
	start kubelet "$BIN/kubelet" --config "$STATE/kubelet.yaml" --kubeconfig "$KUBECONFIG_FILE" \
		--root-dir "$STATE/kubelet" --hostname-override "$(node_name)" --node-ip "$ip"
	wait_for "node $(node_name)" 120 bash -c "'$BIN/kubectl' --kubeconfig '$KUBECONFIG_FILE' get node '$(node_name)' -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -qx True"
	wait_for "service account default/default" 60 kctl get serviceaccount default
	log "cluster ready in $((SECONDS - t0)) s (kubeconfig $KUBECONFIG_FILE)"
}

down() {
	local c pid
	# Pods first, while the kubelet runs, so it tears their sandboxes down.
	if running kubelet && running kube-apiserver; then
		kctl delete pods,jobs --all --all-namespaces --grace-period=0 --force --wait=false >/dev/null 2>&1 || true
	fi
	for ((i = ${#COMPONENTS[@]} - 1; i >= 0; i--)); do
		c=${COMPONENTS[i]}
		[[ -f $RUN/$c.pid ]] || continue
		pid=$(cat "$RUN/$c.pid")
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
		kill -9 "$pid" 2>/dev/null || true
		rm -f "$RUN/$c.pid"
	done
	# What the kubelet and the runtime leave behind.
	pkill -f "containerd-shim-runc-v2 -namespace k8s.io" 2>/dev/null || true
	if [[ -d $STATE/kubelet ]]; then
		grep " $STATE/kubelet" /proc/mounts | awk '{print $2}' | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
	fi
	for ns in /run/netns/cni-*; do
		[[ -e $ns ]] || continue
		umount "$ns" 2>/dev/null || true
		rm -f "$ns"
	done
	ip link del cni0 2>/dev/null || true
	for t in iptables ip6tables; do
		command -v "$t" >/dev/null || continue
		$t -D INPUT -j KUBE-FIREWALL 2>/dev/null || true
		$t -D OUTPUT -j KUBE-FIREWALL 2>/dev/null || true
		for chain in KUBE-FIREWALL KUBE-KUBELET-CANARY; do
			$t -F "$chain" 2>/dev/null || true
			$t -X "$chain" 2>/dev/null || true
		done
		for table in mangle nat; do
			for chain in KUBE-IPTABLES-HINT KUBE-KUBELET-CANARY; do $t -t "$table" -X "$chain" 2>/dev/null || true; done
		done
	done
	rm -rf /var/log/pods /var/log/containers "$RUN/containerd" /run/containerd/runc/k8s.io
	find /sys/fs/cgroup -depth -type d -name 'kubepods*' -exec rmdir {} \; 2>/dev/null || true
	# Etcd, certificates and the cluster's images are kept for the next up.
	log "stopped"
}

case "${1:-}" in
up) up ;;
down) down ;;
env)
	echo "OTCURATE_KUBECONFIG=$KUBECONFIG_FILE"
	echo "OTCURATE_KUBE_CONTAINERD=$CTRD_SOCK"
	echo "OTCURATE_KUBE_HOST_IP=$(host_ip)"
	echo "OTCURATE_KUBE_TEST_REGISTRY=$REGISTRY"
	;;
load)
	[[ -n ${2:-} ]] || die "usage: $0 load IMAGE"
	docker save "$2" | /usr/bin/ctr --address "$CTRD_SOCK" -n k8s.io images import - >/dev/null
	;;
kubectl)
	shift
	kctl "$@"
	;;
*)
	sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
	exit 2
	;;
esac

#!/usr/bin/env bash
# setup-docker.sh — make a local Docker engine usable for otcurate sandboxes on a machine
# that reaches Debian's package mirror but NO container registry. Idempotent; runs as root
# with no stdin. Safe to re-run: every step is skipped when already done.
#
#   scripts/setup-docker.sh            ensure dockerd, base image, image map
#   scripts/setup-docker.sh --verify   ...then build the fixture tasks and probe Dockerfiles
#   scripts/setup-docker.sh --rebuild  rebuild the base image even if its tag exists
#   scripts/stop-docker.sh             stop the dockerd this script started (pid file)
#
# Steps
#  1. dockerd. If `docker version` gets no server answer: install Debian's docker.io when
#     `dockerd` is missing, then start dockerd directly (there is no systemd) with
#     `setsid nohup`, logging to /var/log/otcurate-dockerd.log, pid in
#     /run/otcurate-dockerd.pid, and wait up to 60 s for it to answer.
#     Flags are probed in order and the first set that answers is remembered in
#     /var/lib/otcurate/dockerd.flags (reused later: switching storage driver would hide
#     every image). Set OTCURATE_DOCKERD_FLAGS to force a set.
#       a. --storage-driver=overlay2                   (preferred: fast, little disk)
#       b. --storage-driver=overlay2 --iptables=false  (no NAT: builds can't reach the mirror)
#       c. --storage-driver=vfs                        (full copy per layer: slow, big)
#       d. --storage-driver=vfs --iptables=false
#     Always added:
#       --exec-opt native.cgroupdriver=cgroupfs  no systemd here, so no systemd cgroup driver.
#                                                Works on cgroup v1 and on v2 (dockerd 20.10
#                                                supports both with cgroupfs).
#       --mtu=<uplink MTU>   only when the default-route interface has MTU < 1500 (1400 on
#                            the dev VM). Otherwise docker0 uses 1500 and large packets from
#                            containers are dropped/fragmented on the way to the mirror.
#                            NOTE: applies to the default bridge only; user-defined networks
#                            (compose) need `-o com.docker.network.driver.mtu=<mtu>`.
#       --dns=<server>       only when the host's resolv.conf lists only loopback resolvers
#                            (systemd-resolved style), which containers cannot use.
#     On the dev VM (Debian bookworm, kernel 6.18, ext4 root, cgroup v1 hybrid, iptables-nft
#     1.8.9, docker.io 20.10.24) set (a) works: overlay2 + iptables with NAT, so `RUN apt-get`
#     in task Dockerfiles reaches deb.debian.org through docker0.
#  2. Base image otcurate/base-bookworm:<12-hex hash of the recipe> (+ alias :latest): a
#     debootstrap'ed bookworm minbase rootfs with bash, coreutils, procps, python3 (+pip,
#     pytest, venv, `python` alias), ca-certificates and tmux, apt sources pointing at the
#     host's Debian mirror, /usr/lib/python3*/EXTERNALLY-MANAGED removed (and kept out by a
#     dpkg path-exclude), loaded with `docker import`. Skipped when the tag exists.
#  3. Image map: scripts/image-map.tsv (+ files in OTCURATE_IMAGE_MAP, ':'-separated) tags
#     the local base under the names tasks use in FROM (ubuntu:24.04, python:3.13-slim...).
#     FROM then resolves locally as long as the build does not force a pull (no --pull).
#  4. --verify: bridge -> mirror reachability, builds of the fixture tasks in
#     ${OTCURATE_FIXTURES:-/work/shared/fixtures/harbor-examples}/*/environment and of two
#     probe Dockerfiles (offline pip; apt-get from the mirror), a healthcheck run; the test
#     images are removed afterwards.
#
# Environment: OTCURATE_DOCKERD_FLAGS, OTCURATE_IMAGE_MAP, OTCURATE_FIXTURES,
#              OTCURATE_DEBIAN_MIRROR, OTCURATE_DEBIAN_SECURITY_MIRROR (override the mirror
#              read from /etc/apt), OTCURATE_STATE_DIR (default /var/lib/otcurate).
set -euo pipefail
umask 022

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
STATE_DIR="${OTCURATE_STATE_DIR:-/var/lib/otcurate}"
PIDFILE=/run/otcurate-dockerd.pid
LOGFILE=/var/log/otcurate-dockerd.log
FLAGS_FILE="$STATE_DIR/dockerd.flags"
APPLIED_MAP="$STATE_DIR/image-map.applied"
BASE_REPO=otcurate/base-bookworm
SUITE=bookworm
# Packages on top of debootstrap's minbase. python-is-python3 provides `python` (the
# python:* images have it; hello-healthcheck runs `python -m http.server`).
BASE_PACKAGES=(bash coreutils procps python3 python3-pip python3-pytest python3-venv
	python-is-python3 ca-certificates tmux)
BASE_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
START_TIMEOUT=60

VERIFY=0
REBUILD=0
for arg in "$@"; do
	case "$arg" in
	--verify) VERIFY=1 ;;
	--rebuild) REBUILD=1 ;;
	-h | --help)
		sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "setup-docker: unknown argument: $arg (try --help)" >&2
		exit 2
		;;
	esac
done

log() { printf '[setup-docker] %s\n' "$*"; }
warn() { printf '[setup-docker] WARN: %s\n' "$*"; }
die() {
	printf '[setup-docker] ERROR: %s\n' "$*" >&2
	exit 1
}
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
TIMINGS=()
timing() { TIMINGS+=("$1=$2s"); }

[ "$(id -u)" = 0 ] || die "must run as root"
export DEBIAN_FRONTEND=noninteractive
exec </dev/null
mkdir -p "$STATE_DIR"

# One run at a time (a second run waits).
exec 9>"$STATE_DIR/setup.lock"
flock 9

T_ALL=$(now)
APT_UPDATED=0
apt_install() {
	if [ "$APT_UPDATED" = 0 ]; then
		log "apt-get update"
		apt-get update -qq
		APT_UPDATED=1
	fi
	log "apt-get install $*"
	apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

docker_answers() {
	command -v docker >/dev/null 2>&1 &&
		timeout 10 docker version --format '{{.Server.Version}}' >/dev/null 2>&1
}

# ---------------------------------------------------------------------------------------
# 1. dockerd
# ---------------------------------------------------------------------------------------

# Keys set in /etc/docker/daemon.json must not be given as flags too (dockerd refuses).
daemon_json_has() {
	[ -f /etc/docker/daemon.json ] && grep -q "\"$1\"" /etc/docker/daemon.json
}

common_flags() {
	local flags=(--exec-opt native.cgroupdriver=cgroupfs) dev mtu ns
	if ! daemon_json_has mtu; then
		dev=$(ip -o route show default 2>/dev/null | awk '{for (i = 1; i < NF; i++) if ($i == "dev") { print $(i + 1); exit }}')
		if [ -n "$dev" ] && [ -r "/sys/class/net/$dev/mtu" ]; then
			mtu=$(cat "/sys/class/net/$dev/mtu")
			if [ "$mtu" -lt 1500 ]; then flags+=("--mtu=$mtu"); fi
		fi
	fi
	# Only loopback resolvers on the host (systemd-resolved style): containers cannot use
	# them (dockerd would fall back to 8.8.8.8, unreachable here); pass the upstream ones.
	if ! daemon_json_has dns &&
		! awk '$1 == "nameserver" && $2 !~ /^127\./ && $2 != "::1" { found = 1 } END { exit !found }' /etc/resolv.conf 2>/dev/null; then
		for ns in $(awk '$1 == "nameserver" { print $2 }' /run/systemd/resolve/resolv.conf 2>/dev/null); do
			case "$ns" in 127.* | ::1) ;; *) flags+=("--dns=$ns") ;; esac
		done
	fi
	printf '%s\n' "${flags[@]}"
}

# start_dockerd FLAG... : start in the background, wait until it answers. 0 ok, 1 failed.
start_dockerd() {
	local pid deadline
	printf '\n==== %s: dockerd %s\n' "$(date -Is)" "$*" >>"$LOGFILE"
	# setsid: own session, so the caller's Ctrl-C / process-group kill does not reach it.
	# 9>&-: do not hand it the setup lock, or the next run would wait forever.
	setsid nohup dockerd "$@" >>"$LOGFILE" 2>&1 </dev/null 9>&- &
	pid=$!
	echo "$pid" >"$PIDFILE"
	deadline=$(($(date +%s) + START_TIMEOUT))
	while [ "$(date +%s)" -lt "$deadline" ]; do
		if docker_answers; then return 0; fi
		if ! kill -0 "$pid" 2>/dev/null; then
			rm -f "$PIDFILE"
			return 1
		fi
		sleep 0.5
	done
	kill "$pid" 2>/dev/null || true
	sleep 3
	kill -9 "$pid" 2>/dev/null || true
	rm -f "$PIDFILE"
	return 1
}

our_dockerd_pid() {
	local pid
	[ -f "$PIDFILE" ] || return 1
	pid=$(cat "$PIDFILE")
	[ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = dockerd ] && echo "$pid"
}

ensure_dockerd() {
	local t pid flagset candidates=() common=()
	if docker_answers; then
		log "dockerd answers (server $(docker version --format '{{.Server.Version}}')): nothing to start"
		return
	fi
	if pid=$(our_dockerd_pid); then
		log "dockerd pid $pid (ours) exists but does not answer yet: waiting"
		for _ in $(seq 1 $((START_TIMEOUT * 2))); do
			docker_answers && { log "dockerd pid $pid answers"; return; }
			sleep 0.5
		done
		die "dockerd pid $pid does not answer after ${START_TIMEOUT}s; see $LOGFILE (scripts/stop-docker.sh stops it)"
	fi
	rm -f "$PIDFILE"

	t=$(now)
	if ! command -v dockerd >/dev/null 2>&1; then
		# docker.io's Depends bring containerd, runc, tini (docker-init) and iptables.
		apt_install docker.io iptables ca-certificates pigz xz-utils
		log "installed $(dockerd --version)"
		if docker_answers; then # a package postinst started a service: not ours
			log "dockerd was started by the package; using it (scripts/stop-docker.sh will not stop it)"
			timing install "$(secs "$t")"
			return
		fi
	fi
	command -v docker >/dev/null 2>&1 || apt_install docker.io # the CLI comes with it
	[ "$APT_UPDATED" = 0 ] || timing install "$(secs "$t")"

	t=$(now)
	mapfile -t common < <(common_flags)
	if [ -n "${OTCURATE_DOCKERD_FLAGS:-}" ]; then
		candidates=("$OTCURATE_DOCKERD_FLAGS")
	else
		[ -s "$FLAGS_FILE" ] && candidates+=("$(cat "$FLAGS_FILE")")
		if daemon_json_has storage-driver; then
			candidates+=("" "--iptables=false")
		else
			candidates+=("--storage-driver=overlay2" "--storage-driver=overlay2 --iptables=false"
				"--storage-driver=vfs" "--storage-driver=vfs --iptables=false")
		fi
	fi
	for flagset in "${candidates[@]}"; do
		# shellcheck disable=SC2086 # flagset is a word list on purpose
		log "starting dockerd ${common[*]} $flagset (log: $LOGFILE)"
		# shellcheck disable=SC2086
		if start_dockerd "${common[@]}" $flagset; then
			echo "$flagset" >"$FLAGS_FILE"
			log "dockerd pid $(cat "$PIDFILE") answers after $(secs "$t")s with: ${common[*]} $flagset"
			case "$flagset" in *--iptables=false*)
				warn "dockerd runs without iptables: containers on the default bridge have no NAT, so RUN apt-get in task Dockerfiles cannot reach the mirror" ;;
			esac
			timing start "$(secs "$t")"
			return
		fi
		warn "dockerd did not come up with: ${common[*]} $flagset; last log lines:"
		tail -n 5 "$LOGFILE" | sed 's/^/    /'
	done
	die "no dockerd flag set worked; see $LOGFILE"
}

# ---------------------------------------------------------------------------------------
# 2. base image
# ---------------------------------------------------------------------------------------

# Prints "main_uri security_uri" of the host's Debian entries (deb822 *.sources and
# one-line *.list / sources.list); falls back to deb.debian.org.
host_debian_mirrors() {
	local main="" sec="" f
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		# shellcheck disable=SC2016
		read -r m s < <(awk '
			function flush() {
				if (uris != "" && enabled != "no" && types ~ /(^| )deb( |$)/) {
					n = split(suites, a, " ")
					for (i = 1; i <= n; i++) {
						if (a[i] ~ /-security$/ && sec == "") sec = uris
						else if (a[i] ~ /^[a-z]+$/ && main == "") main = uris
					}
				}
				uris = ""; suites = ""; types = ""; enabled = ""
			}
			/^[[:space:]]*$/ { flush(); next }
			/^#/ { next }
			tolower($1) == "uris:" { uris = $2 }
			tolower($1) == "suites:" { $1 = ""; suites = $0 }
			tolower($1) == "types:" { $1 = ""; types = $0 " " }
			tolower($1) == "enabled:" { enabled = tolower($2) }
			END { flush(); printf "%s %s\n", (main == "" ? "-" : main), (sec == "" ? "-" : sec) }
		' "$f")
		[ -z "$main" ] && [ "$m" != - ] && [[ "$m" == *debian* ]] && main=$m
		[ -z "$sec" ] && [ "$s" != - ] && [[ "$s" == *debian* ]] && sec=$s
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		read -r m s < <(awk '
			$1 != "deb" { next }
			{ i = 2; if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; i++ } uri = $i; suite = $(i + 1) }
			suite ~ /-security$/ && sec == "" { sec = uri; next }
			suite ~ /^[a-z]+$/ && main == "" { main = uri }
			END { printf "%s %s\n", (main == "" ? "-" : main), (sec == "" ? "-" : sec) }
		' "$f")
		[ -z "$main" ] && [ "$m" != - ] && [[ "$m" == *debian* ]] && main=$m
		[ -z "$sec" ] && [ "$s" != - ] && [[ "$s" == *debian* ]] && sec=$s
	done
	main=${OTCURATE_DEBIAN_MIRROR:-${main:-http://deb.debian.org/debian}}
	sec=${OTCURATE_DEBIAN_SECURITY_MIRROR:-${sec:-http://deb.debian.org/debian-security}}
	echo "${main%/} ${sec%/}"
}

# The host's snapshot-style mirror may serve Release files past their Valid-Until: carry
# the host's apt settings for that into the image (else `apt-get update` fails in builds).
host_apt_validity() {
	local vu cd
	vu=$(apt-config dump Acquire::Check-Valid-Until 2>/dev/null | awk -F'"' '/^Acquire::Check-Valid-Until /{print $2}')
	cd=$(apt-config dump Acquire::Check-Date 2>/dev/null | awk -F'"' '/^Acquire::Check-Date /{print $2}')
	echo "${vu:-default} ${cd:-default}"
}

# build_rootfs DIR: everything that ends up in the image (its text is part of the tag hash).
build_rootfs() {
	local root=$1
	debootstrap --variant=minbase --include=ca-certificates --components=main \
		"$SUITE" "$root" "$MIRROR" >"$STATE_DIR/debootstrap.log" 2>&1 ||
		{ tail -n 20 "$STATE_DIR/debootstrap.log"; die "debootstrap failed (log: $STATE_DIR/debootstrap.log)"; }

	rm -f "$root/etc/apt/sources.list"
	cat >"$root/etc/apt/sources.list.d/debian.sources" <<-EOF
		Types: deb
		URIs: $MIRROR
		Suites: $SUITE $SUITE-updates
		Components: main
		Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

		Types: deb
		URIs: $SECURITY_MIRROR
		Suites: $SUITE-security
		Components: main
		Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
	EOF
	{
		echo "// otcurate: same validity checks as the host that built this image"
		[ "$VALID_UNTIL" = default ] || echo "Acquire::Check-Valid-Until \"$VALID_UNTIL\";"
		[ "$CHECK_DATE" = default ] || echo "Acquire::Check-Date \"$CHECK_DATE\";"
	} >"$root/etc/apt/apt.conf.d/99otcurate-mirror"
	# As in the official debian images: no .deb cache, no translations, no service starts.
	cat >"$root/etc/apt/apt.conf.d/docker-clean" <<-'EOF'
		DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
		APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
		Dir::Cache::pkgcache "";
		Dir::Cache::srcpkgcache "";
	EOF
	echo 'Acquire::Languages "none";' >"$root/etc/apt/apt.conf.d/docker-no-languages"
	printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
	chmod 755 "$root/usr/sbin/policy-rc.d"
	# pip may install system-wide (images are throwaway); keep the marker out on upgrades too.
	mkdir -p "$root/etc/dpkg/dpkg.cfg.d"
	echo 'path-exclude=/usr/lib/python3*/EXTERNALLY-MANAGED' >"$root/etc/dpkg/dpkg.cfg.d/otcurate-pip"

	cp -L /etc/resolv.conf "$root/etc/resolv.conf"
	mount -t proc proc "$root/proc"
	chroot "$root" /usr/bin/env -i PATH="$BASE_PATH" HOME=/root LANG=C.UTF-8 \
		DEBIAN_FRONTEND=noninteractive bash -euc '
			apt-get update -qq
			apt-get dist-upgrade -y -qq
			apt-get install -y -qq --no-install-recommends "$@"
			apt-get clean' _ "${BASE_PACKAGES[@]}" >"$STATE_DIR/chroot-apt.log" 2>&1 ||
		{ umount "$root/proc"; tail -n 20 "$STATE_DIR/chroot-apt.log"; die "apt in the rootfs failed (log: $STATE_DIR/chroot-apt.log)"; }
	umount "$root/proc"

	rm -f "$root"/usr/lib/python3*/EXTERNALLY-MANAGED
	rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/* "$root"/var/log/apt/* \
		"$root"/var/log/dpkg.log "$root"/var/log/alternatives.log "$root"/var/log/bootstrap.log \
		"$root"/tmp/* "$root"/var/tmp/* "$root"/root/.cache
	mkdir -p "$root/var/lib/apt/lists/partial"
	# docker provides these per container
	: >"$root/etc/resolv.conf"
	rm -f "$root/etc/hostname"
	[ -f "$root/etc/machine-id" ] && : >"$root/etc/machine-id"
	true
}

# import_rootfs DIR TAG HASH
import_rootfs() {
	local root=$1 tag=$2 hash=$3
	tar --numeric-owner --xattrs --xattrs-include='*' -C "$root" \
		--exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' -cf - . |
		docker import \
			--change 'CMD ["bash"]' \
			--change "ENV PATH=$BASE_PATH" \
			--change 'ENV LANG=C.UTF-8' \
			--change 'ENV PIP_DISABLE_PIP_VERSION_CHECK=1' \
			--change 'ENV PIP_ROOT_USER_ACTION=ignore' \
			--change 'ENV PIP_BREAK_SYSTEM_PACKAGES=1' \
			--change "LABEL otcurate.base.recipe=$hash" \
			--change "LABEL otcurate.base.suite=$SUITE" \
			--message "otcurate base: debootstrap $SUITE minbase + ${BASE_PACKAGES[*]}" \
			- "$tag" >/dev/null
}

recipe() {
	printf 'suite=%s\nvariant=minbase\npackages=%s\nmirror=%s\nsecurity=%s\nvalidity=%s %s\npath=%s\n' \
		"$SUITE" "${BASE_PACKAGES[*]}" "$MIRROR" "$SECURITY_MIRROR" "$VALID_UNTIL" "$CHECK_DATE" "$BASE_PATH"
	declare -f build_rootfs import_rootfs
}

WORKDIR=""
mounts_under() { awk -v d="$1/" 'index($2 "/", d) == 1 { print $2 }' /proc/mounts | sort -r; }
cleanup_workdir() {
	local m
	[ -n "$WORKDIR" ] && [ -d "$WORKDIR" ] || return 0
	# debootstrap or our chroot step may leave /proc, /sys or a /dev bind mounted inside
	# the rootfs after a failure: unmount first, never delete through a mount.
	for m in $(mounts_under "$WORKDIR"); do umount "$m" 2>/dev/null || umount -l "$m" || true; done
	if [ -n "$(mounts_under "$WORKDIR")" ]; then
		warn "mounts remain under $WORKDIR: not deleting it"
		return 0
	fi
	rm -rf --one-file-system "$WORKDIR"
}
trap cleanup_workdir EXIT

ensure_base_image() {
	local hash t
	read -r MIRROR SECURITY_MIRROR < <(host_debian_mirrors)
	read -r VALID_UNTIL CHECK_DATE < <(host_apt_validity)
	hash=$(recipe | sha256sum | cut -c1-12)
	BASE_TAG="$BASE_REPO:$hash"
	log "base recipe $hash: $SUITE minbase from $MIRROR (+ $SECURITY_MIRROR), packages: ${BASE_PACKAGES[*]}"

	if [ "$REBUILD" = 0 ] && docker image inspect "$BASE_TAG" >/dev/null 2>&1; then
		log "base image $BASE_TAG exists: not rebuilding"
	else
		if ! command -v debootstrap >/dev/null 2>&1; then
			t=$(now)
			apt_install debootstrap
			timing install_debootstrap "$(secs "$t")"
		fi
		WORKDIR=$(mktemp -d /var/tmp/otcurate-rootfs.XXXXXX)
		t=$(now)
		log "debootstrap $SUITE (minbase) + apt-get install in $WORKDIR/rootfs (log: $STATE_DIR/debootstrap.log, $STATE_DIR/chroot-apt.log)"
		build_rootfs "$WORKDIR/rootfs"
		timing debootstrap "$(secs "$t")"
		t=$(now)
		log "docker import -> $BASE_TAG"
		import_rootfs "$WORKDIR/rootfs" "$BASE_TAG" "$hash"
		timing import "$(secs "$t")"
		cleanup_workdir
		WORKDIR=""
		t=$(now)
		# pytest is already installed, so this must succeed with no network at all.
		if ! docker run --rm --network none "$BASE_TAG" bash -ec '
			pip install pytest >/tmp/pip.out 2>&1 || { cat /tmp/pip.out; exit 1; }
			tail -n 1 /tmp/pip.out
			python -m pytest --version
			echo "python: $(python3 --version), pip: $(pip --version | cut -d" " -f1-2), $(tmux -V)"
			ps -p 1 >/dev/null'; then
			docker rmi "$BASE_TAG" >/dev/null 2>&1 || true
			die "base image check (offline pip install pytest) failed"
		fi
		log "base image check passed (offline: pip install pytest exits 0)"
		timing check "$(secs "$t")"
	fi
	docker tag "$BASE_TAG" "$BASE_REPO:latest"
	log "base image $BASE_TAG = $BASE_REPO:latest, $(docker image inspect -f '{{.Size}}' "$BASE_TAG" | awk '{printf "%.0f MB", $1 / 1e6}')"
}

# ---------------------------------------------------------------------------------------
# 3. image map
# ---------------------------------------------------------------------------------------

declare -A LOCAL=() NOTE=() # task_image -> local_image / note (filled by apply_image_map)
apply_image_map() {
	local files=("$SCRIPT_DIR/image-map.tsv") f task limg note id cur prev status n=0 warned=0
	local order=()
	if [ -n "${OTCURATE_IMAGE_MAP:-}" ]; then
		IFS=: read -r -a extra <<<"$OTCURATE_IMAGE_MAP"
		files+=("${extra[@]}")
	fi
	for f in "${files[@]}"; do
		[ -r "$f" ] || die "image map $f is not readable"
		log "image map: $f"
		while IFS=$'\x1f' read -r task limg note; do
			[ -n "${LOCAL[$task]+x}" ] || order+=("$task")
			LOCAL[$task]=$limg
			NOTE[$task]=$note
		done < <(awk -F'\t' '
			/^[[:space:]]*(#|$)/ { next }
			$1 == "task_image" { next }
			NF < 2 || $2 == "" { printf "[setup-docker] WARN: %s line %d: need task_image<TAB>local_image[<TAB>note]; ignored\n", FILENAME, NR > "/dev/stderr"; next }
			{ printf "%s\x1f%s\x1f%s\n", $1, $2, $3 }' "$f")
	done
	touch "$APPLIED_MAP"
	# name:tag -> full image id, in one call (a docker call per name costs ~0.1 s)
	declare -A TAGID=()
	local ref
	while read -r ref id; do TAGID[$ref]=$id; done < <(docker images --no-trunc --format '{{.Repository}}:{{.Tag}} {{.ID}}')
	for task in "${order[@]}"; do
		limg=${LOCAL[$task]}
		note=${NOTE[$task]}
		id=${TAGID[$limg]:-}
		if [ -z "$id" ] && ! id=$(docker image inspect -f '{{.Id}}' "$limg" 2>/dev/null); then
			warn "map $task -> $limg: local image missing; skipped"
			continue
		fi
		cur=${TAGID[$task]:-}
		[[ "$task" == *:* ]] || cur=${TAGID[$task:latest]:-}
		prev=$(awk -F'\t' -v t="$task" '$1 == t { id = $2 } END { print id }' "$APPLIED_MAP")
		if [ "$cur" = "$id" ]; then
			status="already tagged"
		elif [ -n "$cur" ] && [ "$cur" != "$prev" ] &&
			[ -z "$(docker image inspect -f '{{index .Config.Labels "otcurate.base.recipe"}}' "$cur" 2>/dev/null)" ]; then
			warn "map $task: an image not created by this script already has that name ($cur): kept it"
			continue
		else
			docker tag "$id" "$task"
			status="tagged"
		fi
		{ awk -F'\t' -v t="$task" '$1 != t' "$APPLIED_MAP"; printf '%s\t%s\n' "$task" "$id"; } >"$APPLIED_MAP.tmp"
		mv "$APPLIED_MAP.tmp" "$APPLIED_MAP"
		n=$((n + 1))
		log "map $task -> $limg ($status)"
		if [ -n "$note" ]; then
			warn "  $task: $note"
			warned=$((warned + 1))
		fi
	done
	log "image map: $n names point at local images ($warned with a warning)"
}

# ---------------------------------------------------------------------------------------
# 4. --verify
# ---------------------------------------------------------------------------------------

VERIFY_ROWS=()
verify_build() { # name context_dir expect(ok|fail)
	local name=$1 dir=$2 expect=$3 t rc=0 out res
	t=$(now)
	# Classic builder (what the Engine API's ImageBuild uses by default); no --pull, so FROM
	# resolves to the mapped local images. --force-rm: a failed RUN leaves no container.
	out=$(DOCKER_BUILDKIT=0 docker build -q --force-rm -t "otcurate-verify/$name:test" "$dir" 2>&1) || rc=$?
	if [ "$rc" = 0 ]; then res=ok; else res=FAIL; fi
	if { [ "$res" = ok ] && [ "$expect" = ok ]; } || { [ "$res" = FAIL ] && [ "$expect" = fail ]; }; then
		VERIFY_ROWS+=("$(printf '%-22s %-5s (expected %-4s) %6ss' "$name" "$res" "$expect" "$(secs "$t")")")
	else
		VERIFY_ROWS+=("$(printf '%-22s %-5s (expected %-4s) %6ss  <-- UNEXPECTED' "$name" "$res" "$expect" "$(secs "$t")")")
		VERIFY_BAD=$((VERIFY_BAD + 1))
	fi
	if [ "$rc" != 0 ]; then
		VERIFY_ROWS+=("    $(printf '%s\n' "$out" | sed 's/\x1b\[[0-9;]*m//g' | grep -v -e '^DEPRECATED' -e '^ *Install the buildx' -e '^ *BuildKit is currently' -e '^ *https://docs.docker' -e '^ *$' -e '^Removing intermediate' | tail -n 2 | tr '\n' ' ')")
	fi
}

verify_setup() {
	local fixtures=${OTCURATE_FIXTURES:-/work/shared/fixtures/harbor-examples} d name from expect tmp t cid
	VERIFY_BAD=0
	log "verify: default bridge -> Debian mirror (apt-get update in a container)"
	t=$(now)
	if docker run --rm "$BASE_REPO:latest" bash -c 'apt-get update -qq' >/dev/null 2>&1; then
		VERIFY_ROWS+=("$(printf '%-22s %-5s %26ss' bridge-apt-update ok "$(secs "$t")")")
	else
		VERIFY_ROWS+=("$(printf '%-22s %-5s %26ss  <-- containers cannot reach the mirror' bridge-apt-update FAIL "$(secs "$t")")")
		VERIFY_BAD=$((VERIFY_BAD + 1))
	fi
	if [ -d "$fixtures" ]; then
		for d in "$fixtures"/*/environment; do
			[ -f "$d/Dockerfile" ] || continue
			name=$(basename "$(dirname "$d")")
			from=$(awk 'toupper($1) == "FROM" { print $2; exit }' "$d/Dockerfile")
			expect=ok
			[[ "${NOTE[$from]:-}" == *unbuildable-offline* ]] && expect=fail
			log "verify: build fixture $name (FROM $from, expect $expect)"
			verify_build "$name" "$d" "$expect"
		done
	else
		warn "verify: fixtures dir $fixtures not found; skipping fixture builds"
	fi
	tmp=$(mktemp -d)
	mkdir -p "$tmp/pip-offline" "$tmp/ubuntu-apt"
	printf 'FROM python:3.11-slim\nRUN pip install --no-cache-dir pytest\nRUN python -m pytest --version\n' >"$tmp/pip-offline/Dockerfile"
	printf 'FROM ubuntu:24.04\nRUN apt-get update && apt-get install -y --no-install-recommends python3 python3-pytest && rm -rf /var/lib/apt/lists/*\nRUN python3 -m pytest --version\n' >"$tmp/ubuntu-apt/Dockerfile"
	log "verify: build probe pip-offline (FROM python:3.11-slim + pip install pytest)"
	verify_build pip-offline "$tmp/pip-offline" ok
	log "verify: build probe ubuntu-apt (FROM ubuntu:24.04 + apt-get install python3-pytest)"
	verify_build ubuntu-apt "$tmp/ubuntu-apt" ok
	rm -rf "$tmp"

	if docker image inspect otcurate-verify/hello-healthcheck:test >/dev/null 2>&1; then
		log "verify: run hello-healthcheck and poll its healthcheck command"
		t=$(now)
		cid=$(docker run -d otcurate-verify/hello-healthcheck:test)
		local okhc=FAIL
		for _ in $(seq 1 20); do
			if docker exec "$cid" curl -sf http://localhost:8080/ >/dev/null 2>&1; then okhc=ok; break; fi
			sleep 1
		done
		docker rm -f "$cid" >/dev/null
		VERIFY_ROWS+=("$(printf '%-22s %-5s %26ss' healthcheck-run "$okhc" "$(secs "$t")")")
		[ "$okhc" = ok ] || VERIFY_BAD=$((VERIFY_BAD + 1))
	fi
	docker images --format '{{.Repository}}:{{.Tag}}' | grep '^otcurate-verify/' | xargs -r docker rmi >/dev/null 2>&1 || true

	log "verify results:"
	printf '    %s\n' "${VERIFY_ROWS[@]}"
	if [ "$VERIFY_BAD" != 0 ]; then
		die "verify: $VERIFY_BAD unexpected result(s)"
	fi
	log "verify: all results as expected"
}

# ---------------------------------------------------------------------------------------

ensure_dockerd
log "engine: $(docker info --format 'server {{.ServerVersion}}, storage {{.Driver}}, cgroup {{.CgroupDriver}} v{{.CgroupVersion}}, init {{.InitBinary}}' 2>/dev/null)"
ensure_base_image
t=$(now)
apply_image_map
timing map "$(secs "$t")"
if [ "$VERIFY" = 1 ]; then
	t=$(now)
	verify_setup
	timing verify "$(secs "$t")"
fi
timing total "$(secs "$T_ALL")"
log "timings: ${TIMINGS[*]}"
if pid=$(our_dockerd_pid); then
	log "dockerd pid $pid was started by this script; stop it with scripts/stop-docker.sh"
fi

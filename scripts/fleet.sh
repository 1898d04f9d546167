#!/usr/bin/env bash
# Extra Docker engines on this machine, for the fleet backend's tests and
# benchmark (issue 7): each has its own socket, data root, exec root and pid
# file, its own bridge (otc-brN, 10.23N.0.1/24; build steps attach to it)
# and no iptables rules (no NAT: RUN steps on these engines reach no
# network; sandboxes run with none anyway), and a copy of the base images of
# the main engine (docker save | load).
#
#   scripts/fleet.sh up N     start engines 1..N (idempotent); prints the
#                             --sandbox list of the main engine + them
#   scripts/fleet.sh hosts N  print that list
#   scripts/fleet.sh ssh      start an sshd on 127.0.0.1:2222 in front of the
#                             main engine (what an ssh:// engine needs: sshd
#                             and the docker CLI); prints, for eval, the
#                             engine URL and the OTCURATE_SSH_FLAGS that
#                             reach it
#   scripts/fleet.sh down     stop every engine (and the sshd) this script started
#
# The main engine must answer (make setup).
set -euo pipefail

ROOT=/var/lib/otcurate/fleet
RUN=/run/otcurate-fleet
IMAGES=(debian:bookworm otcurate/base-bookworm:latest)

log() { printf '[fleet] %s\n' "$*" >&2; }

sock() { echo "$RUN/engine$1.sock"; }

answers() { docker -H "unix://$(sock "$1")" version --format '{{.Server.Version}}' >/dev/null 2>&1; }

# live_dockerd PID: PID is a running (not zombie) dockerd.
live_dockerd() {
	local stat
	[ -n "$1" ] && [ "$(cat "/proc/$1/comm" 2>/dev/null)" = dockerd ] || return 1
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	stat=${stat##*) }
	[ "${stat%% *}" != Z ]
}

hosts() {
	local list="unix:///var/run/docker.sock" i
	for ((i = 1; i <= $1; i++)); do list+=",unix://$(sock "$i")"; done
	echo "$list"
}

up() {
	local n=$1 i t0 flags img missing
	mkdir -p "$ROOT" "$RUN"
	flags=$(cat /var/lib/otcurate/dockerd.flags 2>/dev/null || echo "--storage-driver=overlay2")
	for ((i = 1; i <= n; i++)); do
		if answers "$i"; then continue; fi
		mkdir -p "$ROOT/engine$i" "$RUN/exec$i"
		if ! ip link show "otc-br$i" >/dev/null 2>&1; then
			ip link add "otc-br$i" type bridge
			ip addr add "10.23$i.0.1/24" dev "otc-br$i"
			ip link set "otc-br$i" up
		fi
		# A pid file left by an engine that was killed (the fleet tests
		# SIGKILL one) stops dockerd from starting while its pid looks
		# alive, which a zombie nobody reaped does. Remove it unless the
		# pid is a running dockerd.
		if [ -f "$RUN/engine$i.pid" ] && ! live_dockerd "$(cat "$RUN/engine$i.pid")"; then
			log "engine $i: removing the stale pid file of a dead engine"
			rm -f "$RUN/engine$i.pid"
		fi
		log "starting engine $i ($(sock "$i"))"
		# shellcheck disable=SC2086 # flags is a word list
		setsid nohup dockerd --host "unix://$(sock "$i")" --data-root "$ROOT/engine$i" --exec-root "$RUN/exec$i" \
			--pidfile "$RUN/engine$i.pid" --bridge "otc-br$i" --iptables=false --ip-masq=false \
			--exec-opt native.cgroupdriver=cgroupfs $flags >>"/var/log/otcurate-fleet-engine$i.log" 2>&1 </dev/null &
	done
	for ((i = 1; i <= n; i++)); do
		t0=$SECONDS
		until answers "$i"; do
			if ((SECONDS - t0 > 60)); then
				log "engine $i does not answer; see /var/log/otcurate-fleet-engine$i.log"
				exit 1
			fi
			sleep 0.2
		done
		missing=()
		for img in "${IMAGES[@]}"; do
			docker -H "unix://$(sock "$i")" image inspect "$img" >/dev/null 2>&1 || missing+=("$img")
		done
		if ((${#missing[@]})); then
			log "engine $i: loading ${missing[*]}"
			docker save "${missing[@]}" | docker -H "unix://$(sock "$i")" load -q >/dev/null
		fi
	done
	hosts "$n"
}

SSH_PORT=2222

ssh_up() {
	local dir=$ROOT/ssh
	if ! [ -x /usr/sbin/sshd ]; then
		log "installing openssh-server"
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d # no init system: do not start the service
		chmod +x /usr/sbin/policy-rc.d
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends openssh-server >/dev/null ||
			{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends openssh-server >/dev/null; }
		rm -f /usr/sbin/policy-rc.d
	fi
	mkdir -p "$dir" /run/sshd
	[ -f "$dir/host_key" ] || ssh-keygen -q -t ed25519 -N '' -f "$dir/host_key"
	[ -f "$dir/client_key" ] || ssh-keygen -q -t ed25519 -N '' -f "$dir/client_key"
	cp "$dir/client_key.pub" "$dir/authorized_keys"
	if ! { [ -f "$RUN/sshd.pid" ] && kill -0 "$(cat "$RUN/sshd.pid")" 2>/dev/null; }; then
		/usr/sbin/sshd -f /dev/null -h "$dir/host_key" -o ListenAddress=127.0.0.1 -o Port=$SSH_PORT \
			-o PidFile="$RUN/sshd.pid" -o AuthorizedKeysFile="$dir/authorized_keys" -o PermitRootLogin=prohibit-password \
			-o PasswordAuthentication=no -o StrictModes=no -o UsePAM=no -o MaxStartups=100 -o MaxSessions=100 \
			-E /var/log/otcurate-fleet-sshd.log
	fi
	local flags="-i $dir/client_key -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"
	for _ in $(seq 50); do
		# shellcheck disable=SC2086 # flags is a word list
		ssh -o BatchMode=yes $flags -p $SSH_PORT root@127.0.0.1 true 2>/dev/null && break
		sleep 0.2
	done
	printf 'export OTCURATE_SSH_ENGINE=%q\n' "ssh://root@127.0.0.1:$SSH_PORT"
	printf 'export OTCURATE_SSH_FLAGS=%q\n' "$flags"
}

down() {
	local p pid
	if [ -f "$RUN/sshd.pid" ]; then
		kill "$(cat "$RUN/sshd.pid")" 2>/dev/null || true
		rm -f "$RUN/sshd.pid"
	fi
	for p in "$RUN"/engine*.pid; do
		[ -f "$p" ] || continue
		pid=$(cat "$p")
		if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = dockerd ]; then
			log "stopping engine pid $pid"
			kill "$pid" 2>/dev/null || true
			for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
		fi
		rm -f "$p"
	done
	for p in /sys/class/net/otc-br*; do
		[ -e "$p" ] && ip link del "$(basename "$p")" 2>/dev/null || true
	done
}

case "${1:-}" in
up) up "${2:?N}" ;;
hosts) hosts "${2:?N}" ;;
ssh) ssh_up ;;
down) down ;;
*)
	echo "usage: $0 up N | hosts N | ssh | down" >&2
	exit 2
	;;
esac

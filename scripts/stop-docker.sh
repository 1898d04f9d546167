#!/usr/bin/env bash
# stop-docker.sh — stop the dockerd that scripts/setup-docker.sh started, and only that one
# (found by its pid file /run/otcurate-dockerd.pid). A dockerd started any other way (a
# service, by hand) is left alone. Idempotent. Images stay in /var/lib/docker.
#
# dockerd gets SIGTERM: it stops running containers (their own stop timeouts apply) and the
# containerd it manages, then exits. After 60 s it gets SIGKILL, and then its managed
# containerd (pid in /var/run/docker/containerd/containerd.pid, a child of that dockerd) is
# stopped too.
set -euo pipefail

PIDFILE=/run/otcurate-dockerd.pid
log() { printf '[stop-docker] %s\n' "$*"; }

[ "$(id -u)" = 0 ] || { log "must run as root"; exit 1; }
if [ ! -f "$PIDFILE" ]; then
	log "no $PIDFILE: no dockerd started by setup-docker.sh; nothing to stop"
	exit 0
fi
pid=$(cat "$PIDFILE")
if [ -z "$pid" ] || [ "$(cat "/proc/$pid/comm" 2>/dev/null)" != dockerd ]; then
	log "pid ${pid:-?} from $PIDFILE is not a running dockerd: removing the stale pid file"
	rm -f "$PIDFILE"
	exit 0
fi

ctrd_pidfile=/var/run/docker/containerd/containerd.pid
ctrd=""
if [ -f "$ctrd_pidfile" ]; then
	ctrd=$(cat "$ctrd_pidfile")
	# only a containerd whose parent is our dockerd
	[ "$(awk '/^PPid:/ { print $2 }' "/proc/$ctrd/status" 2>/dev/null)" = "$pid" ] || ctrd=""
fi

log "stopping dockerd pid $pid (SIGTERM)"
kill -TERM "$pid"
for _ in $(seq 1 120); do
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.5
done
if kill -0 "$pid" 2>/dev/null; then
	log "dockerd pid $pid still running after 60 s: SIGKILL"
	kill -KILL "$pid" 2>/dev/null || true
	sleep 1
	if [ -n "$ctrd" ] && [ "$(cat "/proc/$ctrd/comm" 2>/dev/null)" = containerd ]; then
		log "stopping its containerd pid $ctrd"
		kill -TERM "$ctrd" 2>/dev/null || true
	fi
fi
rm -f "$PIDFILE"
log "stopped"

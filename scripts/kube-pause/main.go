// Command kube-pause is the pause container of the test cluster
// (scripts/kube.sh): it holds a pod's namespaces, reaps the zombies of the
// pod's processes (sandboxes share its PID namespace, so it is their PID
// 1) and exits on SIGTERM or SIGINT. No registry is reachable here, so the
// cluster cannot pull registry.k8s.io/pause.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for sig := range sigs {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		for { // reap every child that has exited
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}

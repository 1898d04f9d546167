package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

func TestOwnerAlive(t *testing.T) {
	host, _ := os.Hostname()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := cmd.Process.Pid // exited and reaped
	cases := map[string]bool{
		ownerID():                                true,
		fmt.Sprintf("%s:%d", host, dead):         false,
		"some-other-host:1":                      true,
		"":                                       false,
		host + ":not-a-pid":                      false,
		fmt.Sprintf("%s:%d", host, os.Getppid()): true,
	}
	for owner, want := range cases {
		if got := ownerAlive(owner); got != want {
			t.Errorf("ownerAlive(%q) = %v, want %v", owner, got, want)
		}
	}
}

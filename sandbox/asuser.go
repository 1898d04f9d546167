package sandbox

import (
	"strconv"
	"strings"
)

// AsUserArgv is the command prefix that runs the rest of an argv as user
// on a backend whose API cannot (Kubernetes exec, a hosted toolbox): like
// the Docker engine's exec, it switches uid, gid and groups and sets HOME,
// keeping the rest of the environment (the image's PATH and ENV). It
// execs in place (setpriv, from util-linux), so signals reach the command
// itself: su and runuser fork and wait, and a Ctrl-C on a terminal would
// end them with the shell. "", "root", "0" and "0:…" need no prefix.
func AsUserArgv(user string) []string {
	if user == "" || user == "root" || user == "0" || strings.HasPrefix(user, "0:") {
		return nil
	}
	uid, gid, _ := strings.Cut(user, ":")
	if _, err := strconv.Atoi(uid); err == nil {
		if gid == "" {
			gid = uid
		}
		return []string{"setpriv", "--reuid", uid, "--regid", gid, "--clear-groups"}
	}
	return []string{"sh", "-c", `u=$1; shift; exec setpriv --reuid "$u" --regid "$(id -g "$u")" --init-groups env HOME="$(getent passwd "$u" | cut -d: -f6)" "$@"`, "sh", user}
}

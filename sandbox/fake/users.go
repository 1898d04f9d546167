package fake

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// errNoUser marks a user or group the sandbox's /etc/passwd or /etc/group
// does not define.
var errNoUser = errors.New("no matching entries")

// execUser is a resolved user: ids, supplementary groups and home.
type execUser struct {
	uid, gid int
	groups   []int
	home     string
}

// lookupUser resolves spec ("", "name", "uid", "name:group", "uid:gid")
// against the files of the container, as the Docker engine does: a
// numeric uid need not exist (its gid is then 0 and its home /), a name
// must; supplementary groups are those listing the user in /etc/group.
func lookupUser(c *container, spec string) (execUser, error) {
	if spec == "" {
		spec = "root"
	}
	name, group, hasGroup := strings.Cut(spec, ":")
	passwd, err := readFileIn(c, "/etc/passwd", 4<<20)
	if err != nil && !errors.Is(err, errNotFoundIn) {
		return execUser{}, err
	}
	u := execUser{home: "/"}
	found := false
	uid, numeric := atoi(name)
	for _, f := range colonRecords(passwd, 7) {
		pu, ok1 := atoi(f[2])
		pg, ok2 := atoi(f[3])
		if !ok1 || !ok2 {
			continue
		}
		if f[0] == name || (numeric && pu == uid) {
			u = execUser{uid: pu, gid: pg, home: f[5]}
			name, found = f[0], true
			break
		}
	}
	if !found {
		if !numeric {
			return execUser{}, fmt.Errorf("unable to find user %s: %w in passwd file", name, errNoUser)
		}
		u.uid = uid
		name = ""
	}
	groupFile, err := readFileIn(c, "/etc/group", 4<<20)
	if err != nil && !errors.Is(err, errNotFoundIn) {
		return execUser{}, err
	}
	groups := colonRecords(groupFile, 4)
	if hasGroup {
		gid, ok := atoi(group)
		if !ok {
			gid = -1
			for _, f := range groups {
				if g, ok := atoi(f[2]); ok && f[0] == group {
					gid = g
					break
				}
			}
			if gid < 0 {
				return execUser{}, fmt.Errorf("unable to find group %s: %w in group file", group, errNoUser)
			}
		}
		u.gid = gid
		return u, nil // an explicit group: no supplementary groups, as with docker exec -u u:g
	}
	if name != "" {
		for _, f := range groups {
			g, ok := atoi(f[2])
			if !ok || g == u.gid {
				continue
			}
			for _, m := range strings.Split(f[3], ",") {
				if m == name {
					u.groups = append(u.groups, g)
				}
			}
		}
	}
	return u, nil
}

func atoi(s string) (int, bool) {
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= 0
}

// colonRecords splits a passwd-style file into records of at least n
// fields, skipping comments and short lines.
func colonRecords(data []byte, n int) [][]string {
	var out [][]string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, ":")
		if len(f) >= n {
			out = append(out, f)
		}
	}
	return out
}

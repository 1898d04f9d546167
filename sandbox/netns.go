package sandbox

import (
	"errors"
	"os"
	"strconv"
	"strings"
)

// NetNamespaceAttempts reads, from this host, the network attempts that
// cannot have worked offline in the network namespace of process pid:
// packets with no route (IPv4 and IPv6 OutNoRoutes: a connection, or a
// query to a configured nameserver) and UDP datagrams to a closed local
// port (NoPorts: a name lookup with an empty resolv.conf goes to a
// resolver on 127.0.0.1 that is not there). Backends whose sandboxes are
// processes of this host (Docker's direct mode, the fake) implement
// Sandbox.NetAttempts with it; nothing in the sandbox is run or trusted.
func NetNamespaceAttempts(pid int) (uint64, error) {
	proc := "/proc/" + strconv.Itoa(pid) + "/net/"
	v4, err := os.ReadFile(proc + "snmp")
	if err != nil {
		return 0, err
	}
	routes, ok := snmpField(string(v4), "Ip:", "OutNoRoutes")
	ports, ok2 := snmpField(string(v4), "Udp:", "NoPorts")
	if !ok || !ok2 {
		return 0, errors.New("no Ip OutNoRoutes or Udp NoPorts counter")
	}
	n := routes + ports
	if v6, err := os.ReadFile(proc + "snmp6"); err == nil {
		for _, line := range strings.Split(string(v6), "\n") {
			if f := strings.Fields(line); len(f) == 2 && (f[0] == "Ip6OutNoRoutes" || f[0] == "Udp6NoPorts") {
				if m, err := strconv.ParseUint(f[1], 10, 64); err == nil {
					n += m
				}
			}
		}
	}
	return n, nil
}

// snmpField reads one counter of /proc/net/snmp: a header line and a value
// line share the prefix.
func snmpField(text, prefix, name string) (uint64, bool) {
	var header []string
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		f := strings.Fields(line)
		if header == nil {
			header = f
			continue
		}
		for i, h := range header {
			if h == name && i < len(f) {
				v, err := strconv.ParseUint(f[i], 10, 64)
				return v, err == nil
			}
		}
		return 0, false
	}
	return 0, false
}

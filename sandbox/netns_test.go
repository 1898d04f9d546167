package sandbox

import "testing"

// TestSnmpField reads counters by header name, not position.
func TestSnmpField(t *testing.T) {
	const snmp = "Ip: Forwarding DefaultTTL OutNoRoutes\nIp: 1 64 7\nUdp: InDatagrams NoPorts\nUdp: 3 4\n"
	for _, tc := range []struct {
		prefix, name string
		want         uint64
		ok           bool
	}{
		{"Ip:", "OutNoRoutes", 7, true},
		{"Udp:", "NoPorts", 4, true},
		{"Udp:", "OutNoRoutes", 0, false},
		{"Tcp:", "NoPorts", 0, false},
	} {
		if got, ok := snmpField(snmp, tc.prefix, tc.name); got != tc.want || ok != tc.ok {
			t.Errorf("snmpField(%s %s) = %d, %v; want %d, %v", tc.prefix, tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

package daemon

import (
	"bytes"
	"net"
	"slices"
	"strings"
	"testing"
)

// devMcast is /proc/net/dev_mcast as a 6.x kernel writes it: lo has no groups, eth0 and
// a TAP have the all-nodes, all-hosts and solicited-node groups, one twice (two users).
const devMcast = `1    lo              1     0     01005e000001
2    eth0            1     0     333300000001
2    eth0            1     0     01005e000001
7    uiodk0          1     0     3333ff123456
7    uiodk0          2     0     01005e000001
7    uiodk0          1     0     333300000001
7    uiodk0          1     0     01005e000001
7    uiodk0          1     0     0200007f0001
9    ib0             1     0     00ffffffff12401bffff0000000000000000ffff
`

func TestParseDevMcast(t *testing.T) {
	got, err := parseDevMcast([]byte(devMcast))
	if err != nil {
		t.Fatal(err)
	}
	var s []string
	for _, a := range got[7] {
		s = append(s, a.String())
	}
	// Sorted, each once; the unicast entry and the InfiniBand address left out.
	want := []string{"01:00:5e:00:00:01", "33:33:00:00:00:01", "33:33:ff:12:34:56"}
	if !slices.Equal(s, want) {
		t.Errorf("uiodk0's groups %v, want %v", s, want)
	}
	if len(got[2]) != 2 || len(got[1]) != 1 || got[9] != nil {
		t.Errorf("groups by index %v", got)
	}
	for _, c := range []struct{ in, msg string }{
		{"7 uiodk0 1 0\n", "want 5 fields"},
		{"x uiodk0 1 0 01005e000001\n", `interface index "x"`},
		{"7 uiodk0 1 0 01005e00000g\n", `address "01005e00000g"`},
		{"0 uiodk0 1 0 01005e000001\n", `interface index "0"`},
	} {
		if _, err := parseDevMcast([]byte(c.in)); err == nil || !strings.Contains(err.Error(), c.msg) || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("parseDevMcast(%q) = %v, want an error naming line 1 and %s", c.in, err, c.msg)
		}
	}
}

// FuzzParseDevMcast: whatever the file holds, the parser returns an error or, per
// interface, sorted distinct 6-byte multicast addresses, each on a line of the input.
func FuzzParseDevMcast(f *testing.F) {
	f.Add([]byte(devMcast))
	f.Add([]byte("7 a 1 0 3333ff123456\n7 a 1 0 3333ff123456"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := parseDevMcast(data)
		if err != nil {
			return
		}
		for idx, g := range got {
			if idx <= 0 {
				t.Fatalf("index %d", idx)
			}
			for i, a := range g {
				if len(a) != 6 || a[0]&1 == 0 {
					t.Fatalf("index %d: %v is no Ethernet multicast address", idx, a)
				}
				if i > 0 && bytes.Compare(g[i-1], a) >= 0 {
					t.Fatalf("index %d: %v not sorted and distinct", idx, g)
				}
				if !bytes.Contains(bytes.ToLower(data), []byte(strings.ReplaceAll(net.HardwareAddr(a).String(), ":", ""))) {
					t.Fatalf("index %d: %v is not in the input", idx, a)
				}
			}
		}
	})
}

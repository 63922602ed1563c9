package config

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/uiod/uiod/internal/testutil"
)

// FuzzLoad feeds arbitrary documents to the loader. It must never panic; every error is
// a *ParseError or a *ValidationError whose entries name a path and say something; and a
// configuration it accepts validates again and has a valid address on every port.
func FuzzLoad(f *testing.F) {
	f.Add(Example())
	f.Add(simPorts)
	f.Add(port0("rx_ring", "100", "itr", "5", "rx_rnig", "1") + "poll: {cpus: [0, 9], mode: sleep}")
	f.Add("ports: [1, {name: a}, [x]]\npoll: 5\nforward: {pairs: [[a], b, [1, 2, 3]]}")
	f.Add("a: [")
	f.Add("")
	f.Add("ports:\n  - {name: a, driver: sim, wire: 'unixpair:/a,/b', pci: ffff:00:00.0}\n  - {name: b, driver: sim, wire: 'pair:x'}\n")
	f.Add("poll: {idle_threshold: auto, wait_timeout: 1e3, housekeeping: {hz: 1e20}}\nports: {}")
	f.Add("? [a, b]\n: c\n1: 2\n")
	f.Add(nested(MaxDepth+1, false))
	f.Add(laughs(4, 3))
	f.Add(simPorts + "---\n")
	f.Add("a: &a {<<: *a}\n")
	f.Add("x: &x {a: 1}\ny: &y {<<: [*x, *x]}\nz: {<<: [*y, *y]}\n? &k a\n: 1\n*k : 2\n")
	f.Add("ports:\n  - &p {name: a, driver: sim, wire: 'pair:a'}\n  - {<<: [*p, {rx_ring: 64}], name: b, Name: c}\nPorts: 1\n")
	if files, _ := filepath.Glob("../examples/*.yaml"); len(files) > 0 {
		for _, file := range files {
			if b, err := os.ReadFile(file); err == nil {
				f.Add(string(b))
			}
		}
	}
	noEnv := func(string) (string, bool) { return "", false }
	f.Fuzz(func(t *testing.T, doc string) {
		l := Loader{Host: &testHost, LookupEnv: noEnv}
		c, err := l.Read(strings.NewReader(doc))
		if err != nil {
			if c != nil {
				t.Fatal("Read returned a config with an error")
			}
			var ve *ValidationError
			var pe *ParseError
			switch {
			case errors.As(err, &pe):
			case errors.As(err, &ve):
				if len(ve.Errors) == 0 {
					t.Fatal("empty ValidationError")
				}
				for _, fe := range ve.Errors {
					if fe.Path == "" || fe.Msg == "" {
						t.Fatalf("field error without path or message: %#v", fe)
					}
				}
			default:
				t.Fatalf("error %v is %T, want *ParseError or *ValidationError", err, err)
			}
			return
		}
		if err := c.ValidateOn(testHost); err != nil {
			t.Fatalf("accepted config does not validate: %v", err)
		}
		for i := range c.Ports {
			if _, err := ParseWire(c.Ports[i].Wire.String()); err != nil {
				t.Fatalf("ports[%d] wire %q: %v", i, c.Ports[i].Wire, err)
			}
			if c.Ports[i].Driver != DriverVhostUser && c.Ports[i].Addr().String() == "0000:00:00.0" && c.Ports[i].PCI != "0000:00:00.0" && c.Ports[i].PCI != "00:00.0" {
				t.Fatalf("ports[%d] has no valid address: %q", i, c.Ports[i].PCI)
			}
		}
	})
}

// FuzzParseWire checks that a wire ParseWire accepts formats back to the same wire.
func FuzzParseWire(f *testing.F) {
	seeds := []string{"pair:gen0", "unix:/tmp/x,/y", "unixpair:/a,/b", "tap:tap0", "afpacket:..", "unixpair:a,b,c", ""}
	testutil.FuzzRoundTrip(f, seeds, ParseWire, Wire.String, nil)
}

// FuzzParseCPUList checks that accepted lists hold only CPUs in [0, maxCPU] and that
// the list format of a sorted, unique result parses back to it.
func FuzzParseCPUList(f *testing.F) {
	seeds := []string{"0-3,6", "", "1,1", "3-1", "0-8191", " 2 , 4-5"}
	testutil.FuzzParser(f, seeds, ParseCPUList, func(t *testing.T, s string, cpus []int) {
		for _, c := range cpus {
			if c < 0 || c > maxCPU {
				t.Fatalf("ParseCPUList(%q) gave CPU %d", s, c)
			}
		}
		set := map[int]bool{}
		for _, c := range cpus {
			set[c] = true
		}
		var h Host
		for c := 0; c <= maxCPU; c++ {
			if set[c] {
				h.CPUs = append(h.CPUs, c)
			}
		}
		if len(h.CPUs) == 0 {
			return
		}
		back, err := ParseCPUList(h.cpuList())
		if err != nil || !slices.Equal(back, h.CPUs) {
			t.Fatalf("cpuList %q of %q parses to %v, %v", h.cpuList(), s, back, err)
		}
	})
}

// FuzzCheckListen checks that metrics.listen validation never panics, never accepts a
// host that is not an IP literal, localhost or empty, and that what it calls loopback is.
func FuzzCheckListen(f *testing.F) {
	seeds := []string{"127.0.0.1:9477", "localhost:1", ":80", "[::1]:0", "[fe80::1%eth0]:9", "example.com:80", "0.0.0.0:65536", "[::ffff:127.0.0.1]:5", "1.2.3.4"}
	testutil.FuzzParser(f, seeds, checkListen, func(t *testing.T, s string, loopback bool) {
		host, _, _ := net.SplitHostPort(s)
		ip, perr := netip.ParseAddr(host)
		switch {
		case host == "":
			if loopback {
				t.Fatalf("%q: every address called loopback", s)
			}
		case strings.EqualFold(host, "localhost"):
		case perr != nil:
			t.Fatalf("%q: host %q accepted", s, host)
		case loopback != ip.Unmap().IsLoopback():
			t.Fatalf("%q: loopback %v", s, loopback)
		}
	})
}

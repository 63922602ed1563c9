package dpdk

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// Outputs of the guest's listings with the igb NICs bound to vfio-pci (trimmed).
const (
	boundDevbind = `
Network devices using DPDK-compatible driver
============================================
0000:01:00.0 '82576 Gigabit Network Connection 10c9' drv=vfio-pci unused=uio_pci_generic
0000:02:00.0 '82576 Gigabit Network Connection 10c9' drv=vfio-pci unused=uio_pci_generic

Network devices using kernel driver
===================================
0000:04:00.0 'Ethernet Controller X710 for 10GbE SFP+ 1572' if=eth2,eth3 drv=i40e unused=vfio-pci *Active*

Other Network devices
=====================
0000:03:00.0 'Virtio 1.0 network device 1041' unused=vfio-pci,uio_pci_generic

No 'Baseband' devices detected
==============================

Misc (rawdev) devices using kernel driver
=========================================
0000:00:02.0 'Virtio 1.0 block device 1042' drv=virtio-pci unused=
`
	boundLspci = "Slot:\t0000:00:02.0\nClass:\tSCSI storage controller [0100]\nVendor:\tRed Hat, Inc. [1af4]\nDevice:\tVirtio 1.0 block device [1042]\nDriver:\tvirtio-pci\n\n" +
		"Slot:\t0000:01:00.0\nClass:\tEthernet controller [0200]\nVendor:\tIntel Corporation [8086]\nDevice:\t82576 Gigabit Network Connection [10c9]\nSVendor:\tRed Hat, Inc. [1af4]\nRev:\t01\nDriver:\tvfio-pci\n\n" +
		"Slot:\t0000:02:00.0\nClass:\tEthernet controller [0200]\nVendor:\tIntel Corporation [8086]\nDevice:\t82576 Gigabit Network Connection [10c9]\nDriver:\tvfio-pci\n\n" +
		"Slot:\t0000:03:00.0\nClass:\tEthernet controller [0200]\nVendor:\tRed Hat, Inc. [1af4]\nDevice:\tVirtio 1.0 network device [1041]\n\n" +
		"Slot:\t0000:04:00.0\nClass:\tEthernet controller [0200]\nVendor:\tIntel Corporation [8086]\nDevice:\tEthernet Controller X710 for 10GbE SFP+ [1572]\nDriver:\ti40e\n"
	boundUIOD = `[
  {"address": "0000:01:00.0", "vendor_id": "8086", "device_id": "10c9", "driver": "vfio-pci", "interfaces": null, "nic": "igb"},
  {"address": "0000:02:00.0", "vendor_id": "8086", "device_id": "10c9", "driver": "vfio-pci", "interfaces": [], "nic": "igb"},
  {"address": "0000:03:00.0", "vendor_id": "1af4", "device_id": "1041", "driver": "", "interfaces": null, "nic": "virtio"},
  {"address": "0000:04:00.0", "vendor_id": "8086", "device_id": "1572", "driver": "i40e", "interfaces": ["eth2", "eth3"], "nic": ""}
]`
)

// boundWant is what both listings above say.
var boundWant = map[string]binding{
	"0000:01:00.0": {id: "8086:10c9", driver: "vfio-pci"},
	"0000:02:00.0": {id: "8086:10c9", driver: "vfio-pci"},
	"0000:03:00.0": {id: "1af4:1041"},
	"0000:04:00.0": {id: "8086:1572", driver: "i40e", interfaces: "eth2,eth3"},
}

func TestListingBindings(t *testing.T) {
	u, err := parseUIODJSON(boundUIOD)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(u, boundWant) {
		t.Errorf("parseUIODJSON = %v, want %v", u, boundWant)
	}
	d, err := devbindBindings(boundDevbind, boundLspci)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(d, boundWant) {
		t.Errorf("devbindBindings = %v, want %v", d, boundWant)
	}
	recs, err := parseLspci(boundLspci)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := recs["0000:00:02.0"], (lspciDevice{class: "0100", vendor: "1af4", device: "1042", driver: "virtio-pci"}); got != want {
		t.Errorf("parseLspci: 0000:00:02.0 = %+v, want %+v", got, want)
	}
}

func TestListingParseErrors(t *testing.T) {
	tests := []struct {
		name string
		f    func() error
		want string
	}{
		{"json", func() error { _, err := parseUIODJSON("[{"); return err }, "uiod devices --json"},
		{"json no address", func() error { _, err := parseUIODJSON(`[{"driver": "igb"}]`); return err }, "without an address"},
		{"lspci line", func() error { _, err := parseLspci("Slot:\t0000:01:00.0\nlspci: oops\n"); return err }, `lspci line "lspci: oops"`},
		{"devbind quote", func() error {
			_, err := parseDevbindStatus("Network devices using kernel driver\n===\n0000:01:00.0 no name\n")
			return err
		}, "no quoted name"},
		{"devbind empty name", func() error {
			_, err := parseDevbindStatus("Other Network devices\n===\n0000:01:00.0 '' unused=\n")
			return err
		}, "empty name"},
	}
	for _, tt := range tests {
		if err := tt.f(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one with %q", tt.name, err, tt.want)
		}
	}
}

func TestParseListings(t *testing.T) {
	out := "DEVBIND igb 0000:01:00.0 0000:02:00.0\n" +
		"DEVBIND BEGIN before uiod\nline 1\n\nline 3\nDEVBIND stderr: warn\nDEVBIND END before uiod rc=0 real=0.61 user=0.50 sys=0.10\n" +
		"noise\nDEVBIND BEGIN before devbind\nDEVBIND END before devbind rc=1 real=1.47 user=1.00 sys=0.43\n"
	got, err := parseListings(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []listing{
		{state: "before", tool: "uiod", out: "line 1\n\nline 3", stderr: "warn", rc: 0, real: 0.61, user: 0.50, sys: 0.10},
		{state: "before", tool: "devbind", rc: 1, real: 1.47, user: 1.00, sys: 0.43},
	}
	if !slices.Equal(got, want) {
		t.Errorf("parseListings = %+v, want %+v", got, want)
	}
	if igb := guestIGB(out); !slices.Equal(igb, []string{"0000:01:00.0", "0000:02:00.0"}) {
		t.Errorf("guestIGB = %q", igb)
	}

	bad := []struct{ out, want string }{
		{"DEVBIND BEGIN a uiod\nx\n", "has no end"},
		{"DEVBIND BEGIN a uiod\nDEVBIND BEGIN a devbind\n", "has no end"},
		{"DEVBIND BEGIN a\n", "bad listing start"},
		{"DEVBIND BEGIN a uiod\nDEVBIND END b uiod rc=0\n", "ends with"},
		{"DEVBIND BEGIN a uiod\nDEVBIND END a uiod real=1\n", "has no rc"},
		{"DEVBIND BEGIN a uiod\nDEVBIND END a uiod rc=x\n", "rc"},
		{"DEVBIND BEGIN a uiod\nDEVBIND END a uiod rc=0 real=1s\n", "real"},
	}
	for _, tt := range bad {
		if _, err := parseListings(tt.out); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("parseListings(%q): error %v, want one with %q", tt.out, err, tt.want)
		}
	}
}

func TestCompareBindings(t *testing.T) {
	with := func(addr string, b binding, listed bool) map[string]binding {
		m := maps.Clone(boundWant)
		if listed {
			m[addr] = b
		} else {
			delete(m, addr)
		}
		return m
	}
	tests := []struct {
		name string
		d    map[string]binding
		want []string // the start of each mismatch
	}{
		{"agree", boundWant, nil},
		{"driver", with("0000:01:00.0", binding{id: "8086:10c9", driver: "igb"}, true),
			[]string{`0000:01:00.0: uiod devices says 8086:10c9 driver="vfio-pci"`}},
		{"id", with("0000:03:00.0", binding{id: "1af4:1000"}, true), []string{"0000:03:00.0:"}},
		{"interfaces", with("0000:04:00.0", binding{id: "8086:1572", driver: "i40e", interfaces: "eth2"}, true), []string{"0000:04:00.0:"}},
		{"only uiod", with("0000:02:00.0", binding{}, false), []string{"0000:02:00.0:"}},
		{"only devbind", with("0000:05:00.0", binding{id: "8086:10c9"}, true),
			[]string{"0000:05:00.0: uiod devices says nothing (not listed)"}},
	}
	for _, tt := range tests {
		table, got := compareBindings(boundWant, tt.d)
		if len(got) != len(tt.want) {
			t.Errorf("%s: mismatches %q, want %d", tt.name, got, len(tt.want))
			continue
		}
		for i := range got {
			if !strings.HasPrefix(got[i], tt.want[i]) {
				t.Errorf("%s: mismatch %q, want it to start with %q", tt.name, got[i], tt.want[i])
			}
		}
		union := maps.Clone(boundWant)
		maps.Copy(union, tt.d)
		if rows := strings.Count(table, "\n") - 2; rows != len(union) {
			t.Errorf("%s: table has %d rows:\n%s", tt.name, rows, table)
		}
		if (len(got) == 0) != !strings.Contains(table, "| NO |") {
			t.Errorf("%s: table's agree column does not match the mismatches:\n%s", tt.name, table)
		}
	}
}

func TestImportedModules(t *testing.T) {
	report := "import time: self [us] | cumulative | imported package\n" +
		"import time:       130 |        130 |   _io\n" +
		"lspci: Unable to load libkmod resources: error -2\n" +
		"import time:      1560 |       1560 |   encodings.aliases\n" +
		"import time:     46152 |      48127 | encodings\n" +
		"import time: garbage\n"
	want := []string{"_io", "encodings.aliases", "encodings"}
	if got := importedModules(report); !slices.Equal(got, want) {
		t.Errorf("importedModules = %q, want %q", got, want)
	}
}

func FuzzParseListings(f *testing.F) {
	f.Add("DEVBIND BEGIN before uiod\nx\nDEVBIND stderr: e\nDEVBIND END before uiod rc=0 real=0.61 user=0.50 sys=0.10\n")
	f.Fuzz(func(t *testing.T, out string) {
		ls, err := parseListings(out)
		if err == nil && len(ls) > strings.Count(out, "DEVBIND END ") {
			t.Errorf("%d listings from %d ends", len(ls), strings.Count(out, "DEVBIND END "))
		}
	})
}

func FuzzDevbindBindings(f *testing.F) {
	f.Add(boundDevbind, boundLspci)
	f.Fuzz(func(t *testing.T, status, lspci string) {
		m, err := devbindBindings(status, lspci)
		if err == nil && len(m) > strings.Count(status, "\n")+1 {
			t.Errorf("%d devices from %d lines", len(m), strings.Count(status, "\n")+1)
		}
	})
}

func FuzzParseUIODJSON(f *testing.F) {
	f.Add(boundUIOD)
	f.Fuzz(func(t *testing.T, out string) { parseUIODJSON(out) })
}

func FuzzImportedModules(f *testing.F) {
	f.Add("import time:       130 |        130 |   _io\n")
	f.Fuzz(func(t *testing.T, report string) {
		for _, n := range importedModules(report) {
			if n == "" || strings.ContainsAny(n, "|\n") {
				t.Errorf("module name %q", n)
			}
		}
	})
}

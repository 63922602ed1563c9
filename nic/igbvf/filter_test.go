package igbvf

import (
	"bytes"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/nictest"
	"github.com/uiod/uiod/sim/igbvf"
)

// groups are n multicast groups with n distinct hashes.
func groups(n int) []net.HardwareAddr {
	g := make([]net.HardwareAddr, n)
	for i := range g {
		g[i] = net.HardwareAddr{0x33, 0x33, 0, 0, byte(i << 4), byte(i >> 4)}
	}
	return g
}

// TestDriverFilterVFChoosesMAC runs the receive filter suite on a VF whose administrator
// set no MAC, so that SetMAC is the PF's to take.
func TestDriverFilterVFChoosesMAC(t *testing.T) {
	drv := driver
	drv.Family = nictest.IGBVF(igbvf.Config{NoAntiSpoof: true, NoMAC: true})
	nictest.RxFilter(t, drv)
}

// TestFilterHashes checks what the PF holds: the distinct hashes, 30 of them without
// multicast promiscuous mode, 31 with it, and promiscuous mode off again for 30.
func TestFilterHashes(t *testing.T) {
	h := nictest.New(t, driver, nic.Config{})
	p, m := Rings(h), vfModel(h)
	twice := append(groups(3), groups(3)...)
	if err := p.SetMulticast(twice, false); err != nil {
		t.Fatal(err)
	}
	hashes, all := m.Multicast()
	if all || !slices.Equal(hashes, []uint16{0x000, 0x001, 0x002}) {
		t.Fatalf("PF has hashes %#x (all %v), want 0x0 0x1 0x2", hashes, all)
	}
	for _, c := range []struct {
		n         int
		all, pAll bool
	}{{30, false, false}, {31, false, true}, {30, false, false}, {1, true, true}, {0, false, false}} {
		if err := p.SetMulticast(groups(c.n), c.all); err != nil {
			t.Fatal(err)
		}
		hashes, all := m.Multicast()
		if len(hashes) != min(c.n, 30) || all != c.pAll {
			t.Errorf("%d groups (all %v): PF has %d hashes, every multicast frame %v; want %d, %v", c.n, c.all, len(hashes), all, min(c.n, 30), c.pAll)
		}
	}
}

// TestFilterPromiscRefused: a PF that refuses multicast promiscuous mode fails the calls
// that need it with an error that says so, and keeps the 30 hashes it holds.
func TestFilterPromiscRefused(t *testing.T) {
	drv := driver
	drv.Family = nictest.IGBVF(igbvf.Config{NoAntiSpoof: true, NoMcastPromisc: true})
	h := nictest.New(t, drv, nic.Config{})
	p := Rings(h)
	if err := p.SetMulticast(groups(30), false); err != nil {
		t.Fatal(err)
	}
	err := p.SetMulticast(groups(31), false)
	if err == nil || !strings.Contains(err.Error(), "31 distinct multicast hashes") || !strings.Contains(err.Error(), "refused SET_PROMISC") {
		t.Errorf("31 groups on a PF without multicast promiscuous mode: %v", err)
	}
	if err := p.SetMulticast(nil, true); err == nil || !strings.Contains(err.Error(), "every multicast group") {
		t.Errorf("all on a PF without multicast promiscuous mode: %v", err)
	}
	if hashes, all := vfModel(h).Multicast(); len(hashes) != 30 || all {
		t.Errorf("PF has %d hashes, all %v after the refusals, want the 30 set before", len(hashes), all)
	}
	// A VF reset sends the filter the PF took, not the refused one: the re-initialisation
	// succeeds.
	vfModel(h).ResetPF(10 * time.Millisecond)
	testutil.Eventually(t, 5*time.Second, func() bool { return recoverStep(h) && h.Port.Stats().DeviceResets > 0 && h.Port.Link().Up }, "no re-initialisation")
	if hashes, all := vfModel(h).Multicast(); len(hashes) != 30 || all {
		t.Errorf("after the PF reset: PF has %d hashes, all %v, want the 30 it took", len(hashes), all)
	}
}

// TestFilterAfterPFReset: the filter and an address the VF chose survive a PF reset (the
// VF reset clears them in the PF; the port sends them again).
func TestFilterAfterPFReset(t *testing.T) {
	drv := driver
	drv.Family = nictest.IGBVF(igbvf.Config{NoAntiSpoof: true, NoMAC: true})
	h := nictest.New(t, drv, nic.Config{})
	p, m := Rings(h), vfModel(h)
	if err := p.SetMAC(nictest.NewMAC); err != nil {
		t.Fatal(err)
	}
	if err := p.SetMulticast(append(groups(40), nictest.Group1), false); err != nil {
		t.Fatal(err)
	}
	m.ResetPF(10 * time.Millisecond)
	testutil.Eventually(t, 5*time.Second, func() bool { return recoverStep(h) && h.Port.Stats().DeviceResets > 0 && h.Port.Link().Up }, "no re-initialisation")
	if !bytes.Equal(p.MAC(), nictest.NewMAC) || !bytes.Equal(m.MAC(), nictest.NewMAC) {
		t.Errorf("after the PF reset: port %v, PF %v, want %v", p.MAC(), m.MAC(), nictest.NewMAC)
	}
	if hashes, all := m.Multicast(); len(hashes) != 30 || !all {
		t.Errorf("after the PF reset: PF has %d hashes, all %v; want 30 and multicast promiscuous", len(hashes), all)
	}
	if got := h.Probe(nictest.Group1, nictest.NewMAC); !got[nictest.Group1.String()] || !got[nictest.NewMAC.String()] {
		t.Errorf("after the PF reset: received %v", got)
	}
}

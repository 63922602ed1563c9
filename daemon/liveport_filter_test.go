package daemon

import (
	"errors"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/uiod/uiod/nic"
)

// filterPort is a stubPort with a programmable receive filter (nic.RxFilter) that
// records what it was given, and a link the test sets.
type filterPort struct {
	stubPort
	down atomic.Bool

	mu      sync.Mutex
	mac     net.HardwareAddr
	macs    []string   // every SetMAC
	mcasts  [][]string // every SetMulticast's groups
	all     []bool     // and its all
	failMAC error      // SetMAC's answer, when set
}

var _ nic.RxFilter = (*filterPort)(nil)

func newFilterPort(mac net.HardwareAddr) *filterPort { return &filterPort{mac: mac} }

func (p *filterPort) MAC() net.HardwareAddr {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.mac)
}

func (p *filterPort) Link() nic.Link { return nic.Link{Up: !p.down.Load(), SpeedMbps: 1000} }

func (p *filterPort) SetMAC(mac net.HardwareAddr) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failMAC != nil {
		return p.failMAC
	}
	p.mac = slices.Clone(mac)
	p.macs = append(p.macs, mac.String())
	return nil
}

func (p *filterPort) SetMulticast(groups []net.HardwareAddr, all bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var s []string
	for _, g := range groups {
		if g[0]&1 == 0 {
			return errors.New("not multicast: " + g.String())
		}
		s = append(s, g.String())
	}
	p.mcasts = append(p.mcasts, s)
	p.all = append(p.all, all)
	return nil
}

// lastMulticast is the last SetMulticast's groups and all, ok false when none came.
func (p *filterPort) lastMulticast() (groups []string, all, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.mcasts) == 0 {
		return nil, false, false
	}
	return p.mcasts[len(p.mcasts)-1], p.all[len(p.all)-1], true
}

func (p *filterPort) setMACs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.macs)
}

// TestLivePortFilter: a live port forwards SetMAC and SetMulticast to its driver's port,
// keeps them while the device is absent, and gives a re-opened driver's port the last
// ones; a driver's port without a filter fails with errNoRxFilter.
func TestLivePortFilter(t *testing.T) {
	mac := net.HardwareAddr{2, 0, 0, 0, 0, 1}
	newMAC := net.HardwareAddr{2, 0, 0, 0, 0, 0x42}
	groups := []net.HardwareAddr{{0x33, 0x33, 0, 0, 0, 1}, {0x33, 0x33, 0xff, 0x12, 0x34, 0x56}}
	fp := newFilterPort(mac)
	lp := newLivePort(fp)
	if f, ok := rxFilterOf(lp); !ok || f != lp {
		t.Fatalf("rxFilterOf(live port on a filter port) = %v, %v", f, ok)
	}
	if err := lp.SetMAC(newMAC); err != nil {
		t.Fatal(err)
	}
	if err := lp.SetMulticast(groups, false); err != nil {
		t.Fatal(err)
	}
	if got := fp.setMACs(); len(got) != 1 || got[0] != newMAC.String() || lp.MAC().String() != newMAC.String() {
		t.Fatalf("driver's SetMACs %v, live MAC %s: want %s", got, lp.MAC(), newMAC)
	}
	if g, all, ok := fp.lastMulticast(); !ok || all || len(g) != 2 || g[1] != "33:33:ff:12:34:56" {
		t.Fatalf("driver's last SetMulticast %v %v %v", g, all, ok)
	}
	if _, err := lp.take(); err != nil {
		t.Fatal(err)
	}
	// Absent: kept, not failed.
	all := groups[:1]
	if err := lp.SetMulticast(all, true); err != nil {
		t.Fatalf("SetMulticast while absent: %v", err)
	}
	if lp.MAC().String() != newMAC.String() {
		t.Fatalf("absent MAC %s, want the one set, %s", lp.MAC(), newMAC)
	}
	back := newFilterPort(mac)
	if !lp.put(back) {
		t.Fatal("put refused")
	}
	if got := back.setMACs(); len(got) != 1 || got[0] != newMAC.String() {
		t.Fatalf("re-opened port's SetMACs %v, want %s", got, newMAC)
	}
	if g, all, ok := back.lastMulticast(); !ok || !all || len(g) != 1 || g[0] != "33:33:00:00:00:01" {
		t.Fatalf("re-opened port's last SetMulticast %v %v %v, want the one set while absent", g, all, ok)
	}

	plain := newLivePort(&stubPort{})
	if _, ok := rxFilterOf(plain); ok {
		t.Fatal("rxFilterOf(live port on a port without a filter) ok")
	}
	if err := plain.SetMAC(newMAC); !errors.Is(err, errNoRxFilter) {
		t.Fatalf("SetMAC on a port without a filter = %v, want errNoRxFilter", err)
	}
	if err := plain.SetMulticast(groups, false); !errors.Is(err, errNoRxFilter) {
		t.Fatalf("SetMulticast on a port without a filter = %v, want errNoRxFilter", err)
	}
}

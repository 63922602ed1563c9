package sim_test

import (
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/sim"
	"github.com/uiod/uiod/sim/intel"
)

// TestNewPair checks what NewPair gives each port (function i, the MAC i higher, the
// pair's IOMMU, a wire of its own) and that a failing port leaves nothing open.
func TestNewPair(t *testing.T) {
	addr := pci.MustParseAddr("0000:03:02.0")
	tests := []struct {
		name    string
		mac     net.HardwareAddr
		failAt  int // the port build fails on (-1: none)
		wantMAC [2]string
	}{
		{name: "default MAC", failAt: -1},
		{name: "given MAC", mac: net.HardwareAddr{2, 0, 0, 0, 0, 0xfe}, failAt: -1, wantMAC: [2]string{"02:00:00:00:00:fe", "02:00:00:00:00:ff"}},
		{name: "port 0 fails", failAt: 0},
		{name: "port 1 fails", failAt: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []sim.PairPort
			var built []*intel.Model
			p, err := sim.NewPair(addr, tt.mac, func(pp sim.PairPort) (*intel.Model, error) {
				got = append(got, pp)
				if len(got)-1 == tt.failAt {
					return nil, errors.New("no such port")
				}
				m, err := intel.New(intel.Config{Addr: pp.Addr, MAC: pp.MAC, Wire: pp.Wire, IOMMU: pp.IOMMU, Strict: true})
				if m != nil {
					built = append(built, m)
				}
				return m, err
			})
			if tt.failAt >= 0 {
				if err == nil || p != nil || !strings.Contains(err.Error(), "port "+string(rune('0'+tt.failAt))+": no such port") {
					t.Fatalf("NewPair = %v, %v; want the error of port %d", p, err, tt.failAt)
				}
				for i, m := range built {
					if !m.Device().Closed() {
						t.Errorf("port %d left open after port %d failed", i, tt.failAt)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			for i, pp := range got {
				if pp.Addr.Function != uint8(i) || pp.Addr.Device != addr.Device || pp.IOMMU != p.IOMMU || pp.Wire == nil {
					t.Errorf("port %d: %+v, want function %d of %v on the pair's IOMMU with a wire", i, pp, i, addr)
				}
				if tt.mac == nil && pp.MAC != nil || tt.mac != nil && pp.MAC.String() != tt.wantMAC[i] {
					t.Errorf("port %d: MAC %v, want %q", i, pp.MAC, tt.wantMAC[i])
				}
				if p.Models[i].Device().IOMMU() != p.IOMMU {
					t.Errorf("port %d is not on the pair's IOMMU", i)
				}
			}
			if got[0].Wire == got[1].Wire {
				t.Error("the ports share one wire")
			}
			if tt.mac != nil && tt.mac[5] != 0xfe {
				t.Errorf("NewPair changed the caller's MAC to %v", tt.mac)
			}
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			for i, m := range p.Models {
				if !m.Device().Closed() {
					t.Errorf("port %d open after Close", i)
				}
			}
		})
	}
}

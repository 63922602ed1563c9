package ixgbe

import (
	"fmt"
	"testing"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/sim/intel"
)

func TestOpenRegistered(t *testing.T) {
	m, err := intel.New(intel.Config{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err := nic.Open(m.PCI(), "auto", nic.Config{Interrupts: nic.IRQNone, LinkTimeout: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.(*Port); !ok {
		t.Fatalf("auto picked %T", p)
	}
	if p.RxVector(0) != nil {
		t.Error("vector without interrupts")
	}
	if p.Link().Up {
		t.Error("link up with no cable")
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Device().Err(); err != nil {
		t.Fatal(err)
	}
}

func TestOpenBadConfig(t *testing.T) {
	tests := []nic.Config{
		{RxQueues: 17},
		{RxRing: 100},
		{TxRing: 4},
		{BufSize: 512},
		{RxRing: 512, PoolSize: 100},
		{Interrupts: nic.IRQModeOf(irq.MSI)},
		{RxRing: MaxRing * 2},
	}
	for _, cfg := range tests {
		m, err := intel.New(intel.Config{Strict: true})
		if err != nil {
			t.Fatal(err)
		}
		if p, err := Open(m.PCI(), cfg); err == nil {
			p.Close()
			t.Errorf("config %+v accepted", cfg)
		}
		m.Close()
	}
}

// unsupported are device ids the driver must refuse: the 82599 10GBASE-T LOM, LS and
// QSFP+ parts, X540, X550 and X550EM, the 82598, and igb parts.
var unsupported = []uint16{0x151C, 0x154F, 0x1558, 0x1528, 0x1560, 0x1563, 0x15D1, 0x15AB, 0x15C8, 0x15E4, 0x10EC, 0x10B6, 0x10C9, 0x1521}

func TestMatch(t *testing.T) {
	for _, id := range []uint16{0x10FB, 0x10F7, 0x10F8, 0x1507, 0x1517, 0x10F9, 0x10FC} {
		if !Match(VendorIntel, id) {
			t.Errorf("%04x not matched", id)
		}
	}
	for _, id := range unsupported {
		if Match(VendorIntel, id) {
			t.Errorf("%04x matched", id)
		}
	}
	if Match(0x15ad, 0x10FB) {
		t.Error("non-Intel vendor matched")
	}
}

// TestOpenUnsupported checks that a device id outside the table is refused, by Open and
// by nic.Open, with an error naming it and listing what is supported.
func TestOpenUnsupported(t *testing.T) {
	for _, id := range []uint16{0x1528, 0x1563, 0x151C} {
		m, err := intel.New(intel.Config{Strict: true, DeviceID: id})
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("unsupported device 8086:%04x", id)
		_, err = Open(m.PCI(), nic.Config{Interrupts: nic.IRQNone, LinkTimeout: 1})
		testutil.ErrorIs(t, err, nic.ErrNoDriver, want)
		testutil.ErrorContains(t, err, "supported are", "8086:10fb (82599 SFP+)")
		for _, name := range []string{"auto", "ixgbe"} {
			_, err = nic.Open(m.PCI(), name, nic.Config{Interrupts: nic.IRQNone, LinkTimeout: 1})
			testutil.ErrorIs(t, err, nic.ErrNoDriver, want)
			testutil.ErrorContains(t, err, "supported are", "8086:10fb (82599 SFP+)")
		}
		m.Close()
	}
}

package ixgbe

import (
	"testing"

	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/sim/intel"
)

func TestOpenRegistered(t *testing.T) {
	m, err := intel.New(intel.Config{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err := nic.Open(m.Device(), "auto", nic.Config{NoIRQ: true, LinkTimeout: 1})
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
		{RxRing: nic.MaxRingIxgbe * 2},
	}
	for _, cfg := range tests {
		m, err := intel.New(intel.Config{Strict: true})
		if err != nil {
			t.Fatal(err)
		}
		if p, err := Open(m.Device(), cfg); err == nil {
			p.Close()
			t.Errorf("config %+v accepted", cfg)
		}
		m.Close()
	}
}

func TestMatch(t *testing.T) {
	for _, id := range []uint16{0x10FB, 0x10F7, 0x151C, 0x10F8, 0x1507, 0x1528, 0x1563, 0x15AB, 0x15C8} {
		if !Match(VendorIntel, id) {
			t.Errorf("%04x not matched", id)
		}
	}
	for _, id := range []uint16{0x10EC, 0x10B6, 0x10C9, 0x1521} {
		if Match(VendorIntel, id) {
			t.Errorf("%04x matched", id)
		}
	}
	if Match(0x15ad, 0x10FB) {
		t.Error("non-Intel vendor matched")
	}
}

package sim

import (
	"errors"
	"testing"
	"time"

	"github.com/uiod/uiod/pci"
)

// TestGone: a removed device answers nothing: registers and config space read all ones,
// writes go nowhere, DMA and interrupts stop; the request reaches Events first.
func TestGone(t *testing.T) {
	d := newToy(t, false, nil).d
	if err := d.RequestRemoval(); !errors.Is(err, ErrNotArmed) {
		t.Errorf("RequestRemoval before Events: %v, want ErrNotArmed", err)
	}
	ch, err := d.Events()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.RequestRemoval(); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-ch:
		if e != pci.EventRequest {
			t.Errorf("event %v, want %v", e, pci.EventRequest)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no device request within 10 s")
	}
	bar, _ := d.Region(0)
	if err := pci.SetBusMaster(d.Config(), true); err != nil {
		t.Fatal(err)
	}
	before := bar.Read32(toyID)
	d.Remove()
	if !d.Gone() {
		t.Error("not gone")
	}
	if v := bar.Read32(toyID); v != 0xffffffff {
		t.Errorf("register reads %#x, want all ones (before: %#x)", v, before)
	}
	bar.Write32(0, 0x1234)
	if id, err := pci.ReadConfig16(d.Config(), pci.CfgVendorID); err != nil || id != 0xffff {
		t.Errorf("vendor id %#x %v, want 0xffff", id, err)
	}
	if err := pci.SetBusMaster(d.Config(), false); err != nil {
		t.Fatal(err)
	}
	d.Lock()
	_, derr := d.DMAAt(0, 4, "test")
	fired := d.FireMSIX(0)
	d.Unlock()
	if !errors.Is(derr, ErrNoBusMaster) || fired {
		t.Errorf("DMA %v, MSI-X fired %v: a removed device does neither", derr, fired)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-ch; ok {
		t.Error("events channel open after Close")
	}
}

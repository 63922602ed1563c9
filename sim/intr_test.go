package sim

import (
	"errors"
	"testing"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/pci"
)

func TestMSIX(t *testing.T) {
	y := newToy(t, true, nil)
	r, _ := y.d.Region(0)
	if _, err := y.d.IRQs(irq.MSIX, 3); err == nil {
		t.Fatal("3 vectors on a 2-vector table")
	}
	if _, err := y.d.IRQs(irq.MSI, 1); !errors.Is(err, ErrNotSupported) {
		t.Fatalf("MSI: %v", err)
	}
	vs, err := y.d.IRQs(irq.MSIX, 2)
	if err != nil {
		t.Fatal(err)
	}
	ctl, _ := pci.ReadConfig16(y.d.Config(), msixCtrl)
	if ctl&msixEnable == 0 || ctl&pci.MSIXTableSizeMk != 1 {
		t.Fatalf("MSI-X control %#x", ctl)
	}
	r.Write32(toyCause, 0) // nothing
	y.raise()              // masked: no message
	if testutil.Drain(t, vs[0]) != 0 {
		t.Fatal("masked cause fired")
	}
	r.Write32(toyMaskS, 1) // unmask with the cause pending: fires
	if testutil.Drain(t, vs[0]) != 1 || testutil.Drain(t, vs[1]) != 0 {
		t.Fatal("unmask did not fire the pending cause")
	}
	if got := y.d.Fired(); got[0] != 1 || got[1] != 0 {
		t.Fatalf("Fired %v", got)
	}
	// Function mask blocks delivery.
	pci.WriteConfig16(y.d.Config(), msixCtrl, msixEnable|msixFuncMask)
	y.d.Lock()
	ok := y.d.FireMSIX(0)
	y.d.Unlock()
	if ok || testutil.Drain(t, vs[0]) != 0 {
		t.Fatal("function-masked vector fired")
	}
	// Replacing the set closes the old vectors.
	if _, err := y.d.IRQs(irq.MSIX, 0); err != nil {
		t.Fatal(err)
	}
	if vs[0].Signal() == nil {
		t.Fatal("old vector still open")
	}
}

func TestINTxLevel(t *testing.T) {
	y := newToy(t, true, nil)
	r, _ := y.d.Region(0)
	vs, err := y.d.IRQs(irq.INTx, 1)
	if err != nil {
		t.Fatal(err)
	}
	v := vs[0]
	r.Write32(toyMaskS, 1)
	y.raise()
	if testutil.Drain(t, v) != 1 {
		t.Fatal("INTx did not fire")
	}
	// Still asserted, but masked until rearm.
	y.locked(y.eval)
	if testutil.Drain(t, v) != 0 {
		t.Fatal("INTx fired while masked")
	}
	// Rearm with the cause still asserted: level semantics fire again.
	v.Rearm()
	if testutil.Drain(t, v) != 1 {
		t.Fatal("rearm of an asserted line did not fire")
	}
	// Acknowledge (read clears the cause), rearm: quiet.
	r.Read32(toyCause)
	v.Rearm()
	if testutil.Drain(t, v) != 0 {
		t.Fatal("rearm of a deasserted line fired")
	}
	// INTx-disable in the command register holds it off; clearing it delivers.
	pci.UpdateCommand(y.d.Config(), pci.CmdINTxDisable, 0)
	y.raise()
	if testutil.Drain(t, v) != 0 {
		t.Fatal("INTx fired while disabled in the command register")
	}
	pci.UpdateCommand(y.d.Config(), 0, pci.CmdINTxDisable)
	if testutil.Drain(t, v) != 1 {
		t.Fatal("clearing INTx-disable did not deliver the asserted line")
	}
}

package ixgbe

import (
	"testing"
	"time"

	"github.com/uiod/uiod/internal/hw/i82599"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/nictest"
)

// TestRxEnabledWithSecurityPathHalted checks the 82599 erratum workaround: RXCTRL.RXEN is
// set only while SECRXCTRL.RX_DIS halts the receive data path, and the path is resumed
// afterwards.
func TestRxEnabledWithSecurityPathHalted(t *testing.T) {
	_, _, writes := openRecorded(t, nic.Config{Interrupts: nic.IRQNone, LinkTimeout: 1}, nil)
	halted, enabled, resumed := false, false, false
	for _, w := range *writes {
		switch w.Off {
		case i82599.SECRXCTRL:
			halted = w.V&i82599.SecrxctrlRxDis != 0
			resumed = enabled && !halted
		case i82599.RXCTRL:
			if w.V&i82599.RxctrlRXEN != 0 && !enabled {
				if !halted {
					t.Fatal("RXCTRL.RXEN set with the receive data path running (SECRXCTRL.RX_DIS clear)")
				}
				enabled = true
			}
		}
	}
	if !enabled || !resumed {
		t.Fatalf("receive enabled %v, data path resumed after it %v", enabled, resumed)
	}
}

// TestRxEnableWaitsForSecurityPath checks the length of the erratum wait: a security path
// that takes 5 ms to drain must have drained before RXCTRL.RXEN is set (Linux and DPDK
// wait up to 40 ms; a 300 µs wait enables receive with traffic still in the path).
func TestRxEnableWaitsForSecurityPath(t *testing.T) {
	const drain = 5 * time.Millisecond
	var halted, ready time.Time
	_, _, writes := openRecorded(t, nic.Config{Interrupts: nic.IRQNone, LinkTimeout: 1}, func(writes []nictest.RegWrite, off, v uint32) uint32 {
		if halted.IsZero() {
			for _, w := range writes {
				if w.Off == i82599.SECRXCTRL && w.V&i82599.SecrxctrlRxDis != 0 {
					halted = w.At
				}
			}
		}
		if off != i82599.SECRXSTAT {
			return v
		}
		if halted.IsZero() || time.Since(halted) < drain {
			return v &^ i82599.SecrxstatRdy
		}
		if ready.IsZero() {
			ready = time.Now()
		}
		return v | i82599.SecrxstatRdy
	})
	for _, w := range *writes {
		if w.Off == i82599.RXCTRL && w.V&i82599.RxctrlRXEN != 0 {
			if ready.IsZero() || w.At.Before(ready) {
				t.Fatalf("RXCTRL.RXEN set %v after halting the data path, before SECRXSTAT.SECRX_RDY (ready after %v)", w.At.Sub(halted), drain)
			}
			return
		}
	}
	t.Fatal("RXCTRL.RXEN never set")
}

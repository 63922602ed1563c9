package intel

import (
	"fmt"
	"time"

	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/pci"
)

// GlobalReset resets the device through the CTRL bits bit (CTRL.RST; the 82599's mask
// adds LRST): it waits for a reset already under way to end (the function-level reset a
// backend may issue when it opens the device; the NIC ignores writes while CTRL.RST reads
// 1), has quiesce mask and stop the device, sets the bits, leaves the registers alone for
// a millisecond (as Linux's igb and ixgbe do) and waits for the bits to clear.
func GlobalReset(r pci.Region, bit uint32, quiesce func()) error {
	if err := WaitClear(r, intelnic.CTRL, bit, time.Second); err != nil {
		return fmt.Errorf("reset under way: %w", err)
	}
	quiesce()
	r.Write32(intelnic.CTRL, r.Read32(intelnic.CTRL)|bit)
	time.Sleep(time.Millisecond) // no register access right after a reset
	if err := WaitClear(r, intelnic.CTRL, bit, time.Second); err != nil {
		return fmt.Errorf("global reset: %w", err)
	}
	return nil
}

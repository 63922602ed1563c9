package intel

import (
	"errors"
	"fmt"
	"time"

	"github.com/uiod/uiod/pci"
)

// errTimeout is wrapped by the errors of bounded register waits.
var errTimeout = errors.New("timed out")

// WaitBits polls register off until (value & mask) == want or the timeout passes, and
// returns the value it read last.
func WaitBits(r pci.Region, off, mask, want uint32, timeout time.Duration) (uint32, error) {
	deadline := time.Now().Add(timeout)
	sleep := time.Microsecond
	for {
		v := r.Read32(off)
		if v&mask == want {
			return v, nil
		}
		if time.Now().After(deadline) {
			return v, fmt.Errorf("register 0x%05x = 0x%08x, waiting for 0x%08x under mask 0x%08x: %w", off, v, want, mask, errTimeout)
		}
		time.Sleep(sleep)
		if sleep < time.Millisecond {
			sleep *= 2
		}
	}
}

// WaitSet waits for all of bits to be set in register off.
func WaitSet(r pci.Region, off, bits uint32, timeout time.Duration) error {
	_, err := WaitBits(r, off, bits, bits, timeout)
	return err
}

// WaitClear waits for all of bits to be clear in register off.
func WaitClear(r pci.Region, off, bits uint32, timeout time.Duration) error {
	_, err := WaitBits(r, off, bits, 0, timeout)
	return err
}

//go:build !linux

package dmamem

import (
	"fmt"

	"github.com/uiod/uiod/pci"
)

// errNoDMA is what every allocation returns where pinned DMA memory is not implemented.
var errNoDMA = fmt.Errorf("dmamem: pinned DMA memory only on Linux: %w", pci.ErrNotSupported)

func mapMemory(size int, huge, reverse bool) ([]byte, error) { return nil, errNoDMA }

func unmapMemory(b []byte) error { return errNoDMA }

func assembleHugePages(n int, physOf func([]byte) (uint64, error)) ([]byte, error) {
	return nil, errNoDMA
}

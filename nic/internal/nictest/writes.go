package nictest

import (
	"testing"
	"time"

	"github.com/uiod/uiod/pci"
)

// RegWrite is one 32-bit register write a Recorded device saw.
type RegWrite struct {
	Off, V uint32
	At     time.Time
}

// Recorded is dev with every 32-bit register write logged in writes and, with read set,
// what a register read returns changed by read.
func Recorded(dev pci.Device, writes *[]RegWrite, read func(off, v uint32) uint32) pci.Device {
	return Hooked(dev, Hooks{
		Read: func(_ int, off, v uint32) uint32 {
			if read != nil {
				v = read(off, v)
			}
			return v
		},
		Write: func(_ int, off uint32, v uint64, size int) bool {
			if size == 4 {
				*writes = append(*writes, RegWrite{off, uint32(v), time.Now()})
			}
			return true
		},
	})
}

// Written returns the values written to register off, in order.
func Written(writes []RegWrite, off uint32) []uint32 {
	var vs []uint32
	for _, w := range writes {
		if w.Off == off {
			vs = append(vs, w.V)
		}
	}
	return vs
}

// FiltersCleared checks that an Intel driver cleared the filter tables the reset leaves
// undefined: after the last write that set rst in CTRL (at ctrl), each of the 128 entries
// of the multicast table (MTA, 0x05200), of the VLAN filter table at vfta and of the
// unicast hash table at uta was written zero, and get (the model's register) reads the UTA
// entries back as zero.
func FiltersCleared(t *testing.T, writes []RegWrite, ctrl, rst, vfta, uta uint32, get func(off uint32) uint32) {
	t.Helper()
	reset := -1
	for i, w := range writes {
		if w.Off == ctrl && w.V&rst != 0 {
			reset = i
		}
	}
	cleared := map[uint32]bool{}
	for _, w := range writes[reset+1:] {
		if w.V == 0 {
			cleared[w.Off] = true
		}
	}
	for i := uint32(0); i < 128; i++ {
		if !cleared[0x05200+4*i] {
			t.Fatalf("MTA[%d] not cleared after the reset", i)
		}
		if !cleared[vfta+4*i] {
			t.Fatalf("VFTA[%d] not cleared after the reset", i)
		}
		if !cleared[uta+4*i] || get(uta+4*i) != 0 {
			t.Fatalf("UTA[%d] = %#x: not cleared after the reset", i, get(uta+4*i))
		}
	}
}

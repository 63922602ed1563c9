package pcitest

import (
	"encoding/binary"

	"github.com/uiod/uiod/internal/hw/pcispec"
)

// ConfigSpace returns 256 bytes of type-0 configuration space with the given ids and a
// realistic capability list: power management at 0x40, MSI at 0x50, MSI-X at 0x70 (when
// msixVectors > 0, table size msixVectors) and PCI Express at 0xa0.
func ConfigSpace(vendor, device uint16, class uint32, revision uint8, msixVectors int) []byte {
	c := make([]byte, pcispec.ConfigLen)
	le := binary.LittleEndian
	le.PutUint16(c[0x00:], vendor)
	le.PutUint16(c[0x02:], device)
	le.PutUint16(c[0x04:], 0x0406) // memory space, bus master, INTx disabled
	le.PutUint16(c[0x06:], 0x0010) // capability list present
	le.PutUint32(c[0x08:], class<<8|uint32(revision))
	le.PutUint32(c[0x10:], 0xf7e00000) // BAR0, 32-bit memory
	le.PutUint16(c[0x2c:], vendor)
	le.PutUint16(c[0x2e:], device)
	c[0x34] = 0x40
	c[0x3d] = 1 // INTA
	caps := []struct {
		off  int
		id   byte
		ctrl uint16
	}{
		{0x40, 0x01, 0x0003},                        // power management
		{0x50, 0x05, 0x0080},                        // MSI, 64-bit
		{0x70, 0x11, uint16(msixVectors-1) & 0x7ff}, // MSI-X
		{0xa0, 0x10, 0x0002},                        // PCI Express, endpoint
	}
	if msixVectors <= 0 {
		caps = append(caps[:2], caps[3])
	}
	for i, cp := range caps {
		c[cp.off] = cp.id
		if i+1 < len(caps) {
			c[cp.off+1] = byte(caps[i+1].off)
		}
		le.PutUint16(c[cp.off+2:], cp.ctrl)
	}
	if msixVectors > 0 {
		le.PutUint32(c[0x74:], 0x00000003) // table in BAR3 at 0
		le.PutUint32(c[0x78:], 0x00002003) // PBA in BAR3 at 0x2000
	}
	return c
}

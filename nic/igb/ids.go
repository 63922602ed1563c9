package igb

import "github.com/uiod/uiod/nic/internal/intel"

// family is a group of controllers that share register layouts.
type family int

const (
	family82576 family = iota // IVAR: queue q in IVAR(q&7), byte (q&8)>>1 (+1 for TX)
	familyI350                // 82580-style IVAR: queue q in IVAR(q>>1), byte 2·(q&1) (+1 for TX)
	familyI210                // as I350, flash-less: EEC at 0x12010, 4 queues
	familyI211                // as I210 with 2 queues
)

// VendorIntel is Intel's PCI vendor id.
const VendorIntel = intel.VendorIntel

// deviceIDs maps supported PCI device ids to their family (from Intel's e1000_hw.h).
var deviceIDs = map[uint16]family{
	0x10C9: family82576, // 82576 (QEMU's igb)
	0x10E6: family82576, // 82576 fiber
	0x10E7: family82576, // 82576 serdes
	0x10E8: family82576, // 82576 quad copper
	0x1526: family82576, // 82576 quad copper ET2
	0x150A: family82576, // 82576 NS
	0x1518: family82576, // 82576 NS serdes
	0x150D: family82576, // 82576 serdes quad
	0x1521: familyI350,  // I350 copper
	0x1522: familyI350,  // I350 fiber
	0x1523: familyI350,  // I350 serdes
	0x1524: familyI350,  // I350 SGMII
	0x1533: familyI210,  // I210 copper
	0x1536: familyI210,  // I210 fiber
	0x1537: familyI210,  // I210 serdes
	0x1538: familyI210,  // I210 SGMII
	0x157B: familyI210,  // I210 copper flash-less
	0x157C: familyI210,  // I210 serdes flash-less
	0x1539: familyI211,  // I211 copper
}

// Match reports whether the driver supports the PCI function vendor:device.
func Match(vendor, device uint16) bool {
	_, ok := deviceIDs[device]
	return vendor == VendorIntel && ok
}

// maxQueues is the number of RX and TX queues of a family.
func (f family) maxQueues() int {
	switch f {
	case familyI350:
		return 8
	case familyI210:
		return 4
	case familyI211:
		return 2
	}
	return 16
}

// eecOffset is the EEPROM control register holding the auto-read-done bit.
func (f family) eecOffset() uint32 {
	if f == familyI210 || f == familyI211 {
		return 0x12010
	}
	return regEECD
}

// ivarEntry is the IVAR register and shift of queue q's RX (or TX) allocation entry.
func (f family) ivarEntry(q int, tx bool) (off uint32, shift uint) {
	if f == family82576 {
		shift = uint(q&8) << 1
		off = regIVAR(q & 7)
	} else {
		shift = uint(q&1) * 16
		off = regIVAR(q >> 1)
	}
	if tx {
		shift += 8
	}
	return off, shift
}

package ixgbe

import "github.com/uiod/uiod/nic/internal/intel"

// family is a group of controllers that share an init sequence.
type family int

const (
	family82599 family = iota
	familyX540
	familyX550
	familyX550EMA // X550EM_a: EEC moved to 0x15FF8
)

// VendorIntel is Intel's PCI vendor id.
const VendorIntel = intel.VendorIntel

// deviceIDs maps the PCI device ids this driver supports to their family (from Intel's
// ixgbe_type.h). The 82598 (0x10B6, 0x10C6, 0x10EC CX4, …) is not supported: its
// interrupt and queue registers differ.
var deviceIDs = map[uint16]family{
	0x10F7: family82599,   // 82599 KX4
	0x1514: family82599,   // 82599 KX4 mezzanine
	0x1517: family82599,   // 82599 KR
	0x10F8: family82599,   // 82599 combined backplane
	0x10F9: family82599,   // 82599 CX4
	0x10FB: family82599,   // 82599 SFP+
	0x152A: family82599,   // 82599 backplane FCoE
	0x1529: family82599,   // 82599 SFP+ FCoE
	0x1507: family82599,   // 82599EB SFP+ EM
	0x154D: family82599,   // 82599 SFP+ SF2
	0x154A: family82599,   // 82599 SFP+ SF QP
	0x1558: family82599,   // 82599 QSFP+ SF QP
	0x1557: family82599,   // 82599EN SFP+
	0x10FC: family82599,   // 82599 XAUI LOM
	0x151C: family82599,   // 82599 10GBASE-T3 LOM
	0x154F: family82599,   // 82599 LS
	0x1528: familyX540,    // X540-AT2
	0x1560: familyX540,    // X540-AT1
	0x1563: familyX550,    // X550-T2
	0x15D1: familyX550,    // X550-T1
	0x15AA: familyX550,    // X550EM_x KX4
	0x15AB: familyX550,    // X550EM_x KR
	0x15AC: familyX550,    // X550EM_x SFP+
	0x15AD: familyX550,    // X550EM_x 10GBASE-T
	0x15AE: familyX550,    // X550EM_x 1GBASE-T
	0x15C2: familyX550EMA, // X550EM_a KR
	0x15C3: familyX550EMA, // X550EM_a KR-L
	0x15C4: familyX550EMA, // X550EM_a SFP+ N
	0x15C6: familyX550EMA, // X550EM_a SGMII
	0x15C7: familyX550EMA, // X550EM_a SGMII-L
	0x15C8: familyX550EMA, // X550EM_a 10GBASE-T
	0x15CE: familyX550EMA, // X550EM_a SFP+
	0x15E4: familyX550EMA, // X550EM_a 1GBASE-T
	0x15E5: familyX550EMA, // X550EM_a 1GBASE-T-L
}

// Match reports whether the driver supports the PCI function vendor:device.
func Match(vendor, device uint16) bool {
	_, ok := deviceIDs[device]
	return vendor == VendorIntel && ok
}

// eecOffset is the EEPROM/flash control register of a family.
func (f family) eecOffset() uint32 {
	if f == familyX550EMA {
		return 0x15FF8
	}
	return regEEC
}

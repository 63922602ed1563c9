package virtio

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/uiod/uiod/internal/hw/pcispec"
	"github.com/uiod/uiod/internal/hw/virtiospec"
	"github.com/uiod/uiod/pci"
)

// capability is one virtio structure a vendor capability points at: a BAR, an offset
// into it and a length.
type capability struct {
	bar    int
	offset uint32
	length uint32
}

// capabilities are the structures of the modern PCI transport.
type capabilities struct {
	common, notify, isr, device capability
	notifyMult                  uint32 // notify_off_multiplier
}

// errNoModern says the function has no modern virtio interface.
var errNoModern = errors.New("no virtio 1.x capabilities")

// capAlign is the alignment the spec requires of each structure's offset (the ISR has
// none).
var capAlign = [...]uint32{virtiospec.CapCommon: 4, virtiospec.CapNotify: 2, virtiospec.CapISR: 1, virtiospec.CapDevice: 4}

// parseCapabilities walks the capability list of cfg, a copy of configuration space from
// offset 0, and returns the first common, notify, ISR and device-configuration
// capabilities, as the spec tells a driver to use the first one of each type it can.
// Capabilities of other types, naming a reserved BAR or an I/O BAR, with a misaligned
// offset or too short are skipped. A list that is malformed or leaves cfg is an error
// (pci.WalkCapabilities), as is a missing structure (naming why a capability of its type
// was skipped).
func parseCapabilities(cfg []byte) (capabilities, error) {
	var c capabilities
	if len(cfg) < pcispec.HeaderLen {
		return c, fmt.Errorf("config space of %d bytes: %w", len(cfg), pci.ErrTruncated)
	}
	var found [virtiospec.CapDevice + 1]bool
	var skipped [virtiospec.CapDevice + 1]string
	var bad error // a virtio capability that leaves cfg
	err := pci.WalkCapabilities(cfg, func(ptr int, id uint8) bool {
		if id != virtiospec.CapIDVendor {
			return true
		}
		if ptr+virtiospec.CapLen > len(cfg) {
			bad = fmt.Errorf("virtio capability at 0x%02x: beyond %d bytes", ptr, len(cfg))
			return false
		}
		capLen := int(cfg[ptr+2])
		typ := cfg[ptr+virtiospec.CapOffType]
		bar := int(cfg[ptr+virtiospec.CapOffBAR])
		if typ < virtiospec.CapCommon || typ > virtiospec.CapDevice || found[typ] || bar > 5 || capLen < virtiospec.CapLen {
			return true
		}
		s := capability{
			bar:    bar,
			offset: binary.LittleEndian.Uint32(cfg[ptr+virtiospec.CapOffOffset:]),
			length: binary.LittleEndian.Uint32(cfg[ptr+virtiospec.CapOffLength:]),
		}
		if why := unusable(cfg, s, typ); why != "" {
			skipped[typ] = fmt.Sprintf(" (the one at 0x%02x %s)", ptr, why)
			return true
		}
		switch typ {
		case virtiospec.CapCommon:
			if s.length < virtiospec.ComLen {
				return true
			}
			c.common = s
		case virtiospec.CapNotify:
			if capLen < virtiospec.CapNotifyLen || ptr+virtiospec.CapNotifyLen > len(cfg) {
				return true
			}
			c.notify = s
			c.notifyMult = binary.LittleEndian.Uint32(cfg[ptr+virtiospec.CapOffMult:])
		case virtiospec.CapISR:
			if s.length < 1 {
				return true
			}
			c.isr = s
		case virtiospec.CapDevice:
			c.device = s
		}
		found[typ] = true
		return true
	})
	switch {
	case errors.Is(err, pci.ErrNoCapability):
		return c, errNoModern
	case err != nil:
		return c, err
	case bad != nil:
		return c, bad
	}
	for typ, name := range [...]string{virtiospec.CapCommon: "common", virtiospec.CapNotify: "notify", virtiospec.CapISR: "isr", virtiospec.CapDevice: "device"} {
		if typ >= virtiospec.CapCommon && !found[typ] {
			return c, fmt.Errorf("%w: no %s configuration capability%s", errNoModern, name, skipped[typ])
		}
	}
	return c, nil
}

// unusable says why a capability of type typ cannot be used: its BAR is an I/O BAR (the
// structures must be in memory space), or its offset is misaligned. "" means usable.
func unusable(cfg []byte, s capability, typ uint8) string {
	if reg := pci.CfgBAR0 + 4*s.bar; reg < len(cfg) && cfg[reg]&1 != 0 {
		return fmt.Sprintf("names BAR%d, an I/O BAR", s.bar)
	}
	if a := capAlign[typ]; s.offset%a != 0 {
		return fmt.Sprintf("has offset 0x%x, not %d-byte aligned", s.offset, a)
	}
	return ""
}

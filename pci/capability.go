package pci

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/uiod/uiod/internal/hw/pcispec"
)

// ErrNoCapability is returned by FindCapability when the list does not hold the capability.
var ErrNoCapability = errors.New("capability not present")

// ErrTruncated is returned by FindCapability when the list leads beyond the bytes given,
// as it does when an unprivileged reader gets only the first 64 bytes of sysfs config.
var ErrTruncated = errors.New("config space truncated")

// maxCaps bounds the walk: conventional config space holds at most 48 capabilities of 4
// bytes after the header.
const maxCaps = (pcispec.ConfigLen - pcispec.HeaderLen) / 4

// WalkCapabilities walks the standard capability list in cfg, a copy of configuration
// space from offset 0, calling visit with each capability's offset and id in list order
// until visit returns false or the list ends. A function without a list (the status
// register's capability bit clear) is ErrNoCapability; a list that loops, points into
// the header or past the last dword, or is not dword aligned is an error wrapping
// ErrMalformed; one that runs past the end of cfg is ErrTruncated.
func WalkCapabilities(cfg []byte, visit func(off int, id uint8) bool) error {
	if len(cfg) < CfgCapPointer+1 {
		return fmt.Errorf("%w: %d bytes, need the header", ErrTruncated, len(cfg))
	}
	if binary.LittleEndian.Uint16(cfg[CfgStatus:])&StatusCapList == 0 {
		return ErrNoCapability
	}
	ptr := int(cfg[CfgCapPointer])
	for range maxCaps {
		if ptr == 0 {
			return nil
		}
		if ptr < pcispec.HeaderLen || ptr > pcispec.MaxCapPointer || ptr&3 != 0 {
			return fmt.Errorf("%w capability list: pointer 0x%02x", ErrMalformed, ptr)
		}
		if ptr+2 > len(cfg) {
			return fmt.Errorf("%w: capability at 0x%02x beyond %d bytes", ErrTruncated, ptr, len(cfg))
		}
		if !visit(ptr, cfg[ptr]) {
			return nil
		}
		ptr = int(cfg[ptr+1])
	}
	return fmt.Errorf("%w capability list: more than %d entries (a loop)", ErrMalformed, maxCaps)
}

// FindCapability returns the offset of the first capability with the given id in cfg's
// standard list (see WalkCapabilities for its errors), or ErrNoCapability.
func FindCapability(cfg []byte, id uint8) (int, error) {
	found := 0
	err := WalkCapabilities(cfg, func(off int, cid uint8) bool {
		if cid == id {
			found = off
		}
		return found == 0
	})
	switch {
	case err != nil:
		return 0, err
	case found == 0:
		return 0, ErrNoCapability
	}
	return found, nil
}

// MSIXTableSize returns the number of MSI-X vectors the function supports (the table size
// field of the MSI-X message control word plus one), or ErrNoCapability.
func MSIXTableSize(cfg []byte) (int, error) {
	off, err := FindCapability(cfg, CapIDMSIX)
	if err != nil {
		return 0, err
	}
	if off+4 > len(cfg) {
		return 0, fmt.Errorf("%w: MSI-X capability at 0x%02x beyond %d bytes", ErrTruncated, off, len(cfg))
	}
	ctrl := binary.LittleEndian.Uint16(cfg[off+2:])
	return int(ctrl&MSIXTableSizeMk) + 1, nil
}

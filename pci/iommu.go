package pci

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
)

// IOMMUGroupMembers returns the functions in an IOMMU group, sorted.
func (h *Host) IOMMUGroupMembers(group int) ([]Addr, error) {
	ents, err := h.readDir(iommuGroupsDir + "/" + strconv.Itoa(group) + "/devices")
	if err != nil {
		return nil, fmt.Errorf("read IOMMU group %d: %w", group, err)
	}
	var out []Addr
	for _, e := range ents {
		a, err := ParseAddr(e.Name())
		if err != nil {
			return nil, fmt.Errorf("IOMMU group %d: %w", group, err)
		}
		out = append(out, a)
	}
	slices.SortFunc(out, compareAddr)
	return out, nil
}

// iommuEnabled reports whether the kernel has any IOMMU groups (an IOMMU is on).
func (h *Host) iommuEnabled() (bool, error) {
	ents, err := h.readDir(iommuGroupsDir)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return len(ents) > 0, nil
}

func compareAddr(a, b Addr) int {
	switch {
	case a.Domain != b.Domain:
		return int(a.Domain) - int(b.Domain)
	case a.Bus != b.Bus:
		return int(a.Bus) - int(b.Bus)
	case a.Device != b.Device:
		return int(a.Device) - int(b.Device)
	}
	return int(a.Function) - int(b.Function)
}

package pci

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
)

// iommuGroup returns the function's IOMMU group number, or -1 if it has none.
func (h *Host) iommuGroup(a Addr) (int, error) {
	name, err := linkBase(h.path("sys/bus/pci/devices", a.String(), "iommu_group"))
	if err != nil {
		return -1, fmt.Errorf("read iommu_group: %w", err)
	}
	if name == "" {
		return -1, nil
	}
	n, err := strconv.Atoi(name)
	if err != nil || n < 0 {
		return -1, fmt.Errorf("iommu_group: %w link target %q", ErrMalformed, name)
	}
	return n, nil
}

// iommuGroupMembers returns the functions in the group, sorted.
func (h *Host) iommuGroupMembers(group int) ([]Addr, error) {
	ents, err := os.ReadDir(h.path("sys/kernel/iommu_groups", strconv.Itoa(group), "devices"))
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
	ents, err := os.ReadDir(h.path("sys/kernel/iommu_groups"))
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

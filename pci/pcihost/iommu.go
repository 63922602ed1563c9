package pcihost

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/uiod/uiod/pci"
)

// IOMMUGroupMembers returns the functions in an IOMMU group, sorted.
func (h *Host) IOMMUGroupMembers(group int) ([]pci.Addr, error) {
	ents, err := h.readDir(iommuGroupsDir + "/" + strconv.Itoa(group) + "/devices")
	if err != nil {
		return nil, fmt.Errorf("read IOMMU group %d: %w", group, err)
	}
	var out []pci.Addr
	for _, e := range ents {
		a, err := pci.ParseAddr(e.Name())
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

func compareAddr(a, b pci.Addr) int {
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

// iommuGroupOf reads function a's IOMMU group and the group's other members, checking
// them against each other: a function without an iommu_group link on a host that has IOMMU
// groups (and is not in vfio's no-IOMMU mode, where only vfio-pci's functions get one) is
// an error, since vfio-pci cannot open it, and so is a group that does not list the
// function. group is -1 when there is none; members leaves a out.
func (h *Host) iommuGroupOf(a pci.Addr, iommuOn bool, iommuErr error) (group int, members []pci.Addr, err error) {
	group, err = h.IOMMUGroup(a)
	if err != nil {
		return -1, nil, err
	}
	if group < 0 {
		switch {
		case iommuErr != nil:
			return -1, nil, fmt.Errorf("no iommu_group link, and the host's IOMMU groups cannot be read: %w", iommuErr)
		case iommuOn && !h.noIOMMUMode():
			return -1, nil, fmt.Errorf("no iommu_group link (%s), though the host has IOMMU groups: vfio-pci cannot open it",
				h.path(deviceRel(a, "iommu_group")))
		}
		return -1, nil, nil
	}
	all, err := h.IOMMUGroupMembers(group)
	if err != nil {
		return group, nil, err
	}
	found := false
	for _, m := range all {
		if m == a {
			found = true
		} else {
			members = append(members, m)
		}
	}
	if !found {
		return group, members, fmt.Errorf("iommu_group links to group %d, whose devices do not list it", group)
	}
	return group, members, nil
}

// noIOMMUMode reports whether vfio's unsafe no-IOMMU mode is on.
func (h *Host) noIOMMUMode() bool {
	b, err := h.ReadFile(noIOMMUParam, MaxAttrSize)
	return err == nil && strings.TrimSpace(string(b)) == "Y"
}

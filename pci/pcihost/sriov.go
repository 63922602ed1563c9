package pcihost

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/uiod/uiod/internal/clip"
	"github.com/uiod/uiod/pci"
)

// SRIOV is the SR-IOV state of a physical function, as its sysfs attributes show it.
type SRIOV struct {
	// TotalVFs is sriov_totalvfs: how many virtual functions the PF can have.
	TotalVFs int `json:"total_vfs"`
	// NumVFs is sriov_numvfs: how many it has now.
	NumVFs int `json:"num_vfs"`
	// VFs are the addresses of its virtual functions (the virtfnN links), in VF order.
	VFs []pci.Addr `json:"vfs"`
}

// SRIOV returns the SR-IOV state of function a; ok is false when it has no SR-IOV
// capability (no sriov_totalvfs attribute), which includes every VF.
func (h *Host) SRIOV(a pci.Addr) (s SRIOV, ok bool, err error) {
	s.VFs = []pci.Addr{}
	err = h.readAttr(a, "sriov_totalvfs", func(b []byte) (err error) { s.TotalVFs, err = parseCount(b); return })
	if errors.Is(err, os.ErrNotExist) {
		return s, false, nil
	}
	if err != nil {
		return s, true, err
	}
	if err := h.readAttr(a, "sriov_numvfs", func(b []byte) (err error) { s.NumVFs, err = parseCount(b); return }); err != nil {
		return s, true, err
	}
	for i := range s.NumVFs {
		vf, found, err := h.linkAddr(deviceRel(a, "virtfn"+strconv.Itoa(i)))
		if err != nil {
			return s, true, fmt.Errorf("virtfn%d: %w", i, err)
		}
		if !found {
			// The kernel adds the links after it raises sriov_numvfs: a scan in between
			// sees fewer VFs than the count.
			break
		}
		s.VFs = append(s.VFs, vf)
	}
	return s, true, nil
}

// PhysFn returns the physical function of a virtual function (its physfn link); ok is
// false for a function that is not a VF. Errors of SRIOV and PhysFn do not name a: the
// caller does.
func (h *Host) PhysFn(a pci.Addr) (pf pci.Addr, ok bool, err error) {
	pf, ok, err = h.linkAddr(deviceRel(a, "physfn"))
	if err != nil {
		return pci.Addr{}, false, fmt.Errorf("physfn: %w", err)
	}
	return pf, ok, nil
}

// linkAddr reads a symlink to a function's directory and parses its last element as an
// address; found is false when there is no link.
func (h *Host) linkAddr(rel string) (a pci.Addr, found bool, err error) {
	name, err := h.readLinkBase(rel)
	if err != nil || name == "" {
		return pci.Addr{}, false, err
	}
	a, err = pci.ParseAddr(name)
	if err != nil {
		return pci.Addr{}, false, fmt.Errorf("%w link target: %w", pci.ErrMalformed, err)
	}
	return a, true, nil
}

// parseCount parses a non-negative decimal count attribute (sriov_totalvfs).
func parseCount(b []byte) (int, error) {
	n, err := parseInt(b)
	if err != nil {
		return 0, err
	}
	if n < 0 || n > 0xffff {
		return 0, fmt.Errorf("%w value %d: not a VF count", pci.ErrMalformed, n)
	}
	return n, nil
}

// describeSRIOV fills in d's PhysFn and SRIOV.
func (h *Host) describeSRIOV(d *DeviceInfo) error {
	pf, isVF, err := h.PhysFn(d.Addr)
	if err != nil {
		return err
	}
	if isVF {
		d.PhysFn = &pf
	}
	s, ok, err := h.SRIOV(d.Addr)
	if ok {
		d.SRIOV = &s
	}
	return err
}

// planVFReset makes the reset of a quiesce plan for a virtual function (PhysFn set) a
// function-level reset: through reset_method when the kernel has it, so that no other
// method is tried.
func (h *Host) planVFReset(p *QuiescePlan) error {
	if p.PhysFn == nil || p.ResetPath == "" {
		return nil
	}
	b, err := h.ReadDeviceFile(p.Addr, "reset_method", MaxAttrSize)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: read reset_method: %w", p.Addr, err)
	}
	methods := strings.Fields(string(b))
	if !slices.Contains(methods, "flr") {
		return fmt.Errorf("%w: VF %s offers no function-level reset (reset_method %s)", ErrRefused, p.Addr, clip.Quote(string(b)))
	}
	p.ResetMethodPath, p.ResetMethod = h.path(deviceRel(p.Addr, "reset_method")), strings.Join(methods, " ")
	return nil
}

// resetWrites are the writes that reset the function of a quiesce plan: reset, or for a
// VF with reset_method, "flr" to it, reset, and reset_method as it was.
func (p *QuiescePlan) resetWrites() []Write {
	if p.ResetPath == "" {
		return nil
	}
	reset := Write{Path: p.ResetPath, Value: "1", Step: "reset"}
	if p.ResetMethodPath == "" {
		return []Write{reset}
	}
	return []Write{
		{Path: p.ResetMethodPath, Value: "flr", Step: "reset_method flr"},
		reset,
		{Path: p.ResetMethodPath, Value: p.ResetMethod, Step: "restore reset_method"},
	}
}

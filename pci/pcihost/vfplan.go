package pcihost

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/uiod/uiod/pci"
)

// OpVF is the Op of a plan that changes a physical function's number of VFs.
const OpVF = "vf"

// VFOptions change the checks PlanVFs and PlanRemoveVFs make.
type VFOptions struct {
	// Force creates VFs on a function that is not a network controller, and removes VFs
	// that are bound to a userspace driver or whose interfaces are active.
	Force bool
}

// vfChange is what a plan does to a PF's sriov_numvfs: from one count to another.
type vfChange struct{ from, to int }

// PlanVFs checks that the physical function pf can be given n virtual functions and
// returns the plan that writes n to its sriov_numvfs, touching nothing. pf must exist,
// be a network controller (unless opts.Force), have SR-IOV (sriov_totalvfs), be bound
// to a driver (the PF driver is what creates VFs), have no VFs now (the kernel takes a
// new count only from 0), and n must be 1 to sriov_totalvfs. A pf that has n VFs already
// gets no writes. Refusals wrap ErrRefused.
func (h *Host) PlanVFs(pf pci.Addr, n int, opts VFOptions) (*Plan, error) {
	s, drv, err := h.checkPF(pf, "create VFs on it", opts)
	if err != nil {
		return nil, err
	}
	switch {
	case n < 1:
		return nil, fmt.Errorf("%w: %d VFs: give 1 to %d (uiod vf remove %s removes them)", ErrRefused, n, s.TotalVFs, pf)
	case n > s.TotalVFs:
		return nil, fmt.Errorf("%w: %s supports at most %d VFs (sriov_totalvfs), not %d", ErrRefused, pf, s.TotalVFs, n)
	case s.NumVFs == n:
		return &Plan{Op: OpVF, Devices: []DevicePlan{{Addr: pf, From: drv, To: drv}}}, nil
	case s.NumVFs != 0:
		return nil, fmt.Errorf("%w: %s has %d VFs: the kernel changes the count only from 0, so remove them first (uiod vf remove %s), then create %d",
			ErrRefused, pf, s.NumVFs, pf, n)
	}
	return h.vfPlan(pf, drv, vfChange{from: 0, to: n}), nil
}

// PlanRemoveVFs checks that the VFs of pf can be removed and returns the plan that writes
// 0 to its sriov_numvfs, touching nothing. Unless opts.Force, a VF bound to a userspace
// driver (a uiod or another dataplane may be using it) or with an active interface is
// refused, naming it. A pf without VFs gets no writes.
func (h *Host) PlanRemoveVFs(pf pci.Addr, opts VFOptions) (*Plan, error) {
	s, drv, err := h.checkPF(pf, "remove its VFs", opts)
	if err != nil {
		return nil, err
	}
	if s.NumVFs == 0 {
		return &Plan{Op: OpVF, Devices: []DevicePlan{{Addr: pf, From: drv, To: drv}}}, nil
	}
	if !opts.Force {
		active, aerr := h.activeInterfaces()
		var refusals []error
		for _, vf := range s.VFs {
			d, err := h.deviceInfo(vf, active, aerr)
			if err != nil {
				return nil, fmt.Errorf("VF %w", err)
			}
			if d.IsUserspace() {
				refusals = append(refusals, fmt.Errorf("VF %s is bound to %s: a dataplane may be using it; stop it and unbind the VF, or use --force", vf, d.Driver))
			}
			if d.Active {
				refusals = append(refusals, errActive(vf, d.Interfaces))
			}
		}
		if len(refusals) > 0 {
			return nil, fmt.Errorf("%w: %w", ErrRefused, errors.Join(refusals...))
		}
	}
	return h.vfPlan(pf, drv, vfChange{from: s.NumVFs, to: 0}), nil
}

// checkPF runs the checks every VF plan shares and returns the PF's SR-IOV state and
// driver.
func (h *Host) checkPF(pf pci.Addr, op string, opts VFOptions) (SRIOV, string, error) {
	if !opts.Force {
		if err := h.CheckNetworkClass(pf, op); err != nil {
			return SRIOV{}, "", err
		}
	} else if err := h.requireDevice(pf); err != nil {
		return SRIOV{}, "", err
	}
	if vfPF, isVF, err := h.PhysFn(pf); err != nil {
		return SRIOV{}, "", fmt.Errorf("%s: %w", pf, err)
	} else if isVF {
		return SRIOV{}, "", fmt.Errorf("%w: %s is a virtual function of %s, not a physical function", ErrRefused, pf, vfPF)
	}
	s, ok, err := h.SRIOV(pf)
	if err != nil {
		return SRIOV{}, "", fmt.Errorf("%s: %w", pf, err)
	}
	if !ok {
		return SRIOV{}, "", fmt.Errorf("%w: %s has no SR-IOV capability (no %s)", ErrRefused, pf, h.path(deviceRel(pf, "sriov_totalvfs")))
	}
	drv, err := h.Driver(pf)
	if err != nil {
		return SRIOV{}, "", err
	}
	if drv == "" {
		return SRIOV{}, "", fmt.Errorf("%w: %s has no driver: the PF's driver (igb, ixgbe) creates its VFs; bind it first (uiod unbind --restore %s)", ErrRefused, pf, pf)
	}
	return s, drv, nil
}

// vfPlan is the one-write plan that moves pf's sriov_numvfs from c.from to c.to.
func (h *Host) vfPlan(pf pci.Addr, drv string, c vfChange) *Plan {
	step := fmt.Sprintf("create %d VFs", c.to)
	if c.to == 0 {
		step = fmt.Sprintf("remove %d VFs", c.from)
	}
	w := Write{Path: h.path(deviceRel(pf, "sriov_numvfs")), Value: strconv.Itoa(c.to), Step: step}
	return &Plan{Op: OpVF, Devices: []DevicePlan{{Addr: pf, From: drv, To: drv, Writes: []Write{w}, vfs: &c}}}
}

// vfNote is the dry-run heading of a VF change of function a.
func (c *vfChange) note(a pci.Addr, drv string) string {
	return fmt.Sprintf("# %s (%s): %d VFs -> %d VFs", a, drv, c.from, c.to)
}

// checkVFs verifies, after the write, that the PF reports the new count.
func (h *Host) checkVFs(d *DevicePlan) error {
	s, _, err := h.SRIOV(d.Addr)
	if err != nil {
		return err
	}
	if s.NumVFs != d.vfs.to {
		return fmt.Errorf("sriov_numvfs is %d, want %d", s.NumVFs, d.vfs.to)
	}
	// The kernel adds the virtfnN links before the write returns.
	if len(s.VFs) != d.vfs.to {
		return fmt.Errorf("sriov_numvfs is %d but %s has %d virtfn links", s.NumVFs, h.devDir(d.Addr), len(s.VFs))
	}
	return nil
}

// rollbackVFs puts the PF's VF count back to what it was before the plan: through 0,
// since the kernel changes a non-zero count only to 0.
func (h *Host) rollbackVFs(d *DevicePlan) error {
	s, _, err := h.SRIOV(d.Addr)
	if err != nil {
		return err
	}
	if s.NumVFs == d.vfs.from {
		return nil
	}
	p := h.path(deviceRel(d.Addr, "sriov_numvfs"))
	var errs []string
	if s.NumVFs != 0 {
		if err := h.write(p, "0"); err != nil {
			errs = append(errs, "remove VFs: "+err.Error())
		}
	}
	if d.vfs.from != 0 && len(errs) == 0 {
		if err := h.write(p, strconv.Itoa(d.vfs.from)); err != nil {
			errs = append(errs, fmt.Sprintf("create %d VFs again: %v", d.vfs.from, err))
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

package pcihost

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/uiod/uiod/pci"
)

// UnbindOptions change what PlanUnbind does.
type UnbindOptions struct {
	// Restore gives each function back to the driver recorded when uiod bound it, or lets
	// the kernel pick one (drivers_probe) if there is no record.
	Restore bool
	// Force unbinds functions whose interfaces are active (have routes).
	Force bool
}

// PlanUnbind returns the plan that unbinds each function from its driver and clears its
// driver_override, and with opts.Restore binds the original driver again. Nothing is
// touched. Unless opts.Force, a function with an active interface, or with interfaces
// when the route tables cannot be read, is refused (ErrRefused). A function with no driver, no override and nothing to restore gets no writes.
func (h *Host) PlanUnbind(addrs []pci.Addr, opts UnbindOptions) (*Plan, error) {
	if len(addrs) == 0 {
		return nil, errors.New("no PCI addresses given")
	}
	addrs = dedupe(addrs)
	p := &Plan{Op: "unbind"}
	err := h.eachDevice(addrs, func(d DeviceInfo, routesErr error, refuse func(error)) error {
		drv, err := h.Driver(d.Addr)
		if err != nil {
			return err
		}
		refuse(unbindRefusal(d, routesErr, opts))
		dp, err := h.planDeviceUnbind(d.Addr, drv, opts.Restore)
		if err != nil {
			return err
		}
		if dp.To != "" && dp.To != drv {
			h.planLoad(p, dp.To)
		}
		p.Devices = append(p.Devices, dp)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := h.checkLoad(p.Load); err != nil {
		return nil, err
	}
	return p, nil
}

// unbindRefusal says why the function d may not be unbound, or nil: unless opts.Force, an
// active interface, or an interface when the route tables could not be read (aerr).
func unbindRefusal(d DeviceInfo, aerr error, opts UnbindOptions) error {
	switch {
	case opts.Force:
		return nil
	case d.Active:
		return errActive(d.Addr, d.Interfaces)
	case len(d.Interfaces) > 0 && aerr != nil:
		// Fail closed: without the route tables the interface may be carrying traffic.
		return fmt.Errorf("%s: cannot tell whether interface %s is active: %v (use --force to unbind it anyway)",
			d.Addr, strings.Join(d.Interfaces, ", "), aerr)
	}
	return nil
}

// planLoad adds driver to the modules p loads first if its driver directory is missing.
func (h *Host) planLoad(p *Plan, driver string) {
	if _, err := h.stat(driverRel(driver)); errors.Is(err, os.ErrNotExist) && !slices.Contains(p.Load, driver) {
		p.Load = append(p.Load, driver)
	}
}

// restoreKind is what an unbind leaves a function on.
type restoreKind int

const (
	// restoreOff: no --restore, the function is left without a driver.
	restoreOff restoreKind = iota
	// restoreCurrent: the recorded driver is the one bound now; nothing is unbound.
	restoreCurrent
	// restoreNone: the record says the function had no driver before uiod bound it.
	restoreNone
	// restoreRecorded: the recorded driver is bound again.
	restoreRecorded
	// restoreProbe: there is no record, so the kernel picks a driver (drivers_probe).
	restoreProbe
)

// unbindRestore reads the record of function a, bound now to drv, and says what an
// unbind with or without restore gives it back.
func (h *Host) unbindRestore(a pci.Addr, drv string, restore bool) (restoreKind, BindState, error) {
	if !restore {
		return restoreOff, BindState{}, nil
	}
	st, recorded, err := h.State(a)
	switch {
	case err != nil:
		return 0, BindState{}, err
	case !recorded:
		return restoreProbe, st, nil
	case st.Driver == "":
		return restoreNone, st, nil
	case st.Driver == drv:
		return restoreCurrent, st, nil
	}
	return restoreRecorded, st, nil
}

// planDeviceUnbind plans the writes that take function a off drv and, if restore, give it
// back what it had before uiod bound it.
func (h *Host) planDeviceUnbind(a pci.Addr, drv string, restore bool) (DevicePlan, error) {
	ov, err := h.readOverride(a)
	if err != nil {
		return DevicePlan{}, fmt.Errorf("%s: %w", a, err)
	}
	kind, st, err := h.unbindRestore(a, drv, restore)
	if err != nil {
		return DevicePlan{}, err
	}
	dp := DevicePlan{Addr: a, From: drv, Verify: true}
	if drv != "" && kind != restoreCurrent {
		dp.Writes = append(dp.Writes, Write{Path: h.path(driverRel(drv, "unbind")), Value: a.String(), Step: "unbind from " + drv})
	}
	// The override goes back to what it was before uiod (usually none). The kernel
	// binds only the override's driver, so an override naming another driver than
	// the one to restore is set after that driver is bound, and the one set now
	// (uiod's) is cleared before.
	clearOv := Write{Path: h.path(deviceRel(a, "driver_override")), Value: "\n", Step: "clear driver_override"}
	ovWrite := clearOv
	if st.Override != "" {
		ovWrite.Value, ovWrite.Step = st.Override, "restore driver_override"
	}
	ovLate := st.Override != "" && st.Driver != "" && st.Override != st.Driver
	switch {
	case ov != st.Override && !ovLate:
		dp.Writes = append(dp.Writes, ovWrite)
	case ovLate && ov != "" && kind == restoreRecorded:
		dp.Writes = append(dp.Writes, clearOv)
	}
	switch kind {
	case restoreCurrent:
		dp.To = drv
		dp.DropState = true
	case restoreNone:
		dp.DropState = true
	case restoreRecorded:
		dp.Writes = append(dp.Writes, Write{Path: h.path(driverRel(st.Driver, "bind")), Value: a.String(), Step: "bind to " + st.Driver})
		dp.To = st.Driver
		dp.DropState = true
	case restoreProbe:
		dp.Writes = append(dp.Writes, Write{Path: h.path(driversProbe), Value: a.String(), Step: "probe drivers"})
		dp.Verify = false
	}
	if ov != st.Override && ovLate {
		dp.Writes = append(dp.Writes, ovWrite)
	}
	return dp, nil
}

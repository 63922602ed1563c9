package pci

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
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
func (h *Host) PlanUnbind(addrs []Addr, opts UnbindOptions) (*Plan, error) {
	if len(addrs) == 0 {
		return nil, errors.New("no PCI addresses given")
	}
	addrs = dedupe(addrs)
	p := &Plan{Op: "unbind"}
	active, aerr := h.activeInterfaces()
	var refusals []error
	for _, a := range addrs {
		d, err := h.deviceInfo(a, active, aerr)
		if err != nil {
			return nil, err
		}
		drv, err := h.Driver(a)
		if err != nil {
			return nil, err
		}
		switch {
		case opts.Force:
		case d.Active:
			refusals = append(refusals, errActive(a, d.Interfaces))
		case len(d.Interfaces) > 0 && aerr != nil:
			// Fail closed: without the route tables the interface may be carrying traffic.
			refusals = append(refusals, fmt.Errorf("%s: cannot tell whether interface %s is active: %v (use --force to unbind it anyway)",
				a, strings.Join(d.Interfaces, ", "), aerr))
		}
		ov, err := h.readOverride(a)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", a, err)
		}
		dp := DevicePlan{Addr: a, From: drv, Verify: true}
		var target string
		var st BindState
		var recorded bool
		if opts.Restore {
			st, recorded, err = h.State(a)
			if err != nil {
				return nil, err
			}
			target = st.Driver
		}
		restoreToCurrent := opts.Restore && recorded && target != "" && target == drv
		if drv != "" && !restoreToCurrent {
			dp.Writes = append(dp.Writes, Write{Path: h.path(driverRel(drv, "unbind")), Value: a.String(), Step: "unbind from " + drv})
		}
		// The override goes back to what it was before uiod (usually none). The kernel
		// binds only the override's driver, so an override naming another driver than
		// the one to restore is set after that driver is bound.
		var restoreOv string
		if recorded {
			restoreOv = st.Override
		}
		ovWrite := Write{Path: h.path(deviceRel(a, "driver_override")), Value: "\n", Step: "clear driver_override"}
		if restoreOv != "" {
			ovWrite = Write{Path: ovWrite.Path, Value: restoreOv, Step: "restore driver_override"}
		}
		ovLate := restoreOv != "" && target != "" && restoreOv != target
		if ov != restoreOv && !ovLate {
			dp.Writes = append(dp.Writes, ovWrite)
		}
		switch {
		case !opts.Restore:
		case restoreToCurrent:
			dp.To = drv
			dp.DropState = true
		case recorded && target == "":
			dp.DropState = true // it had no driver before uiod bound it
		case recorded:
			if _, err := h.stat(driverRel(target)); errors.Is(err, os.ErrNotExist) && !slices.Contains(p.Load, target) {
				p.Load = append(p.Load, target)
			}
			dp.Writes = append(dp.Writes, Write{Path: h.path(driverRel(target, "bind")), Value: a.String(), Step: "bind to " + target})
			dp.To = target
			dp.DropState = true
		default:
			dp.Writes = append(dp.Writes, Write{Path: h.path(driversProbe), Value: a.String(), Step: "probe drivers"})
			dp.Verify = false
		}
		if ov != restoreOv && ovLate {
			dp.Writes = append(dp.Writes, ovWrite)
		}
		p.Devices = append(p.Devices, dp)
	}
	if len(refusals) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrRefused, errors.Join(refusals...))
	}
	if err := h.checkLoad(p.Load); err != nil {
		return nil, err
	}
	return p, nil
}

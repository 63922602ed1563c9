package pcihost

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/uiod/uiod/pci"
)

// BindOptions change the checks PlanBind makes.
type BindOptions struct {
	// Force binds functions whose interfaces are active (have routes), and functions
	// that are not network controllers (see CheckNetworkClass).
	Force bool
	// NoIOMMU enables vfio's unsafe no-IOMMU mode when the host has no IOMMU groups.
	NoIOMMU bool
}

// WarnUIO is the warning for a bind to uio_pci_generic.
const WarnUIO = "uio_pci_generic gives the device no DMA protection: while bound, the NIC can " +
	"write to any memory, and if uiod dies without resetting it, it keeps writing to pages the " +
	"kernel has given to someone else. Prefer vfio-pci wherever there is an IOMMU."

// WarnNoIOMMU is the warning for enabling vfio's no-IOMMU mode.
const WarnNoIOMMU = "ENABLING UNSAFE NO-IOMMU MODE: vfio-pci will hand out devices with no DMA " +
	"isolation; a device (or a bug in its driver) can read and write ALL of the host's memory, " +
	"and the kernel is tainted. Use it only on a machine without an IOMMU that you can afford to lose."

// PlanBind checks that every function can be bound to driver and returns the plan that
// would do it, touching nothing. Each function must exist (else ErrNoDevice), be a
// network controller and not be active unless opts.Force; for vfio-pci the host must have
// IOMMU groups (or opts.NoIOMMU) and each function's group must be viable: every other
// member unbound, on vfio-pci, a bridge, or in addrs. Refusals wrap ErrRefused and name the functions at fault. A function
// already on driver gets no writes.
func (h *Host) PlanBind(addrs []pci.Addr, driver string, opts BindOptions) (*Plan, error) {
	if err := ValidDriverName(driver); err != nil {
		return nil, err
	}
	if len(addrs) == 0 {
		return nil, errors.New("no PCI addresses given")
	}
	addrs = dedupe(addrs)
	p := &Plan{Op: "bind"}
	if _, err := h.stat(driverRel(driver)); errors.Is(err, os.ErrNotExist) {
		p.Load = append(p.Load, driver)
	} else if err != nil {
		return nil, fmt.Errorf("driver %s: %w", driver, err)
	}
	if err := h.checkLoad(p.Load); err != nil {
		return nil, err
	}
	switch driver {
	case DriverUIO:
		p.Warnings = append(p.Warnings, WarnUIO)
	case DriverVFIO:
		if err := h.planIOMMU(p, opts); err != nil {
			return nil, err
		}
	}
	err := h.eachDevice(addrs, func(d DeviceInfo, _ error, refuse func(error)) error {
		if d.Err != nil {
			return fmt.Errorf("cannot bind: %w", d.Err)
		}
		if d.Driver == driver {
			p.Devices = append(p.Devices, DevicePlan{Addr: d.Addr, From: d.Driver, To: driver})
			return nil
		}
		if !d.Class.IsNetwork() && !opts.Force {
			refuse(errNotNetwork(d.Addr, d.Class, d.ClassName, d.Driver, "bind it to "+driver))
		}
		if d.Active && !opts.Force {
			refuse(errActive(d.Addr, d.Interfaces))
		}
		if driver == DriverVFIO && !p.noIOMMU {
			refuse(h.checkViable(d, addrs))
		}
		dp, err := h.planDeviceBind(d, driver)
		if err != nil {
			return err
		}
		p.Devices = append(p.Devices, dp)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// eachDevice describes each function of addrs, reading the route tables once, and
// hands it to check with the tables' read error (nil if they were read) and refuse,
// which notes a reason to refuse the plan (nil is none). An error from a description
// or from check ends the walk and is returned; otherwise the reasons noted, if any, are
// returned together, wrapping ErrRefused.
func (h *Host) eachDevice(addrs []pci.Addr, check func(d DeviceInfo, routesErr error, refuse func(error)) error) error {
	active, aerr := h.activeInterfaces()
	var refusals []error
	refuse := func(reason error) {
		if reason != nil {
			refusals = append(refusals, reason)
		}
	}
	for _, a := range addrs {
		d, err := h.deviceInfo(a, active, aerr)
		if err != nil {
			return err
		}
		if err := check(d, aerr, refuse); err != nil {
			return err
		}
	}
	if len(refusals) > 0 {
		return fmt.Errorf("%w: %w", ErrRefused, errors.Join(refusals...))
	}
	return nil
}

// planIOMMU checks that vfio-pci can work on this host, and plans enabling no-IOMMU mode
// if it was asked for and is needed.
func (h *Host) planIOMMU(p *Plan, opts BindOptions) error {
	on, err := h.iommuEnabled()
	if err != nil {
		return fmt.Errorf("read IOMMU groups: %w", err)
	}
	if on {
		if opts.NoIOMMU {
			p.Warnings = append(p.Warnings, "--noiommu-mode ignored: the host has an IOMMU")
		}
		return nil
	}
	if !opts.NoIOMMU {
		return fmt.Errorf("%w: vfio-pci needs an IOMMU, but %s has no IOMMU groups: enable the IOMMU "+
			"(firmware VT-d/AMD-Vi and intel_iommu=on or amd_iommu=on on the kernel command line), bind to "+
			"uio_pci_generic, or pass --noiommu-mode to use vfio without DMA isolation (unsafe)",
			ErrRefused, h.path(iommuGroupsDir))
	}
	p.Warnings = append(p.Warnings, WarnNoIOMMU)
	p.noIOMMU = true // no groups to check
	param := h.path(noIOMMUParam)
	b, err := h.ReadFile(noIOMMUParam, MaxAttrSize)
	switch {
	case err == nil && strings.TrimSpace(string(b)) == "Y":
		return nil // already on
	case err == nil:
	case errors.Is(err, os.ErrNotExist) && len(p.Load) > 0:
		// vfio is not loaded yet; the parameter appears with it (or Apply fails).
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("vfio has no %s: this kernel was built without CONFIG_VFIO_NOIOMMU, "+
			"so vfio-pci cannot work without an IOMMU here; use uio_pci_generic", param)
	default:
		return fmt.Errorf("read %s: %w", param, err)
	}
	p.Setup = append(p.Setup, Write{Path: param, Value: "1", Step: "enable vfio no-IOMMU mode"})
	p.undoSetup = append(p.undoSetup, Write{Path: param, Value: "0", Step: "disable vfio no-IOMMU mode again"})
	return nil
}

// checkViable refuses a function whose IOMMU group holds a member that is bound to a driver
// other than vfio-pci or pci-stub (which the kernel allows in a viable group: neither lets
// the host use the device for DMA), is not a bridge, and is not being bound along with it.
func (h *Host) checkViable(d DeviceInfo, addrs []pci.Addr) error {
	if d.IOMMUGroup < 0 {
		return fmt.Errorf("%s has no IOMMU group, so vfio-pci cannot take it", d.Addr)
	}
	var bad []string
	for _, m := range d.IOMMUGroupMembers {
		if slices.Contains(addrs, m) {
			continue
		}
		drv, err := h.Driver(m)
		if err != nil {
			return fmt.Errorf("IOMMU group %d member %w", d.IOMMUGroup, err)
		}
		if drv == "" || drv == DriverVFIO || drv == DriverPCIStub {
			continue
		}
		var class pci.Class
		err = h.readAttr(m, "class", func(b []byte) (err error) { class, err = parseClass(b); return })
		if err != nil {
			return fmt.Errorf("IOMMU group %d member %s: %w", d.IOMMUGroup, m, err)
		}
		if class.IsBridge() {
			continue
		}
		bad = append(bad, fmt.Sprintf("%s (bound to %s)", m, drv))
	}
	if len(bad) > 0 {
		return fmt.Errorf("IOMMU group %d of %s is not viable: %s; bind them to vfio-pci too (name them on the command line) or unbind them",
			d.IOMMUGroup, d.Addr, strings.Join(bad, ", "))
	}
	return nil
}

// planDeviceBind lists the writes that move one function to driver.
func (h *Host) planDeviceBind(d DeviceInfo, driver string) (DevicePlan, error) {
	a := d.Addr
	ov, err := h.readOverride(a)
	if err != nil {
		return DevicePlan{}, fmt.Errorf("%s: %w", a, err)
	}
	dp := DevicePlan{Addr: a, From: d.Driver, To: driver, Verify: true, override: ov}
	st, ok, err := h.State(a)
	if err != nil {
		return DevicePlan{}, err
	}
	switch {
	case !ok:
		dp.Record = &BindState{Addr: a, Driver: d.Driver, Override: ov, BoundTo: driver}
	case st.Driver == driver:
		dp.DropState = true // back on the original driver: only the override is left to restore
	}
	ovPath := h.path(deviceRel(a, "driver_override"))
	dp.Writes = append(dp.Writes, Write{Path: ovPath, Value: driver, Step: "set driver_override"})
	if d.Driver != "" {
		dp.Writes = append(dp.Writes, Write{Path: h.path(driverRel(d.Driver, "unbind")), Value: a.String(),
			Step: "unbind from " + d.Driver})
	}
	dp.Writes = append(dp.Writes, Write{Path: h.path(driversProbe), Value: a.String(), Step: "probe " + driver})
	if dp.DropState && st.Override != driver {
		// The record goes, so put back the override it kept, as unbind --restore does.
		// The function stays bound: the kernel reads the override only when it probes.
		restore := Write{Path: ovPath, Value: "\n", Step: "clear driver_override"}
		if st.Override != "" {
			restore.Value, restore.Step = st.Override, "restore driver_override"
		}
		dp.Writes = append(dp.Writes, restore)
	}
	return dp, nil
}

func dedupe(addrs []pci.Addr) []pci.Addr {
	var out []pci.Addr
	for _, a := range addrs {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

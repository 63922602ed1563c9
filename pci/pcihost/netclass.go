package pcihost

import (
	"fmt"

	"github.com/uiod/uiod/pci"
)

// CheckNetworkClass refuses, with an error wrapping ErrRefused, a function whose PCI
// class is not a network controller (base class 0x02). uiod's drivers are NIC drivers:
// taking a disk controller, a GPU or a USB host from its driver cuts the host off it.
// op says what would be done to the function ("bind it to vfio-pci", "quiesce it"); the
// error names the function, its class (with its pci.ids name when the database has it)
// and the driver that would lose it, and says that --force overrides. Bind, quiesce and
// whatever else takes functions for userspace (creating VFs) call it before they plan.
func (h *Host) CheckNetworkClass(a pci.Addr, op string) error {
	if err := h.requireDevice(a); err != nil {
		return err
	}
	var class pci.Class
	if err := h.readAttr(a, "class", func(b []byte) (err error) { class, err = parseClass(b); return }); err != nil {
		return fmt.Errorf("%s: %w", a, err)
	}
	if class.IsNetwork() {
		return nil
	}
	drv, err := h.Driver(a)
	if err != nil {
		return err
	}
	return fmt.Errorf("%w: %w", ErrRefused, errNotNetwork(a, class, h.names().class(class), drv, op))
}

// errNotNetwork is the refusal of op on function a of class (named name, "" if unknown),
// bound to drv ("" for none).
func errNotNetwork(a pci.Addr, class pci.Class, name, drv, op string) error {
	what := "a function of class " + class.String()
	if name != "" {
		what = fmt.Sprintf("a %s (class %s)", name, class)
	}
	owner := "it has no driver now"
	if drv != "" {
		owner = "it would be taken from its driver " + drv
	}
	return fmt.Errorf("%s is %s, not a network controller (class 02): to %s, %s; use --force if you mean it",
		a, what, op, owner)
}

// requireDevice fails, wrapping ErrNoDevice, when the host has no function a.
func (h *Host) requireDevice(a pci.Addr) error {
	ok, err := h.exists(a)
	if err != nil {
		return fmt.Errorf("%s: %w", a, err)
	}
	if !ok {
		return fmt.Errorf("%w %s (no %s)", ErrNoDevice, a, h.devDir(a))
	}
	return nil
}

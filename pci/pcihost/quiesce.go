package pcihost

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/uiod/uiod/pci"
)

// QuiescePlan is what Quiesce does to one function: clear bus mastering in its command
// register through the sysfs config file, then reset it through the sysfs reset
// attribute. It needs nothing from whoever programmed the device, so it stops a NIC that
// a process which died (SIGKILL, OOM, crash) left writing to memory.
type QuiescePlan struct {
	Addr pci.Addr
	// Driver is the function's driver: a userspace driver or none.
	Driver string
	// Command is the command register now; NewCommand is it with bus mastering off.
	Command, NewCommand uint16
	// ConfigPath is the function's sysfs config file.
	ConfigPath string
	// ResetPath is the function's sysfs reset attribute, "" if the kernel offers none:
	// then only bus mastering is turned off.
	ResetPath string
	// PhysFn is the physical function when Addr is a virtual function, nil otherwise.
	PhysFn *pci.Addr
	// ResetMethodPath is the sysfs reset_method attribute of a VF whose kernel has one
	// (Linux 5.15 and later), "" otherwise. The reset of a VF is its function-level
	// reset: Apply writes "flr" to it before the reset and ResetMethod, what it held
	// before, after.
	ResetMethodPath, ResetMethod string
}

// String renders the plan for a dry run: the exact writes.
func (p *QuiescePlan) String() string {
	var b strings.Builder
	drv := p.Driver
	if drv == "" {
		drv = "no driver"
	}
	fmt.Fprintf(&b, "# %s (%s): command %#04x -> %#04x (bus master off)\n", p.Addr, drv, p.Command, p.NewCommand)
	fmt.Fprintf(&b, "write %#04x (2 bytes, little endian) at offset %#x of %s\n", p.NewCommand, pci.CfgCommand, p.ConfigPath)
	switch {
	case p.ResetPath == "":
		fmt.Fprintf(&b, "# %s has no reset attribute: bus mastering off only\n", p.Addr)
	case p.ResetMethodPath != "":
		fmt.Fprintf(&b, "# %s is a VF of %s: function-level reset\n", p.Addr, p.PhysFn)
		for _, w := range p.resetWrites() {
			fmt.Fprintf(&b, "%s\n", w)
		}
	default:
		if p.PhysFn != nil {
			fmt.Fprintf(&b, "# %s is a VF of %s: function-level reset (the kernel's only reset of a VF)\n", p.Addr, p.PhysFn)
		}
		fmt.Fprintf(&b, "%s\n", Write{Path: p.ResetPath, Value: "1"})
	}
	return b.String()
}

// PlanQuiesce checks that the function exists and is not a host driver's (quiescing a
// function the host uses would cut it off), reads its command register and returns the
// plan, touching nothing.
func (h *Host) PlanQuiesce(a pci.Addr) (*QuiescePlan, error) {
	if err := h.requireDevice(a); err != nil {
		return nil, err
	}
	drv, err := h.Driver(a)
	if err != nil {
		return nil, err
	}
	if drv != "" && !IsUserspaceDriver(drv) && drv != DriverPCIStub {
		return nil, fmt.Errorf("%w: %s is bound to the host driver %s: quiesce stops only functions left to userspace (or to no driver)", ErrRefused, a, drv)
	}
	pf, isVF, err := h.PhysFn(a)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", a, err)
	}
	cmd, err := h.readCommand(a, isVF)
	if err != nil {
		return nil, err
	}
	p := &QuiescePlan{Addr: a, Driver: drv, Command: cmd, NewCommand: cmd &^ pci.CmdBusMaster, ConfigPath: h.path(deviceRel(a, "config"))}
	if isVF {
		p.PhysFn = &pf
	}
	has, err := h.HasDeviceFile(a, "reset")
	if err != nil {
		return nil, fmt.Errorf("%s: reset: %w", a, err)
	}
	if has {
		p.ResetPath = h.path(deviceRel(a, "reset"))
	}
	if err := h.planVFReset(p); err != nil {
		return nil, err
	}
	return p, nil
}

// ApplyQuiesce turns bus mastering off (re-reading the command register, so no other bit
// changes), then resets the function if it can be reset. The kernel's reset saves the
// config space before and restores it after, so bus mastering stays off.
func (h *Host) ApplyQuiesce(p *QuiescePlan) error {
	f, err := h.OpenDeviceFile(p.Addr, "config", os.O_RDWR)
	if err != nil {
		return fmt.Errorf("quiesce %s: %w", p.Addr, err)
	}
	defer f.Close()
	var b [2]byte
	if err := readCommandAt(f, b[:], p.PhysFn != nil); err != nil {
		return fmt.Errorf("quiesce %s: %w", p.Addr, err)
	}
	binary.LittleEndian.PutUint16(b[:], binary.LittleEndian.Uint16(b[:])&^pci.CmdBusMaster)
	if n, err := f.WriteAt(b[:], pci.CfgCommand); err != nil || n != 2 {
		return fmt.Errorf("quiesce %s: bus master off: write %s: %v", p.Addr, f.Name(), err)
	}
	ws := p.resetWrites()
	for i, w := range ws {
		if err := h.write(w.Path, w.Value); err != nil {
			err = fmt.Errorf("quiesce %s: %s: %w", p.Addr, w.Step, err)
			if i > 0 && i < len(ws)-1 { // reset_method was changed: put it back
				last := ws[len(ws)-1]
				if rerr := h.write(last.Path, last.Value); rerr != nil {
					err = errors.Join(err, fmt.Errorf("%s: %w", last.Step, rerr))
				}
			}
			return err
		}
	}
	return nil
}

// Quiesce plans and applies the quiesce of one function.
func (h *Host) Quiesce(a pci.Addr) (*QuiescePlan, error) {
	p, err := h.PlanQuiesce(a)
	if err != nil {
		return nil, err
	}
	return p, h.ApplyQuiesce(p)
}

// readCommand reads a function's command register from its sysfs config file.
func (h *Host) readCommand(a pci.Addr, isVF bool) (uint16, error) {
	f, err := h.OpenDeviceFile(a, "config", os.O_RDONLY)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", a, err)
	}
	defer f.Close()
	var b [2]byte
	if err := readCommandAt(f, b[:], isVF); err != nil {
		return 0, fmt.Errorf("%s: %w", a, err)
	}
	return binary.LittleEndian.Uint16(b[:]), nil
}

// readCommandAt reads the command register into b, refusing a function that does not
// respond (all ones, as a read of a vanished device returns): its vendor id, or for a
// virtual function, whose vendor and device id registers read ffff by the SR-IOV
// specification (its ids are in the PF's SR-IOV capability), its command register.
func readCommandAt(f *os.File, b []byte, isVF bool) error {
	var id [2]byte
	if n, err := f.ReadAt(id[:], pci.CfgVendorID); err != nil || n != 2 {
		return fmt.Errorf("read %s: %w: no vendor id", f.Name(), pci.ErrTruncated)
	}
	if id == [2]byte{0xff, 0xff} && !isVF {
		return fmt.Errorf("%s: the function does not respond (vendor id ffff)", f.Name())
	}
	if n, err := f.ReadAt(b, pci.CfgCommand); err != nil || n != 2 {
		return fmt.Errorf("read %s: %w: no command register", f.Name(), pci.ErrTruncated)
	}
	if isVF && b[0] == 0xff && b[1] == 0xff {
		return fmt.Errorf("%s: the virtual function does not respond (command register ffff)", f.Name())
	}
	return nil
}

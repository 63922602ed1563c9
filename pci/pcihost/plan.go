package pcihost

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/uiod/uiod/pci"
)

// ErrRefused is wrapped by errors of a plan that refuses to touch a function as asked:
// it is active, its IOMMU group is not viable, or there is no IOMMU. Nothing was written.
var ErrRefused = errors.New("refused")

// Write is one value a plan writes to one host file.
type Write struct {
	// Path is the full path of the file, including the host root.
	Path string
	// Value is the exact bytes written.
	Value string
	// Step names the step in errors: "set driver_override", "unbind from ixgbe", ...
	Step string
}

// String formats the write as a shell command that would make it.
func (w Write) String() string {
	if w.Value == "\n" {
		return "echo > " + w.Path
	}
	return fmt.Sprintf("echo -n %s > %s", shellQuote(w.Value), w.Path)
}

// shellQuote quotes s for a POSIX shell: as is if it is made of safe characters (driver
// names, PCI addresses), else in single quotes.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Plan is the complete list of changes a bind or unbind makes, worked out and checked
// before anything is touched. Print it for a dry run, or give it to Host.Apply.
type Plan struct {
	// Op is "bind" or "unbind".
	Op string
	// Load are the kernel modules to load before any write, because their driver
	// directory is missing.
	Load []string
	// Setup are writes made once before the functions' (enabling no-IOMMU mode).
	Setup []Write
	// Devices are the per-function steps, in order.
	Devices []DevicePlan
	// Warnings should be shown to the user whether or not the plan is applied.
	Warnings []string
	// noIOMMU is set when vfio-pci is to run in no-IOMMU mode.
	noIOMMU bool
	// undoSetup[i] puts back what Setup[i] changed; a failed bind makes them in reverse.
	undoSetup []Write
}

// DevicePlan is the part of a plan about one function.
type DevicePlan struct {
	Addr pci.Addr
	// From is the function's driver now, "" if none.
	From string
	// To is the driver the function is to end up with. "" with Verify set means no
	// driver; "" without Verify means whatever the kernel picks.
	To string
	// Writes are made in order; none for a function that is already as asked.
	Writes []Write
	// Verify checks the driver link names To after the writes.
	Verify bool
	// Record is the state to save before the first write, nil if a state file exists.
	Record *BindState
	// DropState removes the state file after the writes succeed.
	DropState bool
	// override is driver_override before the plan, restored on rollback.
	override string
	// vfs is set for a change of a PF's VF count (Op OpVF), checked and rolled back
	// through sriov_numvfs instead of the driver link.
	vfs *vfChange
}

// Writes returns every write of the plan, in the order Apply makes them.
func (p *Plan) Writes() []Write {
	out := append([]Write(nil), p.Setup...)
	for _, d := range p.Devices {
		out = append(out, d.Writes...)
	}
	return out
}

// String renders the plan for a dry run: the modules to load, the state files, and the
// exact writes.
func (p *Plan) String() string {
	var b strings.Builder
	for _, m := range p.Load {
		fmt.Fprintf(&b, "modprobe %s\n", m)
	}
	for _, w := range p.Setup {
		fmt.Fprintf(&b, "%s\n", w)
	}
	for _, d := range p.Devices {
		to := d.To
		if to == "" {
			to = "(no driver)"
			if !d.Verify {
				to = "(kernel's choice)"
			}
		}
		from := d.From
		if from == "" {
			from = "(no driver)"
		}
		if d.vfs != nil {
			fmt.Fprintf(&b, "%s\n", d.vfs.note(d.Addr, from))
		}
		if len(d.Writes) == 0 && !d.DropState {
			fmt.Fprintf(&b, "# %s: already on %s, nothing to do\n", d.Addr, from)
			continue
		}
		if d.vfs == nil {
			fmt.Fprintf(&b, "# %s: %s -> %s\n", d.Addr, from, to)
		}
		if d.Record != nil {
			fmt.Fprintf(&b, "# record original driver %q in %s\n", d.Record.Driver, d.stateNote())
		}
		for _, w := range d.Writes {
			fmt.Fprintf(&b, "%s\n", w)
		}
		if d.DropState {
			fmt.Fprintf(&b, "# remove %s\n", d.stateNote())
		}
	}
	return b.String()
}

func (d *DevicePlan) stateNote() string { return d.Addr.String() + ".json under run/uiod" }

// Apply carries out a plan made by PlanBind or PlanUnbind. A bind that fails at any step
// is rolled back — the override cleared, the original driver bound again — for the failing
// function and every function the plan already moved, no-IOMMU mode is turned off again if
// the plan turned it on, and the error names the function and the step. An unbind is not rolled back (its functions end up unbound or on their
// recorded driver); its state files stay until a restore succeeds.
func (h *Host) Apply(p *Plan) error {
	for _, m := range p.Load {
		if err := h.modprobe(m); err != nil {
			return fmt.Errorf("load driver %s: %w", m, err)
		}
		if _, err := h.stat(driverRel(m)); err != nil {
			return fmt.Errorf("load driver %s: modprobe succeeded but %s is missing", m, h.driverDir(m))
		}
	}
	for i, w := range p.Setup {
		if err := h.write(w.Path, w.Value); err != nil {
			err = fmt.Errorf("%s: %w", w.Step, err)
			if rerrs := h.undoSetup(p, i); len(rerrs) > 0 {
				return errors.Join(append([]error{err}, rerrs...)...)
			}
			return err
		}
	}
	for i := range p.Devices {
		d := &p.Devices[i]
		err := h.applyDevice(d, p.Op != "bind")
		if err == nil {
			continue
		}
		err = fmt.Errorf("%s %s: %w", p.Op, d.Addr, err)
		if p.Op != "bind" && p.Op != OpVF {
			return err
		}
		var rerrs []error
		for j := i; j >= 0; j-- {
			if rerr := h.rollback(&p.Devices[j]); rerr != nil {
				rerrs = append(rerrs, fmt.Errorf("roll back %s: %w", p.Devices[j].Addr, rerr))
			}
		}
		rerrs = append(rerrs, h.undoSetup(p, len(p.Setup))...)
		if len(rerrs) > 0 {
			return errors.Join(append([]error{err}, rerrs...)...)
		}
		return fmt.Errorf("%w (rolled back)", err)
	}
	// A bind drops state files only once every function is bound, so a rollback never
	// loses a record.
	var errs []error
	for _, d := range p.Devices {
		if p.Op == "bind" && d.DropState {
			errs = append(errs, h.removeState(d.Addr))
		}
	}
	return errors.Join(errs...)
}

// undoSetup puts back what the first n Setup writes changed, last first.
func (h *Host) undoSetup(p *Plan, n int) []error {
	var errs []error
	for i := min(n, len(p.undoSetup)) - 1; i >= 0; i-- {
		u := p.undoSetup[i]
		if err := h.write(u.Path, u.Value); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", u.Step, err))
		}
	}
	return errs
}

// applyDevice makes one function's writes and checks the result.
func (h *Host) applyDevice(d *DevicePlan, dropState bool) error {
	if d.Record != nil {
		if err := h.saveState(*d.Record); err != nil {
			return err
		}
	}
	for _, w := range d.Writes {
		if err := h.write(w.Path, w.Value); err != nil {
			return fmt.Errorf("%s: %w", w.Step, err)
		}
	}
	if d.vfs != nil && len(d.Writes) > 0 {
		if err := h.checkVFs(d); err != nil {
			return fmt.Errorf("verify: %w", err)
		}
	}
	if d.Verify {
		if err := h.waitDriver(d.Addr, d.To); err != nil {
			return fmt.Errorf("verify: %w", err)
		}
	}
	if dropState && d.DropState {
		return h.removeState(d.Addr)
	}
	return nil
}

// Probing runs synchronously in the write for most drivers, but a driver may probe
// asynchronously: waitDriver gives the link this long to appear.
const probeWait = 200 * time.Millisecond

// waitDriver checks that the function's driver link names want ("" = no driver).
func (h *Host) waitDriver(a pci.Addr, want string) error {
	deadline := time.Now().Add(probeWait)
	for {
		got, err := h.Driver(a)
		if err != nil {
			return err
		}
		if got == want {
			return nil
		}
		if time.Now().After(deadline) {
			if got == "" {
				got = "no driver"
			}
			if want == "" {
				want = "no driver"
			}
			return fmt.Errorf("function has %s, want %s", got, want)
		}
		time.Sleep(probeWait / 10)
	}
}

// rollback puts a function back on its original driver: clear (or restore) the override,
// unbind from whatever it has now, bind the original driver through its bind file.
func (h *Host) rollback(d *DevicePlan) error {
	if len(d.Writes) == 0 {
		return nil
	}
	if d.vfs != nil {
		return h.rollbackVFs(d)
	}
	var errs []error
	ov := d.override
	if ov == "" {
		ov = "\n"
	}
	if err := h.write(h.path(deviceRel(d.Addr, "driver_override")), ov); err != nil {
		errs = append(errs, fmt.Errorf("restore driver_override: %w", err))
	}
	cur, err := h.Driver(d.Addr)
	if err != nil {
		errs = append(errs, err)
	}
	if cur != d.From {
		if cur != "" {
			if err := h.write(h.path(driverRel(cur, "unbind")), d.Addr.String()); err != nil {
				errs = append(errs, fmt.Errorf("unbind from %s: %w", cur, err))
			}
		}
		if d.From != "" {
			if err := h.write(h.path(driverRel(d.From, "bind")), d.Addr.String()); err != nil {
				errs = append(errs, fmt.Errorf("bind to %s: %w", d.From, err))
			}
		}
		if err := h.waitDriver(d.Addr, d.From); err != nil {
			errs = append(errs, err)
		}
	}
	if d.Record != nil {
		if err := h.removeState(d.Addr); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// readOverride returns the function's driver_override, "" if none ("(null)").
func (h *Host) readOverride(a pci.Addr) (string, error) {
	b, err := h.ReadDeviceFile(a, "driver_override", MaxAttrSize)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read driver_override: %w", err)
	}
	s := strings.TrimSuffix(string(b), "\n")
	if s == "(null)" {
		return "", nil
	}
	return s, nil
}

// JoinPlans joins plans of the same operation (a bind per driver, say) into one, so that
// Apply makes all their changes and, if any step fails, rolls back every function of
// every plan. A function may appear in only one of them.
func JoinPlans(plans ...*Plan) (*Plan, error) {
	if len(plans) == 0 {
		return nil, errors.New("no plans to join")
	}
	out := &Plan{Op: plans[0].Op}
	seen := map[pci.Addr]bool{}
	for _, p := range plans {
		if p.Op != out.Op {
			return nil, fmt.Errorf("cannot join a %s plan with a %s plan", p.Op, out.Op)
		}
		for _, m := range p.Load {
			if !slices.Contains(out.Load, m) {
				out.Load = append(out.Load, m)
			}
		}
		out.Setup = append(out.Setup, p.Setup...)
		out.undoSetup = append(out.undoSetup, p.undoSetup...)
		out.noIOMMU = out.noIOMMU || p.noIOMMU
		for _, w := range p.Warnings {
			if !slices.Contains(out.Warnings, w) {
				out.Warnings = append(out.Warnings, w)
			}
		}
		for _, d := range p.Devices {
			if seen[d.Addr] {
				return nil, fmt.Errorf("%s is in two plans", d.Addr)
			}
			seen[d.Addr] = true
			out.Devices = append(out.Devices, d)
		}
	}
	return out, nil
}

package pcihost

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/uiod/uiod/pci"
)

// bindStateDir is where bind keeps its records, relative to the root.
const bindStateDir = "run/uiod"

// BindState is what bind records about a function before it changes the function's
// driver, so that unbind --restore (or a rollback) can give it back. It is stored as JSON
// in <root>/run/uiod/<address>.json, one file per function.
type BindState struct {
	Addr pci.Addr `json:"address"`
	// Driver is the driver the function had before uiod first bound it, "" if none.
	Driver string `json:"driver"`
	// Override is the function's driver_override before uiod first bound it, "" if none.
	Override string `json:"driver_override"`
	// BoundTo is the driver uiod bound the function to.
	BoundTo string `json:"bound_to"`
}

// StatePath returns the state file of a function.
func (h *Host) StatePath(a pci.Addr) string {
	return h.path(bindStateDir, stateName(a))
}

func stateName(a pci.Addr) string { return a.String() + ".json" }

// State returns the recorded bind state of a function; ok is false if there is none. The
// record is checked like user input: a driver or override that is not a driver name, or
// a record about another function, is an error wrapping ErrMalformed.
func (h *Host) State(a pci.Addr) (s BindState, ok bool, err error) {
	d, err := h.existingStateDir(bindStateDir)
	if d == nil {
		return BindState{}, false, err
	}
	defer d.Close()
	b, err := d.ReadFile(stateName(a), MaxStateSize)
	if errors.Is(err, os.ErrNotExist) {
		return BindState{}, false, nil
	}
	if err != nil {
		return BindState{}, false, fmt.Errorf("read state: %w", err)
	}
	bad := func(format string, args ...any) (BindState, bool, error) {
		return BindState{}, false, fmt.Errorf("state file %s: %w: %s", h.StatePath(a), pci.ErrMalformed, fmt.Sprintf(format, args...))
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return bad("%v", err)
	}
	if s.Addr != a {
		return bad("it is about %s", s.Addr)
	}
	for _, f := range []struct{ name, v string }{{"driver", s.Driver}, {"driver_override", s.Override}, {"bound_to", s.BoundTo}} {
		if f.v == "" {
			continue
		}
		if err := ValidDriverName(f.v); err != nil {
			return bad("%s: %v", f.name, err)
		}
	}
	return s, true, nil
}

// saveState writes the state file atomically (a temporary file renamed into place).
func (h *Host) saveState(s BindState) error {
	d, err := h.OpenStateDir(bindStateDir, true)
	if err != nil {
		return err
	}
	defer d.Close()
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := d.WriteFile(stateName(s.Addr), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write state: %w", err)
	}
	return nil
}

func (h *Host) removeState(a pci.Addr) error {
	d, err := h.existingStateDir(bindStateDir)
	if d == nil {
		return err
	}
	defer d.Close()
	err = d.Remove(stateName(a))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove state: %w", err)
	}
	return nil
}

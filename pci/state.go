package pci

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// BindState is what bind records about a function before it changes the function's
// driver, so that unbind --restore (or a rollback) can give it back. It is stored as JSON
// in <root>/run/uiod/<address>.json, one file per function.
type BindState struct {
	Addr Addr `json:"address"`
	// Driver is the driver the function had before uiod first bound it, "" if none.
	Driver string `json:"driver"`
	// Override is the function's driver_override before uiod first bound it, "" if none.
	Override string `json:"driver_override"`
	// BoundTo is the driver uiod bound the function to.
	BoundTo string `json:"bound_to"`
}

// StatePath returns the state file of a function.
func (h *Host) StatePath(a Addr) string {
	return h.path("run/uiod", a.String()+".json")
}

// State returns the recorded bind state of a function; ok is false if there is none.
func (h *Host) State(a Addr) (s BindState, ok bool, err error) {
	b, err := os.ReadFile(h.StatePath(a))
	if errors.Is(err, os.ErrNotExist) {
		return BindState{}, false, nil
	}
	if err != nil {
		return BindState{}, false, fmt.Errorf("read state: %w", err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return BindState{}, false, fmt.Errorf("state file %s: %w: %v", h.StatePath(a), ErrMalformed, err)
	}
	if s.Addr != a {
		return BindState{}, false, fmt.Errorf("state file %s: %w: it is about %s", h.StatePath(a), ErrMalformed, s.Addr)
	}
	if s.Driver != "" {
		if err := ValidDriverName(s.Driver); err != nil {
			return BindState{}, false, fmt.Errorf("state file %s: %w: %v", h.StatePath(a), ErrMalformed, err)
		}
	}
	return s, true, nil
}

// saveState writes the state file atomically (a temporary file renamed into place).
func (h *Host) saveState(s BindState) error {
	path := h.StatePath(s.Addr)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create state directory: %w", err)
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".state-*")
	if err != nil {
		return fmt.Errorf("write state: %w", err)
	}
	_, err = tmp.Write(append(b, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write state: %w", err)
	}
	return nil
}

func (h *Host) removeState(a Addr) error {
	err := os.Remove(h.StatePath(a))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove state: %w", err)
	}
	return nil
}

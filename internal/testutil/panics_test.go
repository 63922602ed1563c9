package testutil

import (
	"errors"
	"fmt"
	"testing"
)

func TestPanics(t *testing.T) {
	r := &recorder{TB: t}
	Panics(r, "a panic", func() { panic("x") })
	if len(r.errs) != 0 {
		t.Errorf("a panicking call failed the test: %q", r.errs)
	}
	Panics(r, "a quiet call", func() {})
	if len(r.errs) != 1 || r.errs[0] != "a quiet call did not panic" {
		t.Errorf("a quiet call reported %q", r.errs)
	}
}

func TestRegionFile(t *testing.T) {
	f := RegionFile(t, 8192)
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != 8192 {
		t.Errorf("size %d, want 8192", st.Size())
	}
	if _, err := f.WriteAt([]byte{1}, 4096); err != nil {
		t.Errorf("write into the file: %v", err)
	}
}

// closer counts its Close calls.
type closer struct{ closed int }

func (c *closer) Close() error { c.closed++; return nil }

func TestOpenFails(t *testing.T) {
	base := errors.New("base")
	OpenFails(t, func() (*closer, error) { return nil, fmt.Errorf("open port0: %w", base) }, base, "port0")
	OpenFails(t, func() (*closer, error) { return nil, errors.New("open port0") }, nil, "open", "port0")
	c := &closer{}
	r := &recorder{TB: t}
	if !r.fatal(func() { OpenFails(r, func() (*closer, error) { return c, nil }, nil) }) {
		t.Error("a successful open did not fail the test")
	}
	if c.closed != 1 {
		t.Errorf("a successful open was closed %d times, want 1", c.closed)
	}
	if !r.fatal(func() { OpenFails(r, func() (*closer, error) { return nil, errors.New("open") }, base) }) {
		t.Error("an error that is not the target did not fail the test")
	}
	if !r.fatal(func() { OpenFails(r, func() (*closer, error) { return nil, errors.New("open") }, nil, "port0") }) {
		t.Error("an error not naming port0 did not fail the test")
	}
}

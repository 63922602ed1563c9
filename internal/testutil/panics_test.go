package testutil

import (
	"fmt"
	"testing"
)

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

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

package testutil

import (
	"os"
	"path/filepath"
	"testing"
)

// RegionFile returns an open file of size zero bytes, closed at the end of the test, that
// stands in for a device descriptor whose regions are read and written (or mapped) at an
// offset.
func RegionFile(t testing.TB, size int) *os.File {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "dev"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := f.Truncate(int64(size)); err != nil {
		t.Fatal(err)
	}
	return f
}

// Words is the 32- and 64-bit register access of a region under test (pci.Region's).
type Words interface {
	Read32(off uint32) uint32
	Write32(off uint32, v uint32)
	Read64(off uint32) uint64
	Write64(off uint32, v uint64)
}

// ReadsBack writes v32 at off32 and v64 at off64 of r and checks that both read back.
func ReadsBack(t testing.TB, r Words, off32, v32, off64 uint32, v64 uint64) {
	t.Helper()
	r.Write32(off32, v32)
	r.Write64(off64, v64)
	if got := r.Read32(off32); got != v32 {
		t.Errorf("Read32(%#x) = %#x, want %#x", off32, got, v32)
	}
	if got := r.Read64(off64); got != v64 {
		t.Errorf("Read64(%#x) = %#x, want %#x", off64, got, v64)
	}
}

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

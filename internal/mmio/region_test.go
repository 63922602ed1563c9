package mmio

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// regionFile returns an open file of size bytes standing in for a device fd.
func regionFile(t *testing.T, size int) *os.File {
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

func TestMMIORegion(t *testing.T) {
	f := regionFile(t, 3*4096)
	r, err := Map(int(f.Fd()), 4096, 8192)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Unmap()
	if r.Len() != 8192 {
		t.Errorf("Len = %d", r.Len())
	}
	r.Write32(0x8, 0xdeadbeef)
	r.Write64(0x10, 0x0123456789abcdef)
	if got := r.Read32(0x8); got != 0xdeadbeef {
		t.Errorf("Read32 = %#x", got)
	}
	if got := r.Read64(0x10); got != 0x0123456789abcdef {
		t.Errorf("Read64 = %#x", got)
	}
	// The writes reached the file at the region's offset, low half first in memory.
	var b [16]byte
	if _, err := f.ReadAt(b[:], 4096+0x8); err != nil {
		t.Fatal(err)
	}
	if binary.LittleEndian.Uint32(b[0:]) != 0xdeadbeef || binary.LittleEndian.Uint64(b[8:]) != 0x0123456789abcdef {
		t.Errorf("file holds % x", b)
	}
	if n := testing.AllocsPerRun(100, func() { r.Write32(4, r.Read32(4)+1) }); n != 0 {
		t.Errorf("register access allocates %v times", n)
	}
	for _, bad := range []func(){
		func() { r.Read32(2) },
		func() { r.Read32(8192) },
		func() { r.Write32(8190, 1) },
		func() { r.Read64(4) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("bad access did not panic")
				}
			}()
			bad()
		}()
	}
}

func TestMMIONarrow(t *testing.T) {
	f := regionFile(t, 4096)
	r, err := Map(int(f.Fd()), 0, 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Unmap()
	r.Write32(0x10, 0x11223344)
	r.Write16(0x12, 0xbeef)
	r.Write8(0x10, 0x99)
	if got := r.Read32(0x10); got != 0xbeef3399 {
		t.Errorf("after narrow writes Read32 = %#x, want 0xbeef3399", got)
	}
	if got := r.Read16(0x12); got != 0xbeef {
		t.Errorf("Read16 = %#x", got)
	}
	if got := r.Read8(0x11); got != 0x33 {
		t.Errorf("Read8 = %#x", got)
	}
	defer func() {
		if recover() == nil {
			t.Error("unaligned 16-bit access did not panic")
		}
	}()
	r.Read16(0x11)
}

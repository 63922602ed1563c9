package mmio

import (
	"encoding/binary"
	"testing"

	"github.com/uiod/uiod/internal/testutil"
)

func TestMMIORegion(t *testing.T) {
	f := testutil.RegionFile(t, 3*4096)
	r, err := Map(int(f.Fd()), 4096, 8192)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Unmap()
	if r.Len() != 8192 {
		t.Errorf("Len = %d", r.Len())
	}
	testutil.ReadsBack(t, r, 0x8, 0xdeadbeef, 0x10, 0x0123456789abcdef)
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
	testutil.Panics(t, "unaligned Read32", func() { r.Read32(2) })
	testutil.Panics(t, "Read32 beyond the region", func() { r.Read32(8192) })
	testutil.Panics(t, "Write32 across the region's end", func() { r.Write32(8190, 1) })
	testutil.Panics(t, "unaligned Read64", func() { r.Read64(4) })
}

func TestMMIONarrow(t *testing.T) {
	f := testutil.RegionFile(t, 4096)
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
	testutil.Panics(t, "unaligned Read16", func() { r.Read16(0x11) })
}

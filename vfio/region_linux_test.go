package vfio

import (
	"encoding/binary"
	"testing"

	"github.com/uiod/uiod/internal/testutil"
)

func TestFileRegionAndConfig(t *testing.T) {
	f := testutil.RegionFile(t, 4096)
	fd := int(f.Fd())
	c := &configSpace{fd: fd, offset: 2048, size: 256}
	r := &fileRegion{fd: fd, offset: 1024, size: 256, bar: 2, closed: &c.closed}
	testutil.ReadsBack(t, r, 4, 0xcafef00d, 8, 0x1122334455667788)
	testutil.Panics(t, "Read32 beyond the region", func() { r.Read32(256) })

	if err := writeCmd(c, 0x0406); err != nil {
		t.Fatal(err)
	}
	var b [2]byte
	if _, err := f.ReadAt(b[:], 2048+4); err != nil || binary.LittleEndian.Uint16(b[:]) != 0x0406 {
		t.Errorf("command register in file: % x, %v", b, err)
	}
	if _, err := c.ReadAt(make([]byte, 4), 254); err == nil {
		t.Error("read beyond config space succeeded")
	}
	if _, err := c.WriteAt(make([]byte, 1), -1); err == nil {
		t.Error("write at a negative offset succeeded")
	}

	// After the device fd is closed its number may belong to another file: a BAR access
	// must not reach it.
	c.closed.Store(true)
	testutil.Panics(t, "Write32 after close", func() { r.Write32(0, 0xdeadbeef) })
	var w [4]byte
	if _, err := f.ReadAt(w[:], 1024); err != nil || binary.LittleEndian.Uint32(w[:]) == 0xdeadbeef {
		t.Errorf("Write32 after close reached the file: % x, %v", w, err)
	}
	if _, err := c.ReadAt(make([]byte, 2), 4); err == nil {
		t.Error("config read after close succeeded")
	}
}

func writeCmd(c *configSpace, v uint16) error {
	var b [2]byte
	binary.LittleEndian.PutUint16(b[:], v)
	_, err := c.WriteAt(b[:], 4)
	return err
}

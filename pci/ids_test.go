package pci

import (
	"errors"
	"testing"
)

// configBytes is a configuration space held in memory; reads past its end fail.
type configBytes []byte

func (c configBytes) ReadAt(b []byte, off int64) (int, error) {
	if off < 0 || off+int64(len(b)) > int64(len(c)) {
		return 0, errors.New("beyond config space")
	}
	return copy(b, c[off:]), nil
}

func (c configBytes) WriteAt(b []byte, off int64) (int, error) {
	return 0, errors.New("read-only")
}

func TestReadIDs(t *testing.T) {
	vendor, device, err := ReadIDs(configBytes{0x86, 0x80, 0xfb, 0x10})
	if err != nil || vendor != 0x8086 || device != 0x10fb {
		t.Errorf("ReadIDs = %04x:%04x, %v; want 8086:10fb", vendor, device, err)
	}
	if _, _, err := ReadIDs(configBytes{0x86, 0x80}); err == nil || err.Error() != "read config 0x2: beyond config space" {
		t.Errorf("short config space: %v", err)
	}
	if _, _, err := ReadIDs(configBytes{}); err == nil || err.Error() != "read config 0x0: beyond config space" {
		t.Errorf("empty config space: %v", err)
	}
}

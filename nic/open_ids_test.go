package nic

import (
	"bytes"
	"errors"
	"testing"
)

// bytesSpace is a configuration space of fixed bytes that counts its reads.
type bytesSpace struct {
	b     []byte
	reads int
}

func (c *bytesSpace) ReadAt(p []byte, off int64) (int, error) {
	c.reads++
	if off >= int64(len(c.b)) {
		return 0, errors.New("beyond config space")
	}
	n := copy(p, c.b[off:])
	if n < len(p) {
		return n, errors.New("beyond config space")
	}
	return n, nil
}

func (c *bytesSpace) WriteAt(p []byte, off int64) (int, error) { return copy(c.b[off:], p), nil }

// TestIDSpace: the configuration space OpenDriver hands a driver answers the four id
// bytes from the identification and every other byte from the device, for reads that
// start before, inside and after them, and reads only id bytes without the device.
func TestIDSpace(t *testing.T) {
	dev := []byte{0xff, 0xff, 0xff, 0xff, 4, 5, 6, 7, 8, 9}
	want := append([]byte{0x86, 0x80, 0xfb, 0x10}, dev[4:]...)
	for _, tt := range []struct {
		off, n    int
		devReads  int
		wantError bool
	}{
		{0, 2, 0, false}, {2, 2, 0, false}, {0, 4, 0, false}, {3, 1, 0, false},
		{0, 10, 1, false}, {1, 5, 1, false}, {3, 4, 1, false}, {4, 4, 1, false}, {6, 4, 1, false},
		{2, 10, 1, true}, {10, 2, 1, true},
	} {
		c := &bytesSpace{b: bytes.Clone(dev)}
		s := &idSpace{ConfigSpace: c, ids: [4]byte{0x86, 0x80, 0xfb, 0x10}}
		p := make([]byte, tt.n)
		n, err := s.ReadAt(p, int64(tt.off))
		if (err != nil) != tt.wantError || c.reads != tt.devReads {
			t.Errorf("ReadAt(%d bytes, %d): %v, %d device reads; want error %v, %d", tt.n, tt.off, err, c.reads, tt.wantError, tt.devReads)
		}
		if tt.wantError {
			continue
		}
		if n != tt.n || !bytes.Equal(p, want[tt.off:tt.off+tt.n]) {
			t.Errorf("ReadAt(%d bytes, %d) = %d, % x; want % x", tt.n, tt.off, n, p[:n], want[tt.off:tt.off+tt.n])
		}
	}
}

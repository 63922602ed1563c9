package pci

import (
	"errors"
	"testing"
)

func FuzzFindCapability(f *testing.F) {
	c := config([2]int{0x40, 1}, [2]int{0x50, CapIDMSI}, [2]int{0x70, CapIDMSIX})
	f.Add(c)
	f.Add(c[:64])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, cfg []byte) {
		off, err := FindCapability(cfg, CapIDMSIX)
		if err == nil && (off < 0x40 || off+2 > len(cfg) || cfg[off] != CapIDMSIX) {
			t.Fatalf("FindCapability = 0x%x for a %d-byte config", off, len(cfg))
		}
		n, err := MSIXTableSize(cfg)
		if err == nil && (n < 1 || n > 2048) {
			t.Fatalf("MSIXTableSize = %d", n)
		}
		if err != nil && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrNoCapability) {
			t.Fatalf("unexpected error %v", err)
		}
	})
}

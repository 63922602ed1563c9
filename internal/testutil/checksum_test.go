package testutil

import "testing"

// The IPv4 header of RFC 1071's usual worked example: its checksum, and 0 over the
// header with it filled in.
func TestChecksum(t *testing.T) {
	h := []byte{0x45, 0, 0, 0x73, 0, 0, 0x40, 0, 0x40, 0x11, 0, 0, 0xc0, 0xa8, 0, 1, 0xc0, 0xa8, 0, 0xc7}
	if c := Checksum(h); c != 0xb861 {
		t.Fatalf("Checksum = %#04x, want 0xb861", c)
	}
	h[10], h[11] = 0xb8, 0x61
	if c := Checksum(h); c != 0 {
		t.Errorf("Checksum over the filled header = %#04x, want 0", c)
	}
	if c := Checksum([]byte{0xff}); c != 0x00ff {
		t.Errorf("odd length: %#04x, want 0x00ff", c)
	}
}

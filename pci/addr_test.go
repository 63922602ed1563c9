package pci

import (
	"errors"
	"testing"
)

func TestParseAddr(t *testing.T) {
	tests := []struct {
		in   string
		want Addr
		ok   bool
	}{
		{"0000:03:00.1", Addr{0, 3, 0, 1}, true},
		{"03:00.1", Addr{0, 3, 0, 1}, true},
		{"ffff:ff:1f.7", Addr{0xffff, 0xff, 0x1f, 7}, true},
		{"0000:AB:1F.0", Addr{0, 0xab, 0x1f, 0}, true},
		{"0000:03:20.0", Addr{}, false}, // device > 1f
		{"0000:03:00.8", Addr{}, false}, // function > 7
		{"0000:03:00", Addr{}, false},
		{"../03:00.1", Addr{}, false},
		{"0000/03:00.1", Addr{}, false},
		{"0000:03:00.1 ", Addr{}, false},
		{" 03:00.1", Addr{}, false},
		{"0000:3:00.10", Addr{}, false},
		{"+000:03:00.1", Addr{}, false},
		{"0000:03-00.1", Addr{}, false},
		{"", Addr{}, false},
		{"g000:03:00.1", Addr{}, false},
	}
	for _, tt := range tests {
		got, err := ParseAddr(tt.in)
		if tt.ok != (err == nil) {
			t.Errorf("ParseAddr(%q) error = %v, want ok=%v", tt.in, err, tt.ok)
			continue
		}
		if err != nil && !errors.Is(err, ErrBadAddr) {
			t.Errorf("ParseAddr(%q) error %v does not wrap ErrBadAddr", tt.in, err)
		}
		if got != tt.want {
			t.Errorf("ParseAddr(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func FuzzParseAddr(f *testing.F) {
	for _, s := range []string{"0000:03:00.1", "03:00.1", "../x", "ffff:ff:1f.7", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAddr(s)
		if err != nil {
			return
		}
		// A valid address round-trips, contains no path characters and is canonical.
		b, err := ParseAddr(a.String())
		if err != nil || b != a {
			t.Fatalf("round trip of %q: %v %v", s, b, err)
		}
		if a.Device > 0x1f || a.Function > 7 {
			t.Fatalf("out of range accepted: %q", s)
		}
	})
}

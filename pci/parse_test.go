package pci

import (
	"encoding/binary"
	"errors"
	"slices"
	"testing"
)

func TestClass(t *testing.T) {
	tests := []struct {
		c               Class
		network, bridge bool
		s               string
	}{
		{0x020000, true, false, "020000"},
		{0x028000, true, false, "028000"},
		{0x060400, false, true, "060400"},
		{0x060401, false, true, "060401"},
		{0x060000, false, false, "060000"},
		{0x010601, false, false, "010601"},
	}
	for _, tt := range tests {
		if tt.c.IsNetwork() != tt.network || tt.c.IsBridge() != tt.bridge || tt.c.String() != tt.s {
			t.Errorf("%06x: network %v bridge %v string %q", uint32(tt.c), tt.c.IsNetwork(), tt.c.IsBridge(), tt.c)
		}
	}
}

// config builds config space with capabilities at the given offsets, linked in order.
func config(caps ...[2]int) []byte {
	c := make([]byte, 256)
	binary.LittleEndian.PutUint16(c[CfgStatus:], StatusCapList)
	if len(caps) > 0 {
		c[CfgCapPointer] = byte(caps[0][0])
	}
	for i, cp := range caps {
		c[cp[0]] = byte(cp[1])
		if i+1 < len(caps) {
			c[cp[0]+1] = byte(caps[i+1][0])
		}
	}
	return c
}

func TestFindCapability(t *testing.T) {
	msix := config([2]int{0x40, 1}, [2]int{0x50, CapIDMSI}, [2]int{0x70, CapIDMSIX})
	binary.LittleEndian.PutUint16(msix[0x72:], 63)
	noList := config([2]int{0x40, CapIDMSIX})
	noList[CfgStatus] = 0
	loop := config([2]int{0x40, 1}, [2]int{0x50, 5})
	loop[0x51] = 0x40
	intoHeader := config([2]int{0x40, 1})
	intoHeader[0x41] = 0x3c
	unaligned := config([2]int{0x40, 1})
	unaligned[0x41] = 0x51
	tests := []struct {
		name string
		cfg  []byte
		want int
		err  error
	}{
		{"msix", msix, 64, nil},
		{"no cap list", noList, 0, ErrNoCapability},
		{"no msix", config([2]int{0x40, 1}, [2]int{0x50, CapIDMSI}), 0, ErrNoCapability},
		{"empty list", config(), 0, ErrNoCapability},
		{"loop", loop, 0, ErrMalformed},
		{"into header", intoHeader, 0, ErrMalformed},
		{"unaligned", unaligned, 0, ErrMalformed},
		{"truncated 64", msix[:64], 0, ErrTruncated},
		{"truncated header", msix[:16], 0, ErrTruncated},
		{"truncated in cap", msix[:0x73], 0, ErrTruncated},
	}
	for _, tt := range tests {
		got, err := MSIXTableSize(tt.cfg)
		if got != tt.want || !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
			t.Errorf("%s: MSIXTableSize = %d, %v; want %d, %v", tt.name, got, err, tt.want, tt.err)
		}
	}
}

// TestWalkCapabilities checks that the walk visits the list in order and stops when told.
func TestWalkCapabilities(t *testing.T) {
	cfg := config([2]int{0x40, 1}, [2]int{0x50, CapIDMSI}, [2]int{0x70, CapIDMSIX})
	tests := []struct {
		name string
		stop int // visits before visit returns false, 0 for never
		want []int
	}{
		{"all", 0, []int{0x40, 0x50, 0x70}},
		{"stop at the second", 2, []int{0x40, 0x50}},
	}
	for _, tt := range tests {
		var got []int
		err := WalkCapabilities(cfg, func(off int, id uint8) bool {
			if id != cfg[off] {
				t.Errorf("%s: id %d at 0x%x, config has %d", tt.name, id, off, cfg[off])
			}
			got = append(got, off)
			return len(got) != tt.stop
		})
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("%s: visited %x, %v; want %x", tt.name, got, err, tt.want)
		}
	}
}

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

package pci

import (
	"errors"
	"os"
	"testing"
)

func FuzzParseHex(f *testing.F) {
	for _, s := range []string{"0x8086\n", "0x020000\n", "zz", "", "0x", "0X1"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, digits := range []int{2, 4, 6} {
			v, err := parseHex(b, digits)
			if err != nil {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("error %v is not ErrMalformed", err)
				}
				continue
			}
			if v >= 1<<(4*digits) {
				t.Fatalf("parseHex(%q, %d) = %#x, too wide", b, digits, v)
			}
		}
		if c, err := parseClass(b); err == nil {
			var back Class
			if err := back.UnmarshalText([]byte(c.String())); err != nil || back != c {
				t.Fatalf("class %q round trip: %v %v", c, back, err)
			}
		}
		parseInt(b)
	})
}

func FuzzRoutes(f *testing.F) {
	f.Add([]byte("Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\neth0\t00000000\t0100A8C0\t0003\t0\t0\t100\t00000000\t0\t0\t0\n"))
	f.Add([]byte("20010db8000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth5\n"))
	f.Add([]byte("Iface\n\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, parse := range []func([]byte, map[string]bool) error{parseIPv4Routes, parseIPv6Routes} {
			active := map[string]bool{}
			err := parse(b, active)
			if err != nil && !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			for name := range active {
				if name == "" {
					t.Fatal("empty interface name")
				}
			}
		}
	})
}

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

func FuzzState(f *testing.F) {
	f.Add([]byte(`{"address":"0000:03:00.0","driver":"igb","driver_override":"","bound_to":"vfio-pci"}`))
	f.Add([]byte(`{"address":"0000:03:00.0","driver":"../../etc"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		h := &Host{Root: dir}
		a := MustParseAddr("0000:03:00.0")
		if err := h.saveState(BindState{Addr: a}); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(h.StatePath(a), b, 0o644); err != nil {
			t.Fatal(err)
		}
		s, ok, err := h.State(a)
		if err == nil && ok && s.Driver != "" && ValidDriverName(s.Driver) != nil {
			t.Fatalf("state accepted driver %q", s.Driver)
		}
	})
}

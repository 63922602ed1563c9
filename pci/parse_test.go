package pci

import (
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"github.com/uiod/uiod/internal/testutil"
)

// malformed is parse that also fails the test if an error is not ErrMalformed.
func malformed[T any](t *testing.T, parse func([]byte) (T, error)) func(string) (T, error) {
	return func(s string) (T, error) {
		v, err := parse([]byte(s))
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Errorf("parse(%q): error %v is not ErrMalformed", s, err)
		}
		return v, err
	}
}

// TestParseHex: a sysfs hex attribute has an optional 0x, up to its number of digits and
// an optional newline; anything else is ErrMalformed saying which rule it breaks.
func TestParseHex(t *testing.T) {
	hex := func(digits int) func([]byte) (uint32, error) {
		return func(b []byte) (uint32, error) { return parseHex(b, digits) }
	}
	long := "want up to 4 hex digits"
	testutil.CheckParseCases(t, "parseHex(4)", malformed(t, hex(4)), []testutil.ParseCase[uint32]{
		{In: "0x8086\n", Want: 0x8086}, {In: "0x10FB\n", Want: 0x10fb}, {In: "8086", Want: 0x8086}, {In: "0x0\n", Want: 0},
		{In: "0x\n", Err: long}, {In: "\n", Err: long}, {In: "", Err: long}, {In: "0x8086\n\n", Err: long},
		{In: " 0x8086", Err: long}, {In: "0x80 86", Err: long}, {In: "0xzz86\n", Err: "not hex"}, {In: "-0x1", Err: "not hex"},
	})
	testutil.CheckParseCases(t, "parseHex(6)", malformed(t, hex(6)), []testutil.ParseCase[uint32]{
		{In: "0x020000\n", Want: 0x020000}, {In: "0x0200000\n", Err: "want up to 6 hex digits"},
	})
}

func TestParseInt(t *testing.T) {
	bad := "not a decimal integer"
	testutil.CheckParseCases(t, "parseInt", malformed(t, parseInt), []testutil.ParseCase[int]{
		{In: "-1\n", Want: -1}, {In: "0\n", Want: 0}, {In: "3", Want: 3},
		{In: "", Err: bad}, {In: "x\n", Err: bad}, {In: "1 \n", Err: bad}, {In: "99999999999999999999", Err: bad},
	})
}

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

func TestRoutes(t *testing.T) {
	v4 := "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n" +
		"eth0\t00000000\t0100A8C0\t0003\t0\t0\t100\t00000000\t0\t0\t0\n" +
		"eth1\t0000FEA9\t00000000\t0001\t0\t0\t1000\t0000FFFF\t0\t0\t0\n" +
		"eth2\t0001A8C0\t00000000\t0000\t0\t0\t0\t00FFFFFF\t0\t0\t0\n" + // down
		"eth3\t0002A8C0\t00000000\t0201\t0\t0\t0\t00FFFFFF\t0\t0\t0\n" // reject
	v6 := "fe800000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth4\n" +
		"ff000000000000000000000000000000 08 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth4\n" +
		"20010db8000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth5\n" +
		"00000000000000000000000000000000 00 00000000000000000000000000000000 00 00000000000000000000000000000000 ffffffff 00000001 00000000 00200200       lo\n"
	active := map[string]bool{}
	if err := parseIPv4Routes([]byte(v4), active); err != nil {
		t.Fatal(err)
	}
	if err := parseIPv6Routes([]byte(v6), active); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"eth0": true, "eth5": true}
	if len(active) != len(want) || !active["eth0"] || !active["eth5"] {
		t.Errorf("active = %v, want %v", active, want)
	}
	bad := []struct {
		name string
		v4   bool
		in   string
	}{
		{"no header", true, "eth0\t00000000\t0\t0003\t0\t0\t0\t0\n"},
		{"short line", true, "Iface\tDestination\neth0\t00000000\n"},
		{"bad dest", true, "Iface\nXXX\t0000000G\t0\t0003\t0\t0\t0\t0\n"},
		{"v6 short", false, "fe80 40 eth0\n"},
		{"v6 bad hex", false, "fe80000000000000000000000000000x 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001 eth4\n"},
	}
	for _, tt := range bad {
		f := parseIPv6Routes
		if tt.v4 {
			f = parseIPv4Routes
		}
		if err := f([]byte(tt.in), map[string]bool{}); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: error %v, want ErrMalformed", tt.name, err)
		}
	}
}

func TestValidDriverName(t *testing.T) {
	for _, n := range []string{"vfio-pci", "uio_pci_generic", "igb", "ixgbe", "8139too"} {
		if err := ValidDriverName(n); err != nil {
			t.Errorf("%q: %v", n, err)
		}
	}
	for _, n := range []string{"", "..", "a/b", "../vfio", "vfio pci", "x\n", "-r", "--dry-run"} {
		if ValidDriverName(n) == nil {
			t.Errorf("%q accepted", n)
		}
	}
}

func TestWriteString(t *testing.T) {
	tests := []struct {
		w    Write
		want string
	}{
		{Write{Path: "/sys/x/driver_override", Value: "vfio-pci"}, "echo -n vfio-pci > /sys/x/driver_override"},
		{Write{Path: "/sys/x/driver_override", Value: "\n"}, "echo > /sys/x/driver_override"},
		{Write{Path: "/sys/bus/pci/drivers_probe", Value: "0000:03:00.0"}, "echo -n 0000:03:00.0 > /sys/bus/pci/drivers_probe"},
		{Write{Path: "/p", Value: "a b'c"}, `echo -n 'a b'\''c' > /p`},
	}
	for _, tt := range tests {
		if got := tt.w.String(); got != tt.want {
			t.Errorf("%q: got %q, want %q", tt.w.Value, got, tt.want)
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

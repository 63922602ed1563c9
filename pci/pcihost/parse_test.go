package pcihost

import (
	"errors"
	"testing"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/pci"
)

// malformed is parse that also fails the test if an error is not ErrMalformed.
func malformed[T any](t *testing.T, parse func([]byte) (T, error)) func(string) (T, error) {
	return func(s string) (T, error) {
		v, err := parse([]byte(s))
		if err != nil && !errors.Is(err, pci.ErrMalformed) {
			t.Errorf("parse(%q): error %v is not ErrMalformed", s, err)
		}
		return v, err
	}
}

// TestParseHex: a sysfs hex attribute has an optional 0x, up to its number of digits and
// an optional newline; anything else is ErrMalformed saying which rule it breaks.
func TestParseHex(t *testing.T) {
	hex := func(digits int) func([]byte) (uint32, error) {
		return func(b []byte) (uint32, error) { return pci.ParseHex(b, digits) }
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
		if err := f([]byte(tt.in), map[string]bool{}); !errors.Is(err, pci.ErrMalformed) {
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

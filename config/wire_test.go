package config

import (
	"cmp"
	"slices"
	"strings"
	"testing"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/wire"
)

func TestParseWire(t *testing.T) {
	pair := func(name string) Wire { return Wire{wire.Spec{Kind: wire.KindPair, Name: name}} }
	tests := []struct {
		in   string
		want Wire
		out  string // String() of the result; "" means in
		err  string // substring of the error; "" means valid
	}{
		{in: "", want: Wire{}},
		{in: "pair:gen0", want: pair("gen0")},
		{in: "pair:a.b-c_1", want: pair("a.b-c_1")},
		{in: "unix:/run/a.sock,/run/b.sock", want: Wire{wire.Spec{Kind: wire.KindUnix, Local: "/run/a.sock", Remote: "/run/b.sock"}}},
		{in: "unixpair:/tmp/a,/tmp/b", want: Wire{wire.Spec{Kind: wire.KindUnix, Local: "/tmp/a", Remote: "/tmp/b"}}, out: "unix:/tmp/a,/tmp/b"},
		{in: "tap:tap0", want: Wire{wire.Spec{Kind: wire.KindTAP, Name: "tap0"}}},
		{in: "afpacket:eth1", want: Wire{wire.Spec{Kind: wire.KindAFPacket, Name: "eth1"}}},
		{in: "pair", err: "KIND:ARGS"},
		{in: "pair:", err: "empty pair name"},
		{in: "pair:a b", err: "space"},
		{in: "PAIR:x", err: "unknown kind"},
		{in: "unix:/tmp/a", err: "LOCAL,REMOTE"},
		{in: "unixpair:/tmp/a", err: "LOCAL,REMOTE"},
		{in: "unix:" + strings.Repeat("x", 108) + ",/b", err: "longer than 107"},
		{in: "unix:/tmp/a,/tmp/a", err: "same path"},
		{in: "tap:", err: "empty"},
		{in: "tap:abcdefghijklmnop", err: "15 bytes"},
		{in: "tap:a/b", err: "contains"},
	}
	for _, tt := range tests {
		got, ok := testutil.CheckParse(t, "ParseWire", ParseWire, tt.in, tt.want, tt.err)
		if want := cmp.Or(tt.out, tt.in); ok && got.String() != want {
			t.Errorf("ParseWire(%q).String() = %q, want %q", tt.in, got.String(), want)
		}
	}
}

func TestParseThreshold(t *testing.T) {
	bad := "not a duration (such as 300us) or auto"
	for _, tt := range []testutil.ParseCase[Threshold]{
		{In: "auto", Want: Threshold{Auto: true}},
		{In: "300us", Want: Threshold{Duration: 300000}},
		{In: "0", Want: Threshold{}},
		{In: "-1ms", Want: Threshold{Duration: -1000000}}, // parsed; validation rejects it
		{In: "Auto", Err: bad},
		{In: "300", Err: bad},
		{In: "", Err: bad},
	} {
		got, ok := testutil.CheckParse(t, "ParseThreshold", ParseThreshold, tt.In, tt.Want, tt.Err)
		if ok {
			if back, err := ParseThreshold(got.String()); err != nil || back != got {
				t.Errorf("ParseThreshold(%q) does not round-trip: %+v, %v", got.String(), back, err)
			}
		}
	}
}

func TestParseCPUList(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []int
		err  string // substring of the error; "" means valid
	}{
		{"", []int{}, ""},
		{" ", []int{}, ""},
		{"0", []int{0}, ""},
		{"0-3", []int{0, 1, 2, 3}, ""},
		{"0-1, 4 ,6-7", []int{0, 1, 4, 6, 7}, ""},
		{"3-3", []int{3}, ""},
		{"3-1", nil, "backwards"},
		{"-1", nil, "not a CPU number"},
		{"+1", nil, "not a CPU number"},
		{"1-", nil, "not a CPU number"},
		{"a", nil, "not a CPU number"},
		{"1,,2", nil, "not a CPU number"},
		{"0-99999", nil, "beyond"},
		{"8191", []int{8191}, ""},
	} {
		got, err := ParseCPUList(tt.in)
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseCPUList(%q) = %v, %v; want an error containing %q", tt.in, got, err, tt.err)
			}
		case err != nil || !slices.Equal(got, tt.want):
			t.Errorf("ParseCPUList(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestSuggest(t *testing.T) {
	keys := []string{"rx_ring", "tx_ring", "rx_queues", "name"}
	for in, want := range map[string]string{
		"rx_rnig": "rx_ring", "rxring": "rx_ring", "nmae": "name", "rx_queue": "rx_queues", "colour": "",
	} {
		if got := suggest(in, keys); got != want {
			t.Errorf("suggest(%q) = %q, want %q", in, got, want)
		}
	}
}

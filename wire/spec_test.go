package wire

import (
	"errors"
	"strings"
	"testing"

	"github.com/uiod/uiod/internal/clip"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want Spec
		err  string
	}{
		{in: "pair:a", want: Spec{Kind: KindPair, Name: "a"}},
		{in: "unix:/tmp/a.sock,/tmp/b.sock", want: Spec{Kind: KindUnix, Local: "/tmp/a.sock", Remote: "/tmp/b.sock"}},
		{in: "afpacket:eth1", want: Spec{Kind: KindAFPacket, Name: "eth1"}},
		{in: "tap:uiod%d", want: Spec{Kind: KindTAP, Name: "uiod%d"}},
		{in: "eth1", err: "want KIND:ARGS"},
		{in: "udp:1.2.3.4", err: "unknown kind"},
		{in: "pair:", err: "empty pair name"},
		{in: "pair:a b", err: "space"},
		{in: "pair:" + strings.Repeat("p", 64), want: Spec{Kind: KindPair, Name: strings.Repeat("p", 64)}},
		{in: "pair:" + strings.Repeat("p", 65), err: `pair name is longer than 64 bytes`},
		{in: "unix:/a", err: "unix:LOCAL,REMOTE"},
		{in: "unix:/a,/b,/c", err: "unix:LOCAL,REMOTE"},
		{in: "unix:,/b", err: "empty"},
		{in: "unix:/a,/a", err: "same path"},
		{in: "unix:/a," + strings.Repeat("x", 108), err: "longer than"},
		{in: "afpacket:", err: "empty interface name"},
		{in: "tap:abcdefghijklmnop", err: "longer than 15"},
		{in: "tap:a/b", err: "contains"},
		{in: "afpacket:..", err: "not allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Parse(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Parse(%q) = %+v, %v; want error containing %q", tt.in, got, err, tt.err)
				}
				// The spec and what is wrong with it apart, for a caller that names the
				// value itself (config).
				var se *SpecError
				if !errors.As(err, &se) || se.Spec != tt.in || strings.HasPrefix(se.Err.Error(), "wire ") ||
					err.Error() != "wire "+clip.Quote(tt.in)+": "+se.Err.Error() {
					t.Fatalf("Parse(%q): error %q is not a SpecError of the spec and its reason", tt.in, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Parse(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
			if got.String() != tt.in {
				t.Fatalf("String() = %q, want %q", got.String(), tt.in)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"pair:x", "unix:/a,/b", "afpacket:eth0", "tap:tap0", ":", "unix:,", "tap:\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := Parse(in)
		if err != nil {
			return
		}
		again, err := Parse(s.String())
		if err != nil || again != s {
			t.Fatalf("Parse(%q) = %+v but Parse(String()) = %+v, %v", in, s, again, err)
		}
	})
}

func TestOpenPairRegistry(t *testing.T) {
	a, err := Open("pair:registry-test")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open("pair:registry-test")
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	b.SetHandler(func(f []byte, ts int64) { got += len(f) })
	if err := a.Send(make([]byte, 60)); err != nil {
		t.Fatal(err)
	}
	if got != 60 {
		t.Fatalf("second Open of the name is not the peer: got %d bytes", got)
	}
	c, _ := Open("pair:registry-test")
	c.SetHandler(func(f []byte, ts int64) { t.Error("third Open joined the old pair") })
	a.Send(make([]byte, 60))
}

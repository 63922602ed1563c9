package latency

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/uiod/uiod/internal/testutil"
)

func TestProbeFrame(t *testing.T) {
	for _, size := range []int{64, 65, 128, 1514} {
		tmpl, err := newFrameTemplate(DefaultAddrs(), size, KindProbe)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			seq uint64
			ts  int64
		}{{0, 0}, {1, 123456789}, {1<<63 + 5, -1}, {0xffffffffffffffff, 1 << 62}} {
			f := tmpl.stamp(tc.seq, tc.ts)
			if len(f) != size {
				t.Fatalf("size %d: frame is %d bytes", size, len(f))
			}
			if c := testutil.Checksum(f[offIP : offIP+ipv4Len]); c != 0 {
				t.Fatalf("size %d: IPv4 checksum does not verify (%#x)", size, c)
			}
			// UDP checksum over pseudo-header + datagram, computed the slow way.
			udp := f[offUDP:]
			pseudo := append(append([]byte{}, f[offIP+12:offIP+20]...), 0, 17, byte(len(udp)>>8), byte(len(udp)))
			if c := testutil.Checksum(append(pseudo, udp...)); c != 0 {
				t.Fatalf("size %d seq %d: UDP checksum does not verify (%#x)", size, tc.seq, c)
			}
			p, err := ParseProbe(f)
			if err != nil {
				t.Fatalf("size %d: ParseProbe: %v", size, err)
			}
			if p != (Probe{KindProbe, tc.seq, tc.ts}) {
				t.Fatalf("size %d: parsed %+v, want seq %d ts %d", size, p, tc.seq, tc.ts)
			}
		}
	}
}

func TestFrameTemplateErrors(t *testing.T) {
	a := DefaultAddrs()
	if _, err := newFrameTemplate(a, 63, KindProbe); err == nil {
		t.Error("size 63 accepted")
	}
	if _, err := newFrameTemplate(a, MaxFrameSize+1, KindProbe); err == nil {
		t.Errorf("size %d accepted", MaxFrameSize+1)
	}
	b := a
	b.SrcIP = netip.MustParseAddr("2001:db8::1")
	if _, err := newFrameTemplate(b, 64, KindProbe); err == nil {
		t.Error("IPv6 source accepted")
	}
	b = a
	b.DstMAC = b.DstMAC[:5]
	if _, err := newFrameTemplate(b, 64, KindProbe); err == nil {
		t.Error("5-byte MAC accepted")
	}
}

func TestParseProbeRejects(t *testing.T) {
	tmpl, _ := newFrameTemplate(DefaultAddrs(), 64, KindProbe)
	good := func() []byte { return append([]byte(nil), tmpl.stamp(7, 1000)...) }
	tests := []struct {
		name   string
		mangle func([]byte) []byte
		want   error
	}{
		{"short", func(b []byte) []byte { return b[:61] }, ErrShortFrame},
		{"arp", func(b []byte) []byte { b[12], b[13] = 0x08, 0x06; return b }, ErrNotIPv4UDP},
		{"ipv6 version", func(b []byte) []byte { b[offIP] = 0x65; return b }, ErrNotIPv4UDP},
		{"tcp", func(b []byte) []byte { b[offIP+9] = 6; return b }, ErrNotIPv4UDP},
		{"ihl 4", func(b []byte) []byte { b[offIP] = 0x44; return b }, ErrBadLength},
		{"total too long", func(b []byte) []byte { b[offIP+2] = 0x10; return b }, ErrBadLength},
		{"ip checksum", func(b []byte) []byte { b[offIP+8]--; return b }, ErrIPChecksum},
		{"udp length", func(b []byte) []byte { b[offUDP+4], b[offUDP+5] = 0, 8; return b }, ErrBadLength},
		{"payload bit flip", func(b []byte) []byte { b[offSeq+3] ^= 0x10; return b }, ErrUDPChecksum},
		{"magic", func(b []byte) []byte {
			b[offPayload] = 'x'
			b[offUDP+6], b[offUDP+7] = 0, 0 // no checksum, so the magic is what fails
			return b
		}, ErrNotProbe},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := ParseProbe(tt.mangle(good())); !errors.Is(err, tt.want) {
				t.Fatalf("ParseProbe = %v, want %v", err, tt.want)
			}
		})
	}
	// A zero UDP checksum means "none" and is accepted; Ethernet padding is too.
	b := good()
	b[offUDP+6], b[offUDP+7] = 0, 0
	if p, err := ParseProbe(append(b, 0, 0, 0, 0)); err != nil || p.Seq != 7 {
		t.Fatalf("zero checksum with padding: %+v, %v", p, err)
	}
}

func TestProbeAllocs(t *testing.T) {
	tmpl, _ := newFrameTemplate(DefaultAddrs(), 128, KindProbe)
	r := NewReceiver(0, 0)
	seq := uint64(0)
	n := testing.AllocsPerRun(1000, func() {
		f := tmpl.stamp(seq, 10)
		seq++
		if _, err := ParseProbe(f); err != nil {
			t.Fatal(err)
		}
		r.Handle(f, 500)
	})
	if n != 0 {
		t.Fatalf("stamp+ParseProbe+Handle allocate %v times per frame", n)
	}
}

func FuzzParseProbe(f *testing.F) {
	tmpl, _ := newFrameTemplate(DefaultAddrs(), 64, KindProbe)
	f.Add(append([]byte(nil), tmpl.stamp(1, 2)...))
	bg, _ := newFrameTemplate(DefaultAddrs(), 100, KindBackground)
	f.Add(append([]byte(nil), bg.stamp(3, 4)...))
	f.Add([]byte{})
	f.Add(make([]byte, 64))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseProbe(b)
		if err != nil {
			return
		}
		if p.Kind != KindProbe && p.Kind != KindBackground {
			t.Fatalf("accepted kind %#x", p.Kind)
		}
		// Whatever parses must have a valid IPv4 header checksum.
		ihl := int(b[offIP]&0x0f) * 4
		if testutil.Checksum(b[offIP:offIP+ihl]) != 0 {
			t.Fatal("accepted a bad IPv4 checksum")
		}
	})
}

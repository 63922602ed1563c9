package intel

import (
	"encoding/binary"
	"encoding/hex"
	"net/netip"
	"testing"

	"github.com/uiod/uiod/internal/hw/intelnic"
)

// msKey is the key of the Microsoft RSS specification's verification suite.
var msKey, _ = hex.DecodeString("6d5a56da255b0ec24167253d43a38fb0d0ca2bcbae7b30b477cb2da38030f20c6a42b73bbeac01fa")

// The Microsoft RSS specification's verification suite ("Verifying the RSS Hash
// Calculation"): hashes over source address, destination address and, for the 4-tuple,
// source and destination ports.
var msVectors = []struct {
	dst, src       string
	dport, sport   uint16
	ipHash, l4Hash uint32
}{
	{"161.142.100.80", "66.9.149.187", 1766, 2794, 0x323e8fc2, 0x51ccc178},
	{"65.69.140.83", "199.92.111.2", 4739, 14230, 0xd718262a, 0xc626b0ea},
	{"12.22.207.184", "24.19.198.95", 38024, 12898, 0xd2d0a5de, 0x5c2b394a},
	{"209.142.163.6", "38.27.205.30", 2217, 48228, 0x82989176, 0xafc7327f},
	{"202.188.127.2", "153.39.163.191", 1303, 44251, 0x5d1809c5, 0x10e828a2},
	{"3ffe:2501:200:3::1", "3ffe:2501:200:1fff::7", 1766, 2794, 0x2cc18cd5, 0x40207d3d},
	{"ff02::1", "3ffe:501:8::260:97ff:fe40:efab", 4739, 14230, 0x0f0c461c, 0xdde51bbf},
	{"fe80::200:f8ff:fe21:67cf", "3ffe:1900:4545:3:200:f8ff:fe21:67cf", 38024, 44251, 0x4b61e985, 0x02d1feef},
}

func TestToeplitzMicrosoftVectors(t *testing.T) {
	for _, v := range msVectors {
		src, dst := netip.MustParseAddr(v.src), netip.MustParseAddr(v.dst)
		in := append(src.AsSlice(), dst.AsSlice()...)
		if got := Toeplitz(msKey, in); got != v.ipHash {
			t.Errorf("%s -> %s: ip hash %#08x, want %#08x", v.src, v.dst, got, v.ipHash)
		}
		in = binary.BigEndian.AppendUint16(in, v.sport)
		in = binary.BigEndian.AppendUint16(in, v.dport)
		if got := Toeplitz(msKey, in); got != v.l4Hash {
			t.Errorf("%s:%d -> %s:%d: tcp hash %#08x, want %#08x", v.src, v.sport, v.dst, v.dport, got, v.l4Hash)
		}
	}
}

// frameFor builds an Ethernet frame carrying an IP packet with a TCP or UDP header.
func frameFor(src, dst netip.Addr, proto byte, sport, dport uint16) []byte {
	f := make([]byte, 14, 128)
	// IPv4: version and IHL 0x45, protocol at 9, addresses from 12; IPv6: version 0x60,
	// next header at 6, addresses from 8. The header ends where the addresses do.
	etype, ver, protoAt, addrAt := uint16(0x0800), byte(0x45), 9, 12
	if !src.Is4() {
		etype, ver, protoAt, addrAt = 0x86dd, 0x60, 6, 8
	}
	binary.BigEndian.PutUint16(f[12:], etype)
	s, d := src.AsSlice(), dst.AsSlice()
	ip := make([]byte, addrAt+2*len(s))
	ip[0], ip[protoAt] = ver, proto
	copy(ip[addrAt:], s)
	copy(ip[addrAt+len(s):], d)
	f = append(f, ip...)
	f = binary.BigEndian.AppendUint16(f, sport)
	f = binary.BigEndian.AppendUint16(f, dport)
	return append(f, make([]byte, 16)...)
}

func TestRSSHashFrames(t *testing.T) {
	all := uint32(intelnic.MrqcIPv4 | intelnic.MrqcIPv4TCP | intelnic.MrqcIPv4UDP | intelnic.MrqcIPv6 | intelnic.MrqcIPv6TCP | intelnic.MrqcIPv6UDP)
	buf := make([]byte, 64)
	for _, v := range msVectors {
		src, dst := netip.MustParseAddr(v.src), netip.MustParseAddr(v.dst)
		tests := []struct {
			name  string
			proto byte
			mrqc  uint32
			want  uint32
			typ   uint32
		}{
			{"tcp", 6, all, v.l4Hash, map[bool]uint32{true: intelnic.RSSTypeIPv4TCP, false: intelnic.RSSTypeIPv6TCP}[src.Is4()]},
			{"udp", 17, all, v.l4Hash, map[bool]uint32{true: intelnic.RSSTypeIPv4UDP, false: intelnic.RSSTypeIPv6UDP}[src.Is4()]},
			{"tcp-ip-only", 6, intelnic.MrqcIPv4 | intelnic.MrqcIPv6, v.ipHash, map[bool]uint32{true: intelnic.RSSTypeIPv4, false: intelnic.RSSTypeIPv6}[src.Is4()]},
			{"icmp", 1, all, v.ipHash, map[bool]uint32{true: intelnic.RSSTypeIPv4, false: intelnic.RSSTypeIPv6}[src.Is4()]},
			{"disabled", 6, 0, 0, intelnic.RSSTypeNone},
		}
		for _, tt := range tests {
			h, typ := rssHash(frameFor(src, dst, tt.proto, v.sport, v.dport), tt.mrqc, msKey, buf)
			if h != tt.want || typ != tt.typ {
				t.Errorf("%s %s->%s: hash %#08x type %d, want %#08x type %d", tt.name, v.src, v.dst, h, typ, tt.want, tt.typ)
			}
		}
	}
}

func FuzzRSSHash(f *testing.F) {
	f.Add(frameFor(netip.MustParseAddr("1.2.3.4"), netip.MustParseAddr("5.6.7.8"), 6, 1, 2), uint32(0xffff0000))
	f.Add(frameFor(netip.MustParseAddr("::1"), netip.MustParseAddr("::2"), 17, 1, 2), uint32(0xffff0000))
	f.Fuzz(func(t *testing.T, frame []byte, mrqc uint32) {
		buf := make([]byte, 64)
		rssHash(frame, mrqc, msKey, buf) // must not panic
	})
}

func TestRSS(t *testing.T) {
	g := newReadyRig(t)
	const nq = 4
	var rings [nq]*ring
	for q := 0; q < nq; q++ {
		rings[q] = g.setupRX(q, 256, 2048, true)
	}
	for i := 0; i < 10; i++ {
		g.wr(g.m.l.rssrk+4*uint32(i), binary.LittleEndian.Uint32(msKey[4*i:]))
	}
	for i := 0; i < 32; i++ {
		var v uint32
		for j := 0; j < 4; j++ {
			v |= uint32((4*i+j)%nq) << (8 * j)
		}
		g.wr(g.m.l.reta+4*uint32(i), v)
	}
	g.wr(intelnic.RXCSUM, intelnic.RxcsumPCSD)
	g.wr(g.m.l.mrqc, 1|intelnic.MrqcIPv4|intelnic.MrqcIPv4TCP|intelnic.MrqcIPv4UDP|intelnic.MrqcIPv6|intelnic.MrqcIPv6TCP|intelnic.MrqcIPv6UDP)
	flow := func(i int) []byte {
		src := netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)})
		f := frameFor(src, netip.MustParseAddr("10.1.0.1"), 17, uint16(1000+i), 53)
		copy(f, g.m.cfg.MAC)
		return append(f, make([]byte, 64)...)
	}
	counts := func() (c [nq]uint32) {
		for q := range c {
			c[q] = g.rd(g.rxq(q, intelnic.QH))
		}
		return
	}
	// One flow: all its frames in one queue.
	for k := 0; k < 10; k++ {
		g.peer.Send(flow(7))
	}
	c := counts()
	busy := 0
	for _, n := range c {
		if n != 0 {
			busy++
			if n != 10 {
				t.Fatalf("flow split: %v", c)
			}
		}
	}
	if busy != 1 {
		t.Fatalf("flow spread over %d queues: %v", busy, c)
	}
	// Many flows: every queue gets some.
	for i := 0; i < 200; i++ {
		g.peer.Send(flow(100 + i))
	}
	c = counts()
	for q, n := range c {
		if n == 0 {
			t.Fatalf("queue %d got no flows: %v", q, c)
		}
	}
	// RxQueueFrames counts what each queue's ring took (no ring wrapped: RDH is the count).
	for q, n := range g.m.RxQueueFrames(nq) {
		if n != uint64(c[q]) {
			t.Errorf("RxQueueFrames: queue %d placed %d, RDH moved %d (%v)", q, n, c[q], c)
		}
	}
	// The write-back carries the hash.
	f := flow(7)
	h, _ := rssHash(f, g.rd(g.m.l.mrqc), msKey, make([]byte, 64))
	q := g.m.l.queues
	for qq := 0; qq < nq; qq++ {
		if c[qq] >= 10 && binary.LittleEndian.Uint32(rings[qq].desc.Bytes[4:]) == h {
			q = qq
		}
	}
	if q == g.m.l.queues {
		t.Fatal("no queue's first write-back carries the flow's RSS hash")
	}
}

package integration

import (
	"encoding/binary"
	"testing"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/nic/igb"
)

// TestToeplitz checks the host's RSS hash against the IPv4 verification vectors of
// Microsoft's RSS specification (key: igb.RSSKey, the same key).
func TestToeplitz(t *testing.T) {
	for _, tc := range []struct {
		src, dst         [4]byte
		srcPort, dstPort uint16
		ip, l4           uint32
	}{
		{[4]byte{66, 9, 149, 187}, [4]byte{161, 142, 100, 80}, 2794, 1766, 0x323e8fc2, 0x51ccc178},
		{[4]byte{199, 92, 111, 2}, [4]byte{65, 69, 140, 83}, 14230, 4739, 0xd718262a, 0xc626b0ea},
		{[4]byte{24, 19, 198, 95}, [4]byte{12, 22, 207, 184}, 12898, 38024, 0xd2d0a5de, 0x5c2b394a},
		{[4]byte{38, 27, 205, 30}, [4]byte{209, 142, 163, 6}, 48228, 2217, 0x82989176, 0xafc7327f},
		{[4]byte{153, 39, 163, 191}, [4]byte{202, 188, 127, 2}, 44251, 1303, 0x5d1809c5, 0x10e828a2},
	} {
		var in [12]byte
		copy(in[0:], tc.src[:])
		copy(in[4:], tc.dst[:])
		binary.BigEndian.PutUint16(in[8:], tc.srcPort)
		binary.BigEndian.PutUint16(in[10:], tc.dstPort)
		if h := toeplitz(igb.RSSKey[:], in[:8]); h != tc.ip {
			t.Errorf("%v → %v: IPv4 hash %#08x, want %#08x", tc.src, tc.dst, h, tc.ip)
		}
		if h := toeplitz(igb.RSSKey[:], in[:]); h != tc.l4 {
			t.Errorf("%v:%d → %v:%d: 4-tuple hash %#08x, want %#08x", tc.src, tc.srcPort, tc.dst, tc.dstPort, h, tc.l4)
		}
	}
}

// TestFlowFrame checks that a generated frame parses back, with a valid IPv4 header
// checksum, and that other frames do not parse.
func TestFlowFrame(t *testing.T) {
	b := flowFrame(7, 42, 1234)
	if len(b) != flowFrameLen {
		t.Fatalf("frame is %d bytes, want %d", len(b), flowFrameLen)
	}
	phase, f, seq, ok := parseFlowFrame(b)
	if !ok || phase != 7 || f != 42 || seq != 1234 {
		t.Errorf("parseFlowFrame = %d, %d, %d, %v; want 7, 42, 1234, true", phase, f, seq, ok)
	}
	if p := binary.BigEndian.Uint16(b[flowOffUDP:]); p != flowPort(42) {
		t.Errorf("UDP source port %d, want %d", p, flowPort(42))
	}
	if c := testutil.Checksum(b[flowOffIP : flowOffIP+20]); c != 0 {
		t.Errorf("IPv4 header does not check: %#04x", c)
	}
	for _, bad := range [][]byte{nil, b[:40], append(append([]byte{}, b[:flowOffData]...), 0, 0, 0, 0)} {
		if _, _, _, ok := parseFlowFrame(bad); ok {
			t.Errorf("parseFlowFrame accepted a %d-byte frame that is not a flow frame", len(bad))
		}
	}
}

// TestFlowReceiver checks the accounting of a run's frames: in order, reordered,
// duplicated, from the wrong NIC, of another run.
func TestFlowReceiver(t *testing.T) {
	type frame struct {
		nic   int
		phase uint32
		flow  int
		seq   uint32
	}
	for _, tc := range []struct {
		name   string
		frames []frame
		want   flowResult
	}{
		{"in order", []frame{{1, 1, 0, 0}, {1, 1, 1, 0}, {1, 1, 0, 1}, {1, 1, 1, 1}},
			flowResult{received: 4}},
		{"reordered within a flow", []frame{{1, 1, 0, 1}, {1, 1, 0, 0}},
			flowResult{received: 1, reordered: 1, dups: 1}},
		{"duplicate", []frame{{1, 1, 0, 0}, {1, 1, 0, 0}}, flowResult{received: 1, dups: 1}},
		{"wrong nic", []frame{{0, 1, 0, 0}}, flowResult{wrongPort: 1}},
		{"other run", []frame{{1, 2, 0, 0}}, flowResult{foreign: 1}},
		{"unknown flow", []frame{{1, 1, 9, 0}}, flowResult{foreign: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := flowReceiver{phase: 1, out: 1, next: map[int]uint32{0: 0, 1: 0}, res: flowResult{perFlow: map[int]int{}}}
			for _, f := range tc.frames {
				r.frame(f.nic, f.phase, f.flow, f.seq, true)
			}
			got := r.res
			if got.received != tc.want.received || got.reordered != tc.want.reordered || got.dups != tc.want.dups ||
				got.wrongPort != tc.want.wrongPort || got.foreign != tc.want.foreign {
				t.Errorf("result %+v, want %+v", got, tc.want)
			}
		})
	}
	var r flowReceiver // between runs
	r.frame(1, 1, 0, 0, true)
	if r.res.foreign != 1 {
		t.Errorf("a frame between runs: %+v, want it foreign", r.res)
	}
}

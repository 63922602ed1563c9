package afxdp

import (
	"encoding/binary"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/nic"
)

// TestPassEthertypes: with ARP (0x0806) passed, the kernel of m answers a's ARP for the
// address m has on ma, while the IPv4 pings that follow land in the socket (the kernel
// never answers them); without it ARP lands in the socket and a never resolves m.
func TestPassEthertypes(t *testing.T) {
	for _, tc := range []struct {
		name string
		pass []uint16
	}{{"arp passed", []uint16{0x0806, 0x88cc}}, {"nothing passed", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			ipM := net.IPv4(r.ipA[12], r.ipA[13], r.ipA[14], 3)
			testutil.IPIn(t, r.m, "addr", "add", ipM.String()+"/24", "dev", r.ma)
			p, err := r.open(t, Config{Interface: r.ma, PassEthertypes: tc.pass})
			if err != nil {
				t.Fatal(err)
			}
			replies := len(r.pingTo(t, ipM, 3, 500*time.Millisecond))
			seen := map[uint16]int{}
			bufs := make([]*nic.Buf, 64)
			for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); {
				n := p.RxBurst(0, bufs)
				for _, b := range bufs[:n] {
					if f := b.Bytes(); len(f) >= 14 {
						seen[binary.BigEndian.Uint16(f[12:14])]++
					}
					b.Free()
				}
				if n == 0 {
					time.Sleep(10 * time.Millisecond)
				}
			}
			neigh := testutil.IPIn(t, r.a, "neigh", "show", "dev", "xa0", ipM.String())
			resolved := strings.Contains(neigh, "lladdr "+p.MAC().String())
			t.Logf("%s: socket got %v, %d replies, a's neighbour entry %q", tc.name, seen, replies, strings.TrimSpace(neigh))
			if replies != 0 {
				t.Errorf("%d echo replies: the kernel saw IPv4 that should have gone to the socket", replies)
			}
			if tc.pass != nil {
				if seen[0x0806] != 0 || !resolved {
					t.Errorf("ARP passed: %d ARP frames in the socket, a resolved m: %v", seen[0x0806], resolved)
				}
				if seen[0x0800] == 0 {
					t.Error("ARP passed: no IPv4 frame in the socket")
				}
			} else if seen[0x0806] == 0 || resolved {
				t.Errorf("nothing passed: %d ARP frames in the socket, a resolved m: %v", seen[0x0806], resolved)
			}
		})
	}
}

// TestPassValidation: EtherTypes below 0x0600, twice, or too many are refused before
// anything is opened.
func TestPassValidation(t *testing.T) {
	many := make([]uint16, MaxPass+1)
	for i := range many {
		many[i] = uint16(0x0800 + i)
	}
	for _, tc := range []struct {
		pass []uint16
		text string
	}{
		{[]uint16{0x05ff}, "0x05ff below 0x0600"},
		{[]uint16{0x0806, 0x0806}, "0x0806 listed twice"},
		{many, "at most 16"},
	} {
		err := Config{Interface: "eth0", PassEthertypes: tc.pass}.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("pass %#x: %v, want %q", tc.pass, err, tc.text)
		}
	}
	if err := (Config{Interface: "eth0", PassEthertypes: []uint16{0x0600, 0xffff}}).Validate(); err != nil {
		t.Errorf("0x0600 and 0xffff: %v", err)
	}
}

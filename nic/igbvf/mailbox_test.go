package igbvf

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/nictest"
	"github.com/uiod/uiod/sim/igbvf"
	"github.com/uiod/uiod/wire"
)

// TestHostilePF opens ports whose PF answers wrongly or not at all. A PF that answers
// wrongly must fail the open with an error that says what the PF did, within the
// mailbox's bounded waits. A PF that does not answer is one that is down: the open
// succeeds with the link down and ReinitError says what the PF did not do (before,
// every row failed the open). No row may leave the model with a protocol fault.
func TestHostilePF(t *testing.T) {
	tests := []struct {
		name  string
		read  func(off, v uint32) uint32
		want  string
		err   error
		opens bool // the open succeeds, down
	}{
		{"never takes a message", func(off, v uint32) uint32 {
			if off == i82576.V2PMailbox {
				v &^= i82576.MbxPFAck | i82576.MbxPFSts
			}
			return v
		}, "PF taking message 0x1", errNotTaken, true},
		{"never replies", func(off, v uint32) uint32 {
			if off == i82576.V2PMailbox {
				v &^= i82576.MbxPFSts
			}
			return v
		}, "PF reply to message 0x1", errNoAnswer, true},
		{"has no MAC and refuses the VF's", func(off, v uint32) uint32 {
			if t := v & i82576.MsgTypeMask; off == i82576.VFMbxMem && (t == i82576.MsgVFReset || t == i82576.MsgSetMAC) {
				v = v&^i82576.MsgAck | i82576.MsgNack
			}
			return v
		}, "refused", nil, false},
		{"answers the reset without ACK or NACK", func(off, v uint32) uint32 {
			if off == i82576.VFMbxMem && v&i82576.MsgTypeMask == i82576.MsgVFReset {
				v &^= i82576.MsgAck | i82576.MsgNack
			}
			return v
		}, "PF reply to message 0x1", errNoAnswer, true},
		{"gives a multicast address", func(off, v uint32) uint32 {
			if off == i82576.VFMbxMem+4 {
				v |= 1
			}
			return v
		}, "not a unicast one", nil, false},
		{"answers another message", func(off, v uint32) uint32 {
			if off == i82576.VFMbxMem && v&i82576.MsgTypeMask == i82576.MsgSetLPE {
				v = v&^i82576.MsgTypeMask | i82576.MsgSetVLAN
			}
			return v
		}, "PF reply to message 0x5", errNoAnswer, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := wire.Pair()
			defer b.Close()
			m, err := igbvf.New(igbvf.Config{Wire: a, Strict: true})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			dev := nictest.Hooked(m.PCI(), nictest.Hooks{Read: func(bar int, off, v uint32) uint32 { return tt.read(off, v) }})
			start := time.Now()
			p, err := Open(dev, nic.Config{})
			if d := time.Since(start); d > 3*mbxTimeout {
				t.Errorf("open took %v", d)
			}
			if tt.opens {
				if err != nil {
					t.Fatalf("open: %v; want a port that waits for its PF", err)
				}
				defer p.Close()
				if p.Link().Up {
					t.Error("link up without a PF")
				}
				if mac := p.MAC(); len(mac) != 6 || mac[0]&3 != 2 {
					t.Errorf("MAC %v: want a random unicast, locally administered one", mac)
				}
				err = p.ReinitError()
			} else if err == nil {
				p.Close()
				t.Fatal("open succeeded")
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || tt.err != nil && !errors.Is(err, tt.err) {
				t.Errorf("error %v; want %q (%v)", err, tt.want, tt.err)
			}
			if err := m.Device().Err(); err != nil {
				t.Errorf("model fault: %v", err)
			}
		})
	}
}

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

// TestHostilePF opens ports whose PF answers wrongly or not at all: every case must fail
// the open with an error that says what the PF did, within the mailbox's bounded waits,
// and leave the model without a protocol fault.
func TestHostilePF(t *testing.T) {
	tests := []struct {
		name string
		read func(off, v uint32) uint32
		want string
		err  error
	}{
		{"never takes a message", func(off, v uint32) uint32 {
			if off == i82576.V2PMailbox {
				v &^= i82576.MbxPFAck | i82576.MbxPFSts
			}
			return v
		}, "PF taking message 0x1", errNoAnswer},
		{"never replies", func(off, v uint32) uint32 {
			if off == i82576.V2PMailbox {
				v &^= i82576.MbxPFSts
			}
			return v
		}, "PF reply to message 0x1", errNoAnswer},
		{"has no MAC and refuses the VF's", func(off, v uint32) uint32 {
			if t := v & i82576.MsgTypeMask; off == i82576.VFMbxMem && (t == i82576.MsgVFReset || t == i82576.MsgSetMAC) {
				v = v&^i82576.MsgAck | i82576.MsgNack
			}
			return v
		}, "refused", nil},
		{"answers the reset without ACK or NACK", func(off, v uint32) uint32 {
			if off == i82576.VFMbxMem && v&i82576.MsgTypeMask == i82576.MsgVFReset {
				v &^= i82576.MsgAck | i82576.MsgNack
			}
			return v
		}, "PF reply to message 0x1", errNoAnswer},
		{"gives a multicast address", func(off, v uint32) uint32 {
			if off == i82576.VFMbxMem+4 {
				v |= 1
			}
			return v
		}, "not a unicast one", nil},
		{"answers another message", func(off, v uint32) uint32 {
			if off == i82576.VFMbxMem && v&i82576.MsgTypeMask == i82576.MsgSetLPE {
				v = v&^i82576.MsgTypeMask | i82576.MsgSetVLAN
			}
			return v
		}, "PF reply to message 0x5", errNoAnswer},
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
			if err == nil {
				p.Close()
				t.Fatal("open succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) || tt.err != nil && !errors.Is(err, tt.err) {
				t.Errorf("open: %v; want %q (%v)", err, tt.want, tt.err)
			}
			if d := time.Since(start); d > 3*mbxTimeout {
				t.Errorf("open took %v", d)
			}
		})
	}
}

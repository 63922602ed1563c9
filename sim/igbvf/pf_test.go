package igbvf

import (
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/pci"
)

// vfSide drives the model's mailbox as a VF driver does, step by step.
type vfSide struct {
	t *testing.T
	r pci.Region
}

func newVF(t *testing.T, cfg Config) (*Model, vfSide) {
	t.Helper()
	cfg.Strict = true
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	r, err := m.PCI().Region(0)
	if err != nil {
		t.Fatal(err)
	}
	return m, vfSide{t, r}
}

// post takes the buffer, writes words and sets REQ.
func (v vfSide) post(words ...uint32) {
	v.r.Write32(i82576.V2PMailbox, i82576.MbxVFU)
	for i, w := range words {
		v.r.Write32(i82576.VFMbxMem+4*uint32(i), w)
	}
	v.r.Write32(i82576.V2PMailbox, i82576.MbxReq)
}

// read takes the buffer, reads n words and acknowledges them.
func (v vfSide) read(n int) []uint32 {
	v.r.Write32(i82576.V2PMailbox, i82576.MbxVFU)
	w := make([]uint32, n)
	for i := range w {
		w[i] = v.r.Read32(i82576.VFMbxMem + 4*uint32(i))
	}
	v.r.Write32(i82576.V2PMailbox, i82576.MbxAck)
	return w
}

// call posts words (the model serves at once: MailboxDelay -1) and returns the PF's
// n-word reply, or nil if it wrote none.
func (v vfSide) call(n int, words ...uint32) []uint32 {
	v.t.Helper()
	v.post(words...)
	st := v.r.Read32(i82576.V2PMailbox)
	if st&i82576.MbxPFAck == 0 {
		v.t.Fatalf("message %#x not taken: mailbox %#x", words[0], st)
	}
	if st&i82576.MbxPFSts == 0 {
		return nil
	}
	return v.read(n)
}

// reset is VTCTRL.RST and the wait for its end.
func (v vfSide) reset() {
	v.t.Helper()
	v.r.Write32(i82576.VTCTRL, intelnic.CtrlReset)
	deadline := time.Now().Add(time.Second)
	for v.r.Read32(i82576.V2PMailbox)&i82576.MbxRSTI != 0 {
		if time.Now().After(deadline) {
			v.t.Fatal("RSTI held after a VF reset")
		}
		time.Sleep(10 * time.Microsecond)
	}
}

func macWords(mac net.HardwareAddr) (uint32, uint32) {
	var a [8]byte
	copy(a[:], mac)
	return binary.LittleEndian.Uint32(a[0:]), binary.LittleEndian.Uint32(a[4:])
}

// TestVFResetForgetsChosenMAC checks what Linux's igb keeps of the VF's address across
// a VF reset: the administrator's, not one the VF set itself (the VF's next VF_RESET is
// NACKed and it sets its address again).
func TestVFResetForgetsChosenMAC(t *testing.T) {
	chosen := net.HardwareAddr{0x02, 0xaa, 0, 0, 0, 1}
	tests := []struct {
		name      string
		cfg       Config
		afterAck  bool // VF_RESET after the VF reset is ACKed with the address
		wantAfter net.HardwareAddr
	}{
		{"address the VF chose", Config{NoMAC: true, MailboxDelay: -1}, false, nil},
		{"administrator's address", Config{MailboxDelay: -1, MAC: net.HardwareAddr{0x02, 0xbb, 0, 0, 0, 2}}, true, net.HardwareAddr{0x02, 0xbb, 0, 0, 0, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, vf := newVF(t, tt.cfg)
			vf.reset()
			w := vf.call(3, i82576.MsgVFReset)
			if tt.cfg.NoMAC {
				if w[0] != i82576.MsgVFReset|i82576.MsgNack {
					t.Fatalf("first VF_RESET: %#x, want NACK", w[0])
				}
				lo, hi := macWords(chosen)
				if r := vf.call(1, i82576.MsgSetMAC, lo, hi); r[0] != i82576.MsgSetMAC|i82576.MsgAck|i82576.MsgCTS {
					t.Fatalf("SET_MAC_ADDR: %#x", r[0])
				}
			}
			vf.reset()
			w = vf.call(3, i82576.MsgVFReset)
			if got := w[0] &^ i82576.MsgCTS; (got == i82576.MsgVFReset|i82576.MsgAck) != tt.afterAck {
				t.Errorf("VF_RESET after the VF reset: %#x, want ACK %v", w[0], tt.afterAck)
			}
			if tt.wantAfter != nil {
				lo, hi := macWords(tt.wantAfter)
				if w[1] != lo || w[2]&0xFFFF != hi {
					t.Errorf("VF_RESET reply carries %#x %#x, want %v", w[1], w[2], tt.wantAfter)
				}
			}
			if err := m.Device().Err(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestBeforeCTS checks Linux igb's answers to a VF that reset and has not sent VF_RESET:
// a message is taken but not answered for the holdoff after the reset, then NACKed
// without CTS; the VF's acknowledgement of that NACK (past the holdoff) brings a bare
// NACK, and the next acknowledgement within the holdoff none.
func TestBeforeCTS(t *testing.T) {
	const holdoff = 30 * time.Millisecond
	m, vf := newVF(t, Config{MailboxDelay: -1, CTSHoldoff: holdoff})
	vf.reset()
	start := time.Now()
	w := vf.call(1, i82576.MsgSetLPE, 1522)
	if w != nil && time.Since(start) < holdoff {
		t.Fatalf("SET_LPE within the holdoff after the VF reset answered %#x", w[0])
	}
	time.Sleep(holdoff)
	if w = vf.call(1, i82576.MsgSetLPE, 1522); w == nil || w[0] != i82576.MsgSetLPE|i82576.MsgNack {
		t.Fatalf("SET_LPE past the holdoff: %v, want NACK without CTS", w)
	}
	// Acknowledging that reply is a VF reading without CTS: a bare NACK follows.
	if st := vf.r.Read32(i82576.V2PMailbox); st&i82576.MbxPFSts == 0 {
		t.Fatalf("no bare NACK after the VF acknowledged without CTS: mailbox %#x", st)
	}
	if w = vf.read(1); w[0] != i82576.MsgNack {
		t.Fatalf("bare NACK: %#x", w[0])
	}
	m.SetLink(true) // a control message, without CTS, acknowledged within the holdoff
	if w = vf.read(1); w[0] != i82576.MsgPFControl {
		t.Fatalf("control message %#x", w[0])
	}
	if n := m.Stats().BareNacks; n != 1 {
		t.Errorf("%d bare NACKs", n)
	}
	if err := m.Device().Err(); err != nil {
		t.Fatal(err)
	}
}

// TestPFAnswers checks Linux igb's answers to a clear-to-send VF where they are not
// plain ACK or NACK: SET_LPE above 9728 clamped and ACKed, more than 30 multicast hashes
// turning multicast promiscuous on, an unknown message NACKed and counted.
func TestPFAnswers(t *testing.T) {
	m, vf := newVF(t, Config{MailboxDelay: -1})
	vf.reset()
	vf.call(3, i82576.MsgVFReset)
	if w := vf.call(1, i82576.MsgSetLPE, 12000); w[0] != i82576.MsgSetLPE|i82576.MsgAck|i82576.MsgCTS {
		t.Errorf("SET_LPE 12000: %#x, want ACK", w[0])
	}
	if got := m.filt.maxFrame; got != i82576.VFMaxFrame {
		t.Errorf("receive size %d after SET_LPE 12000, want %d", got, i82576.VFMaxFrame)
	}
	group := []byte{0x01, 0x00, 0x5e, 0x00, 0x00, 0x01}
	frame := append(append(group, 0x02, 0, 0, 0, 0, 9), make([]byte, 50)...)
	other := McastHash(group) ^ 1
	for _, tt := range []struct {
		n      int
		accept bool
	}{{30, false}, {31, true}} {
		words := make([]uint32, 16)
		words[0] = i82576.MsgSetMcast | uint32(tt.n)<<i82576.MsgInfoShift
		for i := 0; i < min(tt.n, 30); i++ {
			words[1+i/2] |= uint32(other) << (16 * (i % 2))
		}
		if w := vf.call(1, words...); w[0]&i82576.MsgAck == 0 {
			t.Fatalf("SET_MULTICAST %d: %#x", tt.n, w[0])
		}
		if got := m.filt.accept(frame); got != tt.accept {
			t.Errorf("%d hashes: an unregistered group accepted %v, want %v", tt.n, got, tt.accept)
		}
	}
	if w := vf.call(1, i82576.MsgAPINegotiate, i82576.APIBase); w[0] != i82576.MsgAPINegotiate|i82576.MsgNack|i82576.MsgCTS {
		t.Errorf("API negotiation: %#x, want NACK", w[0])
	}
	if n := m.Stats().Unhandled; n != 1 {
		t.Errorf("%d unhandled messages counted, want 1", n)
	}
}

// TestSharedBuffer checks the one mailbox buffer: a PF message written while a VF request
// waits to be taken flushes the request (no PFACK, ever), and a PF message that waits
// for the VF to give the buffer back longer than 10 ms is lost.
func TestSharedBuffer(t *testing.T) {
	t.Run("a ping flushes a pending request", func(t *testing.T) {
		m, vf := newVF(t, Config{MailboxDelay: 5 * time.Millisecond})
		vf.reset()
		vf.post(i82576.MsgVFReset)
		m.SetLink(true)
		time.Sleep(20 * time.Millisecond) // past the delay the request would have been served after
		st := vf.r.Read32(i82576.V2PMailbox)
		if st&i82576.MbxPFAck != 0 || st&i82576.MbxPFSts == 0 {
			t.Errorf("mailbox %#x: want the ping (PFSTS) and the request never taken (no PFACK)", st)
		}
		if n := m.Stats().Flushed; n != 1 {
			t.Errorf("%d requests flushed", n)
		}
	})
	t.Run("a PF message waits 10 ms for the buffer", func(t *testing.T) {
		m, vf := newVF(t, Config{MailboxDelay: -1})
		vf.reset()
		vf.call(3, i82576.MsgVFReset)
		vf.r.Write32(i82576.V2PMailbox, i82576.MbxVFU)
		m.SetLink(true)
		time.Sleep(2 * pfLockTimeout)
		vf.r.Write32(i82576.V2PMailbox, 0)
		if st := vf.r.Read32(i82576.V2PMailbox); st&i82576.MbxPFSts != 0 {
			t.Errorf("mailbox %#x: a message that waited past 10 ms was delivered", st)
		}
		if n := m.Stats().Lost; n != 1 {
			t.Errorf("%d messages lost", n)
		}
	})
}

// TestPFResetClearsStats checks that a PF reset clears the VF's statistics registers,
// as QEMU's igb_reset does.
func TestPFResetClearsStats(t *testing.T) {
	m, vf := newVF(t, Config{})
	m.mu.Lock()
	m.stat = vfStats{gprc: 8, gorc: 544, gptc: 8, gotc: 544}
	m.mu.Unlock()
	m.PFDown()
	for _, off := range []uint32{i82576.VFGPRC, i82576.VFGORC, i82576.VFGPTC, i82576.VFGOTC} {
		if v := vf.r.Read32(off); v != 0 {
			t.Errorf("register 0x%05x reads %d after a PF reset", off, v)
		}
	}
}

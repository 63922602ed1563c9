package igbvf

import (
	"errors"
	"strings"
	"testing"

	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/pci"
)

// TestStrict checks that the model refuses what a VF's driver must not do, each as a
// protocol fault naming it.
func TestStrict(t *testing.T) {
	tests := []struct {
		name string
		do   func(r pci.Region)
		want string
	}{
		{"mailbox memory without VFU", func(r pci.Region) { r.Write32(i82576.VFMbxMem, i82576.MsgVFReset) }, "without holding VFU"},
		{"read mailbox memory without VFU", func(r pci.Region) { r.Read32(i82576.VFMbxMem) }, "read without holding VFU"},
		{"REQ without VFU", func(r pci.Region) { r.Write32(i82576.V2PMailbox, i82576.MbxReq) }, "REQ without holding VFU"},
		{"queue 1 on a vector", func(r pci.Region) { r.Write32(i82576.VTIVAR0, intelnic.IvarValid<<16) }, "queue 1"},
		{"a fourth vector", func(r pci.Region) { r.Write32(i82576.VTIVARMisc, 3|intelnic.IvarValid) }, "names vector 3"},
		{"a PF register", func(r pci.Region) { r.Write32(i82576.RCTL, 0) }, "not a VF register"},
		{"queue 1's ring", func(r pci.Region) { r.Write32(i82576.VFRXBase+i82576.VFQStride, 0) }, "not a VF register"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := New(Config{Strict: true})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			r, err := m.PCI().Region(0)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Device().Err(); err != nil {
				t.Fatalf("fault before the access: %v", err)
			}
			tt.do(r)
			if err := m.Device().Err(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("model error %v, want one naming %q", err, tt.want)
			}
		})
	}
}

// TestNoINTx checks the VF's interrupts: three MSI-X vectors, no INTx.
func TestNoINTx(t *testing.T) {
	m, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.PCI().IRQs(irq.INTx, 1); !errors.Is(err, pci.ErrNotSupported) {
		t.Errorf("INTx: %v, want not supported", err)
	}
	if _, err := m.PCI().IRQs(irq.MSIX, 4); err == nil {
		t.Error("four MSI-X vectors granted")
	}
	if v, err := m.PCI().IRQs(irq.MSIX, 3); err != nil || len(v) != 3 {
		t.Errorf("three MSI-X vectors: %d, %v", len(v), err)
	}
}

// TestMailboxBeforeReset checks that the PF NACKs every message before the VF's reset
// handshake (clear to send), as Linux's igb does.
func TestMailboxBeforeReset(t *testing.T) {
	m, err := New(Config{Strict: true, MailboxDelay: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	r, _ := m.PCI().Region(0)
	send := func(words ...uint32) uint32 {
		r.Write32(i82576.V2PMailbox, i82576.MbxVFU)
		for i, w := range words {
			r.Write32(i82576.VFMbxMem+4*uint32(i), w)
		}
		r.Write32(i82576.V2PMailbox, i82576.MbxReq)
		if v := r.Read32(i82576.V2PMailbox); v&(i82576.MbxPFAck|i82576.MbxPFSts) != i82576.MbxPFAck|i82576.MbxPFSts {
			t.Fatalf("mailbox %#x after the message: want PFACK and PFSTS", v)
		}
		r.Write32(i82576.V2PMailbox, i82576.MbxVFU)
		reply := r.Read32(i82576.VFMbxMem)
		r.Write32(i82576.V2PMailbox, i82576.MbxAck)
		return reply
	}
	if got := send(i82576.MsgSetLPE, 1522); got != i82576.MsgSetLPE|i82576.MsgNack {
		t.Errorf("SET_LPE before the reset: reply %#x, want NACK without CTS", got)
	}
	if got := send(i82576.MsgVFReset); got != i82576.MsgVFReset|i82576.MsgAck {
		t.Errorf("VF_RESET: reply %#x", got)
	}
	for _, tt := range []struct {
		msg  []uint32
		want uint32
	}{
		{[]uint32{i82576.MsgSetLPE, 1522}, i82576.MsgSetLPE | i82576.MsgAck | i82576.MsgCTS},
		{[]uint32{i82576.MsgSetLPE, i82576.VFMaxFrame + 1}, i82576.MsgSetLPE | i82576.MsgAck | i82576.MsgCTS}, // clamped
		{[]uint32{i82576.MsgAPINegotiate, i82576.APIBase}, i82576.MsgAPINegotiate | i82576.MsgNack | i82576.MsgCTS},
		{[]uint32{i82576.MsgSetPromisc | 1<<i82576.MsgInfoShift}, i82576.MsgSetPromisc | 1<<i82576.MsgInfoShift | i82576.MsgNack | i82576.MsgCTS},
	} {
		if got := send(tt.msg...); got != tt.want {
			t.Errorf("message %#x: reply %#x, want %#x", tt.msg[0], got, tt.want)
		}
	}
	if err := m.Device().Err(); err != nil {
		t.Fatal(err)
	}
}

package virtio

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/nictest"
	"github.com/uiod/uiod/sim"
	simvirtio "github.com/uiod/uiod/sim/virtio"
)

// TestFaults injects every fault the model offers: each must end as a counted error or
// drop, with no panic, no hang and (checked at close) no buffer lost, and the port must
// work afterwards.
func TestFaults(t *testing.T) {
	tests := []struct {
		name         string
		inject       func(h *harness)
		send, wantRx int
		check        func(t *testing.T, h *harness)
	}{
		{
			name:   "drop",
			inject: func(h *harness) { h.m.DropNext(3) },
			send:   5, wantRx: 2,
			check: func(t *testing.T, h *harness) {
				if d := h.m.Stats().Dropped; d != 3 {
					t.Errorf("model dropped %d, want 3", d)
				}
			},
		},
		{
			name:   "bad descriptor index",
			inject: func(h *harness) { h.m.BadIDNext(2) },
			send:   5, wantRx: 3,
			check: func(t *testing.T, h *harness) {
				if e := h.port.Stats().RxErrors; e != 2 {
					t.Errorf("RxErrors %d, want 2", e)
				}
			},
		},
		{
			name:   "used length over buffer",
			inject: func(h *harness) { h.m.OversizeNext(2) },
			send:   5, wantRx: 3,
			check: func(t *testing.T, h *harness) {
				if e := h.port.Stats().RxErrors; e != 2 {
					t.Errorf("RxErrors %d, want 2", e)
				}
			},
		},
		{
			name:   "used index ahead of the entry",
			inject: func(h *harness) { h.m.UsedAheadNext(1) },
			send:   5, wantRx: 4,
			check: func(t *testing.T, h *harness) {
				if e := h.port.Stats().RxErrors; e != 1 {
					t.Errorf("RxErrors %d, want 1", e)
				}
			},
		},
		{
			name:   "used index beyond the posted buffers",
			inject: func(h *harness) { h.m.JumpUsedIndex(500) },
			send:   1, wantRx: 0,
			check: func(t *testing.T, h *harness) {
				if e := h.port.Stats().RxErrors; e != 1 {
					t.Errorf("RxErrors %d, want 1", e)
				}
			},
		},
		{
			name: "notification storm",
			inject: func(h *harness) {
				h.port.EnableRxInterrupt(0)
				h.m.InterruptStorm(0, 1000)
				if nictest.Drain(h.t, h.port.RxVector(0)) == 0 {
					h.t.Error("storm not delivered")
				}
			},
			send: 2, wantRx: 2,
		},
		{
			name: "link flap",
			inject: func(h *harness) {
				h.m.FlapLink(5 * time.Millisecond)
				waitFor(func() bool { return h.port.LinkChanges() >= 2 && h.port.Link().Up })
			},
			send: 3, wantRx: 3,
			check: func(t *testing.T, h *harness) {
				if h.port.LinkChanges() < 2 {
					t.Errorf("%d link changes seen, want 2", h.port.LinkChanges())
				}
			},
		},
		{
			name:   "ring full",
			inject: func(h *harness) { h.send(100) }, // 64 buffers posted
			send:   0, wantRx: 64,
			check: func(t *testing.T, h *harness) {
				if m := h.m.Stats().Missed; m != 36 {
					t.Errorf("model missed %d, want 36", m)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, simvirtio.Config{}, nic.Config{RxRing: 64, TxRing: 64, Interrupts: nic.IRQMSIX}, Options{})
			tt.inject(h)
			h.send(tt.send)
			if got := h.consume(0); got != tt.wantRx {
				t.Errorf("received %d frames, want %d (model %+v, port %+v)", got, tt.wantRx, h.m.Stats(), h.port.Stats())
			}
			if tt.check != nil {
				tt.check(t, h)
			}
			h.send(3)
			if got := h.consume(0); got != 3 {
				t.Errorf("after the fault: received %d of 3", got)
			}
		})
	}
}

// TestTxBadCompletion gives the transmit queue used entries that name no frame in flight.
func TestTxBadCompletion(t *testing.T) {
	h := newHarness(t, simvirtio.Config{}, nic.Config{NoIRQ: true}, Options{})
	r := h.port.tx[0].ring
	binary.LittleEndian.PutUint32(r.mem.Bytes[r.usedElemOff(0):], 7) // odd: no head
	sim.StoreUint32(r.mem.Bytes[r.l.used:], 1<<16)
	h.port.tx[0].inFlight = 1 // as if one frame were queued
	h.port.tx[0].reclaim()
	h.port.tx[0].inFlight = 0
	if e := h.port.Stats().TxErrors; e != 1 {
		t.Fatalf("TxErrors %d, want 1", e)
	}
	h.faultsOK = true // the used index no longer matches the model's
	h.port.tx[0].lastUsed = 0
	sim.StoreUint32(r.mem.Bytes[r.l.used:], 0)
}

// TestIOMMUCatchesBadAddress corrupts a posted buffer's address in the driver's ring: the
// model's IOMMU must refuse the DMA, the strict model must report it, and the driver must
// count the empty completion and carry on.
func TestIOMMUCatchesBadAddress(t *testing.T) {
	h := newHarness(t, simvirtio.Config{}, nic.Config{RxRing: 64, TxRing: 64, NoIRQ: true}, Options{})
	h.faultsOK = true
	r := h.port.rx[0].ring
	binary.LittleEndian.PutUint64(r.mem.Bytes[16*1:], 0x7777_0000_0000) // slot 0's buffer: filled next
	h.send(1)
	if h.m.Device().IOMMU().Faults() == 0 {
		t.Fatal("DMA to an unmapped bus address went through")
	}
	faults, _ := h.m.Device().Faults()
	var dma bool
	for _, f := range faults {
		dma = dma || f.Kind == sim.DMAFault
	}
	if !dma || h.m.Device().Err() == nil {
		t.Fatalf("faults %v, strict error %v: no DMA fault reported", faults, h.m.Device().Err())
	}
	if n := h.consume(0); n != 0 {
		t.Fatalf("received %d frames through a bad descriptor", n)
	}
	if e := h.port.Stats().RxErrors; e != 1 {
		t.Fatalf("RxErrors %d, want 1", e)
	}
	h.send(2)
	if n := h.consume(0); n != 2 {
		t.Fatalf("after the fault: received %d of 2", n)
	}
}

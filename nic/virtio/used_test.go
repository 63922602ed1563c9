package virtio

import (
	"encoding/binary"
	"testing"

	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/sim"
	simvirtio "github.com/uiod/uiod/sim/virtio"
)

// FuzzUsedRing plays a hostile device: it writes arbitrary used entries and used indexes
// into an RX and a TX ring and lets the driver consume them. The driver must not panic,
// must hand out only buffers it posted, each once, with a length inside the buffer, and
// must keep every buffer accounted for (the harness checks the pools at close).
func FuzzUsedRing(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 60, 0, 0, 0, 1, 0})
	f.Add([]byte{3, 0, 0, 0, 255, 255, 255, 255, 200, 1})
	f.Add([]byte{8, 0, 0, 0, 12, 0, 0, 0, 2, 0, 8, 0, 0, 0, 72, 0, 0, 0, 2, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		h, p := openTest(t, simvirtio.Config{}, nic.Config{RxRing: 16, TxRing: 16, Interrupts: nic.IRQNone}, Options{})
		h.FaultsOK = true
		rq, tq := p.rx[0], p.tx[0]
		seen := map[*nic.Buf]bool{}
		bufs := make([]*nic.Buf, 8)
		var held []*nic.Buf
		for len(data) >= 10 {
			rec := data[:10]
			data = data[10:]
			for _, r := range []*vring{rq.ring, tq.ring} {
				pos := binary.LittleEndian.Uint16(rec[8:]) & uint16(r.size()-1)
				e := r.mem.Bytes[r.usedElemOff(int(pos)):]
				copy(e[:8], rec[:8])
				sim.StoreUint32(r.mem.Bytes[r.l.used:], uint32(binary.LittleEndian.Uint16(rec[8:]))<<16)
			}
			n := p.RxBurst(0, bufs)
			for _, b := range bufs[:n] {
				if seen[b] {
					t.Fatal("a buffer handed out twice")
				}
				if b.Len() <= 0 || b.Len() > b.Cap() {
					t.Fatalf("length %d in a buffer of %d", b.Len(), b.Cap())
				}
				seen[b] = true
				held = append(held, b)
			}
			tq.reclaim()
		}
		for _, b := range held {
			b.Free()
		}
	})
}

// TestTxBadCompletion gives the transmit queue used entries that name no frame in flight.
func TestTxBadCompletion(t *testing.T) {
	h, p := openTest(t, simvirtio.Config{}, nic.Config{Interrupts: nic.IRQNone}, Options{})
	r := p.tx[0].ring
	binary.LittleEndian.PutUint32(r.mem.Bytes[r.usedElemOff(0):], 7) // odd: no head
	sim.StoreUint32(r.mem.Bytes[r.l.used:], 1<<16)
	p.tx[0].inFlight = 1 // as if one frame were queued
	p.tx[0].reclaim()
	p.tx[0].inFlight = 0
	if e := p.Stats().TxErrors; e != 1 {
		t.Fatalf("TxErrors %d, want 1", e)
	}
	h.FaultsOK = true // the used index no longer matches the model's
	p.tx[0].lastUsed = 0
	sim.StoreUint32(r.mem.Bytes[r.l.used:], 0)
}

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
		h := newHarness(t, simvirtio.Config{}, nic.Config{RxRing: 16, TxRing: 16, NoIRQ: true}, Options{})
		h.faultsOK = true
		rq, tq := h.port.rx[0], h.port.tx[0]
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
			n := h.port.RxBurst(0, bufs)
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

package ring

import (
	"fmt"
	"sync/atomic"

	"github.com/uiod/uiod/internal/hw/intelnic"
	"github.com/uiod/uiod/pci"
)

// fakeDMA hands out Go memory with made-up bus addresses and translates them back, like
// an IOMMU, so tests can play the NIC.
type fakeDMA struct {
	next uint64
	mems []pci.Mem
}

func newFakeDMA(base uint64) *fakeDMA { return &fakeDMA{next: base} }

func (f *fakeDMA) Alloc(size int) (pci.Mem, error) {
	raw := make([]byte, size+4096)
	off := int((4096 - addrOf(raw)%4096) % 4096)
	m := pci.Mem{Bytes: raw[off : off+size : off+size], IOVA: f.next}
	f.next += uint64(size+4095)&^4095 + 4096
	f.mems = append(f.mems, m)
	return m, nil
}

func (f *fakeDMA) Free(m pci.Mem) error {
	for i, x := range f.mems {
		if x.IOVA == m.IOVA {
			f.mems = append(f.mems[:i], f.mems[i+1:]...)
			return nil
		}
	}
	return fmt.Errorf("free of unknown iova %#x", m.IOVA)
}

// at returns n bytes at bus address iova, or nil (a DMA fault).
func (f *fakeDMA) at(iova uint64, n int) []byte {
	for _, m := range f.mems {
		if iova >= m.IOVA && iova+uint64(n) <= m.IOVA+uint64(len(m.Bytes)) {
			off := iova - m.IOVA
			return m.Bytes[off : off+uint64(n)]
		}
	}
	return nil
}

// tailReg records the last doorbell write.
type tailReg struct {
	v      uint32
	writes int
}

func (r *tailReg) Write32(off uint32, v uint32) { r.v = v; r.writes++ }

// fakeRx plays the NIC's receive side on one ring.
type fakeRx struct {
	q      *RxQueue
	dma    *fakeDMA
	tail   *tailReg
	head   uint32
	faults int
}

// receive writes one frame into the descriptor at head if the driver posted one; with
// maxSeg > 0 it splits the frame into segments of at most maxSeg bytes.
func (h *fakeRx) receive(frame []byte, maxSeg int) bool {
	if maxSeg <= 0 {
		maxSeg = len(frame)
	}
	segs := (len(frame) + maxSeg - 1) / maxSeg
	if segs == 0 {
		segs = 1
	}
	if int((h.tail.v-h.head)&h.q.mask) < segs {
		return false
	}
	for i := 0; i < segs; i++ {
		part := frame[i*maxSeg:]
		if len(part) > maxSeg {
			part = part[:maxSeg]
		}
		d := &h.q.desc[h.head]
		if b := h.dma.at(d.qw0, len(part)); b != nil {
			copy(b, part)
		} else {
			h.faults++
		}
		st := uint32(intelnic.RxStatusDD)
		if i == segs-1 {
			st |= intelnic.RxStatusEOP
		}
		d.qw0 = 0xfeedface // RSS hash and packet type overwrite the address
		atomic.StoreUint32(&d.w3, uint32(len(part)))
		atomic.StoreUint32(&d.w2, st)
		h.head = (h.head + 1) & h.q.mask
	}
	return true
}

// fakeTx plays the NIC's transmit side on one ring.
type fakeTx struct {
	q      *TxQueue
	dma    *fakeDMA
	tail   *tailReg
	head   uint32
	faults int
}

// send transmits up to max queued descriptors (all if max < 0) and writes DD back.
func (h *fakeTx) send(max int, out func([]byte)) int {
	n := 0
	for h.head != h.tail.v && (max < 0 || n < max) {
		d := &h.q.desc[h.head]
		length := int(d.w2 & 0xffff)
		if d.w2&^0xffff != txCmd {
			h.faults++
		}
		if b := h.dma.at(d.qw0, length); b != nil && out != nil {
			out(b)
		} else if b == nil {
			h.faults++
		}
		atomic.StoreUint32(&d.w3, intelnic.TxStatusDD)
		h.head = (h.head + 1) & h.q.mask
		n++
	}
	return n
}

package virtio

import (
	"github.com/uiod/uiod/internal/hw/virtiospec"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/pci"
)

// txQueue is one transmit virtqueue. Slot p is the descriptor pair 2p (a zero header:
// no offloads) → 2p+1 (the frame), chained once at setup.
type txQueue struct {
	vq
	dma      pci.DMA      // the device's address space
	local    *nic.Mempool // last pool seen to be in dma (saves the interface compare)
	copies   *nic.Mempool // buffers for frames from another address space
	bufs     []*nic.Buf   // buffer per slot until the device used it
	free     []uint16
	lastUsed uint16
	inFlight int
	quietAt  uint16
	nCopies  nic.Counter
	orphans  []*nic.Buf // frames a device reset discarded, freed at the next burst
	plain    int        // the longest untagged frame sent (MTU+14); a tagged one may be VLANTag more
	st       counters
}

func newTxQueue(q *vq, dma pci.DMA, copies *nic.Mempool, mtu int) *txQueue {
	slots := q.ring.size() / 2
	tq := &txQueue{vq: *q, dma: dma, copies: copies, bufs: make([]*nic.Buf, slots), free: make([]uint16, 0, slots), orphans: make([]*nic.Buf, 0, slots),
		plain: mtu + nic.EthHeader}
	r := tq.ring
	for p := slots - 1; p >= 0; p-- {
		r.setDesc(2*p, r.hdrIOVA(p), virtiospec.NetHdrLen, virtiospec.DescNext, uint16(2*p+1))
		r.setDesc(2*p+1, 0, 0, 0, 0)
		tq.free = append(tq.free, uint16(p))
	}
	return tq
}

// reclaim frees the buffers of every frame the device has sent.
func (q *txQueue) reclaim() {
	r := q.ring
	ready := r.usedIdx() - q.lastUsed
	if int(ready) > q.inFlight {
		q.st.errors.Add(1)
		q.lastUsed += ready
		return
	}
	var bad uint64
	for ; ready > 0; ready-- {
		id, _ := r.usedElem(q.lastUsed)
		q.lastUsed++
		p := id / 2
		if id&1 != 0 || p >= uint32(len(q.bufs)) || q.bufs[p] == nil {
			bad++
			continue
		}
		b := q.bufs[p]
		q.bufs[p] = nil
		q.free = append(q.free, uint16(p))
		q.inFlight--
		b.Free()
	}
	if q.eventIdx && q.lastUsed-q.quietAt >= virtiospec.EventIdxLag {
		r.setUsedEvent(q.lastUsed - 1)
		q.quietAt = q.lastUsed
	}
	if bad > 0 {
		q.st.errors.Add(bad)
	}
}

// dropOrphans frees the buffers of the frames a device reset discarded.
func (q *txQueue) dropOrphans() {
	freeBufs(q.orphans)
	q.st.errors.Add(uint64(len(q.orphans)))
	q.orphans = q.orphans[:0]
}

// burst implements TxBurst for this queue.
func (q *txQueue) burst(bufs []*nic.Buf) int {
	if len(q.orphans) > 0 {
		q.dropOrphans()
	}
	q.reclaim()
	r := q.ring
	old := r.availIdx
	n, plain := 0, q.plain // a local: the stores below would make the compiler reload the field
	var queued, bytes uint64
	for n < len(bufs) && len(q.free) > 0 {
		b := bufs[n]
		if l := b.Len(); l == 0 || l > plain && (l > plain+nic.VLANTag || !tagged(b.Bytes())) {
			// A zero-length buffer breaks the device (QEMU: virtio_error, NEEDS_RESET;
			// libvhost-user aborts), and a frame longer than the MTU allows is not the
			// device's to send: never posted, dropped and counted.
			b.Free()
			q.st.errors.Add(1)
			n++
			continue
		}
		if pool := b.Pool(); pool == q.local {
			// Same address space as the last buffer: sent as is.
		} else if pool.Reachable(q.dma) {
			q.local = pool
		} else {
			c := q.copies.Get()
			if c == nil {
				break
			}
			if b.Len() > c.Cap() { // cannot be sent from a buffer of ours: dropped
				c.Free()
				b.Free()
				q.st.errors.Add(1)
				n++
				continue
			}
			c.SetLen(copy(c.Data(), b.Bytes()))
			b.Free()
			b = c
			q.nCopies.Add(1)
		}
		p := q.free[len(q.free)-1]
		q.free = q.free[:len(q.free)-1]
		q.bufs[p] = b
		r.setDescBuf(2*int(p)+1, b.IOVA(), uint32(b.Len()))
		r.push(2 * p)
		queued++
		bytes += uint64(b.Len())
		n++
	}
	if queued > 0 {
		q.inFlight += int(queued)
		r.publish()
		q.kick(old)
		// Counted when handed to the device: it reports no transmit failures, and the
		// buffers are only reclaimed at the next burst, which an idle queue never makes.
		q.st.packets.Add(queued)
		q.st.bytes.Add(bytes)
	}
	return n
}

// release frees every buffer still queued. The device must be reset first.
func (q *txQueue) release() {
	q.dropOrphans()
	freeBufs(q.bufs)
	q.inFlight = 0
}

// freeBufs frees every buffer in bufs and clears its slot.
func freeBufs(bufs []*nic.Buf) {
	for p, b := range bufs {
		if b != nil {
			b.Free()
			bufs[p] = nil
		}
	}
}

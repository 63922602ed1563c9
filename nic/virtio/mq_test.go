package virtio

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/nictest"
	"github.com/uiod/uiod/sim"
	simvirtio "github.com/uiod/uiod/sim/virtio"
)

// TestMultiQueue sets four queue pairs through the control queue: one flow stays on one
// queue, many flows reach every queue.
func TestMultiQueue(t *testing.T) {
	const queues = 4
	h := newHarness(t, simvirtio.Config{MaxPairs: 8}, nic.Config{RxQueues: queues, TxQueues: queues, RxRing: 256, NoIRQ: true}, Options{})
	if p := h.m.Pairs(); p != queues || h.m.Stats().CtrlCommands != 1 {
		t.Fatalf("model uses %d pairs after %d control commands, want %d after 1", p, h.m.Stats().CtrlCommands, queues)
	}
	if h.port.MaxQueuePairs() != 8 || h.port.QueuePairs() != queues {
		t.Fatalf("pairs %d of %d", h.port.QueuePairs(), h.port.MaxQueuePairs())
	}
	rng := rngFor(21)
	counts := func() (c [queues]int) {
		for q := range c {
			c[q] = h.consume(q)
		}
		return c
	}
	for i := 0; i < 100; i++ {
		h.peer.Send(nictest.Frame(rng, nictest.Broadcast, [4]byte{192, 168, 1, 1}, [4]byte{192, 168, 1, 2}, 4000, 53, 80))
	}
	one, used := counts(), 0
	for _, n := range one {
		if n > 0 {
			used++
		}
	}
	if used != 1 {
		t.Fatalf("one flow: per-queue counts %v", one)
	}
	for i := 0; i < 400; i++ {
		src := [4]byte{10, byte(rng.IntN(256)), byte(rng.IntN(256)), byte(rng.IntN(256))}
		h.peer.Send(nictest.Frame(rng, nictest.Broadcast, src, [4]byte{10, 0, 0, 1}, uint16(rng.IntN(65536)), 80, 80))
	}
	many, total := counts(), 0
	for q, n := range many {
		if n < 400/queues/4 {
			t.Errorf("queue %d got %d of 400 frames: %v", q, n, many)
		}
		total += n
	}
	if total != 400 {
		t.Fatalf("received %d of 400", total)
	}
	// Every transmit queue sends.
	var bufs [1]*nic.Buf
	for q := 0; q < queues; q++ {
		h.send(1)
		got := 0
		for rq := 0; rq < queues && got == 0; rq++ {
			got = h.port.RxBurst(rq, bufs[:])
		}
		if got != 1 || h.port.TxBurst(q, bufs[:]) != 1 {
			t.Fatalf("tx queue %d: nothing sent", q)
		}
	}
	if back := h.received(); len(back) != queues {
		t.Fatalf("peer got %d frames from %d tx queues", len(back), queues)
	}
}

// TestAcrossAddressSpaces forwards from one port to a port behind another IOMMU: the
// transmit side must copy and never hand the device a bus address it cannot reach, and
// the originals go back to their pool at once.
func TestAcrossAddressSpaces(t *testing.T) {
	cfg := nic.Config{RxRing: 64, TxRing: 64, NoIRQ: true}
	a, b := newHarness(t, simvirtio.Config{}, cfg, Options{}), newHarness(t, simvirtio.Config{}, cfg, Options{})
	rng := rngFor(31)
	bufs := make([]*nic.Buf, 32)
	var sent [][]byte
	for round := 0; round < 50; round++ {
		for i := 0; i < 20; i++ {
			f := nictest.Frame(rng, nictest.Broadcast, [4]byte{1, 2, 3, 4}, [4]byte{5, 6, 7, 8}, 9, 10, 60+rng.IntN(1400))
			sent = append(sent, f)
			a.peer.Send(f)
		}
		n := a.port.RxBurst(0, bufs)
		if got := b.port.TxBurst(0, bufs[:n]); got != n {
			t.Fatalf("round %d: tx took %d of %d", round, got, n)
		}
	}
	got := b.received()
	if len(got) != len(sent) {
		t.Fatalf("forwarded %d of %d", len(got), len(sent))
	}
	for i := range got {
		if !bytes.Equal(got[i], sent[i]) {
			t.Fatalf("frame %d differs", i)
		}
	}
	if c := b.port.tx[0].nCopies; c != uint64(len(sent)) {
		t.Fatalf("%d copies, want %d", c, len(sent))
	}
	rq := a.port.rx[0]
	if p := rq.pool; p.Avail() != p.Size()-rq.posted {
		t.Fatalf("source pool: %d of %d free with %d posted: originals not freed", p.Avail(), p.Size(), rq.posted)
	}
}

// TestSharedAddressSpace forwards between two ports on one IOMMU without copying.
func TestSharedAddressSpace(t *testing.T) {
	iommu := sim.NewIOMMU()
	cfg := nic.Config{RxRing: 64, TxRing: 64, NoIRQ: true}
	a := newHarness(t, simvirtio.Config{IOMMU: iommu}, cfg, Options{})
	b := newHarness(t, simvirtio.Config{IOMMU: iommu}, cfg, Options{})
	a.send(10)
	bufs := make([]*nic.Buf, 16)
	n := a.port.RxBurst(0, bufs)
	if n != 10 || b.port.TxBurst(0, bufs[:n]) != n {
		t.Fatalf("forwarded %d of 10", n)
	}
	if got := len(b.received()); got != 10 || b.port.tx[0].nCopies != 0 {
		t.Fatalf("peer got %d frames, %d copies; want 10 without copies", got, b.port.tx[0].nCopies)
	}
}

// TestBufferSizes checks that a port receives every frame that fits its buffers, at the
// smallest allowed, a jumbo and the largest buffer size, and that a frame one byte too
// long is left to the device (it does not fit the chain, so the device does not use it).
func TestBufferSizes(t *testing.T) {
	for _, size := range []int{2048, 9 * 1024, 16 * 1024} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			h := newHarness(t, simvirtio.Config{}, nic.Config{RxRing: 16, TxRing: 16, BufSize: size, NoIRQ: true}, Options{})
			rng := rngFor(uint64(size))
			lengths := []int{60, 1514, size}
			for _, n := range append(lengths, size+1) {
				if err := h.peer.Send(nictest.Frame(rng, nictest.Broadcast, [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 1, 2, n)); err != nil {
					t.Fatal(err)
				}
			}
			bufs := make([]*nic.Buf, 8)
			n := h.port.RxBurst(0, bufs)
			got := make([]int, n)
			for i, b := range bufs[:n] {
				got[i] = b.Len()
				b.Free()
			}
			if fmt.Sprint(got) != fmt.Sprint(lengths) {
				t.Errorf("buffers of %d bytes: received frames of %v bytes, want %v", size, got, lengths)
			}
			if o := h.m.Stats().Oversize; o != 1 {
				t.Errorf("model: %d frames too large for the buffers, want 1", o)
			}
			if e := h.port.Stats().RxErrors; e != 0 {
				t.Errorf("%d receive errors", e)
			}
		})
	}
}

// TestSinglePair runs on a device without multi-queue: its control queue is virtqueue 2
// and no pair count is set.
func TestSinglePair(t *testing.T) {
	h := newHarness(t, simvirtio.Config{MaxPairs: 1}, nic.Config{RxRing: 64, TxRing: 64, NoIRQ: true}, Options{})
	if h.port.has(featMQ) || h.port.ctrl == nil || h.port.ctrl.index != 2 {
		t.Fatalf("features %#x, control queue %+v: want no MQ and the control queue at 2", h.port.Features(), h.port.ctrl)
	}
	h.send(10)
	var bufs [16]*nic.Buf
	n := h.port.RxBurst(0, bufs[:])
	if n != 10 || h.port.TxBurst(0, bufs[:n]) != n || len(h.received()) != 10 {
		t.Fatalf("forwarded %d of 10", n)
	}
	if c := h.m.Stats().CtrlCommands; c != 0 {
		t.Fatalf("%d control commands for one pair", c)
	}
}

package virtio

import (
	"testing"

	"github.com/uiod/uiod/internal/hw/virtiospec"
	"github.com/uiod/uiod/nic"
	simvirtio "github.com/uiod/uiod/sim/virtio"
)

// TestControlQueue sets four of eight offered queue pairs through the control queue, in
// one command (the shared MultiQueue suite checks the steering over them).
func TestControlQueue(t *testing.T) {
	const queues = 4
	h, p := openTest(t, simvirtio.Config{MaxPairs: 8}, nic.Config{RxQueues: queues, TxQueues: queues, Interrupts: nic.IRQNone}, Options{})
	vm := h.Virtio()
	if n := vm.Pairs(); n != queues || vm.Stats().CtrlCommands != 1 {
		t.Fatalf("model uses %d pairs after %d control commands, want %d after 1", n, vm.Stats().CtrlCommands, queues)
	}
	if p.MaxQueuePairs() != 8 || p.QueuePairs() != queues {
		t.Fatalf("pairs %d of %d", p.QueuePairs(), p.MaxQueuePairs())
	}
}

// TestSinglePair runs on a device without multi-queue: its control queue is virtqueue 2
// and no pair count is set.
func TestSinglePair(t *testing.T) {
	h, p := openTest(t, simvirtio.Config{MaxPairs: 1}, nic.Config{RxRing: 64, TxRing: 64, Interrupts: nic.IRQNone}, Options{})
	if p.has(virtiospec.FeatMQ) || p.ctrl == nil || p.ctrl.index != 2 {
		t.Fatalf("features %#x, control queue %+v: want no MQ and the control queue at 2", p.Features(), p.ctrl)
	}
	h.Send(10)
	var bufs [16]*nic.Buf
	n := p.RxBurst(0, bufs[:])
	if n != 10 || p.TxBurst(0, bufs[:n]) != n || len(h.Received()) != 10 {
		t.Fatalf("forwarded %d of 10", n)
	}
	if c := h.Virtio().Stats().CtrlCommands; c != 0 {
		t.Fatalf("%d control commands for one pair", c)
	}
}

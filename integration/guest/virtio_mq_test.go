package guest

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/virtio"
)

// TestGuestVirtioMultiQueue opens a virtio-net NIC on a 2-queue host TAP through vfio-pci
// with 2 queue pairs (set through the control queue) and MSI-X, and runs one poll thread
// per queue, each sleeping on its own queue's vector and reflecting what it receives out
// of the same queue pair. The host sends VirtioMQFrames frames of many UDP flows into the
// TAP, whose flow steering spreads them over QEMU's two backend queues and so over the
// device's two RX queues: each queue must receive frames, each thread must be woken by
// its own vector, and /proc/interrupts must show both vectors fire. The host checks that
// every frame came back.
func TestGuestVirtioMultiQueue(t *testing.T) {
	addr := guestNICsFor(t, "UIOD_GUEST_VIRTIO_MQ", " -run VirtioMultiQueue", 1, "a multi-queue virtio-net NIC")[0]
	dev := openVFIO(t, addr)
	p, err := virtio.Open(dev, nic.Config{RxQueues: 2, TxQueues: 2, RxRing: 128, TxRing: 128, Interrupts: nic.IRQMSIX, LinkTimeout: 5 * time.Second})
	if err != nil {
		dev.Close()
		t.Fatal(err)
	}
	defer p.Close()
	t.Logf("%s: %d of %d queue pairs, features %#x, link %+v", addr, p.QueuePairs(), p.MaxQueuePairs(), p.Features(), p.Link())
	if p.QueuePairs() != 2 {
		t.Fatalf("%d queue pairs, want 2", p.QueuePairs())
	}
	var irq0 [2]uint64
	for q := range irq0 {
		irq0[q], _ = irqCount(t, fmt.Sprintf("vfio-msix[%d](%s)", q, addr))
	}
	var marked atomic.Int64
	refl := make([]*relay, 2)
	stats := make([]idle.Stats, 2)
	errs := make([]error, 2)
	var ready, wg sync.WaitGroup
	ready.Add(2)
	for q := range refl {
		refl[q] = &relay{in: p, out: p, q: q, mark: VirtioMQSource, total: &marked}
		wg.Add(1)
		go func(q int) {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			d, err := refl[q].newIdler(100 * time.Millisecond)
			if err != nil {
				errs[q] = err
				ready.Done()
				return
			}
			defer d.Close()
			ready.Done()
			pollUntil(d, refl[q], func() bool { return marked.Load() >= VirtioMQFrames }, 2*time.Minute)
			stats[q] = d.Stats()
		}(q)
	}
	ready.Wait()
	fmt.Println("UIOD-VIRTIO-MQ-READY")
	wg.Wait()
	fmt.Println("UIOD-VIRTIO-MQ-DONE")
	for q := range refl {
		if errs[q] != nil {
			t.Fatal(errs[q])
		}
		irq1, found := irqCount(t, fmt.Sprintf("vfio-msix[%d](%s)", q, addr))
		s := stats[q]
		t.Logf("queue %d: %d marked frames; arms %d sleeps %d woken by interrupt %d, by timeout %d, spurious %d; vfio-msix[%d] fired %d times",
			q, refl[q].marked, s.Arms, s.Sleeps, s.WakeInterrupt, s.WakeTimeout, s.WakeSpurious, q, irq1-irq0[q])
		if refl[q].marked == 0 {
			t.Errorf("queue %d received none of the host's frames", q)
		}
		if s.WakeInterrupt == 0 {
			t.Errorf("queue %d's thread was never woken by its interrupt", q)
		}
		if !found || irq1 == irq0[q] {
			t.Errorf("/proc/interrupts: vfio-msix[%d](%s) found %v, %d → %d", q, addr, found, irq0[q], irq1)
		}
	}
	if n := marked.Load(); n != VirtioMQFrames {
		t.Errorf("received %d of %d frames", n, VirtioMQFrames)
	}
	t.Logf("port %+v", p.Stats())
}

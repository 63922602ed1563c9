package guest

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/virtio"
	"github.com/uiod/uiod/pci"
	"github.com/uiod/uiod/uio"
	"github.com/uiod/uiod/vfio"
)

// virtioNICs returns the guest's two virtio-net NICs; it skips t unless the guest was
// booted with them (UIOD_GUEST_VIRTIO=1, set by the host test's script).
func virtioNICs(t *testing.T) (string, string) {
	t.Helper()
	nics := guestNICsFor(t, "UIOD_GUEST_VIRTIO", " -run Virtio", 2, "two virtio-net NICs")
	return nics[0], nics[1]
}

// irqCount sums the /proc/interrupts counts of the lines that contain every one of names.
func irqCount(t *testing.T, names ...string) (uint64, bool) {
	t.Helper()
	f, err := os.Open("/proc/interrupts")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var total uint64
	found := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		match := true
		for _, n := range names {
			match = match && strings.Contains(line, n)
		}
		if !match {
			continue
		}
		found = true
		for _, w := range strings.Fields(line)[1:] {
			n, err := strconv.ParseUint(w, 10, 64)
			if err != nil {
				break
			}
			total += n
		}
	}
	return total, found
}

// TestGuestVirtioForward drives QEMU's virtio-net with nic/virtio through the real kernel:
// NIC 1 on vfio-pci with MSI-X behind the emulated IOMMU, NIC 2 on uio_pci_generic with
// INTx. In phase "msix" the host sends VirtioFrames frames to NIC 1, one every few
// milliseconds, and the guest forwards each to NIC 2, its poll loop sleeping on NIC 1's RX
// vector between frames; in phase "intx" the host sends to NIC 2 and the guest forwards to
// NIC 1, sleeping on NIC 2's INTx. The host checks that every frame came back; here every
// frame must be forwarded and the thread must have been woken by the receiving port's own
// interrupt, which /proc/interrupts must show.
func TestGuestVirtioForward(t *testing.T) {
	a, b := virtioNICs(t)
	bindForDeviceTest(t, a, "vfio-pci")
	bindForDeviceTest(t, b, "uio_pci_generic")
	log := zaptest.NewLogger(t)
	vd, err := vfio.Open(pci.MustParseAddr(a), vfio.Options{Log: log})
	if err != nil {
		t.Fatal(err)
	}
	ud, err := uio.Open(pci.MustParseAddr(b), uio.Options{Log: log})
	if err != nil {
		vd.Close()
		t.Fatal(err)
	}
	cfg := nic.Config{RxRing: 128, TxRing: 128, LinkTimeout: 5 * time.Second}
	if s := os.Getenv("UIOD_GUEST_VIRTIO_MTU"); s != "" {
		// The jumbo variant: the NICs have host_mtu=N (VIRTIO_NET_F_MTU), the ports mtu N.
		if cfg.MTU, err = strconv.Atoi(s); err != nil {
			t.Fatalf("UIOD_GUEST_VIRTIO_MTU=%q: %v", s, err)
		}
	}
	cfg.Interrupts = nic.IRQMSIX
	pa, err := virtio.Open(vd, cfg)
	if err != nil {
		vd.Close()
		ud.Close()
		t.Fatal(err)
	}
	defer pa.Close()
	cfg.Interrupts = nic.IRQINTx
	pb, err := virtio.Open(ud, cfg)
	if err != nil {
		ud.Close()
		t.Fatal(err)
	}
	defer pb.Close()
	for _, p := range []*virtio.Port{pa, pb} {
		kind, _ := p.IRQKind()
		t.Logf("%s: mac %v, link %+v, features %#x, %d of %d queue pairs, %v", p.Device().Addr(), p.MAC(), p.Link(), p.Features(), p.QueuePairs(), p.MaxQueuePairs(), kind)
	}
	phases := []struct {
		name    string
		in, out *virtio.Port
		irq     []string
	}{
		{"msix", pa, pb, []string{"vfio-msix", a}},
		{"intx", pb, pa, []string{"uio_pci_generic"}},
	}
	for _, ph := range phases {
		irq0, _ := irqCount(t, ph.irq...)
		f := &relay{in: ph.in, out: ph.out}
		d, err := f.newIdler(time.Second)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("UIOD-VIRTIO-READY %s\n", ph.name)
		pollUntil(d, f, func() bool { return f.frames >= VirtioFrames }, 2*time.Minute)
		idle := d.Stats()
		d.Close()
		irq1, found := irqCount(t, ph.irq...)
		in, out := ph.in.Stats(), ph.out.Stats()
		fmt.Printf("UIOD-VIRTIO-DONE %s forwarded=%d\n", ph.name, f.frames)
		t.Logf("%s: forwarded %d; idle arms %d sleeps %d woken by interrupt %d, by timeout %d, spurious %d; %v fired %d times; in %+v out %+v",
			ph.name, f.frames, idle.Arms, idle.Sleeps, idle.WakeInterrupt, idle.WakeTimeout, idle.WakeSpurious, ph.irq, irq1-irq0, in, out)
		if f.frames != VirtioFrames {
			t.Errorf("%s: forwarded %d of %d frames", ph.name, f.frames, VirtioFrames)
		}
		if in.RxErrors != 0 || out.TxErrors != 0 {
			t.Errorf("%s: errors: in %+v, out %+v", ph.name, in, out)
		}
		if idle.WakeInterrupt == 0 {
			t.Errorf("%s: the poll thread was never woken by an interrupt: %+v", ph.name, idle)
		}
		if !found || irq1 == irq0 {
			t.Errorf("%s: /proc/interrupts shows no interrupt of %v (found %v, %d → %d)", ph.name, ph.irq, found, irq0, irq1)
		}
	}
	virtioFilterPhase(t, pa)
}

// virtioFilterPhase is TestGuestVirtioForward's last phase: NIC 1 (promiscuous until now,
// as QEMU's virtio-net is after reset) joins FilterGroup through nic.RxFilter, which turns
// QEMU's filter on (VIRTIO_NET_CTRL_RX promiscuous off, the MAC table); see filterPhase.
func virtioFilterPhase(t *testing.T, p *virtio.Port) { filterPhase(t, p) }

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

package integration

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/integration/guest"
	"github.com/uiod/uiod/testrig/qemutest"
)

// TestIntegrationVirtioMultiQueue proves multi-queue on QEMU's virtio-net: one NIC on a
// 2-queue host TAP (-netdev tap,queues=2,script=no,downscript=no,vhost=off; the device
// with mq=on,vectors=6 behind intel-iommu), a 2-vCPU guest running
// TestGuestVirtioMultiQueue (2 queue pairs under vfio-pci, one poll thread per queue). The
// host brings the TAP up and sends frames of 64 UDP flows into it through AF_PACKET; the
// TAP's flow steering spreads them over the two backend queues. Every frame must come back.
func TestIntegrationVirtioMultiQueue(t *testing.T) {
	vm := startTAPGuest(t, guestTestScript("UIOD_GUEST_VIRTIO_MQ", "^TestGuestVirtioMultiQueue", 5*time.Minute))
	if _, err := vm.WaitOutput("UIOD-VIRTIO-MQ-READY", 5*time.Minute); err != nil {
		t.Fatal(err)
	}
	port, back, err := openTAP(t, vm)
	if err != nil {
		t.Fatal(err)
	}
	if err := sendFlows(port, vm.NICs[0].MAC, guest.VirtioMQSource, guest.VirtioMQFrames, 64, 1000); err != nil {
		t.Fatal(err)
	}
	if _, err := vm.WaitOutput("UIOD-VIRTIO-MQ-DONE", 3*time.Minute); err != nil {
		t.Error(err)
	}
	mine := back.count(guest.VirtioMQFrames, 10*time.Second, func(f []byte) bool {
		return len(f) >= 12 && bytes.Equal(f[6:12], guest.VirtioMQSource)
	})
	t.Logf("%d of %d frames back through %s", mine, guest.VirtioMQFrames, vm.NICs[0].TAP)
	if mine != guest.VirtioMQFrames {
		t.Errorf("%d of %d frames came back", mine, guest.VirtioMQFrames)
	}
	finishGuest(t, vm)
}

// runMQFrames frames of runMQFlows UDP flows go into the TAP of
// TestIntegrationVirtioRunMultiQueue, from runMQSource.
const (
	runMQFrames = 256
	runMQFlows  = 64
)

var runMQSource = []byte{0x02, 0, 0, 0, 0, 0xaa}

// TestIntegrationVirtioRunMultiQueue proves multi-queue virtio-net under `uiod run`: a
// 2-vCPU guest with one virtio-net NIC on a 2-queue host TAP (-netdev tap,queues=2,
// script=no,downscript=no,vhost=off; -device virtio-net-pci,...,mq=on,vectors=6 behind
// intel-iommu) runs testdata/virtio_mq_run.sh: the daemon opens the NIC under vfio-pci
// with 2 queue pairs (set through the control queue), reflects every frame, one adaptive
// poll thread per RX queue on CPUs 0 and 1. The host sends frames of 64 UDP flows into the
// TAP through AF_PACKET, which spreads them over its two queues, and every frame must come
// back; each RX queue must have received some, on its own thread, and each thread's sleeps
// must have been ended by its own queue's MSI-X vector (never more wake-ups than the
// vector fired).
func TestIntegrationVirtioRunMultiQueue(t *testing.T) {
	vm := startTAPGuest(t, testdataScript(t, "virtio_mq_run.sh"))
	mine := 0
	if _, err := vm.WaitOutput("E2E READY", 5*time.Minute); err != nil {
		t.Error(err)
	} else if mine, err = sendRunMQ(t, vm); err != nil {
		t.Error(err)
	}
	if err := takeSnapshot(vm, "end"); err != nil {
		t.Error(err)
	}
	res, rep := doneE2E(t, vm)
	t.Logf("%d of %d frames back through %s", mine, runMQFrames, vm.NICs[0].TAP)
	if mine != runMQFrames {
		t.Errorf("%d of %d frames came back", mine, runMQFrames)
	}
	checkRunMQ(t, res.NICs[0], rep)
	rep.checkRunExit(t)
	if !rep.logged("nic driver", `"nic": "virtio"`) {
		t.Errorf("the daemon's log does not say the virtio driver opened p0:\n%s", strings.Join(rep.log, "\n"))
	}
}

// sendRunMQ brings the TAP up and sends the flows into it, a few frames at a time so that
// the poll threads go idle in between, and returns how many frames were reflected back.
func sendRunMQ(t *testing.T, vm *qemutest.VM) (int, error) {
	port, back, err := openTAP(t, vm)
	if err != nil {
		return 0, err
	}
	if err := sendFlows(port, vm.NICs[0].MAC, runMQSource, runMQFrames, runMQFlows, 2000); err != nil {
		return 0, err
	}
	// Reflected: the MACs swapped, the rest as sent.
	return back.count(runMQFrames, 30*time.Second, func(f []byte) bool {
		return len(f) >= 12 && bytes.Equal(f[:6], runMQSource)
	}), nil
}

// checkRunMQ checks the snapshots before and after the frames: both RX queues received,
// on different threads, and each thread slept and was woken by its queue's vector only.
func checkRunMQ(t *testing.T, nic string, rep *e2eReport) {
	t.Helper()
	var st [2]*daemonStatus
	for i, name := range []string{"start", "end"} {
		var err error
		if st[i], err = parseStatus(rep.snap(name), 1, 2); err != nil {
			t.Fatalf("/status %s: %v", name, err)
		}
		if len(st[i].Queues) != 2 {
			t.Fatalf("/status %s: %d queues, want 2:\n%s", name, len(st[i].Queues), rep.snap(name).status)
		}
	}
	if st[1].Queues[0].Thread == st[1].Queues[1].Thread {
		t.Errorf("both RX queues are polled by thread %d", st[1].Queues[0].Thread)
	}
	var total uint64
	for q := range st[1].Queues {
		qs := st[1].Queues[q]
		n := qs.RxPackets - st[0].Queues[q].RxPackets
		total += n
		th0, th1 := st[0].Threads[qs.Thread], st[1].Threads[qs.Thread]
		sleeps, woken := th1.Sleeps-th0.Sleeps, th1.WakeInterrupt-th0.WakeInterrupt
		fired, ok := irqDelta(rep.snap("start"), rep.snap("end"), fmt.Sprintf("vfio-msix[%d](%s)", q, nic))
		t.Logf("queue %s: received %d; thread %d (CPU %d): sleeps %d, woken by interrupt %d; vfio-msix[%d] fired %d",
			qs.Name, n, qs.Thread, th1.CPU, sleeps, woken, q, fired)
		if !ok {
			t.Errorf("guest /proc/interrupts has no vfio-msix[%d] of %s", q, nic)
		}
		if n == 0 {
			t.Errorf("queue %s received nothing: the TAP steered every flow to the other queue", qs.Name)
			continue
		}
		if sleeps == 0 || woken == 0 || fired == 0 {
			t.Errorf("queue %s: thread %d slept %d times, woke by interrupt %d times, its vector fired %d times; want each at least once (the thread was idle when the first frame came)",
				qs.Name, qs.Thread, sleeps, woken, fired)
		}
		// The guest reads /proc/interrupts and the daemon's /status one after the other,
		// not atomically, so one wake-up can be counted on one side of a snapshot and its
		// interrupt on the other: allow one (seen once in seven make test runs).
		if woken > fired+1 {
			t.Errorf("queue %s: thread %d woke by interrupt %d times, more than its vector fired (%d) and one for the snapshots' skew", qs.Name, qs.Thread, woken, fired)
		}
	}
	if total < runMQFrames {
		t.Errorf("the RX queues received %d frames, want the %d sent", total, runMQFrames)
	}
}

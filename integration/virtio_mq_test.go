package integration

import (
	"bytes"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/qemutest"
)

// virtioMQFrames and virtioMQSource are VirtioMQFrames and VirtioMQSource of the guest
// test.
const virtioMQFrames = 256

var virtioMQSource = []byte{0x02, 0, 0, 0, 0, 0x99}

// TestIntegrationVirtioMultiQueue proves multi-queue on QEMU's virtio-net: one NIC on a
// 2-queue host TAP (-netdev tap,queues=2,script=no,downscript=no,vhost=off; the device
// with mq=on,vectors=6 behind intel-iommu), a 2-vCPU guest running
// TestGuestVirtioMultiQueue (2 queue pairs under vfio-pci, one poll thread per queue). The
// host brings the TAP up and sends frames of 64 UDP flows into it through AF_PACKET; the
// TAP's flow steering spreads them over the two backend queues. Every frame must come back.
func TestIntegrationVirtioMultiQueue(t *testing.T) {
	requireIP(t)
	vm := startGuest(t, qemutest.DebianKernel, qemutest.Options{
		IOMMU: true, NICModel: "virtio", NICs: 1, TAPQueues: 2, CPUs: 2, HugePages: 16,
		Cmdline: []string{"tsc=reliable"}, Timeout: 8 * time.Minute,
		Script: guestTestScript("UIOD_GUEST_VIRTIO_MQ", "^TestGuestVirtioMultiQueue", 5*time.Minute),
	})
	if _, err := vm.WaitOutput("UIOD-VIRTIO-MQ-READY", 5*time.Minute); err != nil {
		t.Fatal(err)
	}
	port, back, err := openTAP(t, vm)
	if err != nil {
		t.Fatal(err)
	}
	if err := sendFlows(port, vm.NICs[0].MAC, virtioMQSource, virtioMQFrames, 64, 1000); err != nil {
		t.Fatal(err)
	}
	if _, err := vm.WaitOutput("UIOD-VIRTIO-MQ-DONE", 3*time.Minute); err != nil {
		t.Error(err)
	}
	mine := back.count(virtioMQFrames, 10*time.Second, func(f []byte) bool {
		return len(f) >= 12 && bytes.Equal(f[6:12], virtioMQSource)
	})
	t.Logf("%d of %d frames back through %s", mine, virtioMQFrames, vm.NICs[0].TAP)
	if mine != virtioMQFrames {
		t.Errorf("%d of %d frames came back", mine, virtioMQFrames)
	}
	finishGuest(t, vm)
}

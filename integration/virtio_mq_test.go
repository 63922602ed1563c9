package integration

import (
	"bytes"
	"testing"
	"time"

	"github.com/uiod/uiod/integration/guest"
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

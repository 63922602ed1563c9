package integration

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/uiod/uiod/integration/guest"
	"github.com/uiod/uiod/internal/qemutest"
	"github.com/uiod/uiod/wire"
)

// TestIntegrationVirtioDebianIOMMU proves nic/virtio on QEMU's virtio-net in the real
// kernel: a guest with two modern virtio-net NICs (QEMU flags: qemutest.VirtioNICArgs, each
// behind its own pcie-root-port, after intel-iommu,intremap=on; dgram netdevs) runs
// TestGuestVirtioForward, which binds NIC 1 to vfio-pci (MSI-X) and NIC 2 to
// uio_pci_generic (INTx) and forwards between them while the host sends frames through
// QEMU's datagram sockets: every frame must come back byte for byte, out of the other NIC.
func TestIntegrationVirtioDebianIOMMU(t *testing.T) {
	vm := startGuest(t, qemutest.DebianKernel, qemutest.Options{
		IOMMU: true, NICModel: "virtio", HugePages: 16, Timeout: 8 * time.Minute,
		// The virtio guest test only (the igb ones skip or fail without igb).
		Script: guestTestScript("UIOD_GUEST_VIRTIO", "^TestGuestVirtioForward$", 5*time.Minute),
	})
	ports := make([]*wire.UnixPort, 2)
	got := make([]*frameLog, 2)
	for i := range ports {
		p, err := wire.ListenUnix(vm.NICs[i].HostSocket, vm.NICs[i].GuestSocket)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		got[i] = &frameLog{}
		p.SetHandler(got[i].add)
		ports[i] = p
	}
	for _, ph := range []struct {
		name    string
		in, out int
	}{{"msix", 0, 1}, {"intx", 1, 0}} {
		if _, err := vm.WaitOutput("UIOD-VIRTIO-READY "+ph.name, 5*time.Minute); err != nil {
			t.Fatalf("phase %s: %v", ph.name, err)
		}
		var sent [][]byte
		for i := 0; i < guest.VirtioFrames; i++ {
			f := make([]byte, 60+i%200)
			copy(f, vm.NICs[ph.out].MAC) // to the far NIC's address; the guest forwards blindly
			copy(f[6:], []byte{0x02, 0, 0, 0, 0, byte(ph.in)})
			f[12], f[13] = 0x88, 0xb5 // local experimental ethertype
			copy(f[14:], fmt.Sprintf("%s %d", ph.name, i))
			if err := ports[ph.in].Send(f); err != nil {
				t.Fatalf("phase %s: send frame %d: %v", ph.name, i, err)
			}
			sent = append(sent, f)
			time.Sleep(5 * time.Millisecond) // past the idle threshold: the guest arms and sleeps
		}
		if _, err := vm.WaitOutput("UIOD-VIRTIO-DONE "+ph.name, 3*time.Minute); err != nil {
			t.Errorf("phase %s: %v", ph.name, err)
		}
		back := got[ph.out].wait(len(sent), 10*time.Second)
		if len(back) != len(sent) {
			t.Errorf("phase %s: %d of %d frames came back", ph.name, len(back), len(sent))
		}
		for i := range back {
			if i < len(sent) && !bytes.Equal(back[i], sent[i]) {
				t.Errorf("phase %s: frame %d came back different (%d bytes, sent %d)", ph.name, i, len(back[i]), len(sent[i]))
				break
			}
		}
		t.Logf("phase %s: %d of %d frames back", ph.name, len(back), len(sent))
	}
	finishGuest(t, vm)
}

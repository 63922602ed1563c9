package integration

import (
	"encoding/binary"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/qemutest"
	"github.com/uiod/uiod/wire"
)

// virtioMQFrames and virtioMQSource are VirtioMQFrames and VirtioMQSource of the guest
// test.
const virtioMQFrames = 256

var virtioMQSource = []byte{0x02, 0, 0, 0, 0, 0x99}

const virtioMQScript = `uiod version 2>&1 | head -1
export UIOD_GUEST_VIRTIO_MQ=1
exec guest.test -test.v -test.count=1 -test.timeout=5m -test.run '^TestGuestVirtioMultiQueue'
`

// TestIntegrationVirtioMultiQueue proves multi-queue on QEMU's virtio-net: one NIC on a
// 2-queue host TAP (-netdev tap,queues=2,script=no,downscript=no,vhost=off; the device
// with mq=on,vectors=6 behind intel-iommu), a 2-vCPU guest running
// TestGuestVirtioMultiQueue (2 queue pairs under vfio-pci, one poll thread per queue). The
// host brings the TAP up and sends frames of 64 UDP flows into it through AF_PACKET; the
// TAP's flow steering spreads them over the two backend queues. Every frame must come back.
func TestIntegrationVirtioMultiQueue(t *testing.T) {
	k, err := qemutest.DebianKernel()
	if err != nil {
		t.Skip(err)
	}
	qemutest.Require(t)
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("no ip(8) to bring the TAP interface up")
	}
	o := qemutest.Options{
		Kernel: k, IOMMU: true, NICModel: "virtio", NICs: 1, TAPQueues: 2, CPUs: 2, HugePages: 16,
		Cmdline: []string{"tsc=reliable"},
		Files:   guestFiles(t), Script: virtioMQScript, Timeout: 8 * time.Minute,
	}
	vm := qemutest.Start(t, o)
	tap := vm.NICs[0].TAP
	if _, err := vm.WaitOutput("UIOD-VIRTIO-MQ-READY", 5*time.Minute); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("ip", "link", "set", "dev", tap, "up").CombinedOutput(); err != nil {
		t.Fatalf("ip link set %s up: %v: %s", tap, err, out)
	}
	port, err := wire.ListenPacket(tap)
	if err != nil {
		t.Fatal(err)
	}
	defer port.Close()
	back := &frameLog{}
	port.SetHandler(back.add)
	sent := 0
	for i := 0; i < virtioMQFrames; i++ {
		f := udpFrame(vm.NICs[0].MAC, virtioMQSource, uint16(1000+i%64), i)
		if err := port.Send(f); err != nil {
			t.Fatalf("send frame %d: %v", i, err)
		}
		sent++
		if i%8 == 7 {
			time.Sleep(5 * time.Millisecond) // let the guest's threads go idle and sleep
		}
	}
	if _, err := vm.WaitOutput("UIOD-VIRTIO-MQ-DONE", 3*time.Minute); err != nil {
		t.Error(err)
	}
	mine := 0
	deadline := time.Now().Add(10 * time.Second)
	for mine < sent && time.Now().Before(deadline) {
		for _, f := range back.wait(sent-mine, 100*time.Millisecond) {
			if len(f) >= 12 && string(f[6:12]) == string(virtioMQSource) {
				mine++
			}
		}
	}
	t.Logf("%d of %d frames back through %s", mine, sent, tap)
	if mine != sent {
		t.Errorf("%d of %d frames came back", mine, sent)
	}
	r, err := vm.Wait()
	if err != nil {
		t.Fatal(err)
	}
	r.Report(t)
	if t.Failed() {
		t.Logf("guest console:\n%s", r.Console)
	}
}

// udpFrame builds a 64-byte IPv4/UDP frame from src to dst with the given source port and
// sequence number in the payload.
func udpFrame(dst, src []byte, sport uint16, seq int) []byte {
	f := make([]byte, 64)
	copy(f, dst)
	copy(f[6:], src)
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:]
	ip[0], ip[8], ip[9] = 0x45, 64, 17
	binary.BigEndian.PutUint16(ip[2:], 50)
	copy(ip[12:], []byte{10, 9, 0, 1})
	copy(ip[16:], []byte{10, 9, 0, 2})
	binary.BigEndian.PutUint16(ip[20:], sport)
	binary.BigEndian.PutUint16(ip[22:], 9)
	binary.BigEndian.PutUint16(ip[24:], 30)
	copy(ip[28:], fmt.Sprintf("mq %d", seq))
	return f
}

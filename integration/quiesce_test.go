package integration

import (
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/qemutest"
)

// quiesceScript runs only the guest's quiesce test (see integration/guest/quiesce_test.go)
// with the loopback up for the daemon's /status.
const quiesceScript = `ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up
uiod version 2>&1 | head -1
export UIOD_GUEST_QUIESCE=1
exec guest.test -test.v -test.count=1 -test.timeout=4m -test.run '^TestGuestQuiesce'
`

// TestIntegrationQuiesceDebianIOMMU: a uio_pci_generic port under traffic, its daemon
// killed with SIGKILL, then `uiod quiesce`: bus mastering off, and the frames the host
// keeps sending are no longer DMAed. The host sends a frame into NIC 2's wire every 20 ms
// for the whole boot and counts the frames the daemon reflects; the guest test makes the
// device-side assertions.
func TestIntegrationQuiesceDebianIOMMU(t *testing.T) {
	k, err := qemutest.DebianKernel()
	if err != nil {
		t.Skip(err)
	}
	qemutest.Require(t)
	o := qemutest.Options{Kernel: k, IOMMU: true, HugePages: 32, Timeout: 5 * time.Minute,
		Files: guestFiles(t), Script: quiesceScript}
	vm := qemutest.Start(t, o)
	nic := vm.NICs[1]
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: nic.HostSocket, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var sent, reflected atomic.Int64
	go func() {
		buf := make([]byte, 2048)
		for {
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			if n >= 14 && buf[12] == 0x88 && buf[13] == 0xb5 {
				reflected.Add(1)
			}
		}
	}()
	stop := make(chan struct{})
	go func() {
		frame := make([]byte, 60)
		copy(frame, nic.MAC)
		copy(frame[6:], []byte{0x02, 0, 0, 0, 0, 1, 0x88, 0xb5}) // a made-up ethertype
		dst := &net.UnixAddr{Name: nic.GuestSocket, Net: "unixgram"}
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if _, err := c.WriteToUnix(frame, dst); err == nil { // fails until QEMU has bound its end
				sent.Add(1)
			}
		}
	}()
	res, err := vm.Wait()
	close(stop)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: boot %v, guest tests %v; host sent %d frames, %d reflected", res.Kernel,
		res.Boot.Round(time.Millisecond), res.Script.Round(time.Millisecond), sent.Load(), reflected.Load())
	res.Report(t)
	if reflected.Load() == 0 {
		t.Error("no frame came back: the daemon never forwarded, so DMA was never on")
	}
	if t.Failed() {
		t.Logf("guest console:\n%s", res.Console)
	}
}

package integration

import (
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/qemutest"
)

// unitScript runs only the guest's unit test (see integration/guest/unit_test.go) with the
// loopback up for the daemon's /status.
const unitScript = `ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up
uiod version 2>&1 | head -1
export UIOD_GUEST_UNIT=1
exec guest.test -test.v -test.count=1 -test.timeout=4m -test.run '^TestGuestUnit'
`

// TestIntegrationUnitDebianIOMMU: the shipped systemd unit's bind → run → stop → restore
// path in the guest. The guest gets contrib/uiod.service where the package installs it and
// runs its ExecStartPre=, ExecStart= and ExecStopPost= lines in order (see
// TestGuestUnitBindRunRestore) with a configuration that puts NIC 1 on vfio-pci and NIC 2
// on uio_pci_generic, forwarding between them. The host sends a frame into each NIC every
// 20 ms for the whole boot and counts the frames the daemon forwards out of the other NIC.
func TestIntegrationUnitDebianIOMMU(t *testing.T) {
	k, err := qemutest.DebianKernel()
	if err != nil {
		t.Skip(err)
	}
	qemutest.Require(t)
	files := append(guestFiles(t), qemutest.File("lib/systemd/system/uiod.service", "../contrib/uiod.service"))
	o := qemutest.Options{Kernel: k, IOMMU: true, HugePages: 32, Timeout: 5 * time.Minute,
		Files: files, Script: unitScript}
	vm := qemutest.Start(t, o)
	var sent [2]atomic.Int64
	var forwarded [2]atomic.Int64 // [i]: frames sent into NIC i that left the other NIC
	conns := make([]*net.UnixConn, 2)
	for i, nic := range vm.NICs[:2] {
		c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: nic.HostSocket, Net: "unixgram"})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
		go func() {
			buf := make([]byte, 2048)
			for {
				n, err := c.Read(buf)
				if err != nil {
					return
				}
				// A frame the host sent into NIC j carries source MAC 02:00:00:00:00:0(j+1).
				if n >= 14 && buf[12] == 0x88 && buf[13] == 0xb5 && buf[6] == 0x02 {
					if j := int(buf[11]) - 1; j == 1-i {
						forwarded[j].Add(1)
					}
				}
			}
		}()
	}
	stop := make(chan struct{})
	go func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			for i, nic := range vm.NICs[:2] {
				frame := make([]byte, 60)
				copy(frame, nic.MAC)
				copy(frame[6:], []byte{0x02, 0, 0, 0, 0, byte(i + 1), 0x88, 0xb5}) // a made-up ethertype
				dst := &net.UnixAddr{Name: nic.GuestSocket, Net: "unixgram"}
				if _, err := conns[i].WriteToUnix(frame, dst); err == nil { // fails until QEMU has bound its end
					sent[i].Add(1)
				}
			}
		}
	}()
	res, err := vm.Wait()
	close(stop)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: boot %v, guest tests %v; host sent %d/%d frames into NIC 1/2, %d/%d forwarded out of the other",
		res.Kernel, res.Boot.Round(time.Millisecond), res.Script.Round(time.Millisecond),
		sent[0].Load(), sent[1].Load(), forwarded[0].Load(), forwarded[1].Load())
	res.Report(t)
	for i := range forwarded {
		if forwarded[i].Load() == 0 {
			t.Errorf("no frame sent into NIC %d came out of NIC %d: the daemon the unit started did not forward", i+1, 2-i)
		}
	}
	if t.Failed() {
		t.Logf("guest console:\n%s", res.Console)
	}
}

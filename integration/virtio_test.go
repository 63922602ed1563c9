package integration

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/uiod/uiod/integration/guest"
	"github.com/uiod/uiod/testrig/qemutest"
	"github.com/uiod/uiod/wire"
)

// TestIntegrationVirtioDebianIOMMU proves nic/virtio on QEMU's virtio-net in the real
// kernel: a guest with two modern virtio-net NICs (QEMU flags: qemutest.VirtioNICArgs, each
// behind its own pcie-root-port, after intel-iommu,intremap=on; dgram netdevs) runs
// TestGuestVirtioForward, which binds NIC 1 to vfio-pci (MSI-X) and NIC 2 to
// uio_pci_generic (INTx) and forwards between them while the host sends frames through
// QEMU's datagram sockets: every frame must come back byte for byte, out of the other NIC.
func TestIntegrationVirtioDebianIOMMU(t *testing.T) {
	virtioForward(t, 0, func(i int) int { return 60 + i%200 })
}

// TestIntegrationVirtioJumbo is TestIntegrationVirtioDebianIOMMU at MTU 9000: both NICs
// have host_mtu=9000 (VIRTIO_NET_F_MTU offered with mtu 9000), the guest opens both
// ports with mtu 9000, and the host sends frames of 60, 1514, 1515, 4096 and 9014 bytes in
// turn: every one must come back byte for byte, with no RX or TX error on either port.
func TestIntegrationVirtioJumbo(t *testing.T) {
	sizes := []int{60, 1514, 1515, 4096, 9014}
	virtioForward(t, 9000, func(i int) int { return sizes[i%len(sizes)] })
}

// virtioForward runs TestGuestVirtioForward on two virtio-net NICs with host_mtu=mtu and
// ports of that MTU (0: neither), frame i of the host's being size(i) bytes.
func virtioForward(t *testing.T, mtu int, size func(i int) int) {
	script := guestTestScript("UIOD_GUEST_VIRTIO", "^TestGuestVirtioForward$", 5*time.Minute)
	if mtu > 0 {
		script = fmt.Sprintf("export UIOD_GUEST_VIRTIO_MTU=%d\n", mtu) + script
	}
	vm := startGuest(t, qemutest.DebianKernel, qemutest.Options{
		IOMMU: true, NICModel: "virtio", VirtioMTU: mtu, HugePages: 16, Timeout: 8 * time.Minute,
		// The virtio guest test only (the igb ones skip or fail without igb).
		Script: script,
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
			f := make([]byte, size(i))
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
	hostFilterPhase(t, vm, ports[0], vm.NICs[0].MAC)
	finishGuest(t, vm)
}

// TestIntegrationVirtioLatency times round trips through an igb and a virtio-net NIC of one
// guest (NIC 1 igb, NIC 2 virtio-net with qemutest.VirtioNICArgs, both behind intel-iommu
// on dgram netdevs), each reflected by TestGuestVirtioLatency under vfio-pci with MSI-X and
// the adaptive idle policy (300 µs threshold). The host sends one probe at a time, 2 ms
// after the last came back, so that every probe finds the poll thread asleep; the round
// trip is host send → host receive on the host socket. It asserts only that every probe
// came back (within 10 s: a notification the driver failed to send would hold it
// until the next probe, which is only sent after that) and logs the percentiles (TCG: the numbers compare the two NICs, nothing more).
func TestIntegrationVirtioLatency(t *testing.T) {
	vm := startGuest(t, qemutest.DebianKernel, qemutest.Options{
		IOMMU: true, NICModels: []string{"igb", "virtio"}, HugePages: 16,
		Cmdline: []string{"tsc=reliable"}, Timeout: 8 * time.Minute,
		Script: guestTestScript("UIOD_GUEST_VIRTIO_LATENCY", "^TestGuestVirtioLatency", 5*time.Minute),
	})
	for i, name := range []string{"igb", "virtio"} {
		p, err := wire.ListenUnix(vm.NICs[i].HostSocket, vm.NICs[i].GuestSocket)
		if err != nil {
			t.Fatal(err)
		}
		back := make(chan int64, 1)
		var mu sync.Mutex
		var want uint32
		late := map[uint32]time.Duration{} // replies that came after their probe timed out
		sentAt := map[uint32]int64{}
		p.SetHandler(func(f []byte, ts int64) {
			if len(f) < 22 || string(f[6:12]) != string(guest.VirtioProbeSource) {
				return
			}
			seq := binary.BigEndian.Uint32(f[18:])
			mu.Lock()
			ok := seq == want
			if !ok {
				late[seq] = time.Duration(ts - sentAt[seq])
			}
			mu.Unlock()
			if ok {
				select {
				case back <- ts:
				default:
				}
			}
		})
		if _, err := vm.WaitOutput("UIOD-VIRTIO-LAT-READY "+name, 5*time.Minute); err != nil {
			p.Close()
			t.Fatal(err)
		}
		var rtts []time.Duration
		lost := 0
		f := make([]byte, 64)
		copy(f, vm.NICs[i].MAC)
		copy(f[6:], guest.VirtioProbeSource)
		f[12], f[13] = 0x88, 0xb5
		for seq := uint32(0); seq < guest.VirtioLatencyProbes; seq++ {
			binary.BigEndian.PutUint32(f[18:], seq)
			t0 := wire.Now()
			mu.Lock()
			want = seq
			sentAt[seq] = t0
			mu.Unlock()
			if err := p.Send(f); err != nil {
				t.Fatalf("%s: probe %d: %v", name, seq, err)
			}
			select {
			case ts := <-back:
				rtts = append(rtts, time.Duration(ts-t0))
			case <-time.After(10 * time.Second):
				lost++
				t.Logf("%s: probe %d not back after 10 s", name, seq)
			}
			time.Sleep(2 * time.Millisecond)
		}
		p.Close()
		mu.Lock()
		for seq, d := range late {
			t.Logf("%s: probe %d came back %v after it was sent", name, seq, d)
		}
		mu.Unlock()
		if _, err := vm.WaitOutput("UIOD-VIRTIO-LAT-DONE "+name, time.Minute); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if lost > 0 {
			t.Errorf("%s: %d of %d probes did not come back", name, lost, guest.VirtioLatencyProbes)
		}
		t.Logf("%s", latencyLine(name, rtts))
	}
	finishGuest(t, vm)
}

// latencyLine formats the percentiles of rtts as a table row.
func latencyLine(name string, rtts []time.Duration) string {
	if len(rtts) == 0 {
		return name + ": no samples"
	}
	s := slices.Clone(rtts)
	slices.Sort(s)
	pct := func(p float64) time.Duration { return s[min(len(s)-1, int(p*float64(len(s))))] }
	r := func(d time.Duration) string { return fmt.Sprintf("%.0f µs", float64(d)/1e3) }
	return fmt.Sprintf("| %s | %d | %s | %s | %s | %s | %s |", name, len(s), r(s[0]), r(pct(0.5)), r(pct(0.9)), r(pct(0.99)), r(s[len(s)-1]))
}

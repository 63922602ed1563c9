package integration

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/uiod/uiod/integration/guest"
	"github.com/uiod/uiod/internal/qemutest"
	"github.com/uiod/uiod/wire"
)

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

package nictest

import (
	"encoding/binary"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uiod/uiod/nic"
)

// The groups the receive filter suite joins. Their multicast table hashes (address bits
// 47:36, the Intel MTA's filter type 0 and the VF's SET_MULTICAST hash) are 0x010 and
// 0x020: they do not collide, so a hash filter tells them apart as an exact one does.
// Group1 and NewMAC are exported for the drivers' own filter tests; nothing changes them.
var (
	Group1 = net.HardwareAddr{0x33, 0x33, 0xff, 0x00, 0x00, 0x01}
	group2 = net.HardwareAddr{0x33, 0x33, 0xff, 0x00, 0x00, 0x02}
	// otherMulticast is an IPv4 group (hash 0x030) no call joins.
	otherMulticast = net.HardwareAddr{0x01, 0x00, 0x5e, 0x01, 0x00, 0x03}
	// stranger is a unicast address that is not the port's.
	stranger = net.HardwareAddr{0x02, 0x99, 0x88, 0x77, 0x66, 0x55}
	// NewMAC is the station address SetMAC moves the port to (also a VF's PF-assigned
	// address in nic/igbvf's tests).
	NewMAC = net.HardwareAddr{0x02, 0x11, 0x22, 0x33, 0x44, 0x55}
)

// FilterOf is p's nic.RxFilter (nil: the driver has none).
func FilterOf(p Port) nic.RxFilter {
	if f, ok := p.(nic.RxFilter); ok {
		return f
	}
	if f, ok := DriverPort(p).(nic.RxFilter); ok {
		return f
	}
	return nil
}

// manyGroups are n multicast groups, 33:33:00:00:hi:lo for i < n.
func manyGroups(n int) []net.HardwareAddr {
	g := make([]net.HardwareAddr, n)
	for i := range g {
		g[i] = net.HardwareAddr{0x33, 0x33, 0, 0, byte(i >> 8), byte(i)}
	}
	return g
}

// probeTimeout bounds the wait for a probe's marker frame.
const probeTimeout = 5 * time.Second

// Probe sends one frame to each of dsts, then a broadcast marker, receives on RX queue 0
// until the marker arrives (frames arrive in order: what was not received by then was
// filtered) and reports which of dsts were received.
func (h *Harness) Probe(dsts ...net.HardwareAddr) map[string]bool {
	h.T.Helper()
	h.probes++
	tag := h.probes
	send := func(dst net.HardwareAddr, i int) {
		f := make([]byte, 64)
		copy(f, dst)
		copy(f[6:], []byte{0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0xee})
		binary.BigEndian.PutUint16(f[12:], 0x88b5) // local experimental ethertype
		binary.BigEndian.PutUint32(f[14:], tag)
		binary.BigEndian.PutUint32(f[18:], uint32(i))
		if err := h.Peer.Send(f); err != nil {
			h.T.Fatal(err)
		}
	}
	for i, d := range dsts {
		send(d, i)
	}
	send(Broadcast, -1)
	got := map[string]bool{}
	bufs := make([]*nic.Buf, 32)
	deadline := time.Now().Add(probeTimeout)
	for {
		n := h.Port.RxBurst(0, bufs)
		marker := false
		for _, b := range bufs[:n] {
			f := b.Bytes()
			if len(f) >= 22 && binary.BigEndian.Uint16(f[12:]) == 0x88b5 && binary.BigEndian.Uint32(f[14:]) == tag {
				if i := int32(binary.BigEndian.Uint32(f[18:])); i < 0 {
					marker = true
				} else if int(i) < len(dsts) {
					got[dsts[i].String()] = true
				}
			}
			b.Free()
		}
		if marker {
			return got
		}
		if n == 0 {
			if time.Now().After(deadline) {
				h.T.Fatalf("probe %d: the broadcast marker did not arrive in %v (model %+v)", tag, probeTimeout, h.Model.Counters())
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
}

// expect checks that a probe of want's addresses received exactly those marked true.
func (h *Harness) expect(step string, want map[string]bool) {
	h.T.Helper()
	var dsts []net.HardwareAddr
	for a := range want {
		mac, _ := net.ParseMAC(a)
		dsts = append(dsts, mac)
	}
	got := h.Probe(dsts...)
	for a, w := range want {
		if got[a] != w {
			h.T.Errorf("%s: frame to %s received %v, want %v", step, a, got[a], w)
		}
	}
}

// RxFilter checks nic.RxFilter on a port that is not promiscuous: without a call the
// port takes its own address and broadcast only (on a family whose device filters from
// open); SetMulticast(nil) takes no group, one group takes exactly it (group2, whose hash
// differs, stays out), all takes every group, more groups than any exact filter or hash
// table holds are all received, and a shorter list afterwards drops the rest again; a
// unicast address is refused with its name; SetMAC moves unicast reception (or, on a VF
// whose administrator set its MAC, is refused and changes nothing); SetMulticast while a
// queue is polled loses no frame to a group that stays; a promiscuous port takes
// everything whatever is set; a closed port refuses both calls.
func RxFilter(t *testing.T, drv Driver) {
	t.Run("filter", func(t *testing.T) {
		h := New(t, drv, nic.Config{RxQueues: 1, TxQueues: 1, Interrupts: nic.IRQNone})
		f := FilterOf(h.Port)
		if f == nil {
			t.Fatal("the port does not implement nic.RxFilter")
		}
		own := h.Port.MAC().String()
		g1, g2, om, st := Group1.String(), group2.String(), otherMulticast.String(), stranger.String()
		if !drv.Family.PromiscuousUntilFiltered {
			h.expect("at open", map[string]bool{own: true, g1: false, st: false})
		}
		if err := f.SetMulticast(nil, false); err != nil {
			t.Fatal(err)
		}
		h.expect("no groups", map[string]bool{own: true, g1: false, g2: false, st: false})
		if err := f.SetMulticast([]net.HardwareAddr{Group1}, false); err != nil {
			t.Fatal(err)
		}
		h.expect("Group1", map[string]bool{own: true, g1: true, g2: false, om: false})
		if err := f.SetMulticast([]net.HardwareAddr{Group1}, true); err != nil {
			t.Fatal(err)
		}
		h.expect("all", map[string]bool{g1: true, g2: true, om: true, st: false})
		many := manyGroups(100)
		if err := f.SetMulticast(many, false); err != nil {
			t.Fatal(err)
		}
		got := h.Probe(many...)
		for _, g := range many {
			if !got[g.String()] {
				t.Errorf("100 groups: frame to %v not received", g)
			}
		}
		if err := f.SetMulticast([]net.HardwareAddr{Group1}, false); err != nil {
			t.Fatal(err)
		}
		h.expect("back to Group1", map[string]bool{g1: true, g2: false, om: false})
		err := f.SetMulticast([]net.HardwareAddr{Group1, stranger}, false)
		if err == nil || !strings.Contains(err.Error(), st) {
			t.Errorf("SetMulticast with unicast %s: error %v, want one naming it", st, err)
		}
		if err := f.SetMAC(Group1); err == nil {
			t.Errorf("SetMAC(%v): no error for a multicast address", Group1)
		}
		h.expect("after the refused calls", map[string]bool{own: true, g1: true, g2: false})
		err = f.SetMAC(NewMAC)
		if drv.Family.SetMACRefused {
			if err == nil || !strings.Contains(err.Error(), "NACK") {
				t.Errorf("SetMAC on a VF whose MAC the administrator set: error %v, want the PF's NACK", err)
			}
			if h.Port.MAC().String() != own {
				t.Errorf("MAC %v after a refused SetMAC, want %s", h.Port.MAC(), own)
			}
			h.expect("refused SetMAC", map[string]bool{own: true, NewMAC.String(): false, g1: true})
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Port.MAC().String() != NewMAC.String() {
			t.Errorf("MAC %v after SetMAC(%v)", h.Port.MAC(), NewMAC)
		}
		h.expect("SetMAC", map[string]bool{NewMAC.String(): true, own: false, g1: true, g2: false})
	})
	t.Run("while polled", func(t *testing.T) { filterWhilePolled(t, drv) })
	t.Run("promiscuous", func(t *testing.T) {
		if drv.Family.NoPromiscuous {
			t.Skip("the family's functions cannot be promiscuous")
		}
		h := New(t, drv, nic.Config{RxQueues: 1, TxQueues: 1, Interrupts: nic.IRQNone, Promiscuous: true})
		f := FilterOf(h.Port)
		if err := f.SetMulticast(nil, false); err != nil {
			t.Fatal(err)
		}
		if err := f.SetMAC(NewMAC); err != nil && !drv.Family.SetMACRefused {
			t.Fatal(err)
		}
		h.expect("promiscuous", map[string]bool{Group1.String(): true, otherMulticast.String(): true, stranger.String(): true, NewMAC.String(): true})
	})
	t.Run("closed", func(t *testing.T) {
		h := New(t, drv, nic.Config{RxQueues: 1, TxQueues: 1, Interrupts: nic.IRQNone})
		f := FilterOf(h.Port)
		if err := h.Port.Close(); err != nil {
			t.Fatal(err)
		}
		if err := f.SetMulticast([]net.HardwareAddr{Group1}, false); err == nil {
			t.Error("SetMulticast on a closed port: no error")
		}
		if err := f.SetMAC(NewMAC); err == nil {
			t.Error("SetMAC on a closed port: no error")
		}
	})
}

// filterWhilePolled sends frames to Group1 in batches while one goroutine polls the
// queue and another sets lists that all hold Group1 (with and without others, all on and
// off): every frame must be received.
func filterWhilePolled(t *testing.T, drv Driver) {
	h := New(t, drv, nic.Config{RxQueues: 1, TxQueues: 1, Interrupts: nic.IRQNone})
	f := FilterOf(h.Port)
	if err := f.SetMulticast([]net.HardwareAddr{Group1}, false); err != nil {
		t.Fatal(err)
	}
	var got atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // the queue's owner
		defer wg.Done()
		bufs := make([]*nic.Buf, 32)
		for {
			select {
			case <-stop:
				return
			default:
			}
			n := h.Port.RxBurst(0, bufs)
			for _, b := range bufs[:n] {
				if fr := b.Bytes(); len(fr) >= 6 && string(fr[:6]) == string(Group1) {
					got.Add(1)
				}
				b.Free()
			}
			if n == 0 {
				time.Sleep(50 * time.Microsecond)
			}
		}
	}()
	lists := [][]net.HardwareAddr{{Group1}, append([]net.HardwareAddr{Group1}, manyGroups(40)...), {group2, Group1}, append(manyGroups(100), Group1)}
	errc := make(chan error, 1)
	go func() { // the filter's user
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				errc <- nil
				return
			default:
			}
			if err := f.SetMulticast(lists[i%len(lists)], i%3 == 2); err != nil {
				errc <- fmt.Errorf("SetMulticast %d: %w", i, err)
				return
			}
		}
	}()
	const batches, batch = 40, 8
	frame := make([]byte, 64)
	copy(frame, Group1)
	copy(frame[6:], []byte{0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0xee})
	binary.BigEndian.PutUint16(frame[12:], 0x88b5)
	for i := 0; i < batches; i++ {
		for j := 0; j < batch; j++ {
			if err := h.Peer.Send(frame); err != nil {
				t.Fatal(err)
			}
		}
		want := int64((i + 1) * batch)
		deadline := time.Now().Add(probeTimeout)
		for got.Load() < want && time.Now().Before(deadline) {
			time.Sleep(100 * time.Microsecond)
		}
		if n := got.Load(); n < want {
			close(stop)
			wg.Wait()
			t.Fatalf("batch %d: %d of %d frames to %v received while the filter changed (model %+v)", i, n, want, Group1, h.Model.Counters())
		}
	}
	close(stop)
	wg.Wait()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

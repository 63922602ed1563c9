package l3fwd

import (
	"bytes"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/uiod/uiod/dataplane"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/sim"
)

// TestBucket: a bucket admits its burst at once, then one frame per interval, and a long
// pause gives back no more than the burst.
func TestBucket(t *testing.T) {
	b := newThreads(1, Police{Control: Rate{1000, 4}, Local: Rate{1, 1}, Error: Rate{1, 1}})[0].buckets[classControl]
	admitted := func(now int64, n int) (k int) {
		for range n {
			if b.allow(now) {
				k++
			}
		}
		return k
	}
	const ms = int64(time.Millisecond)
	now := int64(1e12)
	for _, step := range []struct {
		at        int64 // ns after the start
		try, want int
	}{
		{0, 10, 4},            // the burst
		{ms / 2, 10, 0},       // half an interval later: nothing yet
		{ms, 10, 1},           // one interval: one token
		{ms + ms/2, 10, 0},    //
		{5 * ms, 10, 4},       // four intervals: four (the burst's worth)
		{10000 * ms, 100, 4},  // a long pause: the burst, no more
		{10000*ms + 1, 10, 0}, //
	} {
		if got := admitted(now+step.at, step.try); got != step.want {
			t.Errorf("at +%v: %d of %d admitted, want %d", time.Duration(step.at), got, step.try, step.want)
		}
	}
}

// ringPort is a kernel path whose TX ring holds room frames and is never emptied: a
// stalled TAP writer.
type ringPort struct {
	stubPort
	mu   sync.Mutex
	room int
	got  [][]byte
}

func (p *ringPort) RxBurst(int, []*nic.Buf) int { return 0 }
func (p *ringPort) TxBurst(_ int, bufs []*nic.Buf) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := min(len(bufs), p.room-len(p.got))
	for _, b := range bufs[:n] {
		p.got = append(p.got, bytes.Clone(b.Bytes()))
		b.Free()
	}
	return n
}
func (p *ringPort) received() [][]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([][]byte(nil), p.got...)
}

// kernelRig runs app on a dataplane: frames come in on port 0, which has the kernel path
// k; port 1 is an output.
type kernelRig struct {
	p0, p1 *queuePort
	k      *ringPort
	dp     *dataplane.Dataplane
}

func newKernelRig(t testing.TB, app dataplane.App, room int) *kernelRig {
	r := &kernelRig{p0: newQueuePort(t, macP0), p1: newQueuePort(t, macP1), k: &ringPort{stubPort: stubPort{macP0}, room: room}}
	r.dp = startRouter(t, app, r.p0, r.p1, r.k)
	return r
}

// send injects the bursts and waits until the dataplane has decided every frame.
func (r *kernelRig) send(t testing.TB, bursts ...[][]byte) {
	t.Helper()
	var want uint64
	for _, q := range r.dp.Stats() {
		want += q.RxPackets
	}
	for _, b := range bursts {
		r.p0.inject(b)
		want += uint64(len(b))
	}
	testutil.Eventually(t, 5*time.Second, func() bool {
		var n uint64
		for _, q := range r.dp.Stats() {
			n += q.TxPackets + q.ToKernel + q.Drops
		}
		return n == want
	}, "the dataplane did not decide every frame")
}

func (r *kernelRig) drops() map[string]uint64 {
	d := map[string]uint64{}
	for _, q := range r.dp.Stats() {
		for k, v := range q.DropsBy {
			d[k] += v
		}
	}
	return d
}

// burstResult is what runBurst saw leave.
type burstResult struct{ sent, kernel [][]byte }

// runBurst passes frames through a as one burst on a rig with a kernel path and returns
// what the ports and the kernel path got.
func runBurst(t testing.TB, a *App, frames [][]byte) burstResult {
	r := newKernelRig(t, a, 1<<20)
	r.send(t, frames)
	return burstResult{sent: append(r.p0.output(), r.p1.output()...), kernel: r.k.received()}
}

func repeat(f []byte, n int) [][]byte {
	b := make([][]byte, n)
	for i := range b {
		b[i] = bytes.Clone(f)
	}
	return b
}

// TestKernelPathPrefersARP: with the kernel path's ring stalled (256 slots, never
// emptied), a flood of TTL-expired frames, then of pings to the router,
// leaves room for ARP and ND, each class within its own budget, counted. On the old code
// the junk filled the ring and the ARP was refused as tx_full (the audit's A4).
func TestKernelPathPrefersARP(t *testing.T) {
	a := routerApp(t)
	r := newKernelRig(t, a, 256)
	start := time.Now()
	ttl1 := frame{dst: macP0, src: macSrc, from: src4, to: netip.MustParseAddr("10.1.1.1"), ttl: 1, payload: 18}.build()
	ttl1v6 := frame{dst: macP0, src: macSrc, from: src6, to: netip.MustParseAddr("2001:db8:1::1"), ttl: 1, payload: 18}.build()
	ping := frame{dst: macP0, src: macSrc, from: src4, to: netip.MustParseAddr("192.0.2.254"), ttl: 64, payload: 18}.build()
	arp := frame{dst: macBcast, src: macSrc, etherType: etherARP, tag: 7}.build()
	ns := frame{dst: net.HardwareAddr{0x33, 0x33, 0xff, 0, 0, 1}, src: macSrc, from: src6, to: netip.MustParseAddr("ff02::1:ff00:1"), ttl: 255, payload: 18, mangle: icmp6(135)}.build()
	var bursts [][][]byte
	for range 8 {
		bursts = append(bursts, repeat(ttl1, 16), repeat(ttl1v6, 16))
	}
	for range 8 {
		bursts = append(bursts, repeat(ping, 32))
	}
	bursts = append(bursts, [][]byte{arp, ns})
	r.send(t, bursts...)
	elapsed := time.Since(start)

	got := r.k.received()
	var arps, nss, errs, pings int
	for _, f := range got {
		switch {
		case bytes.Equal(f, arp):
			arps++
		case bytes.Equal(f, ns):
			nss++
		case bytes.Equal(f, ping):
			pings++
		default:
			errs++
		}
	}
	if arps != 1 || nss != 1 {
		t.Fatalf("the kernel path got %d ARP and %d NS of 1 each (%d error frames, %d pings, %d in all; drops %v)", arps, nss, errs, pings, len(got), r.drops())
	}
	// Each class took no more than its burst and its rate over the test's time.
	for _, c := range []struct {
		name string
		got  int
		rate Rate
	}{{"error", errs, DefaultPolice.Error}, {"local", pings, DefaultPolice.Local}} {
		if limit := c.rate.Burst + int(elapsed.Seconds()*float64(c.rate.PerSecond)) + 1; c.got > limit {
			t.Errorf("%s class: %d frames to the kernel in %v, over its limit %d", c.name, c.got, elapsed, limit)
		}
	}
	s := a.Stats()
	if s.Classes[classControl].ToKernel != 2 || s.Classes[classControl].Policed != 0 {
		t.Errorf("control class %+v, want 2 to the kernel, none policed", s.Classes[classControl])
	}
	if p := s.Classes[classError].Policed + s.Classes[classLocal].Policed; p == 0 || r.drops()["policed"] != p {
		t.Errorf("policed %d by l3fwd, %d by the dataplane", p, r.drops()["policed"])
	}
	if s.NotForwarded["ttl_expired"] != 256 || s.NotForwarded["local"] != 256 || s.NotForwarded["neighbour_discovery"] != 1 || s.NotForwarded["not_ip"] != 1 {
		t.Errorf("not forwarded %v", s.NotForwarded)
	}
	if d := r.drops(); d["tx_full"] != 0 {
		t.Errorf("the kernel path's ring refused %d frames: the classes' bursts should fit it", d["tx_full"])
	}
}

// TestPuntWithoutKernel: on a port with no kernel path nothing is policed: what would go
// to the kernel is dropped under its own reason.
func TestPuntWithoutKernel(t *testing.T) {
	r := newProcessRig(t)
	arp := frame{dst: macBcast, src: macSrc, etherType: etherARP}.build()
	r.run(t, [][][]byte{repeat(arp, 32), repeat(arp, 32)})
	if s := r.a.Stats(); s.NotForwarded["not_ip"] < 64 || s.Classes[classControl].Policed != 0 {
		t.Errorf("stats %+v", s)
	}
}

// TestProcessPuntAllocs: a poll thread whose frames all take the slow path to the kernel
// (TTL expired, ARP), through the policer and the counters, allocates nothing per frame.
func TestProcessPuntAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	unlimited := Rate{PerSecond: 1e9, Burst: 1 << 20}
	a, err := New(Config{
		Ports:   []net.HardwareAddr{macP0, macP1},
		Routes:  []Route{{Prefix: netip.MustParsePrefix("0.0.0.0/0"), Port: 1, NextHopMAC: macNH1}},
		Police:  Police{Control: unlimited, Local: unlimited, Error: unlimited},
		Threads: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	pool, err := nic.NewMempool(sim.NewIOMMU(), 32, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ttl1 := frame{dst: macP0, src: macSrc, from: src4, to: netip.MustParseAddr("10.1.9.9"), ttl: 1, payload: 18}.build()
	arp := frame{dst: macBcast, src: macSrc, etherType: etherARP}.build()
	rx := &mixPort{stubPort: stubPort{macP0}}
	tx, k := &benchPort{stubPort: stubPort{macP1}}, &benchPort{stubPort: stubPort{macP0}}
	for i := range 32 {
		b := pool.Get()
		rx.frames = append(rx.frames, b)
		rx.tmpl = append(rx.tmpl, [][]byte{ttl1, arp}[i%2])
	}
	allocs, frames := pollAllocs(t, dataplane.Config{
		Ports:   []dataplane.Port{{Name: "rx", NIC: rx, Kernel: k}, {Name: "tx", NIC: tx}},
		Threads: []dataplane.Thread{{CPU: -1, Queues: []dataplane.Queue{{RxPort: rx, TxPort: tx}}, Tx: []dataplane.TxQueue{{Port: k}}}},
		App:     a,
	}, func(q dataplane.QueueStats) uint64 { return q.ToKernel })
	t.Logf("%d allocations while the thread handed %d frames to the kernel path", allocs, frames)
	if frames < 1000 || allocs*100 > frames {
		t.Errorf("%d allocations for %d frames", allocs, frames)
	}
	if s := a.Stats(); s.Classes[classControl].ToKernel == 0 || s.Classes[classError].ToKernel == 0 {
		t.Errorf("stats %+v", s)
	}
}

// mixPort is benchPort with a template per buffer.
type mixPort struct {
	stubPort
	frames []*nic.Buf
	tmpl   [][]byte
}

func (p *mixPort) RxBurst(_ int, bufs []*nic.Buf) int {
	n := copy(bufs, p.frames)
	for i, b := range bufs[:n] {
		b.SetLen(len(p.tmpl[i]))
		copy(b.Bytes(), p.tmpl[i])
	}
	return n
}
func (p *mixPort) TxBurst(_ int, bufs []*nic.Buf) int { return len(bufs) }

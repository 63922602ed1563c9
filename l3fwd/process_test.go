package l3fwd

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/uiod/uiod/dataplane"
	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/sim"
)

// queuePort is a nic.Port for driving a real dataplane from a test: RxBurst hands out the
// frames queued with inject, a burst at a time as queued, in buffers of its own pool (on
// the poll thread, which owns the pool), and TxBurst records what is sent and frees it.
type queuePort struct {
	stubPort
	pool *nic.Mempool

	mu     sync.Mutex
	bursts [][][]byte
	sent   [][]byte
}

func newQueuePort(t testing.TB, mac net.HardwareAddr) *queuePort {
	pool, err := nic.NewMempool(sim.NewIOMMU(), 64, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return &queuePort{stubPort: stubPort{mac}, pool: pool}
}

func (p *queuePort) inject(burst [][]byte) {
	p.mu.Lock()
	p.bursts = append(p.bursts, burst)
	p.mu.Unlock()
}

func (p *queuePort) output() [][]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([][]byte(nil), p.sent...)
}

func (p *queuePort) RxBurst(_ int, bufs []*nic.Buf) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.bursts) == 0 {
		return 0
	}
	burst := p.bursts[0]
	p.bursts = p.bursts[1:]
	for i, f := range burst {
		b := p.pool.Get()
		b.SetLen(len(f))
		copy(b.Bytes(), f)
		bufs[i] = b
	}
	return len(burst)
}
func (p *queuePort) TxBurst(_ int, bufs []*nic.Buf) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, b := range bufs {
		p.sent = append(p.sent, bytes.Clone(b.Bytes()))
		b.Free()
	}
	return len(bufs)
}

// processRig runs the test App on a dataplane: frames come in on port 0, whose queue's own
// output is port 0, and the thread has a TX queue on port 1 too.
type processRig struct {
	a      *App
	p      [2]*queuePort
	dp     *dataplane.Dataplane
	frames int
}

// startRouter starts a busy one-thread dataplane that runs app on p0's queue, with p1
// and, unless nil, p0's kernel path k to send to; it is stopped at cleanup.
func startRouter(t testing.TB, app dataplane.App, p0, p1 *queuePort, k nic.Port) *dataplane.Dataplane {
	t.Helper()
	ports := []dataplane.Port{{Name: "p0", NIC: p0, Kernel: k}, {Name: "p1", NIC: p1}}
	tx := []dataplane.TxQueue{{Port: p1}}
	if k != nil {
		tx = append(tx, dataplane.TxQueue{Port: k})
	}
	return startDataplane(t, dataplane.Config{
		Ports:   ports,
		Threads: []dataplane.Thread{{CPU: -1, Queues: []dataplane.Queue{{RxPort: p0, TxPort: p0}}, Tx: tx}},
		App:     app,
		Policy:  idle.PolicyConfig{Mode: idle.Busy},
	})
}

// startDataplane makes and starts cfg's dataplane, stopped at cleanup.
func startDataplane(t testing.TB, cfg dataplane.Config) *dataplane.Dataplane {
	t.Helper()
	dp, err := dataplane.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := dp.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dp.Stop)
	return dp
}

func newProcessRig(t testing.TB) *processRig {
	r := &processRig{a: testApp(t), p: [2]*queuePort{newQueuePort(t, macP0), newQueuePort(t, macP1)}}
	r.dp = startRouter(t, r.a, r.p[0], r.p[1], nil)
	return r
}

// run passes the bursts through the dataplane and checks that each port sent, in order,
// what Forward makes of the frames it forwards there, and that the rest was counted by
// reason.
func (r *processRig) run(t testing.TB, bursts [][][]byte) {
	t.Helper()
	before := [2]int{len(r.p[0].output()), len(r.p[1].output())}
	var want [2][][]byte
	drops := map[string]uint64{}
	for _, q := range r.dp.Stats() {
		for k, v := range q.DropsBy {
			drops[k] = v
		}
	}
	for _, burst := range bursts {
		for _, f := range burst {
			f = bytes.Clone(f)
			if p, n, reason, ok := r.a.Forward(0, f); ok {
				want[p] = append(want[p], f[:n])
			} else {
				drops[reason.String()]++
			}
		}
		r.p[0].inject(burst)
		r.frames += len(burst)
	}
	testutil.Eventually(t, 5*time.Second, func() bool {
		var n uint64
		for _, q := range r.dp.Stats() {
			n += q.TxPackets + q.Drops
		}
		return n == uint64(r.frames)
	}, "the dataplane did not decide every frame")
	for i := range r.p {
		got := r.p[i].output()[before[i]:]
		if len(got) != len(want[i]) {
			t.Fatalf("port %d sent %d frames, want %d", i, len(got), len(want[i]))
		}
		for j := range got {
			if !bytes.Equal(got[j], want[i][j]) {
				t.Fatalf("port %d frame %d:\n got % x\nwant % x", i, j, got[j], want[i][j])
			}
		}
	}
	got := map[string]uint64{}
	for _, q := range r.dp.Stats() {
		for k, v := range q.DropsBy {
			got[k] += v
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(drops) {
		t.Errorf("drops %v, want %v", got, drops)
	}
}

// TestProcess: bursts that all go one way, that change port midway, that start with a
// refused frame, and that mix plain IPv4 with options, IPv6 and non-IP frames, give
// what Forward gives frame by frame.
func TestProcess(t *testing.T) {
	r := newProcessRig(t)
	v4 := func(to string, ttl uint8) []byte {
		return frame{dst: macP0, src: macSrc, from: src4, to: netip.MustParseAddr(to), ttl: ttl, payload: 32}.build()
	}
	opts := frame{dst: macP0, src: macSrc, from: src4, to: netip.MustParseAddr("10.1.7.7"), ttl: 9, payload: 8, options: []byte{1, 1, 1, 0}}.build()
	v6 := frame{dst: macP0, src: macSrc, from: src6, to: netip.MustParseAddr("2001:db8:1::1"), ttl: 9, payload: 8}.build()
	arp := frame{dst: macP0, src: macSrc, etherType: 0x0806}.build()
	tests := []struct {
		name   string
		bursts [][][]byte
	}{
		{"one way", [][][]byte{{v4("10.1.0.1", 64), v4("10.1.0.2", 64), v4("10.1.0.3", 64)}}},
		{"other way midway", [][][]byte{{v4("10.1.0.1", 64), v4("10.1.2.3", 64), v4("10.1.0.3", 64)}}},
		{"refused first", [][][]byte{{v4("10.1.0.1", 1), v4("10.1.0.2", 64)}}},
		{"refused last", [][][]byte{{v4("10.1.0.1", 64), arp}}},
		{"slow path first", [][][]byte{{opts, v4("10.1.0.2", 64), v6}}},
		{"all refused", [][][]byte{{arp, v4("10.1.0.1", 0)}}},
		{"single", [][][]byte{{v4("8.8.8.8", 64)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { r.run(t, tt.bursts) })
	}
	t.Run("random", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(5, 5))
		seeds := [][]byte{v4("10.1.0.1", 64), v4("10.1.2.3", 2), v4("9.9.9.9", 64), opts, v6, arp}
		var bursts [][][]byte
		for range 40 {
			burst := make([][]byte, 1+rng.IntN(dataplane.DefaultBatch))
			for i := range burst {
				f := bytes.Clone(seeds[rng.IntN(len(seeds))])
				if rng.IntN(3) == 0 { // a byte of the headers changed
					f[rng.IntN(min(len(f), 60))] = byte(rng.Uint32())
				}
				burst[i] = f
			}
			bursts = append(bursts, burst)
		}
		r.run(t, bursts)
	})
}

// FuzzProcess: any burst of frames through the dataplane never panics (so never reads or
// writes out of bounds on the inline path either) and gives what Forward gives.
func FuzzProcess(f *testing.F) {
	f.Add(frame{dst: macP0, src: macSrc, from: src4, to: netip.MustParseAddr("10.1.0.1"), ttl: 64, payload: 4}.build(), uint8(3))
	f.Add(frame{dst: macP0, src: macSrc, from: src4, to: netip.MustParseAddr("10.1.2.3"), ttl: 2}.build(), uint8(1))
	f.Add(frame{dst: macP0, src: macSrc, from: src6, to: netip.MustParseAddr("2001:db8:1::1"), ttl: 9}.build(), uint8(2))
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x08, 0x00, 0x45, 0, 0, 20}, uint8(1))
	r := newProcessRig(f)
	f.Fuzz(func(t *testing.T, in []byte, n uint8) {
		if len(in) > 2048 {
			return
		}
		// n copies of in, each with one byte of its first 40 changed by its index.
		burst := make([][]byte, 1+int(n)%dataplane.DefaultBatch)
		for i := range burst {
			burst[i] = bytes.Clone(in)
			if i > 0 && len(in) > 0 {
				burst[i][i%min(len(in), 40)] += byte(i)
			}
		}
		r.run(t, [][][]byte{burst})
	})
}

// TestProcessAllocs: a poll thread running l3fwd allocates nothing per frame.
func TestProcessAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	pool, err := nic.NewMempool(sim.NewIOMMU(), 32, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := frame{dst: macP0, src: macSrc, from: src4, to: netip.MustParseAddr("10.1.9.9"), ttl: 64, payload: 18}.build()
	rx, tx := &benchPort{stubPort: stubPort{macP0}, tmpl: tmpl}, &benchPort{stubPort: stubPort{macP1}}
	for range 32 {
		b := pool.Get()
		b.SetLen(len(tmpl))
		rx.frames = append(rx.frames, b)
	}
	allocs, frames := pollAllocs(t, dataplane.Config{
		Ports:   []dataplane.Port{{Name: "rx", NIC: rx}, {Name: "tx", NIC: tx}},
		Threads: []dataplane.Thread{{CPU: -1, Queues: []dataplane.Queue{{RxPort: rx, TxPort: tx}}}},
		App:     testApp(t),
	}, func(q dataplane.QueueStats) uint64 { return q.TxPackets })
	t.Logf("%d allocations while the thread forwarded %d frames", allocs, frames)
	if frames < 1000 || allocs*100 > frames {
		t.Errorf("%d allocations for %d frames", allocs, frames)
	}
}

// pollAllocs runs cfg's dataplane busy, and returns the allocations of 100 ms after 20 ms
// of warm-up and the frames frames counts over the queues. A drop fails the test.
func pollAllocs(t *testing.T, cfg dataplane.Config, frames func(dataplane.QueueStats) uint64) (allocs, n uint64) {
	t.Helper()
	cfg.Policy = idle.PolicyConfig{Mode: idle.Busy}
	dp := startDataplane(t, cfg)
	time.Sleep(20 * time.Millisecond)
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	time.Sleep(100 * time.Millisecond)
	runtime.ReadMemStats(&m1)
	dp.Stop()
	for _, q := range dp.Stats() {
		n += frames(q)
		if q.Drops != 0 {
			t.Fatalf("drops %v", q.DropsBy)
		}
	}
	return m1.Mallocs - m0.Mallocs, n
}

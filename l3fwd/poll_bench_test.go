package l3fwd

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/uiod/uiod/dataplane"
	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/sim"
)

// benchPort is a nic.Port that costs next to nothing: every RxBurst hands back the same
// buffers, their bytes restored to the template frame first (l3fwd changed them), and
// TxBurst takes everything without freeing it. bench/l3fwd-callgrind.sh counts the
// dataplane's Poll with collection off inside these two methods.
type benchPort struct {
	stubPort
	frames []*nic.Buf
	tmpl   []byte
}

// stubPort is the rest of a one-queue nic.Port without interrupts for the tests' ports.
type stubPort struct{ mac net.HardwareAddr }

func (p *stubPort) MAC() net.HardwareAddr    { return p.mac }
func (p *stubPort) NumRxQueues() int         { return 1 }
func (p *stubPort) NumTxQueues() int         { return 1 }
func (p *stubPort) RxVector(int) *irq.Vector { return nil }
func (p *stubPort) EnableRxInterrupt(int)    {}
func (p *stubPort) DisableRxInterrupt(int)   {}
func (p *stubPort) Link() nic.Link           { return nic.Link{Up: true} }
func (p *stubPort) Stats() nic.Stats         { return nic.Stats{} }
func (p *stubPort) Close() error             { return nil }

func (p *benchPort) RxBurst(_ int, bufs []*nic.Buf) int {
	n := copy(bufs, p.frames)
	for _, b := range bufs[:n] {
		copy(b.Bytes(), p.tmpl)
	}
	return n
}
func (p *benchPort) TxBurst(_ int, bufs []*nic.Buf) int { return len(bufs) }

// BenchmarkPoll runs a busy poll thread whose one queue receives a full batch of IPv4
// frames on every poll (TTL 64, to a /16 route that leaves by the queue's peer port),
// with l2fwd and with l3fwd, for at least b.N frames. It reports ns/frame and the frames
// it handled (for the callgrind count).
func BenchmarkPoll(b *testing.B) {
	for _, app := range []string{"l2fwd", "l3fwd"} {
		b.Run("app="+app+"/batch=32", func(b *testing.B) {
			benchPoll(b, app, 32)
		})
	}
}

func benchPoll(b *testing.B, appName string, batch int) {
	if b.N == 1 {
		// The testing package's first, one-iteration run: under callgrind every Poll
		// counts, and this run's would be a number of frames that depends on timing.
		return
	}
	pool, err := nic.NewMempool(sim.NewIOMMU(), batch, 2048)
	if err != nil {
		b.Fatal(err)
	}
	tmpl := frame{dst: macP0, src: macSrc, from: src4, to: netip.MustParseAddr("10.1.9.9"), ttl: 64, payload: 18}.build()
	rx := &benchPort{stubPort: stubPort{macP0}, tmpl: tmpl}
	tx := &benchPort{stubPort: stubPort{macP1}}
	for range batch {
		buf := pool.Get()
		buf.SetLen(len(tmpl))
		rx.frames = append(rx.frames, buf)
	}
	var app dataplane.App = dataplane.L2Fwd
	if appName == "l3fwd" {
		app = testApp(b)
	}
	dp, err := dataplane.New(dataplane.Config{
		Ports:   []dataplane.Port{{Name: "rx", NIC: rx}, {Name: "tx", NIC: tx}},
		Threads: []dataplane.Thread{{CPU: -1, Queues: []dataplane.Queue{{RxPort: rx, TxPort: tx}}}},
		App:     app,
		Batch:   batch,
		Policy:  idle.PolicyConfig{Mode: idle.Busy},
	})
	if err != nil {
		b.Fatal(err)
	}
	frames := func() (n uint64) {
		for _, q := range dp.Stats() {
			n += q.TxPackets
			if q.Drops != 0 {
				b.Fatalf("drops: %v", q.DropsBy)
			}
		}
		return n
	}
	b.ResetTimer()
	start := time.Now()
	if err := dp.Start(); err != nil {
		b.Fatal(err)
	}
	for frames() < uint64(b.N) {
		time.Sleep(time.Millisecond)
	}
	dp.Stop()
	elapsed := time.Since(start)
	b.StopTimer()
	n := frames()
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(n), "ns/frame")
	b.ReportMetric(float64(n), "frames")
	b.ReportMetric(0, "ns/op")
}

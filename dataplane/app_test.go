package dataplane

import (
	"maps"
	"testing"

	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/nic"
)

var dropOdd = RegisterDropReason("test_odd")

// appRig is one thread over three fake ports a, b, c (a polled; b, c outputs) and a
// kernel path k of a, polled too, run by calling Poll on the test goroutine.
type appRig struct {
	a, b, c, k *fakePort
	l          *loop
	sent       map[string][]byte // first byte of every frame each port sent
}

func newAppRig(t *testing.T, app App) *appRig {
	t.Helper()
	dma := &goDMA{}
	r := &appRig{sent: map[string][]byte{}}
	r.a, r.b, r.c, r.k = newFakePort(t, dma, 1, 1, true), newFakePort(t, dma, 1, 1, true), newFakePort(t, dma, 1, 1, true), newFakePort(t, dma, 1, 1, true)
	for name, p := range map[string]*fakePort{"a": r.a, "b": r.b, "c": r.c, "k": r.k} {
		p.onTx = func(q int, b *nic.Buf) { r.sent[name] = append(r.sent[name], b.Bytes()[0]) }
	}
	cfg := Config{
		Batch:  8,
		App:    app,
		Policy: idle.PolicyConfig{Mode: idle.Busy},
		Ports:  []Port{{Name: "a", NIC: r.a, Kernel: r.k}, {Name: "b", NIC: r.b}, {Name: "c", NIC: r.c}},
		Threads: []Thread{{CPU: -1,
			Queues: []Queue{{Name: "a", RxPort: r.a, TxPort: r.b}, {Name: "k", RxPort: r.k, TxPort: r.a}},
			Tx:     []TxQueue{{Port: r.c}, {Port: r.k}},
		}},
	}
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	dp := &Dataplane{cfg: cfg, mirrors: make([]mirrorSlot, len(cfg.Ports))}
	r.l = dp.newLoop(0, cfg.Threads[0])
	return r
}

// poll injects frames tagged 0..n-1 on port p and runs one Poll.
func (r *appRig) poll(t *testing.T, p *fakePort, n int) {
	t.Helper()
	for i := range n {
		frame := make([]byte, 60)
		frame[0] = byte(i)
		if !p.inject(0, frame) {
			t.Fatal("no RX buffer posted")
		}
	}
	if got := r.l.Poll(); got != n {
		t.Fatalf("Poll = %d, want %d", got, n)
	}
}

func (r *appRig) stats(q int) QueueStats {
	c := &r.l.queues[q].c
	c.publish()
	return c.snapshot(r.l.queues[q].name, 0)
}

func TestAppVerdicts(t *testing.T) {
	var seen []Burst
	app := AppFunc(func(b *Burst) {
		seen = append(seen, Burst{Thread: b.Thread, Port: b.Port, Queue: b.Queue, Peer: b.Peer, Time: b.Time})
		for i, f := range b.Frames {
			switch tag := f.Bytes()[0]; {
			case tag == 0:
				b.Send(i, 2) // c
			case tag == 1:
				b.Send(i, b.Peer) // b
			case tag == 2:
				b.ToKernel(i, DropApp)
			case tag == 3:
				b.Drop(i, dropOdd)
			case tag == 4:
				// undecided
			case tag == 5:
				b.Send(i, 9) // no such port
			default:
				b.Send(i, 0) // a: back out of the RX port, on the kernel path's TX queue
			}
		}
	})
	r := newAppRig(t, app)
	r.poll(t, r.a, 7)
	if len(seen) != 1 || seen[0].Port != 0 || seen[0].Peer != 1 || seen[0].Queue != 0 || seen[0].Time == 0 {
		t.Fatalf("the app saw %+v", seen)
	}
	want := map[string][]byte{"c": {0}, "b": {1}, "k": {2}, "a": {6}}
	if !maps.EqualFunc(r.sent, want, func(a, b []byte) bool { return string(a) == string(b) }) {
		t.Errorf("sent %v, want %v", r.sent, want)
	}
	st := r.stats(0)
	wantDrops := map[string]uint64{"test_odd": 1, "no_verdict": 1, "no_tx_queue": 1}
	if st.RxPackets != 7 || st.TxPackets != 3 || st.ToKernel != 1 || st.Drops != 3 || !maps.Equal(st.DropsBy, wantDrops) {
		t.Errorf("stats %+v, want 7 rx, 3 tx, 1 to the kernel, drops %v", st, wantDrops)
	}
	if st.RxPackets != st.TxPackets+st.ToKernel+st.Drops {
		t.Errorf("RxPackets %d != TxPackets + ToKernel + Drops", st.RxPackets)
	}
	// What the kernel path receives goes out of its port, without the app.
	clear(r.sent)
	r.poll(t, r.k, 3)
	if len(seen) != 1 {
		t.Errorf("the app saw the kernel path's frames")
	}
	if string(r.sent["a"]) != "\x00\x01\x02" {
		t.Errorf("kernel frames sent %v, want all three out of a", r.sent)
	}
	for _, p := range []*fakePort{r.a, r.b, r.c, r.k} {
		if n := p.leaked(); n != 0 {
			t.Errorf("%d buffers leaked", n)
		}
	}
}

func TestAppSendAll(t *testing.T) {
	tests := []struct {
		name string
		app  AppFunc
		want map[string][]byte
		drop map[string]uint64
	}{
		{"all to peer", func(b *Burst) { b.SendAll(b.Peer) }, map[string][]byte{"b": {0, 1, 2}}, nil},
		{"all to c", func(b *Burst) { b.SendAll(2) }, map[string][]byte{"c": {0, 1, 2}}, nil},
		{"all, then one dropped", func(b *Burst) { b.SendAll(2); b.Drop(1, dropOdd) }, map[string][]byte{"c": {0, 2}}, map[string]uint64{"test_odd": 1}},
		{"one, then all", func(b *Burst) { b.Drop(1, dropOdd); b.SendAll(1) }, map[string][]byte{"b": {0, 1, 2}}, nil},
		{"all to a port without tx queue", func(b *Burst) { b.SendAll(9) }, map[string][]byte{}, map[string]uint64{"no_tx_queue": 3}},
		{"nothing decided", func(b *Burst) {}, map[string][]byte{}, map[string]uint64{"no_verdict": 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newAppRig(t, tt.app)
			r.poll(t, r.a, 3)
			r.poll(t, r.a, 3) // decisions do not leak into the next burst
			for k, v := range tt.want {
				tt.want[k] = append(v, v...)
			}
			for k, v := range tt.drop {
				tt.drop[k] = 2 * v
			}
			if !maps.EqualFunc(r.sent, tt.want, func(a, b []byte) bool { return string(a) == string(b) }) {
				t.Errorf("sent %v, want %v", r.sent, tt.want)
			}
			if st := r.stats(0); !maps.Equal(st.DropsBy, tt.drop) {
				t.Errorf("drops %v, want %v", st.DropsBy, tt.drop)
			}
		})
	}
}

func TestToKernelWithoutKernelPath(t *testing.T) {
	dma := &goDMA{}
	a, b := newFakePort(t, dma, 1, 1, true), newFakePort(t, dma, 1, 1, true)
	var has bool
	l := testLoop(t, 8, AppFunc(func(bu *Burst) {
		has = bu.HasKernel()
		for i := range bu.Frames {
			bu.ToKernel(i, dropOdd)
		}
	}), []Queue{{RxPort: a, TxPort: b}})
	a.inject(0, make([]byte, 60))
	l.Poll()
	c := &l.queues[0].c
	c.publish()
	if st := c.snapshot("", 0); has || st.ToKernel != 0 || st.DropsBy["test_odd"] != 1 {
		t.Errorf("HasKernel %v, stats %+v: want the frame dropped as test_odd", has, st)
	}
}

type countMirror struct{ rx, tx, calls int }

func (m *countMirror) Mirror(thread int, dir Direction, queue int, frames []*nic.Buf, now int64) {
	m.calls++
	if dir == RX {
		m.rx += len(frames)
	} else {
		m.tx += len(frames)
	}
}

func TestMirror(t *testing.T) {
	r := newAppRig(t, L2Fwd)
	dp := &Dataplane{mirrors: make([]mirrorSlot, 3)}
	r.l = nil
	// Rebuild the loop on this dataplane, so that SetMirror reaches it.
	cfg := Config{Batch: 8, App: L2Fwd, Policy: idle.PolicyConfig{Mode: idle.Busy},
		Ports:   []Port{{Name: "a", NIC: r.a, Kernel: r.k}, {Name: "b", NIC: r.b}, {Name: "c", NIC: r.c}},
		Threads: []Thread{{CPU: -1, Queues: []Queue{{RxPort: r.a, TxPort: r.b}, {RxPort: r.k, TxPort: r.a}}, Tx: []TxQueue{{Port: r.k}}}}}
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	dp.cfg = cfg
	r.l = dp.newLoop(0, cfg.Threads[0])
	ma, mb := &countMirror{}, &countMirror{}
	if err := dp.SetMirror(0, ma); err != nil {
		t.Fatal(err)
	}
	if err := dp.SetMirror(1, mb); err != nil {
		t.Fatal(err)
	}
	if err := dp.SetMirror(3, ma); err == nil {
		t.Error("SetMirror accepted port 3 of 3")
	}
	r.poll(t, r.a, 4) // a RX → b TX
	r.poll(t, r.k, 2) // kernel → a TX
	if ma.rx != 4 || ma.tx != 2 || mb.rx != 0 || mb.tx != 4 {
		t.Errorf("mirror a saw %d rx %d tx, b %d rx %d tx; want 4/2 and 0/4", ma.rx, ma.tx, mb.rx, mb.tx)
	}
	dp.SetMirror(0, nil)
	calls := ma.calls
	r.poll(t, r.a, 1)
	if ma.calls != calls {
		t.Error("a detached mirror was called")
	}
}

func TestAppPathAllocatesNothing(t *testing.T) {
	app := AppFunc(func(b *Burst) {
		for i := range b.Frames {
			switch i % 3 {
			case 0:
				b.Send(i, 2)
			case 1:
				b.Drop(i, dropOdd)
			default:
				b.ToKernel(i, DropApp)
			}
		}
	})
	if n := burstAllocs(t, app); n != 0 {
		t.Fatalf("a per-frame app burst allocates %.1f times", n)
	}
}

// burstAllocs is the allocations of a Poll over an appRig that runs app on a burst of 8
// frames into port a, with no port's TX hook.
func burstAllocs(t *testing.T, app App) float64 {
	r := newAppRig(t, app)
	frame := make([]byte, 60)
	r.a.onTx, r.b.onTx, r.c.onTx, r.k.onTx = nil, nil, nil, nil
	return testing.AllocsPerRun(200, func() {
		for range 8 {
			r.a.inject(0, frame)
		}
		r.l.Poll()
	})
}

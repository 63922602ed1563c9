package daemon

import (
	"errors"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic"
)

// livePort is the nic.Port the dataplane polls for a port whose device the kernel may
// take back. It forwards every call to the driver's port while the device is present;
// while it is absent it is a port without traffic: RxBurst and TxBurst return 0 (the
// dataplane frees what TxBurst refuses, counted as tx_full), the link is down, no RX
// vector. The dataplane needs no special case: the swap happens between two calls.
//
// Who may be inside the driver's port when it is taken out decides the fence, and the
// dataplane is the one owner of that: the calls of the hot path (RxBurst, TxBurst,
// EnableRxInterrupt, DisableRxInterrupt) come only from the poll threads, and take runs
// only inside dataplane.Exclusive (removePort), which holds every poll thread between
// two turns, or before the dataplane starts or after it stops. So a burst is a plain
// load of the pointer — no locked instruction, no count — as docs/design.md §15 says.
// The control plane's calls (Link and Stats from /status and /metrics, RxVector when
// idlers are rebuilt) come from other goroutines at any time: they are counted, and take
// waits until none is inside before the port is closed. put swaps a re-opened port in
// with one store. Nothing here allocates.
//
// A driver's port that asks for Recover (nic.Recoverer: virtio, igbvf) is served through
// the live port: the dataplane registers its function here, which hands it to every
// driver port it holds, and runs Recover inside Exclusive, as take runs, so the Recover
// reaches the port the threads poll and never one being closed.
type livePort struct {
	cur   atomic.Pointer[nic.Port] // nil while absent
	users atomic.Int64             // control-plane calls inside *cur

	mac      net.HardwareAddr
	nrx, ntx int

	mu       sync.Mutex
	base     nic.Stats // the counters of the driver ports taken out, so Stats never goes back
	closed   bool
	removals uint64 // times the device went away
	reopens  uint64 // times it came back

	ts liveTimesync // the 1588 unit's state (livetimesync.go)

	onRecover func()     // the dataplane's OnRecoverNeeded function, under mu
	filter    liveFilter // the receive filter last set (liveport_filter.go), under mu
	log       *zap.Logger
}

var _ nic.Recoverer = (*livePort)(nil)

func newLivePort(p nic.Port) *livePort {
	l := &livePort{mac: p.MAC(), nrx: p.NumRxQueues(), ntx: p.NumTxQueues(), log: zap.NewNop()}
	l.cur.Store(&p)
	return l
}

// enter returns the driver's port with the call counted, or nil while absent: for the
// control plane's calls, which take waits out.
func (l *livePort) enter() nic.Port {
	l.users.Add(1)
	if p := l.cur.Load(); p != nil {
		return *p
	}
	l.users.Add(-1)
	return nil
}

func (l *livePort) leave() { l.users.Add(-1) }

// takeWait bounds how long take waits for the control plane's calls inside the driver's
// port to return (a register read or two), so only a stuck goroutine runs into it.
const takeWait = 500 * time.Millisecond

// errBusy is take's error when a call did not leave the driver's port within takeWait.
var errBusy = errors.New("a status or metrics call is still inside the port")

// take swaps the driver's port out and returns it once no control-plane call is inside
// it, nil if it was absent already. The caller holds the poll threads between turns
// (dataplane.Exclusive) or has none running. On errBusy the port stays out but must not
// be closed.
func (l *livePort) take() (nic.Port, error) {
	old := l.cur.Swap(nil)
	if old == nil {
		return nil, nil
	}
	deadline := time.Now().Add(takeWait)
	for l.users.Load() != 0 {
		if time.Now().After(deadline) {
			return nil, errBusy
		}
		runtime.Gosched()
	}
	s := (*old).Stats()
	l.mu.Lock()
	l.base = addNICStats(l.base, s)
	l.mu.Unlock()
	return *old, nil
}

// put swaps p in. It reports false (and leaves p to the caller) when the live port was
// closed meanwhile.
func (l *livePort) put(p nic.Port) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.reopens++
	l.reenableTimesync(p)
	l.refilter(p)
	if r, ok := p.(nic.Recoverer); ok && l.onRecover != nil {
		r.OnRecoverNeeded(l.onRecover)
	}
	l.cur.Store(&p)
	return true
}

// countRemoval counts a removal of the device.
func (l *livePort) countRemoval() {
	l.mu.Lock()
	l.removals++
	l.mu.Unlock()
}

// isClosed reports whether Close was called.
func (l *livePort) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

// present reports whether the driver's port is in.
func (l *livePort) present() bool { return l.cur.Load() != nil }

// counts returns how often the device went away and came back.
func (l *livePort) counts() (removals, reopens uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.removals, l.reopens
}

// MAC is the driver's port's MAC while it is in (a driver may change it after Open: a VF
// opened while its PF is down has a random address until the PF gives it its own), and
// the MAC of the port as first opened while it is absent.
func (l *livePort) MAC() net.HardwareAddr {
	p := l.enter()
	if p == nil {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.mac
	}
	defer l.leave()
	return p.MAC()
}

// NumRxQueues and NumTxQueues are the queue counts the dataplane was built for.
func (l *livePort) NumRxQueues() int { return l.nrx }
func (l *livePort) NumTxQueues() int { return l.ntx }

// RxBurst receives from the driver's port, nothing while absent. A poll thread's call:
// take never runs during it (see livePort).
func (l *livePort) RxBurst(q int, bufs []*nic.Buf) int {
	p := l.cur.Load()
	if p == nil {
		return 0
	}
	return (*p).RxBurst(q, bufs)
}

// TxBurst sends on the driver's port; while absent it takes nothing. A poll thread's
// call.
func (l *livePort) TxBurst(q int, bufs []*nic.Buf) int {
	p := l.cur.Load()
	if p == nil {
		return 0
	}
	return (*p).TxBurst(q, bufs)
}

// RxVector is the driver's port's vector, nil while absent.
func (l *livePort) RxVector(q int) *irq.Vector {
	p := l.enter()
	if p == nil {
		return nil
	}
	defer l.leave()
	return p.RxVector(q)
}

// EnableRxInterrupt unmasks the queue's interrupt on the driver's port. A poll
// thread's call.
func (l *livePort) EnableRxInterrupt(q int) {
	if p := l.cur.Load(); p != nil {
		(*p).EnableRxInterrupt(q)
	}
}

// DisableRxInterrupt masks the queue's interrupt on the driver's port. A poll thread's
// call.
func (l *livePort) DisableRxInterrupt(q int) {
	if p := l.cur.Load(); p != nil {
		(*p).DisableRxInterrupt(q)
	}
}

// Link is the driver's port's link, down while absent.
func (l *livePort) Link() nic.Link {
	p := l.enter()
	if p == nil {
		return nic.Link{}
	}
	defer l.leave()
	return p.Link()
}

// Stats adds the counters of every driver port the live port had.
func (l *livePort) Stats() nic.Stats {
	l.mu.Lock()
	base := l.base
	l.mu.Unlock()
	p := l.enter()
	if p == nil {
		return base
	}
	defer l.leave()
	return addNICStats(base, p.Stats())
}

// Close closes the driver's port, if present; the live port stays absent.
func (l *livePort) Close() error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	p, err := l.take()
	if err != nil || p == nil {
		return err
	}
	return p.Close()
}

// OnRecoverNeeded hands f to the driver's port, now and after every re-open, if it is a
// nic.Recoverer; a port that is not never calls it.
func (l *livePort) OnRecoverNeeded(f func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.onRecover = f
	if p := l.cur.Load(); p != nil {
		if r, ok := (*p).(nic.Recoverer); ok {
			r.OnRecoverNeeded(f)
		}
	}
}

// Recover runs the driver's port's Recover; absent, or not a nic.Recoverer, there is
// nothing to recover. The dataplane calls it inside Exclusive, where take also runs.
func (l *livePort) Recover() error {
	if p := l.cur.Load(); p != nil {
		if r, ok := (*p).(nic.Recoverer); ok {
			return r.Recover()
		}
	}
	return nil
}

// RecoverBackoff is the driver's port's (a second, growing to ten, for one that has
// none: it never fails a Recover).
func (l *livePort) RecoverBackoff() (first, max time.Duration) {
	if p := l.cur.Load(); p != nil {
		if r, ok := (*p).(nic.Recoverer); ok {
			return r.RecoverBackoff()
		}
	}
	return time.Second, 10 * time.Second
}

func addNICStats(a, b nic.Stats) nic.Stats {
	return nic.Stats{
		RxPackets: a.RxPackets + b.RxPackets, RxBytes: a.RxBytes + b.RxBytes,
		TxPackets: a.TxPackets + b.TxPackets, TxBytes: a.TxBytes + b.TxBytes,
		RxMissed: a.RxMissed + b.RxMissed, RxErrors: a.RxErrors + b.RxErrors, TxErrors: a.TxErrors + b.TxErrors,
		TxTimeouts: a.TxTimeouts + b.TxTimeouts, DeviceResets: a.DeviceResets + b.DeviceResets,
	}
}

// driverNIC is the driver's port behind p.nic (nil while absent).
func (p *port) driverNIC() nic.Port {
	if p.live == nil {
		return p.nic
	}
	if c := p.live.cur.Load(); c != nil {
		return *c
	}
	return nil
}

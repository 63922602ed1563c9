package latency

import (
	"runtime"
	"time"

	"github.com/uiod/uiod/wire"
)

// DefaultSpin is how long before a send the pacer stops sleeping and busy-waits. A Go
// time.Sleep below 1 ms rounds up to about 1 ms here, and nanosleep overshoots by tens of
// µs, so the pacer nanosleeps (with 1 ns timer slack) until Spin before the deadline and
// spins on the wire clock for the rest.
const DefaultSpin = 50 * time.Microsecond

// maxNap bounds one nanosleep so that a stop request is noticed during long gaps.
const maxNap = 10 * time.Millisecond

// Pacing reports how closely the sender kept to its schedule.
type Pacing struct {
	Frames     uint64  `json:"frames"`
	MeanLateNs float64 `json:"mean_late_ns"` // mean of (actual send − scheduled send)
	MaxLateNs  int64   `json:"max_late_ns"`
	SpinNs     int64   `json:"spin_ns"` // total time spent busy-waiting
	Skipped    uint64  `json:"skipped"` // probe slots dropped after a stall (see Config)
}

// pacer waits for absolute deadlines on the wire clock.
type pacer struct {
	spin     int64
	sumLate  int64
	p        Pacing
	oldSlack int
	locked   bool
}

// newPacer returns a pacer that busy-waits the last spin before each deadline (no busy
// wait if spin < 0). lock pins the calling goroutine to its thread and lowers the
// thread's timer slack to 1 ns until release.
func newPacer(spin time.Duration, lock bool) *pacer {
	p := &pacer{spin: int64(spin)}
	if spin < 0 {
		p.spin = 0
	}
	if lock {
		runtime.LockOSThread()
		p.locked = true
		p.oldSlack = setTimerSlack(1)
	}
	return p
}

// release restores the thread's timer slack and unlocks it.
func (p *pacer) release() {
	if !p.locked {
		return
	}
	if p.oldSlack > 0 {
		setTimerSlack(p.oldSlack)
	}
	runtime.UnlockOSThread()
	p.locked = false
}

// waitUntil returns at wire time deadline or later, or early (ok false) once stop is
// closed. It records the lateness of the return.
func (p *pacer) waitUntil(deadline int64, stop <-chan struct{}) (now int64, ok bool) {
	now = wire.Now()
	for {
		select {
		case <-stop:
			return now, false
		default:
		}
		nap := deadline - p.spin - now
		if nap <= 0 {
			break
		}
		nanosleep(min(nap, int64(maxNap)))
		now = wire.Now()
	}
	if now < deadline {
		spinStart := now
		for now < deadline {
			now = wire.Now()
		}
		p.p.SpinNs += now - spinStart
	}
	late := now - deadline
	p.p.Frames++
	p.sumLate += late
	p.p.MaxLateNs = max(p.p.MaxLateNs, late)
	return now, true
}

// stats returns the pacing statistics so far.
func (p *pacer) stats() Pacing {
	s := p.p
	if s.Frames > 0 {
		s.MeanLateNs = float64(p.sumLate) / float64(s.Frames)
	}
	return s
}

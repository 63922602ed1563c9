package guest

import (
	"bytes"
	"sync/atomic"
	"time"

	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic"
)

// relay is a poll thread's work as an idle.Idler drives it: what RX queue q of in
// receives goes out of TX queue q of out (in itself for a reflector), and what TX does not
// take is freed. It counts the frames, and in marked those from source MAC mark (when
// set), adding them to total too when that is set (for relays that share a goal).
type relay struct {
	in, out nic.Port
	q       int
	mark    []byte
	total   *atomic.Int64
	bufs    [32]*nic.Buf
	frames  int
	marked  int
}

func (r *relay) Poll() int {
	n := r.in.RxBurst(r.q, r.bufs[:])
	if n == 0 {
		return 0
	}
	if r.mark != nil {
		for _, b := range r.bufs[:n] {
			if f := b.Bytes(); len(f) >= 12 && bytes.Equal(f[6:12], r.mark) {
				r.marked++
				if r.total != nil {
					r.total.Add(1)
				}
			}
		}
	}
	sent := 0
	for sent < n {
		k := r.out.TxBurst(r.q, r.bufs[sent:n])
		if k == 0 {
			break
		}
		sent += k
	}
	for _, b := range r.bufs[sent:n] {
		b.Free()
	}
	r.frames += n
	return n
}

func (r *relay) Arm()    { r.in.EnableRxInterrupt(r.q) }
func (r *relay) Disarm() { r.in.DisableRxInterrupt(r.q) }

// newIdler returns the adaptive idle policy the guest tests run r under: a 300 µs idle
// threshold, then sleeping on RX queue q's vector of r.in for up to wait.
func (r *relay) newIdler(wait time.Duration) (*idle.Idler, error) {
	return idle.New(idle.PolicyConfig{IdleThreshold: 300 * time.Microsecond, WaitTimeout: wait},
		[]*irq.Vector{r.in.RxVector(r.q)}, r)
}

// pollUntil is the poll loop of a thread: it polls r under d, telling d whether each poll
// found traffic, until done holds or for timeout.
func pollUntil(d *idle.Idler, r *relay, done func() bool, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for !done() && time.Now().Before(deadline) {
		if r.Poll() > 0 {
			d.Traffic(idle.Now())
		} else {
			d.Empty(idle.Now())
		}
	}
}

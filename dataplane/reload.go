package dataplane

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/irq"
	"go.uber.org/zap"
)

// idlerSwap is a loop's side of SetPolicy: the Idler that is to replace the thread's own
// at its next safe point, the one in force as other goroutines see it, and the counters
// of the Idlers it retired, so that Stats keeps counting across a change of policy.
type idlerSwap struct {
	pending atomic.Pointer[idle.Idler]
	current atomic.Pointer[idle.Idler]
	retired atomic.Pointer[idle.Stats]
}

// setIdler makes d the loop's Idler before its thread runs.
func (l *loop) setIdler(d *idle.Idler) {
	l.idler = d
	l.swap.current.Store(d)
}

// idlerNow is the loop's Idler as other goroutines may use it (Stop, State, Stats).
func (l *loop) idlerNow() *idle.Idler { return l.swap.current.Load() }

// swapIdler runs on the loop's thread between two turns, where no Idler method is
// running: it puts a pending Idler in force and closes the old one. A Stop that raced
// with the swap (it may have stopped the old Idler only) is passed on to the new one.
func (l *loop) swapIdler() {
	next := l.swap.pending.Swap(nil)
	if next == nil {
		return
	}
	old := l.idler
	sum := addStats(l.retiredStats(), old.Stats())
	l.swap.retired.Store(&sum)
	l.keepYield(next, old.RestEnd())
	l.idler = next
	l.swap.current.Store(next)
	if l.stop.Load() {
		next.Stop()
	}
	_ = old.Close()
}

func (l *loop) retiredStats() idle.Stats {
	if s := l.swap.retired.Load(); s != nil {
		return *s
	}
	return idle.Stats{}
}

// idleStats are the thread's idle-policy counters: those of the Idlers it retired plus
// the current one's; the estimates and threshold are the current one's.
func (l *loop) idleStats() idle.Stats { return addStats(l.retiredStats(), l.idlerNow().Stats()) }

// addStats adds the counters of cur to those of sum and takes cur's current values.
func addStats(sum, cur idle.Stats) idle.Stats {
	out := cur
	for _, c := range []struct {
		dst *uint64
		v   uint64
	}{
		{&out.Arms, sum.Arms}, {&out.ArmRaces, sum.ArmRaces}, {&out.Sleeps, sum.Sleeps},
		{&out.WakeInterrupt, sum.WakeInterrupt}, {&out.WakeTimeout, sum.WakeTimeout}, {&out.WakeStop, sum.WakeStop},
		{&out.DeepSleeps, sum.DeepSleeps}, {&out.WakeSpurious, sum.WakeSpurious}, {&out.WakePredicted, sum.WakePredicted},
		{&out.PredictHits, sum.PredictHits}, {&out.Yields, sum.Yields}, {&out.Errors, sum.Errors}, {&out.Stalls, sum.Stalls},
	} {
		*c.dst += c.v
	}
	out.Asleep += sum.Asleep
	out.YieldTime += sum.YieldTime
	out.StallTime += sum.StallTime
	out.MaxStall = max(out.MaxStall, sum.MaxStall)
	return out
}

// ErrNeedsRestart is wrapped by SetPolicy's refusal of a policy the running threads
// cannot take: one that sleeps on interrupts when a queue has no RX vector, or when
// queues that share a vector are polled by different threads.
var ErrNeedsRestart = errors.New("needs a restart")

// SetPolicy replaces every thread's idle policy with p while the dataplane runs. It
// checks p as New does, builds each thread's new Idler, and hands it to the thread, which
// puts it in force between two turns of its loop (within about a millisecond, or when a
// sleep under the old policy ends: the old Idler is woken) and closes the old one; Stats
// goes on counting from where it was. Before Start the new policy is in force at once.
// On error nothing changed.
func (dp *Dataplane) SetPolicy(p idle.PolicyConfig) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	dp.mu.Lock()
	defer dp.mu.Unlock()
	if dp.stopped {
		return errors.New("dataplane: stopped")
	}
	if err := dp.checkVectors(p); err != nil {
		return err
	}
	next := make([]*idle.Idler, len(dp.loops))
	for i, l := range dp.loops {
		d, err := idle.New(p, l.vectors(), l)
		if err != nil {
			for _, d := range next[:i] {
				_ = d.Close()
			}
			return fmt.Errorf("threads[%d]: %w", i, err)
		}
		next[i] = d
	}
	for i, l := range dp.loops {
		if !dp.started {
			old := l.idler
			l.setIdler(next[i])
			_ = old.Close()
			continue
		}
		if prev := l.swap.pending.Swap(next[i]); prev != nil {
			_ = prev.Close() // an earlier change the thread had not taken yet
		}
		l.idlerNow().Stop() // wake a sleeper so that it takes the change now
	}
	dp.cfg.Policy = p
	q := p.WithDefaults()
	dp.log.Info("idle policy changed", zap.Stringer("policy", q.Mode), zap.Duration("idle_threshold", q.IdleThreshold),
		zap.Bool("auto", q.Auto), zap.Stringer("delivery", q.Delivery))
	return nil
}

// checkVectors refuses a policy that sleeps on interrupts unless every queue has an RX
// vector and no vector is shared between threads (New's rules).
func (dp *Dataplane) checkVectors(p idle.PolicyConfig) error {
	if !p.SleepsOnInterrupt() {
		return nil
	}
	owner := map[int]int{}
	for ti, l := range dp.loops {
		for qi, v := range l.vectors() {
			if v == nil {
				return fmt.Errorf("policy %s: queue %s has no RX interrupt: %w", p.Mode, l.queues[qi].name, ErrNeedsRestart)
			}
			if other, ok := owner[v.Fd()]; ok && other != ti {
				return fmt.Errorf("policy %s: queue %s shares its RX interrupt with thread %d (threads were laid out for a policy that polls only): %w",
					p.Mode, l.queues[qi].name, other, ErrNeedsRestart)
			}
			owner[v.Fd()] = ti
		}
	}
	return nil
}

// vectors are the RX interrupts of the loop's queues, in order (nil where a queue has none).
func (l *loop) vectors() []*irq.Vector {
	vs := make([]*irq.Vector, len(l.rx))
	for i, r := range l.rx {
		vs[i] = r.port.RxVector(r.q)
	}
	return vs
}

// Policy returns the idle policy in force (the last SetPolicy's, or the configuration's).
func (dp *Dataplane) Policy() idle.PolicyConfig {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	return dp.cfg.Policy
}

package idle

import (
	"time"

	"github.com/uiod/uiod/irq"
)

// WaitBackoff is how far Adaptive stretches the bound of its sleeps while the ports stay
// silent: up to this many times WaitTimeout.
const WaitBackoff = 16

// DeepIdleAfter is how long a raw sleeper (irq.WaitRaw) stays without a frame or an
// interrupt before it goes into deep idle, where it waits blocking (see waitPlan).
const DeepIdleAfter = 100 * time.Millisecond

// sleep is Adaptive at an empty poll past the threshold (docs/design.md §3): arm the queues'
// interrupts and drain the vectors, re-poll, and only if that finds nothing wait for an
// interrupt, the timeout or Stop; then disarm. It returns the time the thread was back
// from its wait (or from the re-poll that found frames).
func (d *Idler) sleep(now int64) int64 {
	deadline, pollNow := d.predict(now)
	if pollNow {
		return now
	}
	d.arm()
	if n := d.q.Poll(); n > 0 {
		// The re-poll caught a frame that arrived before the interrupt was armed.
		d.q.Disarm()
		d.c.armRaces.Add(1)
		d.st.Store(int32(Polling))
		t := Now()
		d.Traffic(t)
		return t
	}
	if d.obs != nil {
		d.obs.BeforeSleep()
	}
	d.st.Store(int32(Asleep))
	t0 := Now()
	w := d.waitInterrupt(t0, deadline)
	t1 := Now()
	// The vectors are not drained here: nothing waits on them before the next arm,
	// which drains them anyway, and a read would delay the frame that woke us by a
	// system call.
	d.q.Disarm()
	d.st.Store(int32(Polling))
	d.woken(w, deadline, t0, t1)
	if d.cfg.Auto {
		// The cycle's own cost: arming and re-polling before the wait, disarming and
		// counting after it; autoWakeFloor adds the kernel's wake-up.
		d.auto.cycle((t0 - now) + (Now() - t1))
		d.publishAuto()
	}
	d.slept(t1-t0, t1)
	return t1
}

// arm enables the queues' interrupts and discards notifications from before: a stale
// interrupt must not end the coming wait.
func (d *Idler) arm() {
	d.st.Store(int32(Armed))
	d.q.Arm()
	d.c.arms.Add(1)
	if d.th != nil {
		d.th.discard()
	} else if _, err := d.p.Drain(); err != nil {
		d.c.errors.Add(1)
	}
}

// waitInterrupt blocks until an interrupt, Stop, the bound of the sleep or, when
// deadline is set, that time (a predicted frame's wake-up).
func (d *Idler) waitInterrupt(t0, deadline int64) irq.Wake {
	if d.th != nil {
		return d.th.wait(d.wait)
	}
	mode, bound := d.waitPlan(t0)
	if deadline != 0 {
		mode, bound = d.p.Mode(), time.Duration(max(deadline-t0, 0))
	}
	if mode != d.p.Mode() {
		d.c.deepSleeps.Add(1)
	}
	w, err := d.p.WaitAs(mode, bound)
	if err != nil {
		d.c.errors.Add(1)
	}
	return w
}

// woken counts the wait [t0, t1] that ended for reason w, and sets the bound of the next.
func (d *Idler) woken(w irq.Wake, deadline, t0, t1 int64) {
	d.c.sleeps.Add(1)
	d.c.asleepNs.Add(uint64(t1 - t0))
	switch w {
	case irq.WakeInterrupt:
		d.c.wakeInterrupt.Add(1)
		if deadline != 0 {
			d.auto.early(t1) // the frame beat the timer
		}
		d.woke = true
		d.wait = d.cfg.WaitTimeout
		d.quiet = t1
	case irq.WakeTimeout:
		if deadline != 0 {
			d.c.wakePredicted.Add(1)
			d.auto.woke(t1 - deadline)
			d.watchUntil = d.auto.watchEnd()
			break
		}
		d.c.wakeTimeout.Add(1)
		d.wait = nextWait(d.wait, d.cfg.WaitTimeout)
	case irq.WakeStop:
		d.c.wakeStop.Add(1)
	}
}

// predict applies Auto's prediction of periodic traffic to the sleep about to start at
// now: a timer wakes the thread ahead of the next frame, once per frame, and if the frame
// has not come by watchEnd the thread sleeps on its interrupt alone. It returns the
// timer's deadline (0: none), or pollNow when the frame is due already and the thread
// should poll for it rather than sleep. Inline delivery only: the Go timers behind
// Threaded delivery are not precise below a millisecond.
func (d *Idler) predict(now int64) (deadline int64, pollNow bool) {
	if !d.cfg.Auto || d.th != nil || d.predictedFor == d.last || !d.p.Precise() {
		return 0, false
	}
	at := d.auto.wakeAt()
	if at <= 0 || at-now > int64(d.wait) {
		return 0, false
	}
	d.predictedFor = d.last
	if at <= now {
		d.watchUntil = d.auto.watchEnd()
		return 0, true
	}
	return at, false
}

// waitPlan is how the interrupt wait starting at t0 blocks, and its bound. A raw wait
// (irq.WaitRaw) wakes up several times faster, but the runtime sees its thread run
// without end, so its monitor never rests and preempts the thread every 10 ms (SIGURG,
// EINTR, a new wait): about 100 wake-ups a second of two threads for a daemon with
// nothing to do. So a raw sleeper waits raw only until DeepIdleAfter has passed without
// a frame or an interrupt (the bound of its last raw wait ends there), and from then on,
// in deep idle, blocking through the scheduler for up to MaxWaitTimeout: the runtime's
// monitor then sleeps too, and each of the thread's wake-ups costs it a burst of its own,
// so the long bound matters as much as the blocking. The first frame after such a
// silence pays the slower wake-up.
func (d *Idler) waitPlan(t0 int64) (irq.WaitMode, time.Duration) {
	if d.p.Mode() != irq.WaitRaw {
		return d.p.Mode(), d.wait
	}
	left := d.quiet + int64(DeepIdleAfter) - t0
	if left <= 0 {
		return irq.WaitBlocking, MaxWaitTimeout
	}
	return irq.WaitRaw, min(d.wait, time.Duration(left))
}

// nextWait is the bound of the sleep after one that timed out with bound cur.
func nextWait(cur, base time.Duration) time.Duration {
	limit := min(WaitBackoff*base, MaxWaitTimeout)
	return max(min(2*cur, limit), base)
}

package irq

import (
	"fmt"
	"time"
)

// Mode is an idle policy: what a poll loop does when a poll finds no frame.
type Mode int

// Idle policies. The zero Mode is Adaptive.
const (
	// Adaptive keeps polling until IdleThreshold passed without traffic, then arms the
	// queues' interrupts, polls once more and sleeps in epoll on the polling thread itself.
	Adaptive Mode = iota
	// Busy never sleeps.
	Busy
	// SleepRange sleeps a random time in [SleepMin, SleepMax] after every empty poll, as
	// the Linux KNI kthread does with usleep_range.
	SleepRange
)

// String is the policy's configuration name, as ParseMode accepts it.
func (m Mode) String() string {
	switch m {
	case Adaptive:
		return "adaptive"
	case Busy:
		return "busy"
	case SleepRange:
		return "sleep"
	}
	return fmt.Sprintf("irq.Mode(%d)", int(m))
}

// ParseMode parses a policy name: "adaptive", "busy" or "sleep".
func ParseMode(s string) (Mode, error) {
	for _, m := range []Mode{Adaptive, Busy, SleepRange} {
		if s == m.String() {
			return m, nil
		}
	}
	return 0, fmt.Errorf("unknown idle policy %q (want adaptive, busy or sleep)", s)
}

// Delivery says which thread waits for interrupts in the Adaptive policy.
type Delivery int

// Interrupt delivery modes. The zero Delivery is Inline.
const (
	// Inline waits in epoll on the polling thread itself (the design; no hand-off).
	Inline Delivery = iota
	// Threaded waits on a separate goroutine that hands each wake-up to the polling
	// thread over a channel. For debugging and comparison only: it adds a thread hop.
	Threaded
)

// String is the delivery's configuration name, as ParseDelivery accepts it.
func (d Delivery) String() string {
	switch d {
	case Inline:
		return "inline"
	case Threaded:
		return "threaded"
	}
	return fmt.Sprintf("irq.Delivery(%d)", int(d))
}

// ParseDelivery parses "inline" or "threaded".
func ParseDelivery(s string) (Delivery, error) {
	for _, d := range []Delivery{Inline, Threaded} {
		if s == d.String() {
			return d, nil
		}
	}
	return 0, fmt.Errorf("unknown interrupt delivery %q (want inline or threaded)", s)
}

// Defaults and limits of PolicyConfig.
const (
	DefaultIdleThreshold = 300 * time.Microsecond
	DefaultWaitTimeout   = 10 * time.Millisecond
	MaxWaitTimeout       = time.Second
	MaxSleep             = time.Second
)

// PolicyConfig configures the idle policy of one polling thread.
type PolicyConfig struct {
	// Mode is the policy (default Adaptive).
	Mode Mode
	// IdleThreshold is how long Adaptive keeps polling after the last frame before it
	// arms interrupts and sleeps (default 300 µs; it is used as the starting point and
	// upper bound when Auto is set). Zero means "use the default"; to sleep at the first
	// empty poll set a tiny value such as 1ns.
	IdleThreshold time.Duration
	// Auto makes Adaptive estimate the threshold per thread from the inter-arrival gaps
	// and its own wake-up cost it observes (idle_threshold: auto).
	Auto bool
	// WaitTimeout bounds the first sleep in epoll after traffic (default 10 ms, at most
	// 1 s), a safety net should an interrupt ever be lost; while the ports stay silent the
	// bound doubles up to IdleWaitBackoff times it (see Idler). A garbage collection does
	// not wait for a raw sleeper: its preemption signal ends the wait (see WaitRaw).
	WaitTimeout time.Duration
	// SleepMin and SleepMax bound SleepRange's random sleep: 0 ≤ SleepMin < SleepMax ≤ 1 s.
	SleepMin, SleepMax time.Duration
	// HousekeepingHz, when positive, makes the loop give its CPU away for
	// HousekeepingLength at most HousekeepingHz times a second, at an empty poll when it
	// can and never later than its deadline (see Idler). It combines with every Mode.
	HousekeepingHz     int
	HousekeepingLength time.Duration
	// Delivery selects who waits for interrupts in Adaptive (default Inline).
	Delivery Delivery
	// WaitMode selects how the Inline sleeper blocks in epoll (default WaitRaw). Threaded
	// delivery always uses WaitBlocking on its helper.
	WaitMode WaitMode
}

// WithDefaults returns c with zero fields set to their defaults.
func (c PolicyConfig) WithDefaults() PolicyConfig {
	if c.IdleThreshold == 0 {
		c.IdleThreshold = DefaultIdleThreshold
	}
	if c.WaitTimeout == 0 {
		c.WaitTimeout = DefaultWaitTimeout
	}
	return c
}

// Validate reports the first field of c (after defaults) that is out of range, by name.
func (c PolicyConfig) Validate() error {
	c = c.WithDefaults()
	switch c.Mode {
	case Adaptive, Busy, SleepRange:
	default:
		return fmt.Errorf("mode: invalid policy %d", int(c.Mode))
	}
	switch c.Delivery {
	case Inline, Threaded:
	default:
		return fmt.Errorf("delivery: invalid value %d", int(c.Delivery))
	}
	if c.WaitMode != WaitRaw && c.WaitMode != WaitBlocking {
		return fmt.Errorf("wait_mode: invalid value %d", int(c.WaitMode))
	}
	if c.IdleThreshold < 0 || c.IdleThreshold > MaxWaitTimeout {
		return fmt.Errorf("idle_threshold: %v outside [0, %v]", c.IdleThreshold, MaxWaitTimeout)
	}
	if c.WaitTimeout < time.Millisecond || c.WaitTimeout > MaxWaitTimeout {
		return fmt.Errorf("wait_timeout: %v outside [1ms, %v]", c.WaitTimeout, MaxWaitTimeout)
	}
	if c.Mode == SleepRange {
		if c.SleepMin < 0 || c.SleepMin >= c.SleepMax || c.SleepMax > MaxSleep {
			return fmt.Errorf("sleep_min, sleep_max: want 0 ≤ min < max ≤ %v, have %v, %v", MaxSleep, c.SleepMin, c.SleepMax)
		}
	}
	if c.HousekeepingHz < 0 {
		return fmt.Errorf("housekeeping.hz: %d is negative", c.HousekeepingHz)
	}
	if c.HousekeepingHz > 0 {
		period := time.Second / time.Duration(c.HousekeepingHz)
		if c.HousekeepingLength <= 0 || c.HousekeepingLength >= period || c.HousekeepingLength > MaxSleep {
			return fmt.Errorf("housekeeping.length: %v must be positive and shorter than the period %v", c.HousekeepingLength, period)
		}
	}
	return nil
}

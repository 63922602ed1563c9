package idle

import (
	"errors"
	"fmt"
	"time"

	"github.com/uiod/uiod/irq"
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

var modeNames = names[Mode]{"idle.Mode", []string{Adaptive: "adaptive", Busy: "busy", SleepRange: "sleep"}}

// String is the policy's configuration name, as ParseMode accepts it.
func (m Mode) String() string { return modeNames.name(m) }

// ParseMode parses a policy name: "adaptive", "busy" or "sleep".
func ParseMode(s string) (Mode, error) {
	if m, ok := modeNames.parse(s); ok {
		return m, nil
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

var deliveryNames = names[Delivery]{"idle.Delivery", []string{Inline: "inline", Threaded: "threaded"}}

// String is the delivery's configuration name, as ParseDelivery accepts it.
func (d Delivery) String() string { return deliveryNames.name(d) }

// ParseDelivery parses "inline" or "threaded".
func ParseDelivery(s string) (Delivery, error) {
	if d, ok := deliveryNames.parse(s); ok {
		return d, nil
	}
	return 0, fmt.Errorf("unknown interrupt delivery %q (want inline or threaded)", s)
}

// Defaults and limits of PolicyConfig.
const (
	// DefaultIdleThreshold is DefaultPolicy's idle threshold. It is not applied to a zero
	// IdleThreshold, which means "sleep at the first empty poll".
	DefaultIdleThreshold = 300 * time.Microsecond
	// MaxIdleThreshold is the longest idle threshold (and Auto's longest upper bound).
	MaxIdleThreshold = time.Second
	// DefaultWaitTimeout is the bound of the first sleep after traffic when WaitTimeout
	// is zero.
	DefaultWaitTimeout = 10 * time.Millisecond
	// MinWaitTimeout and MaxWaitTimeout bound WaitTimeout: a raw epoll wait holds up a
	// stop-the-world of the Go runtime until it ends.
	MinWaitTimeout = time.Millisecond
	MaxWaitTimeout = time.Second
	// MaxSleep bounds SleepMax and HousekeepingLength, as the KNI module bounds its
	// interval.
	MaxSleep = time.Second
	// MaxHousekeepingHz bounds HousekeepingHz.
	MaxHousekeepingHz = 1000000
)

// PolicyConfig configures the idle policy of one polling thread. Every duration is taken
// as it is, except a zero WaitTimeout (a zero bound is not a wait), which means
// DefaultWaitTimeout: in particular a zero IdleThreshold sleeps at the first empty poll.
// DefaultPolicy is the recommended configuration.
type PolicyConfig struct {
	// Mode is the policy (zero: Adaptive).
	Mode Mode
	// IdleThreshold is how long Adaptive keeps polling after the last frame before it
	// arms interrupts and sleeps; 0 sleeps at the first empty poll. With Auto it is the
	// longest threshold the estimator may choose, and must be positive.
	IdleThreshold time.Duration
	// Auto makes Adaptive estimate the threshold per thread from the inter-arrival gaps
	// and its own wake-up cost it observes (idle_threshold: auto).
	Auto bool
	// WaitTimeout bounds the first sleep in epoll after traffic (zero: DefaultWaitTimeout;
	// at most MaxWaitTimeout), a safety net should an interrupt ever be lost; while the
	// ports stay silent the bound doubles up to WaitBackoff times it, and a raw sleeper
	// silent for DeepIdleAfter waits blocking, for up to MaxWaitTimeout (see Idler). A garbage
	// collection does not wait for a raw sleeper: its preemption signal ends the wait (see
	// irq.WaitRaw).
	WaitTimeout time.Duration
	// SleepMin and SleepMax bound SleepRange's random sleep: 0 ≤ SleepMin < SleepMax ≤
	// MaxSleep. They are checked whenever either is set, whatever the Mode.
	SleepMin, SleepMax time.Duration
	// HousekeepingHz, when positive, makes the loop give its CPU away for
	// HousekeepingLength at most HousekeepingHz times a second, at an empty poll when it
	// can and never later than its deadline (see Idler). It combines with every Mode.
	HousekeepingHz     int
	HousekeepingLength time.Duration
	// Delivery selects who waits for interrupts in Adaptive (zero: Inline).
	Delivery Delivery
	// WaitMode selects how the Inline sleeper blocks in epoll (zero: irq.WaitRaw).
	// Threaded delivery always uses irq.WaitBlocking on its helper.
	WaitMode irq.WaitMode
}

// DefaultPolicy is Adaptive with DefaultIdleThreshold and DefaultWaitTimeout, inline
// delivery and raw waits.
func DefaultPolicy() PolicyConfig {
	return PolicyConfig{Mode: Adaptive, IdleThreshold: DefaultIdleThreshold, WaitTimeout: DefaultWaitTimeout}
}

// WithDefaults returns c with a zero WaitTimeout set to DefaultWaitTimeout.
func (c PolicyConfig) WithDefaults() PolicyConfig {
	if c.WaitTimeout == 0 {
		c.WaitTimeout = DefaultWaitTimeout
	}
	return c
}

// SleepsOnInterrupt reports whether the policy arms the queues' RX interrupts and sleeps
// on their vectors, so that every queue it polls needs an RX interrupt vector.
func (c PolicyConfig) SleepsOnInterrupt() bool { return c.Mode == Adaptive }

// ErrNoVector is returned by New for a policy that sleeps on interrupts given no vector.
var ErrNoVector = errors.New("adaptive policy needs an RX interrupt, and the port has none")

// FieldError is a PolicyConfig field Validate refused.
type FieldError struct {
	// Field is the field's configuration name: mode, delivery, wait_mode,
	// idle_threshold, wait_timeout, sleep_min (for the sleep range as a whole),
	// housekeeping.hz or housekeeping.length.
	Field string
	// Reason says what is wrong with its value.
	Reason string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Validate reports the first field of c (after defaults) that is out of range, as a
// *FieldError. It is the one place these limits are checked.
func (c PolicyConfig) Validate() error {
	c = c.WithDefaults()
	switch c.Mode {
	case Adaptive, Busy, SleepRange:
	default:
		return fieldErr("mode", "invalid policy %d", int(c.Mode))
	}
	switch c.Delivery {
	case Inline, Threaded:
	default:
		return fieldErr("delivery", "invalid value %d", int(c.Delivery))
	}
	if c.WaitMode != irq.WaitRaw && c.WaitMode != irq.WaitBlocking {
		return fieldErr("wait_mode", "invalid value %d", int(c.WaitMode))
	}
	if c.IdleThreshold < 0 || c.IdleThreshold > MaxIdleThreshold {
		return fieldErr("idle_threshold", "%v outside [0, %v]", c.IdleThreshold, MaxIdleThreshold)
	}
	if c.Auto && c.IdleThreshold == 0 {
		return fieldErr("idle_threshold", "auto needs a positive upper bound (such as %v)", DefaultIdleThreshold)
	}
	if c.WaitTimeout < MinWaitTimeout || c.WaitTimeout > MaxWaitTimeout {
		return fieldErr("wait_timeout", "%v outside [%v, %v]", c.WaitTimeout, MinWaitTimeout, MaxWaitTimeout)
	}
	if c.Mode == SleepRange || c.SleepMin != 0 || c.SleepMax != 0 {
		if c.SleepMin < 0 || c.SleepMin >= c.SleepMax || c.SleepMax > MaxSleep {
			return fieldErr("sleep_min", "want 0 ≤ sleep_min < sleep_max ≤ %v, have %v, %v", MaxSleep, c.SleepMin, c.SleepMax)
		}
	}
	if c.HousekeepingHz < 0 || c.HousekeepingHz > MaxHousekeepingHz {
		return fieldErr("housekeeping.hz", "%d outside [0, %d] (0 is off)", c.HousekeepingHz, MaxHousekeepingHz)
	}
	if c.HousekeepingLength < 0 || c.HousekeepingLength > MaxSleep {
		return fieldErr("housekeeping.length", "%v outside [0, %v]", c.HousekeepingLength, MaxSleep)
	}
	if c.HousekeepingHz == 0 && c.HousekeepingLength != 0 {
		return fieldErr("housekeeping.hz", "0 (off) with housekeeping.length %v set", c.HousekeepingLength)
	}
	if c.HousekeepingHz > 0 {
		period := time.Second / time.Duration(c.HousekeepingHz)
		if c.HousekeepingLength == 0 || c.HousekeepingLength >= period {
			return fieldErr("housekeeping.length", "%v must be positive and shorter than the period %v", c.HousekeepingLength, period)
		}
	}
	return nil
}

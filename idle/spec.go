package idle

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SpecError is a policy spec ParseSpec refused, and why.
type SpecError struct {
	Spec string // the spec as given
	Err  error  // what is wrong with it (a Validate error for a value out of range)
}

func (e *SpecError) Error() string { return fmt.Sprintf("policy %q: %v", e.Spec, e.Err) }

// Unwrap returns the reason.
func (e *SpecError) Unwrap() error { return e.Err }

// ParseSpec parses one idle policy in the command line's mini-language:
//
//	busy                Busy
//	adaptive            Adaptive with DefaultIdleThreshold
//	adaptive:T          Adaptive with threshold T (a Go duration; 0: sleep at the first empty poll)
//	auto                Adaptive with Auto, at most DefaultIdleThreshold
//	threaded            Adaptive with Threaded delivery
//	sleep:MIN-MAX       SleepRange in [MIN, MAX], such as sleep:20us-50us
//
// each optionally followed by +hk:HZ/LENGTH (housekeeping yields of LENGTH, HZ times a
// second), such as busy+hk:100/10us. Fields the spec does not set have their defaults
// (DefaultPolicy's WaitTimeout), and the result is validated (Validate). Errors are a
// *SpecError.
func ParseSpec(s string) (PolicyConfig, error) {
	c, err := parseSpec(s)
	if err == nil {
		err = c.Validate()
	}
	if err != nil {
		return PolicyConfig{}, &SpecError{Spec: s, Err: err}
	}
	return c, nil
}

func parseSpec(s string) (PolicyConfig, error) {
	base, hk, hasHK := strings.Cut(s, "+")
	kind, arg, hasArg := strings.Cut(base, ":")
	c := DefaultPolicy()
	switch kind {
	case "busy", "auto", "threaded":
		if hasArg {
			return c, fmt.Errorf("%s takes no argument", kind)
		}
		switch kind {
		case "busy":
			c = PolicyConfig{Mode: Busy}.WithDefaults()
		case "auto":
			c.Auto = true
		case "threaded":
			c.Delivery = Threaded
		}
	case "adaptive":
		if hasArg {
			d, err := time.ParseDuration(arg)
			if err != nil {
				return c, fmt.Errorf("threshold %q is not a duration such as 300us", arg)
			}
			c.IdleThreshold = d
		}
	case "sleep":
		lo, hi, ok := strings.Cut(arg, "-")
		min, err1 := time.ParseDuration(lo)
		max, err2 := time.ParseDuration(hi)
		if !hasArg || !ok || err1 != nil || err2 != nil {
			return c, errors.New("want sleep:MIN-MAX such as sleep:100us-200us")
		}
		c = PolicyConfig{Mode: SleepRange, SleepMin: min, SleepMax: max}.WithDefaults()
	default:
		return c, errors.New("unknown policy (want busy, adaptive[:THRESHOLD], auto, threaded or sleep:MIN-MAX)")
	}
	if hasHK {
		spec, ok := strings.CutPrefix(hk, "hk:")
		hz, length, ok2 := strings.Cut(spec, "/")
		n, err1 := strconv.Atoi(hz)
		d, err2 := time.ParseDuration(length)
		if !ok || !ok2 || err1 != nil || err2 != nil || n <= 0 {
			return c, errors.New("want +hk:HZ/LENGTH with HZ positive, such as +hk:100/10us")
		}
		c.HousekeepingHz, c.HousekeepingLength = n, d
	}
	return c, nil
}

// Spec formats c in ParseSpec's language, so that ParseSpec(c.Spec()) returns c. It fails
// for a configuration the language cannot express (such as Auto with Threaded delivery, a
// WaitTimeout other than the default, or blocking waits).
func (c PolicyConfig) Spec() (string, error) {
	c = c.WithDefaults()
	var b strings.Builder
	var want PolicyConfig // what ParseSpec makes of b
	switch c.Mode {
	case Busy:
		b.WriteString("busy")
		want = PolicyConfig{Mode: Busy}.WithDefaults()
	case SleepRange:
		fmt.Fprintf(&b, "sleep:%v-%v", c.SleepMin, c.SleepMax)
		want = PolicyConfig{Mode: SleepRange, SleepMin: c.SleepMin, SleepMax: c.SleepMax}.WithDefaults()
	case Adaptive:
		want = DefaultPolicy()
		switch {
		case c.Auto:
			b.WriteString("auto")
			want.Auto = true
		case c.Delivery == Threaded:
			b.WriteString("threaded")
			want.Delivery = Threaded
		case c.IdleThreshold == DefaultIdleThreshold:
			b.WriteString("adaptive")
		default:
			fmt.Fprintf(&b, "adaptive:%v", c.IdleThreshold)
			want.IdleThreshold = c.IdleThreshold
		}
	default:
		return "", fmt.Errorf("mode: invalid policy %d", int(c.Mode))
	}
	if c.HousekeepingHz > 0 {
		fmt.Fprintf(&b, "+hk:%d/%v", c.HousekeepingHz, c.HousekeepingLength)
		want.HousekeepingHz, want.HousekeepingLength = c.HousekeepingHz, c.HousekeepingLength
	}
	if c != want {
		return "", fmt.Errorf("policy %+v has no spec", c)
	}
	return b.String(), nil
}

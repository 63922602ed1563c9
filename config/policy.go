package config

import (
	"fmt"
	"time"

	"github.com/uiod/uiod/idle"
)

// minWaitTimeout is the idle policy's shortest wait_timeout, named in the message about a
// wait_timeout of 0 (which the policy itself reads as "the default").
const minWaitTimeout = time.Millisecond

// IdlePolicy returns the idle policy the poll section configures, as the poll threads
// run it (poll.idle_threshold: auto takes the default threshold as the longest one auto
// may choose), checked by the policy's own validation. An error names the key that is
// wrong (poll.mode, poll.delivery) or, for the policy's refusal, the poll section. This
// is the one mapping from configuration to policy: the daemon runs what it returns.
func (p Poll) IdlePolicy() (idle.PolicyConfig, error) {
	pol, err := policyOf(p)
	if err != nil {
		return idle.PolicyConfig{}, err
	}
	if err := pol.Validate(); err != nil {
		return idle.PolicyConfig{}, fmt.Errorf("poll: %w", err)
	}
	return pol, nil
}

// policyOf maps the poll section onto the idle policy it configures, unvalidated; it
// fails when the mode or delivery is not one the policy knows (checkPoll reports those
// under their keys).
func policyOf(p Poll) (pol idle.PolicyConfig, err error) {
	mode, err := idle.ParseMode(p.Mode)
	if err != nil {
		return pol, fmt.Errorf("poll.mode: %w", err)
	}
	del, err := idle.ParseDelivery(p.Delivery)
	if err != nil {
		return pol, fmt.Errorf("poll.delivery: %w", err)
	}
	pol = idle.PolicyConfig{
		Mode:               mode,
		IdleThreshold:      p.IdleThreshold.Duration,
		Auto:               p.IdleThreshold.Auto,
		WaitTimeout:        p.WaitTimeout,
		SleepMin:           p.SleepMin,
		SleepMax:           p.SleepMax,
		HousekeepingHz:     p.Housekeeping.Hz,
		HousekeepingLength: p.Housekeeping.Length,
		Delivery:           del,
	}
	if pol.Auto && pol.IdleThreshold == 0 {
		pol.IdleThreshold = idle.DefaultIdleThreshold // the longest threshold auto may choose
	}
	return pol, nil
}

// checkPolicy checks every idle-policy setting of the poll section, whatever the mode,
// with the policy's own validation (idle.PolicyConfig.Validate): each setting is checked
// on a policy that differs from a valid one only in that setting, so that the error lands
// on the key that is wrong. The configuration adds only what is its own: a duration is
// never negative, and a key given as 0 where the policy would read 0 as "the default" is
// refused rather than silently replaced.
func (c *Config) checkPolicy(errs *fieldErrors) {
	p := &c.Poll
	if th := p.IdleThreshold; !th.Auto && nonNegative(errs, "poll.idle_threshold", th.Duration) {
		policyRule(errs, "poll.idle_threshold", th, idle.PolicyConfig{IdleThreshold: th.Duration}, "")
	}
	if p.WaitTimeout == 0 {
		errs.add("poll.wait_timeout", p.WaitTimeout, "must be in [%v, %v]: it bounds each sleep (leave the key out for %v)",
			minWaitTimeout, idle.MaxWaitTimeout, DefaultWaitTimeout)
	} else {
		policyRule(errs, "poll.wait_timeout", p.WaitTimeout, idle.PolicyConfig{WaitTimeout: p.WaitTimeout}, "")
	}

	minOK := nonNegative(errs, "poll.sleep_min", p.SleepMin)
	maxOK := nonNegative(errs, "poll.sleep_max", p.SleepMax)
	if minOK && maxOK {
		// sleep_max alone (against the shortest sleep_min), then the pair.
		sleep := func(min, max time.Duration) idle.PolicyConfig {
			return idle.PolicyConfig{Mode: idle.SleepRange, SleepMin: min, SleepMax: max}
		}
		if policyRule(errs, "poll.sleep_max", p.SleepMax, sleep(0, p.SleepMax), "must be more than 0 and at most "+idle.MaxSleep.String()) {
			policyRule(errs, "poll.sleep_min", p.SleepMin, sleep(p.SleepMin, p.SleepMax), "must be less than poll.sleep_max ("+p.SleepMax.String()+")")
		}
	}

	hk := &p.Housekeeping
	lengthOK := nonNegative(errs, "poll.housekeeping.length", hk.Length)
	switch {
	case hk.Hz == 0 && hk.Length > 0:
		errs.add("poll.housekeeping.hz", hk.Hz, "must be > 0 when poll.housekeeping.length is set")
	case hk.Hz != 0 && !policyRule(errs, "poll.housekeeping.hz", hk.Hz, idle.PolicyConfig{HousekeepingHz: hk.Hz, HousekeepingLength: time.Nanosecond}, ""):
	case hk.Hz > 0 && lengthOK && hk.Length == 0:
		errs.add("poll.housekeeping.length", nil, "required when poll.housekeeping.hz is set (how long to give the CPU away)")
	case hk.Hz > 0 && lengthOK:
		policyRule(errs, "poll.housekeeping.length", hk.Length, idle.PolicyConfig{HousekeepingHz: hk.Hz, HousekeepingLength: hk.Length},
			"must be shorter than 1/hz = "+(time.Second/time.Duration(hk.Hz)).String())
	}
}

// policyRule runs the idle policy's validation on probe and, if it refuses it, reports
// that under path: with msg when the policy's own words would not name the key's
// relation to the others, else with the policy's error. It reports whether probe passed.
func policyRule(errs *fieldErrors, path string, value any, probe idle.PolicyConfig, msg string) bool {
	err := probe.Validate()
	if err == nil {
		return true
	}
	if msg == "" {
		msg = "idle policy: " + err.Error()
	}
	*errs = append(*errs, FieldError{Path: path, Value: value, Msg: msg, Err: err})
	return false
}

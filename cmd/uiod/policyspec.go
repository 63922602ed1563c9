package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/uiod/uiod/irq"
)

// policy is one idle policy to measure with --sim.
type policy struct {
	name string
	cfg  irq.PolicyConfig
}

// parsePolicies parses a comma-separated policy list (see the command's help).
func parsePolicies(s string) ([]policy, error) {
	var out []policy
	seen := map[string]bool{}
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			return nil, fmt.Errorf("empty policy in %q", s)
		}
		if seen[name] {
			return nil, fmt.Errorf("policy %q listed twice", name)
		}
		seen[name] = true
		c, err := parsePolicy(name)
		if err != nil {
			return nil, err
		}
		out = append(out, policy{name, c})
	}
	return out, nil
}

func parsePolicy(s string) (irq.PolicyConfig, error) {
	var c irq.PolicyConfig
	base, hk, hasHK := strings.Cut(s, "+")
	kind, arg, hasArg := strings.Cut(base, ":")
	switch kind {
	case "busy", "auto", "threaded":
		if hasArg {
			return c, fmt.Errorf("policy %q takes no argument", s)
		}
		switch kind {
		case "busy":
			c.Mode = irq.Busy
		case "auto":
			c.Mode, c.Auto = irq.Adaptive, true
		case "threaded":
			c.Mode, c.Delivery = irq.Adaptive, irq.Threaded
		}
	case "adaptive":
		c.Mode = irq.Adaptive
		if hasArg {
			d, err := time.ParseDuration(arg)
			if err != nil || d <= 0 {
				return c, fmt.Errorf("policy %q: threshold %q is not a positive duration", s, arg)
			}
			c.IdleThreshold = d
		}
	case "sleep":
		lo, hi, ok := strings.Cut(arg, "-")
		min, err1 := time.ParseDuration(lo)
		max, err2 := time.ParseDuration(hi)
		if !hasArg || !ok || err1 != nil || err2 != nil {
			return c, fmt.Errorf("policy %q: want sleep:MIN-MAX such as sleep:100us-200us", s)
		}
		c.Mode, c.SleepMin, c.SleepMax = irq.SleepRange, min, max
	default:
		return c, fmt.Errorf("unknown policy %q (want busy, adaptive[:THRESHOLD], auto, threaded or sleep:MIN-MAX)", s)
	}
	if hasHK {
		spec, ok := strings.CutPrefix(hk, "hk:")
		hz, length, ok2 := strings.Cut(spec, "/")
		n, err1 := strconv.Atoi(hz)
		d, err2 := time.ParseDuration(length)
		if !ok || !ok2 || err1 != nil || err2 != nil {
			return c, fmt.Errorf("policy %q: want +hk:HZ/LENGTH such as +hk:100/10us", s)
		}
		c.HousekeepingHz, c.HousekeepingLength = n, d
	}
	if err := c.Validate(); err != nil {
		return c, fmt.Errorf("policy %q: %w", s, err)
	}
	return c, nil
}

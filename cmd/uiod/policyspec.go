package main

import (
	"fmt"
	"strings"

	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/internal/clip"
)

// policy is one idle policy to measure with --sim.
type policy struct {
	name string
	cfg  idle.PolicyConfig
}

// parsePolicies parses a comma-separated list of idle policies, each in idle.ParseSpec's
// language.
func parsePolicies(s string) ([]policy, error) {
	var out []policy
	seen := map[string]bool{}
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			return nil, fmt.Errorf("empty policy in %s", clip.Quote(s))
		}
		if seen[name] {
			return nil, fmt.Errorf("policy %s listed twice", clip.Quote(name))
		}
		seen[name] = true
		c, err := idle.ParseSpec(name)
		if err != nil {
			return nil, err
		}
		out = append(out, policy{name, c})
	}
	return out, nil
}

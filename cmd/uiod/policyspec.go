package main

import (
	"fmt"
	"strings"

	"github.com/uiod/uiod/idle"
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
			return nil, fmt.Errorf("empty policy in %q", s)
		}
		if seen[name] {
			return nil, fmt.Errorf("policy %q listed twice", name)
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

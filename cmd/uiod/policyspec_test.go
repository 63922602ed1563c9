package main

import (
	"testing"

	"github.com/uiod/uiod/internal/testutil"
)

// FuzzParsePolicies checks that the --policies parser never panics and that every policy
// it accepts validates.
func FuzzParsePolicies(f *testing.F) {
	seeds := []string{defaultPolicies, "adaptive:50us,threaded,busy+hk:100/10us", "sleep:2-1", "busy+hk:", "auto:1", ",", "sleep:1us-2us+hk:1/1ns"}
	testutil.FuzzParser(f, seeds, parsePolicies, func(t *testing.T, s string, ps []policy) {
		for _, p := range ps {
			if err := p.cfg.Validate(); err != nil {
				t.Fatalf("%q: accepted %s, which does not validate: %v", s, p.name, err)
			}
		}
	})
}

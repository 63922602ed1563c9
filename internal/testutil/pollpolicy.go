package testutil

import (
	"fmt"
	"strings"
	"time"
)

// PollSection is the YAML flow mapping of a poll section for a benchmark's policy name,
// polling on cpus ("0" or "0,1"): busy, adaptive, sleep or hybrid as poll.mode; auto is
// adaptive with idle_threshold: auto; adaptive@DURATION (adaptive@2ms) is adaptive with
// that idle threshold — one above the traffic's gap keeps the thread polling through the
// traffic and lets it sleep once the traffic stops.
func PollSection(policy, cpus string) (string, error) {
	mode, extra := policy, ""
	switch {
	case policy == "auto":
		mode, extra = "adaptive", ", idle_threshold: auto"
	case strings.Contains(policy, "@"):
		m, th, _ := strings.Cut(policy, "@")
		if _, err := time.ParseDuration(th); err != nil || m != "adaptive" {
			return "", fmt.Errorf("policy %q: want adaptive@DURATION", policy)
		}
		mode, extra = m, ", idle_threshold: "+th
	}
	return fmt.Sprintf("{mode: %s%s, cpus: [%s]}", mode, extra, cpus), nil
}

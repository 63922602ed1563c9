package sidebyside

import (
	"flag"
	"fmt"
	"strings"
	"time"
)

// Plan is how one run measures every contender.
type Plan struct {
	Rounds, Probes int
	Interval       time.Duration // between probes
	Idle           time.Duration // the idle stretch whose CPU is measured
	// Settle, if not 0, is a wait after the first probes come back, followed by a
	// discarded warm-up at the probes' rate.
	Settle time.Duration
}

// Flags are the command-line settings every side-by-side bench takes (bench/dpdk's too):
// PREFIX.rounds, PREFIX.probes, PREFIX.interval and the subset of the contenders to run.
type Flags struct {
	rounds, probes *int
	interval       *time.Duration
	only           *string
}

// NewFlags registers the flags prefix.rounds (default rounds), prefix.probes (5000),
// prefix.interval (400 µs) and prefix.subset, naming a contender one and the contenders
// many in their help.
func NewFlags(prefix string, rounds int, one, subset, many string) *Flags {
	return &Flags{
		rounds:   flag.Int(prefix+".rounds", rounds, fmt.Sprintf("rounds of every %s, the order rotated each round", one)),
		probes:   flag.Int(prefix+".probes", 5000, fmt.Sprintf("probes per %s per round", one)),
		interval: flag.Duration(prefix+".interval", 400*time.Microsecond, "gap between probes"),
		only:     flag.String(prefix+"."+subset, "", fmt.Sprintf("comma-separated subset of the %s (default all)", many)),
	}
}

// Rounds is the -PREFIX.rounds flag.
func (f *Flags) Rounds() int { return *f.rounds }

// Probes is the -PREFIX.probes flag.
func (f *Flags) Probes() int { return *f.probes }

// Interval is the -PREFIX.interval flag.
func (f *Flags) Interval() time.Duration { return *f.interval }

// Order is the contenders to measure: all, or the subset the flag names.
func (f *Flags) Order(all []string) []string {
	if *f.only != "" {
		return strings.Split(*f.only, ",")
	}
	return all
}

// Plan is the flags' rounds, probes and interval with an idle stretch and a settle time.
func (f *Flags) Plan(idle, settle time.Duration) Plan {
	return Plan{Rounds: f.Rounds(), Probes: f.Probes(), Interval: f.Interval(), Idle: idle, Settle: settle}
}

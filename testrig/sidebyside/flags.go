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
// PREFIX.rounds, PREFIX.probes, PREFIX.interval, the subset of the contenders to run and,
// for a bench on the host, PREFIX.idle.
type Flags struct {
	rounds, probes *int
	interval, idle *time.Duration
	only           *string
}

// FlagSet names a bench's flags and what their help says.
type FlagSet struct {
	Prefix string // the flags' prefix: "ovs" for -ovs.rounds
	Rounds int    // -PREFIX.rounds' default
	One    string // a contender, in the help: "switch"
	Subset string // the subset flag's name after the prefix: "switches"
	Many   string // the contenders, in the help: "switches"
	// IdleWith, if not empty, registers -PREFIX.idle (10 s): the idle stretch whose CPU is
	// measured, with what still connected ("client connected").
	IdleWith string
}

// NewFlags registers the flags of s: -PREFIX.rounds, -PREFIX.probes (5000),
// -PREFIX.interval (400 µs), -PREFIX.SUBSET and, with s.IdleWith, -PREFIX.idle.
func NewFlags(s FlagSet) *Flags {
	f := &Flags{
		rounds:   flag.Int(s.Prefix+".rounds", s.Rounds, fmt.Sprintf("rounds of every %s, the order rotated each round", s.One)),
		probes:   flag.Int(s.Prefix+".probes", 5000, fmt.Sprintf("probes per %s per round", s.One)),
		interval: flag.Duration(s.Prefix+".interval", 400*time.Microsecond, "gap between probes"),
		only:     flag.String(s.Prefix+"."+s.Subset, "", fmt.Sprintf("comma-separated subset of the %s (default all)", s.Many)),
	}
	if s.IdleWith != "" {
		f.idle = flag.Duration(s.Prefix+".idle", 10*time.Second, "idle stretch whose CPU is measured, "+s.IdleWith)
	}
	return f
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

// Plan is the flags' rounds, probes, interval and idle stretch, with a settle time.
func (f *Flags) Plan(settle time.Duration) Plan {
	return Plan{Rounds: f.Rounds(), Probes: f.Probes(), Interval: f.Interval(), Idle: *f.idle, Settle: settle}
}

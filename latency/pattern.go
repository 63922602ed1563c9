package latency

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// Pattern is a traffic pattern: when each probe is due, as an offset from the start of
// the run. Patterns are values; Schedule starts an independent sequence.
type Pattern interface {
	// Schedule returns a sequence of send offsets for one run; seed makes random
	// patterns repeatable.
	Schedule(seed uint64) Schedule
	// String returns the pattern in the form ParsePattern accepts.
	String() string
}

// Schedule yields the offset from the start of the run at which the next frame is due.
// Offsets never decrease. Computing each from the start (not from the last send) keeps a
// late send from shifting every later one: the schedule does not drift.
type Schedule interface {
	Next() time.Duration
}

// Constant sends one frame every Gap.
type Constant struct{ Gap time.Duration }

// Schedule implements Pattern.
func (c Constant) Schedule(uint64) Schedule { return &constantSchedule{gap: c.Gap, n: -1} }

// String returns "constant:GAP".
func (c Constant) String() string { return "constant:" + c.Gap.String() }

type constantSchedule struct {
	gap time.Duration
	n   int64
}

func (s *constantSchedule) Next() time.Duration {
	s.n++
	return time.Duration(s.n) * s.gap
}

// OnOff sends bursts: Rate frames per second for On, then nothing for Off, repeating.
type OnOff struct {
	Rate    float64
	On, Off time.Duration
}

// Schedule implements Pattern.
func (o OnOff) Schedule(uint64) Schedule {
	return &onOffSchedule{gap: time.Duration(float64(time.Second) / o.Rate), on: o.On, period: o.On + o.Off, n: -1}
}

// String returns "onoff:RATE,ON,OFF".
func (o OnOff) String() string {
	return "onoff:" + formatRate(o.Rate) + "," + o.On.String() + "," + o.Off.String()
}

type onOffSchedule struct {
	gap, on, period time.Duration
	burst           time.Duration // start of the current burst
	n               int64         // frames sent in the current burst
}

func (s *onOffSchedule) Next() time.Duration {
	s.n++
	at := time.Duration(s.n) * s.gap
	if at >= s.on {
		s.burst += s.period
		s.n, at = 0, 0
	}
	return s.burst + at
}

// Poisson sends at exponentially distributed gaps, Rate frames per second on average.
type Poisson struct{ Rate float64 }

// Schedule implements Pattern.
func (p Poisson) Schedule(seed uint64) Schedule {
	return &poissonSchedule{mean: float64(time.Second) / p.Rate, rng: rand.New(rand.NewPCG(seed, 0x75696f64)), at: -1}
}

// String returns "poisson:RATE".
func (p Poisson) String() string { return "poisson:" + formatRate(p.Rate) }

type poissonSchedule struct {
	mean float64
	rng  *rand.Rand
	at   float64
}

func (s *poissonSchedule) Next() time.Duration {
	if s.at < 0 {
		s.at = 0
	} else {
		s.at += s.rng.ExpFloat64() * s.mean
	}
	return time.Duration(s.at)
}

// maxRate bounds parsed rates: 10 Mpps is far beyond what the generator can pace.
const maxRate = 10e6

// ParsePattern parses a traffic pattern:
//
//	constant:400us        one frame every 400 µs (also constant:2.5kpps)
//	onoff:100kpps,10ms,90ms  100 kpps for 10 ms, then 90 ms silent, repeating
//	poisson:10kpps        exponential gaps, 10 kpps on average
//
// Rates are frames per second with an optional k or M multiplier and optional "pps".
func ParsePattern(s string) (Pattern, error) {
	kind, arg, _ := strings.Cut(s, ":")
	switch kind {
	case "constant":
		if d, err := time.ParseDuration(arg); err == nil {
			if d <= 0 {
				return nil, fmt.Errorf("pattern %q: gap must be positive", s)
			}
			return Constant{Gap: d}, nil
		}
		r, err := ParseRate(arg)
		if err != nil {
			return nil, fmt.Errorf("pattern %q: %w", s, err)
		}
		return Constant{Gap: time.Duration(float64(time.Second) / r)}, nil
	case "onoff":
		parts := strings.Split(arg, ",")
		if len(parts) != 3 {
			return nil, fmt.Errorf("pattern %q: want onoff:RATE,ON,OFF", s)
		}
		r, err := ParseRate(parts[0])
		if err != nil {
			return nil, fmt.Errorf("pattern %q: %w", s, err)
		}
		on, err1 := time.ParseDuration(parts[1])
		off, err2 := time.ParseDuration(parts[2])
		if err1 != nil || err2 != nil || on <= 0 || off < 0 {
			return nil, fmt.Errorf("pattern %q: ON must be a positive and OFF a non-negative duration", s)
		}
		if time.Duration(float64(time.Second)/r) > on {
			return nil, fmt.Errorf("pattern %q: ON is shorter than one gap at that rate", s)
		}
		return OnOff{Rate: r, On: on, Off: off}, nil
	case "poisson":
		r, err := ParseRate(arg)
		if err != nil {
			return nil, fmt.Errorf("pattern %q: %w", s, err)
		}
		return Poisson{Rate: r}, nil
	}
	return nil, fmt.Errorf("pattern %q: want constant:GAP|RATE, onoff:RATE,ON,OFF or poisson:RATE", s)
}

// ParseRate parses a frame rate such as 2500, 2.5k, 50kpps or 1Mpps into frames per second.
func ParseRate(s string) (float64, error) {
	t := strings.TrimSuffix(s, "pps")
	mul := 1.0
	switch {
	case strings.HasSuffix(t, "k"):
		mul, t = 1e3, strings.TrimSuffix(t, "k")
	case strings.HasSuffix(t, "M"):
		mul, t = 1e6, strings.TrimSuffix(t, "M")
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) || v <= 0 || v*mul > maxRate {
		return 0, fmt.Errorf("rate %q is not a number of frames per second in (0, 10M]", s)
	}
	return v * mul, nil
}

func formatRate(r float64) string {
	switch {
	case r >= 1e6 && math.Mod(r, 1e3) == 0:
		return strconv.FormatFloat(r/1e6, 'f', -1, 64) + "Mpps"
	case r >= 1e3:
		return strconv.FormatFloat(r/1e3, 'f', -1, 64) + "kpps"
	}
	return strconv.FormatFloat(r, 'f', -1, 64) + "pps"
}

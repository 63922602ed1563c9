package config

import (
	"fmt"
	"time"
)

// Threshold is poll.idle_threshold: a duration, or "auto" to let the loop choose from the
// traffic it sees.
type Threshold struct {
	Auto     bool
	Duration time.Duration // meaningful when Auto is false
}

// ParseThreshold parses "auto" or a Go duration ("300us").
func ParseThreshold(s string) (Threshold, error) {
	if s == "auto" {
		return Threshold{Auto: true}, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return Threshold{}, fmt.Errorf("not a duration (such as 300us) or auto")
	}
	return Threshold{Duration: d}, nil
}

// String returns "auto" or the duration.
func (t Threshold) String() string {
	if t.Auto {
		return "auto"
	}
	return t.Duration.String()
}

// MarshalText implements encoding.TextMarshaler.
func (t Threshold) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseThreshold's rules.
func (t *Threshold) UnmarshalText(b []byte) error { return unmarshalText(t, b, ParseThreshold) }

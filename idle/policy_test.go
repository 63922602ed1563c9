package idle

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestPolicyConfigValidate(t *testing.T) {
	us := time.Microsecond
	tests := []struct {
		name  string
		cfg   PolicyConfig
		field string // "" = valid
	}{
		{"zero is adaptive with defaults", PolicyConfig{}, ""},
		{"busy", PolicyConfig{Mode: Busy}, ""},
		{"sleep range", PolicyConfig{Mode: SleepRange, SleepMin: 5 * us, SleepMax: 10 * us}, ""},
		{"sleep min 0", PolicyConfig{Mode: SleepRange, SleepMax: us}, ""},
		{"sleep min = max", PolicyConfig{Mode: SleepRange, SleepMin: us, SleepMax: us}, "sleep_min"},
		{"sleep min > max", PolicyConfig{Mode: SleepRange, SleepMin: 2 * us, SleepMax: us}, "sleep_min"},
		{"sleep negative", PolicyConfig{Mode: SleepRange, SleepMin: -us, SleepMax: us}, "sleep_min"},
		{"sleep max too long", PolicyConfig{Mode: SleepRange, SleepMax: 2 * time.Second}, "sleep_min"},
		{"bad mode", PolicyConfig{Mode: 9}, "mode"},
		{"bad delivery", PolicyConfig{Delivery: 9}, "delivery"},
		{"bad wait mode", PolicyConfig{WaitMode: 9}, "wait_mode"},
		{"negative threshold", PolicyConfig{IdleThreshold: -1}, "idle_threshold"},
		{"threshold too long", PolicyConfig{IdleThreshold: 2 * time.Second}, "idle_threshold"},
		{"wait timeout too short", PolicyConfig{WaitTimeout: us}, "wait_timeout"},
		{"wait timeout too long", PolicyConfig{WaitTimeout: time.Minute}, "wait_timeout"},
		{"housekeeping", PolicyConfig{HousekeepingHz: 100, HousekeepingLength: time.Millisecond}, ""},
		{"housekeeping negative hz", PolicyConfig{HousekeepingHz: -1}, "housekeeping.hz"},
		{"housekeeping no length", PolicyConfig{HousekeepingHz: 100}, "housekeeping.length"},
		{"housekeeping length ≥ period", PolicyConfig{HousekeepingHz: 1000, HousekeepingLength: time.Millisecond}, "housekeeping.length"},
		{"default policy", DefaultPolicy(), ""},
		{"zero threshold", PolicyConfig{IdleThreshold: 0}, ""},
		{"auto", PolicyConfig{Auto: true, IdleThreshold: DefaultIdleThreshold}, ""},
		{"auto without upper bound", PolicyConfig{Auto: true}, "idle_threshold"},
		{"sleep range checked under adaptive", PolicyConfig{SleepMin: 2 * us, SleepMax: us}, "sleep_min"},
		{"sleep range checked under busy", PolicyConfig{Mode: Busy, SleepMax: 2 * time.Second}, "sleep_min"},
		{"valid sleep range under adaptive", PolicyConfig{SleepMin: us, SleepMax: 2 * us}, ""},
		{"housekeeping negative length", PolicyConfig{HousekeepingLength: -us}, "housekeeping.length"},
		{"housekeeping length without hz", PolicyConfig{HousekeepingLength: us}, "housekeeping.hz"},
		{"housekeeping hz too high", PolicyConfig{HousekeepingHz: MaxHousekeepingHz + 1, HousekeepingLength: time.Nanosecond}, "housekeeping.hz"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			switch {
			case tt.field == "" && err != nil:
				t.Fatalf("Validate = %v, want nil", err)
			case tt.field != "" && err == nil:
				t.Fatalf("Validate accepted %+v", tt.cfg)
			case tt.field != "" && !strings.HasPrefix(err.Error(), tt.field):
				t.Fatalf("Validate = %q, want an error naming %s", err, tt.field)
			}
			var fe *FieldError
			if tt.field != "" && (!errors.As(err, &fe) || fe.Field != tt.field) {
				t.Fatalf("Validate = %#v, want a *FieldError for %s", err, tt.field)
			}
		})
	}
}

func TestParse(t *testing.T) {
	for _, m := range []Mode{Adaptive, Busy, SleepRange} {
		if got, err := ParseMode(m.String()); err != nil || got != m {
			t.Errorf("ParseMode(%q) = %v, %v", m, got, err)
		}
	}
	for _, d := range []Delivery{Inline, Threaded} {
		if got, err := ParseDelivery(d.String()); err != nil || got != d {
			t.Errorf("ParseDelivery(%q) = %v, %v", d, got, err)
		}
	}
	for _, s := range []string{"", "Busy", "poll", "sleep "} {
		if _, err := ParseMode(s); err == nil {
			t.Errorf("ParseMode(%q) succeeded", s)
		}
		if _, err := ParseDelivery(s); err == nil {
			t.Errorf("ParseDelivery(%q) succeeded", s)
		}
	}
}

func FuzzParseMode(f *testing.F) {
	for _, s := range []string{"adaptive", "busy", "sleep", "inline", "threaded", "", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if m, err := ParseMode(s); err == nil && m.String() != s {
			t.Fatalf("ParseMode(%q) = %v, which prints differently", s, m)
		}
		if d, err := ParseDelivery(s); err == nil && d.String() != s {
			t.Fatalf("ParseDelivery(%q) = %v, which prints differently", s, d)
		}
	})
}

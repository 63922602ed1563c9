package idle

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseSpec(t *testing.T) {
	us := time.Microsecond
	def := DefaultPolicy()
	with := func(f func(*PolicyConfig)) PolicyConfig { c := def; f(&c); return c }
	tests := []struct {
		spec string
		want PolicyConfig
	}{
		{"busy", PolicyConfig{Mode: Busy, WaitTimeout: DefaultWaitTimeout}},
		{"adaptive", def},
		{"adaptive:50us", with(func(c *PolicyConfig) { c.IdleThreshold = 50 * us })},
		{"adaptive:0", with(func(c *PolicyConfig) { c.IdleThreshold = 0 })},
		{"auto", with(func(c *PolicyConfig) { c.Auto = true })},
		{"threaded", with(func(c *PolicyConfig) { c.Delivery = Threaded })},
		{"sleep:20us-50us", PolicyConfig{Mode: SleepRange, SleepMin: 20 * us, SleepMax: 50 * us, WaitTimeout: DefaultWaitTimeout}},
		{"sleep:0s-1s", PolicyConfig{Mode: SleepRange, SleepMax: time.Second, WaitTimeout: DefaultWaitTimeout}},
		{"busy+hk:100/10us", PolicyConfig{Mode: Busy, WaitTimeout: DefaultWaitTimeout, HousekeepingHz: 100, HousekeepingLength: 10 * us}},
		{"auto+hk:1000/20us", with(func(c *PolicyConfig) { c.Auto, c.HousekeepingHz, c.HousekeepingLength = true, 1000, 20*us })},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			got, err := ParseSpec(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("ParseSpec(%q) = %+v, want %+v", tt.spec, got, tt.want)
			}
			s, err := got.Spec()
			if err != nil {
				t.Fatalf("Spec of %+v: %v", got, err)
			}
			if again, err := ParseSpec(s); err != nil || again != got {
				t.Fatalf("ParseSpec(%q) (from %q) = %+v, %v; want %+v", s, tt.spec, again, err, got)
			}
		})
	}
}

func TestParseSpecErrors(t *testing.T) {
	tests := []struct {
		spec string
		want string // the error names this
	}{
		{"", "unknown policy"},
		{"poll", "unknown policy"},
		{"Busy", "unknown policy"},
		{"busy:1us", "takes no argument"},
		{"auto:300us", "takes no argument"},
		{"adaptive:fast", "threshold"},
		{"adaptive:-1us", "idle_threshold"},
		{"adaptive:2s", "idle_threshold"},
		{"sleep", "sleep:MIN-MAX"},
		{"sleep:10us", "sleep:MIN-MAX"},
		{"sleep:10us-", "sleep:MIN-MAX"},
		{"sleep:50us-20us", "sleep_min"},
		{"sleep:0s-2s", "sleep_min"},
		{"busy+hk", "+hk:HZ/LENGTH"},
		{"busy+hk:100", "+hk:HZ/LENGTH"},
		{"busy+hk:0/10us", "+hk:HZ/LENGTH"},
		{"busy+hk:-5/10us", "+hk:HZ/LENGTH"},
		{"busy+hk:100/x", "+hk:HZ/LENGTH"},
		{"busy+hk:1000/1ms", "housekeeping.length"},
		{"busy+hz:100/10us", "+hk:HZ/LENGTH"},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			_, err := ParseSpec(tt.spec)
			var se *SpecError
			if !errors.As(err, &se) {
				t.Fatalf("ParseSpec(%q) = %v, want a *SpecError", tt.spec, err)
			}
			if se.Spec != tt.spec || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ParseSpec(%q) = %q (spec %q), want an error naming %q", tt.spec, err, se.Spec, tt.want)
			}
		})
	}
}

func TestSpecInexpressible(t *testing.T) {
	c := DefaultPolicy()
	c.Auto, c.Delivery = true, Threaded
	for _, c := range []PolicyConfig{
		c,
		{Mode: Adaptive, IdleThreshold: DefaultIdleThreshold, WaitTimeout: time.Second},
		{Mode: Busy, SleepMin: time.Microsecond, SleepMax: 2 * time.Microsecond},
		{Mode: 9},
	} {
		if s, err := c.Spec(); err == nil {
			t.Errorf("Spec(%+v) = %q, want an error", c, s)
		}
	}
}

// FuzzParseSpec checks that ParseSpec never panics, that what it accepts is valid, and
// that its result formats back (Spec) to a spec that parses to the same configuration.
func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{"busy", "adaptive", "adaptive:50us", "auto", "threaded", "sleep:20us-50us",
		"busy+hk:100/10us", "sleep:1ms-1.1ms+hk:10/1ms", "adaptive:0", "sleep:-1-2", "+", "busy+hk:1/", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseSpec(s)
		if err != nil {
			var se *SpecError
			if !errors.As(err, &se) || se.Spec != s {
				t.Fatalf("ParseSpec(%q) error %v is not a *SpecError for it", s, err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("ParseSpec(%q) = %+v, which Validate refuses: %v", s, c, err)
		}
		spec, err := c.Spec()
		if err != nil {
			t.Fatalf("ParseSpec(%q) = %+v, which has no spec: %v", s, c, err)
		}
		if again, err := ParseSpec(spec); err != nil || again != c {
			t.Fatalf("ParseSpec(%q) = %+v; its spec %q parses to %+v, %v", s, c, spec, again, err)
		}
	})
}

package idle

import (
	"strings"
	"testing"
	"time"
)

func TestRuntimeYieldFromEnv(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want time.Duration
		bad  bool
	}{
		{"", RuntimeYieldEvery, false},
		{"on", RuntimeYieldEvery, false},
		{"off", 0, false},
		{"0", 0, false},
		{"4ms", 4 * time.Millisecond, false},
		{"-1ms", 0, true},
		{"soon", 0, true},
		{"sleep", 0, true},
		{strings.Repeat("x", 100000), 0, true},
	} {
		t.Setenv(RuntimeYieldEnv, tc.env)
		got, err := RuntimeYieldFromEnv()
		if tc.bad {
			if err == nil || !strings.Contains(err.Error(), RuntimeYieldEnv) || len(err.Error()) > 200 {
				t.Errorf("%.20q: %v, %v, want a short error naming %s", tc.env, got, err, RuntimeYieldEnv)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %v, %v, want %v", tc.env, got, err, tc.want)
		}
	}
}

// Empty asks for a runtime yield once the thread has polled for the interval since it
// was turned on or last rested (Rested), never while it is off.
func TestRuntimeYieldSchedule(t *testing.T) {
	const every = 8 * time.Millisecond
	for _, tc := range []struct {
		name string
		cfg  PolicyConfig
		on   bool
		// min and max bound the yields 100 ms of empty polls every 10 µs ask for.
		min, max int
	}{
		{"off", PolicyConfig{Mode: Busy}, false, 0, 0},
		{"busy", PolicyConfig{Mode: Busy}, true, 12, 12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := newIdler(t, tc.cfg)
			start := Now()
			if tc.on {
				d.SetRuntimeYield(every, start)
			}
			n := 0
			for now := start + int64(10*time.Microsecond); now < start+int64(100*time.Millisecond); now += int64(10 * time.Microsecond) {
				if d.Empty(now) {
					n++
					d.Rested(now)
					if d.RestEnd() != now {
						t.Fatalf("RestEnd %d after Rested(%d)", d.RestEnd(), now)
					}
				}
			}
			if n < tc.min || n > tc.max {
				t.Fatalf("%d runtime yields in 100 ms, want %d to %d", n, tc.min, tc.max)
			}
		})
	}
}

// A housekeeping yield is a rest too: with one every 2 ms, empty polls for three times
// the interval (on the real clock, which the yields' ends are read from; an interval of
// 50 ms leaves room for a loaded machine's stalls) never ask for a runtime yield.
func TestRuntimeYieldAfterHousekeeping(t *testing.T) {
	d, _ := newIdler(t, PolicyConfig{Mode: Busy, HousekeepingHz: 500, HousekeepingLength: time.Microsecond})
	start := Now()
	d.SetRuntimeYield(50*time.Millisecond, start)
	for now := start; now < start+int64(150*time.Millisecond); now = Now() {
		if d.Empty(now) {
			t.Fatalf("a runtime yield %v in, after %d housekeeping yields", time.Duration(now-start), d.Stats().Yields)
		}
	}
	if d.Stats().Yields == 0 {
		t.Fatal("no housekeeping yield")
	}
}

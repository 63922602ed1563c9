package latency

import (
	"math"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
)

func offsets(p Pattern, n int) []time.Duration {
	s := p.Schedule(1)
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = s.Next()
	}
	return out
}

func TestConstantSchedule(t *testing.T) {
	got := offsets(Constant{Gap: 400 * time.Microsecond}, 10001)
	if got[0] != 0 || got[1] != 400*time.Microsecond || got[10000] != 4*time.Second {
		t.Fatalf("offsets %v %v %v: the schedule drifts", got[0], got[1], got[10000])
	}
}

func TestOnOffSchedule(t *testing.T) {
	// 100 kpps for 10 ms then 90 ms off: 1000 frames per 100 ms period.
	got := offsets(OnOff{Rate: 100e3, On: 10 * time.Millisecond, Off: 90 * time.Millisecond}, 3000)
	if got[999] != 9990*time.Microsecond || got[1000] != 100*time.Millisecond || got[2000] != 200*time.Millisecond {
		t.Fatalf("offsets %v %v %v", got[999], got[1000], got[2000])
	}
	for i := 1; i < len(got); i++ {
		if got[i] < got[i-1] {
			t.Fatalf("offset %d goes back: %v < %v", i, got[i], got[i-1])
		}
		if in := got[i] % (100 * time.Millisecond); in >= 10*time.Millisecond {
			t.Fatalf("frame %d at %v is in the off phase", i, got[i])
		}
	}
}

func TestPoissonSchedule(t *testing.T) {
	const n = 20000
	got := offsets(Poisson{Rate: 10e3}, n)
	mean := float64(got[n-1]) / (n - 1) // ns per gap, 100 µs expected
	if math.Abs(mean-100e3)/100e3 > 0.05 {
		t.Fatalf("mean gap %.0f ns, want about 100000", mean)
	}
	var sq float64
	for i := 1; i < n; i++ {
		d := float64(got[i]-got[i-1]) - mean
		sq += d * d
	}
	// An exponential distribution's standard deviation equals its mean.
	if sd := math.Sqrt(sq / (n - 2)); math.Abs(sd-mean)/mean > 0.1 {
		t.Fatalf("gap stddev %.0f, mean %.0f: not exponential", sd, mean)
	}
	again := offsets(Poisson{Rate: 10e3}, 10)
	if again[9] != got[9] {
		t.Fatal("same seed, different schedule")
	}
}

func TestParsePattern(t *testing.T) {
	testutil.CheckParseCases(t, "ParsePattern", ParsePattern, []testutil.ParseCase[Pattern]{
		{In: "constant:400us", Want: Constant{Gap: 400 * time.Microsecond}},
		{In: "constant:2.5kpps", Want: Constant{Gap: 400 * time.Microsecond}},
		{In: "constant:50k", Want: Constant{Gap: 20 * time.Microsecond}},
		{In: "onoff:100kpps,10ms,90ms", Want: OnOff{Rate: 100e3, On: 10 * time.Millisecond, Off: 90 * time.Millisecond}},
		{In: "poisson:10kpps", Want: Poisson{Rate: 10e3}},
		{In: "poisson:1Mpps", Want: Poisson{Rate: 1e6}},
		{In: "constant:0s", Err: "positive"},
		{In: "constant:fast", Err: "rate"},
		{In: "poisson:-3", Err: "rate"},
		{In: "poisson:20M", Err: "rate"},
		{In: "onoff:1k,10ms", Err: "onoff:RATE,ON,OFF"},
		{In: "onoff:1k,10us,1ms", Err: "shorter than one gap"},
		{In: "onoff:1k,-1ms,1ms", Err: "positive"},
		{In: "square:1k", Err: "want constant"},
	})
}

func FuzzParsePattern(f *testing.F) {
	seeds := []string{"constant:400us", "constant:2.5kpps", "onoff:100kpps,10ms,90ms", "poisson:10kpps", "x:"}
	testutil.FuzzParser(f, seeds, ParsePattern, func(t *testing.T, in string, p Pattern) {
		if _, err := ParsePattern(p.String()); err != nil {
			t.Fatalf("ParsePattern(%q) = %v, whose String does not parse: %v", in, p, err)
		}
		s := p.Schedule(1)
		prev := s.Next()
		for range 100 {
			next := s.Next()
			if next < prev {
				t.Fatalf("%v: schedule goes back from %v to %v", p, prev, next)
			}
			prev = next
		}
	})
}

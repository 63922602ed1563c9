package benchstat

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestPercentile(t *testing.T) {
	s := []int64{10, 20, 30, 40, 50, 60, 70, 80, 90, 100}
	tests := []struct {
		in   []int64
		p    int
		want int64
	}{
		{nil, 50, 0}, {s, 0, 10}, {s, 50, 50}, {s, 99, 90}, {s, 100, 100}, {s[:1], 99, 10},
	}
	for _, tt := range tests {
		if got := Percentile(tt.in, tt.p); got != tt.want {
			t.Errorf("Percentile(%v, %d) = %d, want %d", tt.in, tt.p, got, tt.want)
		}
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		in   []float64
		want float64
	}{
		{nil, 0}, {[]float64{3}, 3}, {[]float64{3, 1, 2}, 2}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5},
	}
	for _, tt := range tests {
		in := slices.Clone(tt.in)
		if got := Median(in); got != tt.want || !slices.Equal(in, tt.in) {
			t.Errorf("Median(%v) = %v (input now %v), want %v", tt.in, got, in, tt.want)
		}
	}
}

func TestResampleAndInterval(t *testing.T) {
	pick := make([]int, 50)
	Resample(rand.New(rand.NewPCG(1, 2)), pick)
	rng := rand.New(rand.NewPCG(1, 2))
	for i, r := range pick {
		if want := rng.IntN(len(pick)); r != want {
			t.Fatalf("pick[%d] = %d, want the rng's draw %d", i, r, want)
		}
	}
	s := make([]float64, 100)
	for i := range s {
		s[i] = float64(99 - i)
	}
	if lo, hi := Interval(s); lo != 5 || hi != 95 {
		t.Errorf("Interval = %v, %v; want 5, 95", lo, hi)
	}
	if lo, hi := Interval(nil); lo != 0 || hi != 0 {
		t.Errorf("Interval(nil) = %v, %v", lo, hi)
	}
}

func TestLogHist(t *testing.T) {
	var a, b LogHist
	if a.Quantile(50) != 0 {
		t.Fatal("empty histogram has a quantile")
	}
	for i := int64(1); i <= 1000; i++ {
		a.Add(1000 * i) // 1 µs .. 1 ms
	}
	b.Add(100e9) // beyond the last bucket: counted there
	b.Merge(&a)
	for _, tt := range []struct {
		h    *LogHist
		p    int
		want float64
	}{{&a, 50, 500e3}, {&a, 99, 990e3}, {&a, 0, 1e3}, {&b, 100, math.Exp(1199 * logHistStep)}} {
		got := tt.h.Quantile(tt.p)
		if got > tt.want || got < tt.want/1.021 { // the lower bound of a 2 % bucket
			t.Errorf("p%d = %.0f, want within 2 %% below %.0f", tt.p, got, tt.want)
		}
	}
}

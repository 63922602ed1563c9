package intel

import "testing"

// TestClockExt: SYSTIM readings, in raw counts of 2^-shift ns, become one continuous ns
// clock: across the 2^64 wrap, for stamps a little older than the last reading, and after
// a gap of several wrap periods that only the host clock can count.
func TestClockExt(t *testing.T) {
	const shift = 21 // the 82599 at 10 Gb/s: 2^43 ns
	const period = int64(1) << (64 - shift)
	ns := func(v int64) uint64 { return uint64(v) << shift } // raw counts of v ns
	for _, tt := range []struct {
		name    string
		baseNs  int64 // the first reading's time past 0 (wrapped at 2^43)
		steps   []int64
		stamp   int64 // a stamp this far before the last reading (ns)
		wantEnd int64 // the last reading's time relative to the first
	}{
		{"no wrap", 1000, []int64{500, 500}, 10, 1000},
		{"across the wrap", period - 1000, []int64{600, 600, 600}, 10, 1800},
		{"stamp before the wrap", period - 100, []int64{200}, 150, 200},
		{"a gap of three periods", 5, []int64{3*period + 77}, 0, 3*period + 77},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var c clockExt
			host := int64(1_000_000)
			raw := ns(tt.baseNs)
			c.start(raw, host, shift, nil)
			first := c.ns(raw, host)
			if first != tt.baseNs {
				t.Fatalf("first reading %d ns, want %d", first, tt.baseNs)
			}
			var got int64
			for _, s := range tt.steps {
				host += s
				raw += ns(s)
				got = c.advance(raw, host)
			}
			if got-first != tt.wantEnd {
				t.Errorf("last reading %d ns after the first, want %d", got-first, tt.wantEnd)
			}
			if st := c.ns(raw-ns(tt.stamp), host+3); st != got-tt.stamp {
				t.Errorf("stamp %d ns before the reading placed at %d, want %d", tt.stamp, st, got-tt.stamp)
			}
		})
	}
}

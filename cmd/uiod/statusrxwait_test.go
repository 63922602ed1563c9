package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/uiod/uiod/daemon"
)

// TestStatusRxWaits: the rx wait table lists causes with frames, with bucket-bound
// quantiles, and is left out when nothing was stamped.
func TestStatusRxWaits(t *testing.T) {
	buckets := func(counts ...uint64) []daemon.RxWaitBucket {
		var b []daemon.RxWaitBucket
		le := 0.5e-6
		for _, c := range counts {
			b = append(b, daemon.RxWaitBucket{LeSeconds: le, Count: c})
			le *= 2
		}
		return b
	}
	for _, tt := range []struct {
		name  string
		waits []daemon.RxWaitStatus
		want  []string
		not   []string
	}{
		{"none stamped", []daemon.RxWaitStatus{{Port: "p0", Wake: "poll", Buckets: buckets(0, 0)}}, nil, []string{"rx wait"}},
		{"interrupt", []daemon.RxWaitStatus{
			{Port: "p0", Wake: "poll", Buckets: buckets(0, 0)},
			{Port: "p0", Wake: "interrupt", Count: 4, SumSeconds: 6e-6, Buckets: buckets(0, 3, 4), Lost: 1},
		}, []string{"rx wait since start", "interrupt", "1.5µs", "2µs"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := statusReport{RxWaits: newRxWaitReports(tt.waits)}
			var b bytes.Buffer
			r.writeRxWaits(&b, 0)
			for _, w := range tt.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("lacks %q:\n%s", w, b.String())
				}
			}
			if n := strings.Count(b.String(), "p0"); n > 1 {
				t.Errorf("%d rows, want only causes with frames:\n%s", n, b.String())
			}
			for _, w := range tt.not {
				if strings.Contains(b.String(), w) {
					t.Errorf("has %q:\n%s", w, b.String())
				}
			}
		})
	}
}

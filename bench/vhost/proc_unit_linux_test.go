package vhost

import (
	"os"
	"testing"
	"time"
)

func TestParseSchedstat(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"123456789 1000 42\n", 123456789, true},
		{"0 0 0", 0, true},
		{"12 34", 0, false},
		{"x 1 2", 0, false},
		{"-5 1 2", 0, false},
	} {
		got, err := parseSchedstat(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseSchedstat(%q) = %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// TestProcessCPU reads this test process's own threads: a positive time that does not go
// backwards while the process works.
func TestProcessCPU(t *testing.T) {
	c0, err := processCPU(os.Getpid())
	if err != nil {
		t.Skip("no schedstat (kernel without CONFIG_SCHEDSTATS): ", err)
	}
	for end := time.Now().Add(20 * time.Millisecond); time.Now().Before(end); {
	}
	c1, err := processCPU(os.Getpid())
	if err != nil || c1 <= 0 || c1 < c0 {
		t.Fatalf("processCPU: %v then %v, %v", c0, c1, err)
	}
	if _, err := processCPU(-1); err == nil {
		t.Error("processCPU(-1): no error")
	}
}

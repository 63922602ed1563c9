package vhost

import (
	"os"
	"testing"
	"time"
)

func TestParseSchedstat(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want sched
		ok   bool
	}{
		{"123456789 1000 42\n", sched{123456789, 1000}, true},
		{"0 0 0", sched{}, true},
		{"12 34", sched{}, false},
		{"x 1 2", sched{}, false},
		{"1 y 2", sched{}, false},
		{"-5 1 2", sched{}, false},
	} {
		got, err := parseSchedstat(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseSchedstat(%q) = %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// TestProcessSched reads this test process's own threads: a positive time on CPU that
// does not go backwards while the process works.
func TestProcessSched(t *testing.T) {
	c0, err := processSched(os.Getpid())
	if err != nil {
		t.Skip("no schedstat (kernel without CONFIG_SCHEDSTATS): ", err)
	}
	for end := time.Now().Add(20 * time.Millisecond); time.Now().Before(end); {
	}
	c1, err := processSched(os.Getpid())
	if err != nil || c1.run <= 0 || c1.run < c0.run || c1.wait < c0.wait {
		t.Fatalf("processSched: %v then %v, %v", c0, c1, err)
	}
	if _, err := processSched(-1); err == nil {
		t.Error("processSched(-1): no error")
	}
}

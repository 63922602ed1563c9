package testutil

import (
	"os"
	"testing"
	"time"
)

func TestParseSchedstat(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Sched
		ok   bool
	}{
		{"123456789 1000 42\n", Sched{123456789, 1000}, true},
		{"0 0 0", Sched{}, true},
		{"12 34", Sched{}, false},
		{"x 1 2", Sched{}, false},
		{"1 y 2", Sched{}, false},
		{"-5 1 2", Sched{}, false},
	} {
		got, err := ParseSchedstat(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseSchedstat(%q) = %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// TestProcessSched reads this test process's own threads: a positive time on CPU that
// does not go backwards while the process works.
func TestProcessSched(t *testing.T) {
	c0, err := ProcessSched(os.Getpid())
	if err != nil {
		t.Skip("no schedstat (kernel without CONFIG_SCHEDSTATS): ", err)
	}
	for end := time.Now().Add(20 * time.Millisecond); time.Now().Before(end); {
	}
	c1, err := ProcessSched(os.Getpid())
	if err != nil || c1.Run <= 0 || c1.Run < c0.Run || c1.Wait < c0.Wait {
		t.Fatalf("ProcessSched: %v then %v, %v", c0, c1, err)
	}
	if _, err := ProcessSched(-1); err == nil {
		t.Error("ProcessSched(-1): no error")
	}
}

// A started process's output is tailed, and Stop ends it.
func TestStartProc(t *testing.T) {
	p := StartProc(t, t.TempDir(), "echo", "sh", "-c", "echo one; echo two; echo three; sleep 60")
	if !WaitFor(10*time.Second, func() bool { return p.Tail(1) == "three" }) {
		t.Fatalf("tail %q", p.Tail(3))
	}
	if got := p.Tail(2); got != "two\nthree" {
		t.Errorf("Tail(2) = %q", got)
	}
	p.Stop()
	if !p.Exited() {
		t.Error("not exited after Stop")
	}
}

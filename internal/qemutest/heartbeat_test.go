package qemutest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestWatch runs the heartbeat watchdog on a file a goroutine writes like the guest's init
// does: a heartbeat that stops, or never starts, kills the guest and is recorded; one that
// goes on until the guest powers off is not.
func TestWatch(t *testing.T) {
	// Limits far above a loaded host's stalls: a beat 10 ms apart never misses a second.
	l := watchLimits{Poll: 10 * time.Millisecond, First: 2 * time.Second, Gap: time.Second}
	for _, tc := range []struct {
		name   string
		beats  int // beats written, 10 ms apart; -1: until the guest powers off
		silent bool
	}{
		{"stops", 5, true},
		{"never starts", 0, true},
		{"beats until power-off", -1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), heartbeatFile)
			if err := os.WriteFile(path, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			vm := &VM{done: make(chan struct{}), cancel: cancel}
			watched := make(chan struct{})
			go func() { vm.watch(path, l); close(watched) }()
			beat := func() {
				f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Error(err)
					return
				}
				f.WriteString("1.00\n")
				f.Close()
			}
			if tc.beats < 0 {
				// Beat for several Gaps, then power off.
				for end := time.Now().Add(3 * l.Gap); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
					beat()
				}
				close(vm.done)
			} else {
				for i := 0; i < tc.beats; i++ {
					beat()
					time.Sleep(10 * time.Millisecond)
				}
			}
			select {
			case <-watched:
			case <-time.After(time.Minute):
				t.Fatal("watch did not return within a minute")
			}
			if got := vm.silent.killed(); got != tc.silent {
				t.Fatalf("silent = %v (%v), want %v", got, vm.silent.quiet(), tc.silent)
			}
			if tc.silent {
				if ctx.Err() == nil {
					t.Fatal("a silent guest was not killed")
				}
				if q := vm.silent.quiet(); q <= l.Gap {
					t.Fatalf("silent for %v, not more than the limit %v", q, l.Gap)
				}
			} else if ctx.Err() != nil {
				t.Fatal("a guest whose heartbeat went on was killed")
			}
		})
	}
}

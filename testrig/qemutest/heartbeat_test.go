package qemutest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestWatch runs the watchdog on files a goroutine writes like the guest's init and script
// do: a heartbeat that stops, or never starts, kills the guest; so does a console that
// shows a stall while the script prints nothing. A guest that beats until it powers off,
// silent or not, and one that stalled but goes on printing, are not killed.
func TestWatch(t *testing.T) {
	// Limits far above a loaded host's stalls: a beat 10 ms apart never misses a second.
	l := watchLimits{Poll: 10 * time.Millisecond, First: 2 * time.Second, Gap: time.Second}
	const stallLine = "[  284.9] rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:\n"
	for _, tc := range []struct {
		name    string
		beats   int  // beats written, 10 ms apart; -1: until the guest powers off
		prints  bool // the script prints a line with every beat
		console string
		why     int32 // 0: not killed
	}{
		{"stops", 5, false, "", noHeartbeat},
		{"never starts", 0, false, "", noHeartbeat},
		{"beats until power-off", -1, false, "", 0},
		{"beats and prints until power-off", -1, true, "", 0},
		{"stalled and quiet", -1, false, stallLine, stalledQuiet},
		{"stalled but printing", -1, true, stallLine, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range []string{heartbeatFile, resultFile} {
				if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			vm := &VM{done: make(chan struct{}), cancel: cancel, console: &consoleBuffer{}}
			vm.console.Write([]byte(tc.console))
			watched := make(chan struct{})
			go func() { vm.watch(dir, l); close(watched) }()
			appendLine := func(name, line string) {
				f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Error(err)
					return
				}
				f.WriteString(line)
				f.Close()
			}
			beat := func() {
				appendLine(heartbeatFile, "1.00\n")
				if tc.prints {
					appendLine(resultFile, "E2E step\n")
				}
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
			if got := vm.silent.why.Load(); got != tc.why || vm.silent.killed() != (tc.why != 0) {
				t.Fatalf("killed for %d (%v), want %d", got, &vm.silent, tc.why)
			}
			if tc.why != 0 {
				if ctx.Err() == nil {
					t.Fatal("a silent guest was not killed")
				}
				if q := vm.silent.quiet(); q <= l.Gap {
					t.Fatalf("silent for %v, not more than the limit %v", q, l.Gap)
				}
			} else if ctx.Err() != nil {
				t.Fatal("a guest that went on was killed")
			}
		})
	}
}

// TestTaskStat reads a thread's state and CPU time from its stat file, whose name field can
// hold spaces and parentheses.
func TestTaskStat(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		stat  string
		ticks int64
		state string
	}{
		{"4242 (CPU 0/TCG) S 1 2 3 4 5 6 7 8 9 10 120 30 0 0 20 0 1 0", 150, "S"},
		{"4243 (a (b) c) R 1 2 3 4 5 6 7 8 9 10 1 2 0 0", 3, "R"},
		{"4244 (short) S 1 2", 0, "?"},
		{"no name", 0, "?"},
	} {
		if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(tc.stat+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if ticks, state := taskStat(dir); ticks != tc.ticks || state != tc.state {
			t.Errorf("%q: %d %q, want %d %q", tc.stat, ticks, state, tc.ticks, tc.state)
		}
	}
	if _, state := taskStat(filepath.Join(dir, "none")); state != "gone" {
		t.Errorf("a thread without a stat file: %q, want gone", state)
	}
}

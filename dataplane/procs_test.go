package dataplane

import (
	"runtime"
	"testing"

	"github.com/uiod/uiod/idle"
)

func TestProcsFor(t *testing.T) {
	if got := ProcsFor(64); got != 64+SpareProcs {
		t.Fatalf("ProcsFor(64) = %d", got)
	}
	if got := ProcsFor(0); got < SpareProcs {
		t.Fatalf("ProcsFor(0) = %d", got)
	}
}

// Two dataplanes running at once: GOMAXPROCS covers both, the first Stop keeps it, the
// last puts back what the process had.
func TestReserveProcsAcrossDataplanes(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	reserveProcs(1)
	if got := runtime.GOMAXPROCS(0); got != ProcsFor(1) {
		t.Fatalf("one thread running: GOMAXPROCS %d, want %d", got, ProcsFor(1))
	}
	reserveProcs(64)
	if got := runtime.GOMAXPROCS(0); got != ProcsFor(65) {
		t.Fatalf("65 threads running: GOMAXPROCS %d, want %d", got, ProcsFor(65))
	}
	releaseProcs(1)
	if got := runtime.GOMAXPROCS(0); got < ProcsFor(64) {
		t.Fatalf("64 threads still running: GOMAXPROCS %d, want ≥ %d", got, ProcsFor(64))
	}
	releaseProcs(64)
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Fatalf("none running: GOMAXPROCS %d, want the 1 from before", got)
	}
}

// A dataplane's Start raises GOMAXPROCS and its Stop puts it back.
func TestStartRaisesProcs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	dp := newPair(t, L2Fwd, idle.PolicyConfig{Mode: idle.Busy}, 1).dp
	if err := dp.Start(); err != nil {
		t.Fatal(err)
	}
	if got := runtime.GOMAXPROCS(0); got < ProcsFor(1) {
		t.Errorf("running: GOMAXPROCS %d, want ≥ %d", got, ProcsFor(1))
	}
	dp.Stop()
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Errorf("stopped: GOMAXPROCS %d, want 1", got)
	}
}

package dataplane

import "testing"

func TestProcsFor(t *testing.T) {
	if got := ProcsFor(64); got != 64+SpareProcs {
		t.Fatalf("ProcsFor(64) = %d", got)
	}
	if got := ProcsFor(0); got < SpareProcs {
		t.Fatalf("ProcsFor(0) = %d", got)
	}
}

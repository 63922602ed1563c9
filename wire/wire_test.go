package wire

import (
	"bytes"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestPair(t *testing.T) {
	a, b := Pair()
	var got []byte
	var ts int64
	b.SetHandler(func(f []byte, t int64) { got = append([]byte(nil), f...); ts = t })
	before := Now()
	if err := a.Send([]byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, []byte{1, 2, 3}) || ts < before {
		t.Fatalf("got %v at %d (sent after %d)", got, ts, before)
	}
	b.Close()
	if err := a.Send([]byte{1}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Send to closed peer: %v", err)
	}
}

// TestPairCloseWaitsForHandler: once Close returns, the port's handler is not running and
// is never called again, so its owner may free what the handler touches.
func TestPairCloseWaitsForHandler(t *testing.T) {
	a, b := Pair()
	entered, release := make(chan struct{}), make(chan struct{})
	var running atomic.Bool
	b.SetHandler(func([]byte, int64) {
		running.Store(true)
		close(entered)
		<-release
		running.Store(false)
	})
	sent := make(chan error, 1)
	go func() { sent <- a.Send([]byte{1}) }()
	<-entered
	closed := make(chan struct{})
	go func() { b.Close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close returned while the handler was running")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	<-closed
	if running.Load() {
		t.Fatal("handler still running after Close")
	}
	if err := <-sent; err != nil {
		t.Fatalf("Send that was delivered: %v", err)
	}
	if err := a.Send([]byte{2}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Send after Close: %v", err)
	}
}

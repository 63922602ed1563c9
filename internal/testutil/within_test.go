package testutil

import (
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"
)

func TestWithin(t *testing.T) {
	want := errors.New("refused")
	if err := Within(t, time.Second, "f", func() error { return want }); err != want {
		t.Errorf("Within = %v, want f's error %v", err, want)
	}
	release := make(chan struct{})
	defer close(release)
	ft := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() { // Fatalf ends the goroutine that calls it, as in a test
		defer close(done)
		Within(ft, 10*time.Millisecond, "the open", func() error { <-release; return nil })
	}()
	<-done
	if ft.msg != "the open blocked for 10ms" {
		t.Errorf("Within of a blocked call: %q, want it to fail the test naming the call", ft.msg)
	}
}

// fatalRecorder is a testing.TB whose Fatalf records its message and ends the goroutine.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

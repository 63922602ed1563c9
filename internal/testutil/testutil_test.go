package testutil

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"
)

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// errFatal is what the recorder's Fatal panics with, in place of stopping the goroutine.
var errFatal = errors.New("fatal")

func (r *recorder) Fatal(args ...any) {
	r.errs = append(r.errs, fmt.Sprint(args...))
	panic(errFatal)
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
	panic(errFatal)
}

// fatal runs fn with r and reports whether it called Fatal.
func (r *recorder) fatal(fn func()) (fatal bool) {
	defer func() {
		if v := recover(); v != nil {
			if v != errFatal {
				panic(v)
			}
			fatal = true
		}
	}()
	fn()
	return false
}

func TestWaitFor(t *testing.T) {
	n := 0
	if !WaitFor(time.Second, func() bool { n++; return n >= 3 }) {
		t.Fatal("WaitFor gave up on a condition that becomes true")
	}
	if WaitFor(5*time.Millisecond, func() bool { return false }) {
		t.Fatal("WaitFor reported a condition that never holds")
	}
}

func TestErrorIs(t *testing.T) {
	base := errors.New("base")
	ErrorIs(t, fmt.Errorf("open port0: %w", base), base, "port0")
	ErrorContains(t, errors.New("a b c"), "a", "c")
}

func TestFDs(t *testing.T) {
	if FDs() == 0 {
		t.Fatal("a running test has no open fds")
	}
}

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

// TestRepeat: rounds are numbered from 1, the time left shrinks and stays within d, a
// false stops the loop at once, and nothing runs for a zero duration.
func TestRepeat(t *testing.T) {
	tests := []struct {
		name   string
		d      time.Duration
		stopAt int // round that returns false (0: never)
		want   func(n int) bool
	}{
		{"zero duration", 0, 0, func(n int) bool { return n == 0 }},
		{"stop at round 3", time.Hour, 3, func(n int) bool { return n == 3 }},
		{"runs out", 20 * time.Millisecond, 0, func(n int) bool { return n >= 1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen []int
			last := tt.d
			n := Repeat(tt.d, func(n int, left time.Duration) bool {
				seen = append(seen, n)
				if left <= 0 || left > last {
					t.Errorf("round %d: %v left after %v (of %v)", n, left, last, tt.d)
				}
				last = left
				if tt.stopAt == 0 {
					time.Sleep(time.Millisecond)
				}
				return n != tt.stopAt
			})
			if !tt.want(n) {
				t.Errorf("%d rounds", n)
			}
			for i, r := range seen {
				if r != i+1 {
					t.Fatalf("rounds numbered %v", seen)
				}
			}
			if len(seen) != n {
				t.Errorf("%d calls, %d returned", len(seen), n)
			}
		})
	}
}

func TestTextContains(t *testing.T) {
	for _, tt := range []struct {
		want, unwanted []string
		errs           int
	}{
		{want: []string{"port a", "closed"}, unwanted: []string{"panic"}},
		{want: []string{"port b", "closed", "port c"}, errs: 2},
		{unwanted: []string{"port", "a", "panic"}, errs: 2},
	} {
		r := &recorder{TB: t}
		TextContains(r, "log", "port a closed", tt.want...)
		TextLacks(r, "log", "port a closed", tt.unwanted...)
		if len(r.errs) != tt.errs {
			t.Errorf("want %q, unwanted %q: %d errors %q, want %d", tt.want, tt.unwanted, len(r.errs), r.errs, tt.errs)
		}
	}
}

// TestLines: lines added on one goroutine are all there, in order, for another to read
// while they are added (run with -race).
func TestLines(t *testing.T) {
	var l Lines
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 100 {
			l.Add(fmt.Sprint("line ", i))
		}
	}()
	for range 10 {
		_ = l.String()
	}
	<-done
	got := strings.Split(strings.TrimSuffix(l.String(), "\n"), "\n")
	if len(got) != 100 || got[0] != "line 0" || got[99] != "line 99" {
		t.Errorf("%d lines, first %q, last %q", len(got), got[0], got[len(got)-1])
	}
}

// TestLinesFollow: Follow takes in every line of the reader, closes seen at the first
// line with the wanted text and eof at the end; with nothing wanted seen stays open.
func TestLinesFollow(t *testing.T) {
	for _, tt := range []struct {
		want string
		seen bool
	}{{"ready", true}, {"absent", false}, {"", false}} {
		var l Lines
		pr, pw := io.Pipe()
		seen, eof := l.Follow(pr, tt.want)
		go func() {
			fmt.Fprint(pw, "starting\nready now\nready again\nbye")
			pw.Close()
		}()
		select {
		case <-eof:
		case <-time.After(10 * time.Second):
			t.Fatal("Follow did not end with its reader")
		}
		select {
		case <-seen:
			if !tt.seen {
				t.Errorf("want %q: seen closed", tt.want)
			}
		default:
			if tt.seen {
				t.Errorf("want %q: seen still open", tt.want)
			}
		}
		if got := l.String(); got != "starting\nready now\nready again\nbye\n" {
			t.Errorf("want %q: lines %q", tt.want, got)
		}
	}
}

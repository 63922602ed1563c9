package irq

import (
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func newVectors(t *testing.T, n int) []*Vector {
	t.Helper()
	vs := make([]*Vector, n)
	for i := range vs {
		v, err := NewEventfd(MSIX, i)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { v.Close() })
		vs[i] = v
	}
	return vs
}

func TestPollerWake(t *testing.T) {
	for _, mode := range []WaitMode{WaitRaw, WaitBlocking} {
		t.Run(mode.String(), func(t *testing.T) {
			vs := newVectors(t, 2)
			// Duplicates and nil vectors are watched once / skipped.
			p, err := NewPoller(mode, vs[0], nil, vs[1], vs[0])
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			if got := len(p.Vectors()); got != 2 {
				t.Fatalf("watching %d vectors, want 2", got)
			}
			if w, err := p.Wait(time.Millisecond); err != nil || w != WakeTimeout {
				t.Fatalf("Wait on quiet vectors = %v, %v; want timeout", w, err)
			}
			vs[1].Signal()
			vs[1].Signal()
			if w, err := p.Wait(time.Second); err != nil || w != WakeInterrupt {
				t.Fatalf("Wait after Signal = %v, %v; want interrupt", w, err)
			}
			// Wait does not consume: level-triggered until drained.
			if w, _ := p.Wait(time.Second); w != WakeInterrupt {
				t.Fatalf("second Wait before Drain = %v, want interrupt", w)
			}
			if n, err := p.Drain(); err != nil || n != 2 {
				t.Fatalf("Drain = %d, %v; want 2", n, err)
			}
			if w, _ := p.Wait(0); w != WakeTimeout {
				t.Fatalf("Wait after Drain = %v, want timeout", w)
			}
			if p.Stopped() {
				t.Fatal("Stopped before Stop")
			}
			done := make(chan Wake)
			go func() {
				w, _ := p.Wait(time.Minute)
				done <- w
			}()
			time.Sleep(5 * time.Millisecond)
			if err := p.Stop(); err != nil {
				t.Fatal(err)
			}
			select {
			case w := <-done:
				if w != WakeStop {
					t.Fatalf("Wait woken by Stop = %v", w)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("Stop did not wake the waiter")
			}
			// Sticky: every later Wait returns at once, even with a long timeout.
			for i := 0; i < 3; i++ {
				if w, _ := p.Wait(time.Minute); w != WakeStop {
					t.Fatalf("Wait after Stop = %v", w)
				}
			}
			if !p.Stopped() {
				t.Fatal("Stopped false after Stop")
			}
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			if err := p.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}
			if err := p.Stop(); err != nil {
				t.Fatalf("Stop after Close: %v", err)
			}
		})
	}
}

func TestPollerBadMode(t *testing.T) {
	if _, err := NewPoller(WaitMode(7)); err == nil {
		t.Fatal("NewPoller accepted an invalid mode")
	}
}

func TestPollerWaitAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	vs := newVectors(t, 1)
	p, err := NewPoller(WaitRaw, vs...)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	allocs := testing.AllocsPerRun(200, func() {
		vs[0].Signal()
		p.Wait(time.Second)
		p.Drain()
	})
	if allocs != 0 {
		t.Fatalf("Signal+Wait+Drain allocates %v times per run", allocs)
	}
}

// TestPollerTimeouts: Wait honours sub-millisecond timeouts with epoll_pwait2 and falls
// back to epoll_pwait (rounding up to a millisecond, unless a signal cuts it short) when
// the kernel lacks it. Only the lower bound of the sleep is checked: the kernel never
// ends a timeout early, and Wait retries an interrupted one for the time left.
func TestPollerTimeouts(t *testing.T) {
	v, err := NewEventfd(MSIX, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	for _, fallback := range []bool{false, true} {
		for _, mode := range []WaitMode{WaitRaw, WaitBlocking} {
			p, err := NewPoller(mode, v)
			if err != nil {
				t.Fatal(err)
			}
			saved := noPwait2.Load()
			noPwait2.Store(fallback)
			const timeout = 300 * time.Microsecond
			start := time.Now()
			w, err := p.Wait(timeout)
			el := time.Since(start)
			precise := p.Precise()
			noPwait2.Store(saved)
			p.Close()
			if err != nil || w != WakeTimeout {
				t.Fatalf("fallback %v, %v: Wait = %v, %v; want a timeout", fallback, mode, w, err)
			}
			if el < timeout {
				t.Errorf("fallback %v, %v: woke after %v, want ≥ %v", fallback, mode, el, timeout)
			}
			if precise == fallback {
				t.Errorf("fallback %v: Precise() = %v", fallback, precise)
			}
			t.Logf("fallback %v, %v: a %v timeout took %v", fallback, mode, timeout, el)
		}
	}
}

// TestPollerWaitAs checks that a Poller waits either way whatever its Mode.
func TestPollerWaitAs(t *testing.T) {
	for _, tt := range []struct{ mode, as WaitMode }{
		{WaitRaw, WaitBlocking}, {WaitBlocking, WaitRaw}, {WaitRaw, WaitRaw},
	} {
		t.Run(tt.mode.String()+"-as-"+tt.as.String(), func(t *testing.T) {
			vs := newVectors(t, 1)
			p, err := NewPoller(tt.mode, vs[0])
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			if w, err := p.WaitAs(tt.as, time.Millisecond); err != nil || w != WakeTimeout {
				t.Fatalf("WaitAs on a quiet vector = %v, %v; want timeout", w, err)
			}
			vs[0].Signal()
			if w, err := p.WaitAs(tt.as, time.Second); err != nil || w != WakeInterrupt {
				t.Fatalf("WaitAs after Signal = %v, %v; want interrupt", w, err)
			}
			if err := p.Stop(); err != nil {
				t.Fatal(err)
			}
			if w, err := p.WaitAs(tt.as, time.Minute); err != nil || w != WakeStop {
				t.Fatalf("WaitAs after Stop = %v, %v; want stop", w, err)
			}
			if p.Mode() != tt.mode {
				t.Fatalf("Mode = %v after WaitAs, want %v", p.Mode(), tt.mode)
			}
		})
	}
}

// TestPollerWaitRetriesEINTR aims a stream of SIGURG (the runtime's preemption signal)
// at the waiting thread: every interrupted epoll_wait must be retried with the time left,
// so Wait neither fails, nor reports a wake-up that did not happen, nor returns before
// its timeout, and a real interrupt still wakes it.
func TestPollerWaitRetriesEINTR(t *testing.T) {
	for _, mode := range []WaitMode{WaitRaw, WaitBlocking} {
		t.Run(mode.String(), func(t *testing.T) {
			vs := newVectors(t, 1)
			p, err := NewPoller(mode, vs...)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()

			var tid atomic.Int32
			stop := make(chan struct{})
			signals := make(chan int)
			go func() {
				n := 0
				defer func() { signals <- n }()
				for {
					select {
					case <-stop:
						return
					default:
					}
					if id := tid.Load(); id != 0 && unix.Tgkill(unix.Getpid(), int(id), unix.SIGURG) == nil {
						n++
					}
					time.Sleep(200 * time.Microsecond)
				}
			}()

			type result struct {
				w       Wake
				err     error
				elapsed time.Duration
			}
			wait := func(timeout time.Duration, before func()) result {
				ch := make(chan result)
				go func() {
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					tid.Store(int32(unix.Gettid()))
					if before != nil {
						before()
					}
					t0 := time.Now()
					w, err := p.Wait(timeout)
					el := time.Since(t0)
					tid.Store(0)
					ch <- result{w, err, el}
				}()
				return <-ch
			}

			const timeout = 30 * time.Millisecond
			if r := wait(timeout, nil); r.err != nil || r.w != WakeTimeout || r.elapsed < timeout {
				t.Errorf("Wait(%v) under signals = %v, %v after %v; want a timeout after the full %v", timeout, r.w, r.err, r.elapsed, timeout)
			}
			r := wait(time.Minute, func() {
				time.AfterFunc(20*time.Millisecond, func() { vs[0].Signal() })
			})
			if r.err != nil || r.w != WakeInterrupt {
				t.Errorf("Wait under signals, then an interrupt = %v, %v", r.w, r.err)
			}
			close(stop)
			if n := <-signals; n == 0 {
				t.Fatal("no signal was sent: the test proved nothing")
			}
		})
	}
}

// BenchmarkPollerWake measures the bare eventfd → Poller.Wait wake-up in Go, the
// counterpart of bench/cfloor: a locked writer thread signals a vector every 400 µs,
// stamping the time just before; a locked reader thread waits with each WaitMode (and a
// goroutine-plus-channel hand-off, as threaded delivery does) and takes the time as soon as
// it runs again. b.N is the number of wake-ups (use -benchtime=Nx).
func BenchmarkPollerWake(b *testing.B) {
	for _, c := range []struct {
		name    string
		mode    WaitMode
		handoff bool
	}{
		{"raw", WaitRaw, false},
		{"blocking", WaitBlocking, false},
		{"handoff", WaitBlocking, true},
	} {
		b.Run(c.name, func(b *testing.B) { benchWake(b, c.mode, c.handoff) })
	}
}

var benchBase = time.Now()

// nanotime is the benchmark's clock: monotonic ns since the package started.
func nanotime() int64 { return int64(time.Since(benchBase)) }

func benchWake(b *testing.B, mode WaitMode, handoff bool) {
	v, err := NewEventfd(MSIX, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer v.Close()
	p, err := NewPoller(mode, v)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	var sent atomic.Int64
	lat := make([]int64, 0, b.N)
	done := make(chan struct{})
	go func() { // writer
		defer close(done)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
		next := time.Now()
		for i := 0; i < b.N; i++ {
			next = next.Add(400 * time.Microsecond)
			if d := time.Until(next); d > 0 {
				ts := unix.NsecToTimespec(int64(d))
				unix.Nanosleep(&ts, nil)
			}
			sent.Store(nanotime())
			v.Signal()
		}
	}()
	wake := func() bool {
		w, _ := p.Wait(100 * time.Millisecond)
		return w == WakeInterrupt
	}
	var tokens chan struct{}
	if handoff {
		tokens = make(chan struct{}, 1)
		go func() {
			for {
				if w, _ := p.Wait(-1); w == WakeStop {
					return
				}
				p.Drain()
				select {
				case tokens <- struct{}{}:
				default:
				}
			}
		}()
		defer p.Stop()
		timer := time.NewTimer(time.Hour)
		wake = func() bool {
			timer.Reset(100 * time.Millisecond)
			defer timer.Stop()
			select {
			case <-tokens:
				return true
			case <-timer.C:
				return false
			}
		}
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ResetTimer()
	for len(lat) < b.N {
		if !wake() {
			break // writer finished; coalesced signals give fewer samples
		}
		lat = append(lat, nanotime()-sent.Load())
		if !handoff {
			p.Drain()
		}
	}
	b.StopTimer()
	<-done
	slices.Sort(lat)
	if len(lat) == 0 {
		b.Fatal("no wake-ups")
	}
	pct := func(q int) float64 { return float64(lat[(len(lat)-1)*q/100]) }
	b.ReportMetric(pct(50), "p50-ns")
	b.ReportMetric(pct(90), "p90-ns")
	b.ReportMetric(pct(99), "p99-ns")
}

// TestClosedVectorKeepsOffItsOldDescriptor gives a closed vector's descriptor number to a
// pipe holding eight bytes, as the kernel gives the lowest free number to the next file a
// process opens (a socket of the metrics endpoint, in the daemon that found this): the
// vector's Drain must not read them, and a Poller built over it must not watch it.
func TestClosedVectorKeepsOffItsOldDescriptor(t *testing.T) {
	v, err := NewEventfd(MSIX, 0)
	if err != nil {
		t.Fatal(err)
	}
	fd := v.Fd()
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	var pipe [2]int
	if err := unix.Pipe2(pipe[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pipe[1])
	if pipe[0] != fd { // the kernel usually gives the pipe that very number itself
		if err := unix.Dup3(pipe[0], fd, unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		unix.Close(pipe[0])
	}
	defer unix.Close(fd)
	if _, err := unix.Write(pipe[1], []byte("HTTP/1.1")); err != nil {
		t.Fatal(err)
	}
	if n, err := v.Drain(); n != 0 || err != nil {
		t.Errorf("Drain of a closed vector = %d, %v; want 0, nil", n, err)
	}
	p, err := NewPoller(WaitBlocking, v)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if len(p.Vectors()) != 0 {
		t.Errorf("a Poller watches a closed vector")
	}
	if n, err := p.Drain(); n != 0 || err != nil {
		t.Errorf("Poller.Drain = %d, %v; want 0, nil", n, err)
	}
	var b [16]byte
	n, err := unix.Read(fd, b[:])
	if err != nil {
		t.Fatalf("the descriptor's new file lost its bytes: read: %v", err)
	}
	if string(b[:n]) != "HTTP/1.1" {
		t.Fatalf("the descriptor's new file holds %q, want all of %q", b[:n], "HTTP/1.1")
	}
}

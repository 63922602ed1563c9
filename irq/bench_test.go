package irq

import (
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

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

package irq

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

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

package vhost

import (
	"encoding/binary"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// caller signals one call eventfd of the front end from a goroutine of its own. The
// eventfd shares its open file description with the front end, which can make it blocking
// and fill its counter: a write then sleeps until the front end reads. The poll thread
// therefore never writes it; it only wakes the caller (a nonblocking channel send), and a
// caller stuck in a write stalls nothing but this front end's interrupts. Wakes that come
// while a write is pending are merged into it, as an eventfd merges them anyway.
type caller struct {
	fd    int
	wake  chan struct{}
	flush chan chan struct{}
	quit  chan struct{}
	done  chan struct{}
	refs  atomic.Int32 // the goroutine and the closer: the last one closes fd
}

func newCaller(fd int) *caller {
	c := &caller{fd: fd, wake: make(chan struct{}, 1), flush: make(chan chan struct{}),
		quit: make(chan struct{}), done: make(chan struct{})}
	c.refs.Store(2)
	go c.run()
	return c
}

func (c *caller) run() {
	defer c.release()
	defer close(c.done)
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], 1)
	for {
		select {
		case <-c.quit:
			return
		case <-c.wake:
			unix.Write(c.fd, b[:]) // a full counter on a nonblocking eventfd: already signalled
		case ack := <-c.flush:
			select {
			case <-c.wake:
				unix.Write(c.fd, b[:])
			default:
			}
			close(ack)
		}
	}
}

func (c *caller) release() {
	if c.refs.Add(-1) == 0 {
		unix.Close(c.fd)
	}
}

// signal asks for one write of the eventfd; it never blocks (poll thread).
func (c *caller) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// sync waits until every signal before it was written (tests, and the control goroutine's
// own extra call); false when the caller is stuck for longer than d.
func (c *caller) sync(d time.Duration) bool {
	ack := make(chan struct{})
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case c.flush <- ack:
	case <-t.C:
		return false
	}
	select {
	case <-ack:
		return true
	case <-t.C:
		return false
	}
}

// callerUnstick bounds how long close works at freeing a caller stuck in a write.
const callerUnstick = time.Second

// close stops the caller. A write stuck on a counter the front end filled is freed by
// emptying the counter with a read that cannot block (RWF_NOWAIT, which the eventfd
// honours whatever its file flags); close tries for up to callerUnstick, then leaves the
// goroutine to end when the front end reads its counter. The descriptor is closed by
// whichever of the two finishes last.
func (c *caller) close() {
	if c == nil {
		return
	}
	close(c.quit)
	defer c.release()
	var b [8]byte
	iov := [][]byte{b[:]}
	for deadline := time.Now().Add(callerUnstick); time.Now().Before(deadline); {
		select {
		case <-c.done:
			return
		case <-time.After(time.Millisecond):
		}
		unix.Preadv2(c.fd, iov, -1, unix.RWF_NOWAIT)
	}
}

package wire

import (
	"sync"
	"sync/atomic"
	"time"
)

// handlerSlot holds a Port's current Handler so that a reader goroutine can load it
// without a lock on every frame.
type handlerSlot struct{ p atomic.Pointer[Handler] }

func (s *handlerSlot) set(h Handler) {
	if h == nil {
		s.p.Store(nil)
		return
	}
	s.p.Store(&h)
}

// deliver hands frame to the current handler, if any.
func (s *handlerSlot) deliver(frame []byte, ts int64) {
	if h := s.p.Load(); h != nil {
		(*h)(frame, ts)
	}
}

// maxFrame is the largest frame a reader goroutine accepts (a 9000-byte jumbo frame plus
// its Ethernet and VLAN headers, rounded up). Longer datagrams are truncated by the kernel.
const maxFrame = 9216

// MinFrame is the shortest Ethernet frame on a cable, without its FCS. The kernel hands
// TAP and AF_PACKET readers its frames before a NIC would pad them (an ARP request is 42
// bytes), so readers pad shorter frames with zeros to MinFrame, as the NIC would.
const MinFrame = 60

// reader is the receive side of a port backed by a socket or a file: the current handler
// and a goroutine that reads frames into it.
type reader struct {
	slot handlerSlot
	done chan struct{}
	once sync.Once
	// closed is set before the descriptor closes: the goroutine then tells the end from a
	// transient error, and Send says ErrClosed (mdlayher/socket reports a closed socket
	// as EBADF, not net.ErrClosed).
	closed atomic.Bool
}

// start runs readLoop with read on a goroutine of its own.
func (r *reader) start(read func([]byte) (int, error)) {
	r.done = make(chan struct{})
	go readLoop(read, &r.slot, &r.closed, r.done)
}

// stop drops the handler, sets closed, calls closeFn (which must make the goroutine's
// read fail) and waits for the goroutine. Only the first call does this; it returns
// closeFn's error, later calls nil.
func (r *reader) stop(closeFn func() error) error {
	var err error
	r.once.Do(func() {
		r.slot.set(nil)
		r.closed.Store(true)
		err = closeFn()
		<-r.done
	})
	return err
}

// readLoop calls read until the port is closed, stamping each frame with Now the moment
// read returns, padding it to MinFrame and handing it to s. It returns when read fails
// after closed was set. Other errors are transient (a packet socket reports an interface
// going down as one ENETDOWN): it retries them after a millisecond.
func readLoop(read func([]byte) (int, error), s *handlerSlot, closed *atomic.Bool, done chan<- struct{}) {
	defer close(done)
	buf := make([]byte, maxFrame)
	for {
		n, err := read(buf)
		ts := Now()
		if err != nil {
			if closed.Load() {
				return
			}
			time.Sleep(time.Millisecond)
			continue
		}
		if n < MinFrame {
			clear(buf[n:MinFrame])
			n = MinFrame
		}
		s.deliver(buf[:n], ts)
	}
}

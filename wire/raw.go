package wire

import (
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// rawIO sends and receives frames on a datagram socket's descriptor without the objects
// the net and packet APIs allocate for every frame (a destination address to convert, a
// source address to return): sendto with a destination built once, and read(2). Both go
// through the runtime's poller (syscall.RawConn), so a full socket buffer or an empty one
// parks the goroutine as usual. send may be called from several goroutines, recv from one.
type rawIO struct {
	rc syscall.RawConn

	mu     sync.Mutex // orders send's use of out, to and serr
	to     unix.Sockaddr
	out    []byte
	serr   error
	sendFn func(fd uintptr) bool

	in     []byte
	n      int
	rerr   error
	recvFn func(fd uintptr) bool
}

// newRawIO wraps c's descriptor; frames sent go to to.
func newRawIO(c syscall.Conn, to unix.Sockaddr) (*rawIO, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	r := &rawIO{rc: rc, to: to}
	// Built once: a closure made per frame would escape to the heap.
	r.sendFn = func(fd uintptr) bool {
		r.serr = unix.Sendto(int(fd), r.out, 0, r.to)
		return r.serr != unix.EAGAIN
	}
	r.recvFn = func(fd uintptr) bool {
		r.n, r.rerr = unix.Read(int(fd), r.in)
		return r.rerr != unix.EAGAIN
	}
	return r, nil
}

// send transmits frame as one datagram. An error from the RawConn (the socket was
// closed) is returned as it is, for the caller to map to ErrClosed.
func (r *rawIO) send(frame []byte) (closedErr, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.out = frame
	closedErr = r.rc.Write(r.sendFn)
	r.out = nil
	if closedErr != nil {
		return closedErr, nil
	}
	return nil, r.serr
}

// recv reads one datagram into b.
func (r *rawIO) recv(b []byte) (int, error) {
	r.in = b
	err := r.rc.Read(r.recvFn)
	r.in = nil
	if err != nil {
		return 0, err
	}
	if r.rerr != nil {
		return 0, r.rerr
	}
	return r.n, nil
}

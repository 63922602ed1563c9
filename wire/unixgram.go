package wire

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// UnixPort is a wire over unix datagram sockets in the format of QEMU's
// `-netdev dgram,local.type=unix,…`: one raw Ethernet frame per datagram, no FCS.
// It binds its own path and sends to the peer's path; a reader goroutine delivers the
// frames it receives, stamped with Now when the read returns.
type UnixPort struct {
	conn   *net.UnixConn
	io     *rawIO
	local  string
	remote *net.UnixAddr
	slot   handlerSlot
	done   chan struct{}
	once   sync.Once
	closed atomic.Bool // set before the socket closes, for the reader
}

// ListenUnix binds a unix datagram socket at local and returns a Port that sends to the
// socket bound at remote. For a QEMU guest started with
// `-netdev dgram,local.path=Q,remote.path=H` use local H and remote Q. A stale socket file
// at local (one nobody is bound to) is replaced; any other existing file is an error.
func ListenUnix(local, remote string) (*UnixPort, error) {
	if err := removeStaleSocket(local); err != nil {
		return nil, err
	}
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: local, Net: "unixgram"})
	if err != nil {
		return nil, fmt.Errorf("bind unix wire %s: %w", local, err)
	}
	rio, err := newRawIO(c, &unix.SockaddrUnix{Name: remote})
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("unix wire %s: %w", local, err)
	}
	p := &UnixPort{
		conn:   c,
		io:     rio,
		local:  local,
		remote: &net.UnixAddr{Name: remote, Net: "unixgram"},
		done:   make(chan struct{}),
	}
	go readLoop(rio.recv, &p.slot, &p.closed, p.done)
	return p, nil
}

// removeStaleSocket deletes path if it is a unix socket nobody is bound to.
func removeStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("unix wire %s: %w", path, err)
	}
	if fi.Mode()&os.ModeSocket == 0 {
		return fmt.Errorf("unix wire %s: exists and is not a socket", path)
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err == nil {
		c.Close()
		return fmt.Errorf("unix wire %s: socket is in use", path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("unix wire %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("remove stale unix wire %s: %w", path, err)
	}
	return nil
}

// Send transmits frame as one datagram to the remote path. It fails (ECONNREFUSED or
// ENOENT) while nobody is bound there. It allocates nothing.
func (p *UnixPort) Send(frame []byte) error {
	if p.closed.Load() {
		return ErrClosed
	}
	closedErr, err := p.io.send(frame)
	if closedErr != nil {
		if errors.Is(closedErr, net.ErrClosed) || p.closed.Load() {
			return ErrClosed
		}
		return fmt.Errorf("send to %s: %w", p.remote.Name, closedErr)
	}
	if err != nil {
		return fmt.Errorf("send to %s: %w", p.remote.Name, err)
	}
	return nil
}

// SetHandler installs the receiver for frames arriving at the local path.
func (p *UnixPort) SetHandler(h Handler) { p.slot.set(h) }

// Close closes the socket, waits for the reader goroutine and removes the local path.
func (p *UnixPort) Close() error {
	var err error
	p.once.Do(func() {
		p.slot.set(nil)
		p.closed.Store(true)
		err = p.conn.Close()
		<-p.done
		if rerr := os.Remove(p.local); rerr != nil && !errors.Is(rerr, os.ErrNotExist) && err == nil {
			err = rerr
		}
	})
	return err
}

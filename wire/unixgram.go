package wire

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// UnixPort is a wire over unix datagram sockets in the format of QEMU's
// `-netdev dgram,local.type=unix,…`: one raw Ethernet frame per datagram, no FCS.
// It binds its own path and sends to the peer's socket; a reader goroutine delivers the
// frames it receives, stamped with Now when the read returns.
//
// Neither path is followed through a symlink. The first Send connects the socket to the
// one bound at the remote path, opened without following a symlink and checked to be a
// socket; from then on only that peer can send to this port, and a Send after the peer
// went away resolves the path again.
type UnixPort struct {
	conn   *net.UnixConn
	rc     syscall.RawConn
	io     *rawIO
	local  string
	file   os.FileInfo // the socket file bound at local, which Close removes
	remote *net.UnixAddr
	reader

	connMu    sync.Mutex  // serialises connecting
	connected atomic.Bool // the socket is connected to the remote peer
}

// ListenUnix binds a unix datagram socket at local and returns a Port that sends to the
// socket bound at remote. For a QEMU guest started with
// `-netdev dgram,local.path=Q,remote.path=H` use local H and remote Q. The socket file is
// created mode 0600 whatever the umask. A stale socket file at local (one nobody is bound
// to) is replaced; any other existing file, a symlink included, is an error.
func ListenUnix(local, remote string) (*UnixPort, error) {
	return ListenUnixGroup(local, remote, "")
}

// ListenUnixGroup is ListenUnix with the socket file shared with group (a name or a
// numeric id): mode 0660, owned by that group. An empty group is ListenUnix.
func ListenUnixGroup(local, remote, group string) (*UnixPort, error) {
	gid := -1
	if group != "" {
		var err error
		if gid, err = lookupGroup(group); err != nil {
			return nil, fmt.Errorf("unix wire %s: %w", local, err)
		}
	}
	if err := removeStaleSocket(local); err != nil {
		return nil, err
	}
	c, err := bindUnixgram(local)
	if err != nil {
		return nil, fmt.Errorf("bind unix wire %s: %w", local, err)
	}
	fail := func(err error) (*UnixPort, error) {
		c.Close()
		os.Remove(local)
		return nil, fmt.Errorf("unix wire %s: %w", local, err)
	}
	fi, err := os.Lstat(local)
	if err != nil {
		return fail(err)
	}
	if gid >= 0 {
		if err := shareWithGroup(local, gid); err != nil {
			return fail(err)
		}
	}
	rc, err := c.SyscallConn()
	if err != nil {
		return fail(err)
	}
	rio, err := newRawIO(c, nil) // sends on the connected socket
	if err != nil {
		return fail(err)
	}
	p := &UnixPort{
		conn:   c,
		rc:     rc,
		io:     rio,
		local:  local,
		file:   fi,
		remote: &net.UnixAddr{Name: remote, Net: "unixgram"},
	}
	p.start(rio.recv)
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
	if now, err := os.Lstat(path); err != nil || !os.SameFile(fi, now) {
		return fmt.Errorf("unix wire %s: replaced while checked", path)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("remove stale unix wire %s: %w", path, err)
	}
	return nil
}

// Send transmits frame as one datagram to the peer bound at the remote path. It fails
// (ENOENT, ECONNREFUSED) while nobody is bound there, and when something other than a
// socket (a symlink, say) is at that path. Once connected it allocates nothing.
func (p *UnixPort) Send(frame []byte) error {
	if p.closed.Load() {
		return ErrClosed
	}
	if !p.connected.Load() {
		if err := p.connect(); err != nil {
			if errors.Is(err, net.ErrClosed) || p.closed.Load() {
				return ErrClosed
			}
			return fmt.Errorf("send to %s: %w", p.remote.Name, err)
		}
	}
	closedErr, err := p.io.send(frame)
	if closedErr != nil {
		if errors.Is(closedErr, net.ErrClosed) || p.closed.Load() {
			return ErrClosed
		}
		return fmt.Errorf("send to %s: %w", p.remote.Name, closedErr)
	}
	if err != nil {
		if errors.Is(err, unix.ECONNREFUSED) || errors.Is(err, unix.ENOTCONN) {
			p.connected.Store(false) // the peer went away: look the path up again
		}
		return fmt.Errorf("send to %s: %w", p.remote.Name, err)
	}
	return nil
}

// connect connects the socket to the peer bound at the remote path (see connectUnix).
func (p *UnixPort) connect() error {
	p.connMu.Lock()
	defer p.connMu.Unlock()
	if p.connected.Load() {
		return nil
	}
	var cerr error
	if err := p.rc.Control(func(fd uintptr) { cerr = connectUnix(int(fd), p.remote.Name) }); err != nil {
		return err
	}
	if cerr != nil {
		return cerr
	}
	p.connected.Store(true)
	return nil
}

// SetHandler installs the receiver for frames arriving at the local path.
func (p *UnixPort) SetHandler(h Handler) { p.slot.set(h) }

// Close closes the socket, removes the socket file at the local path, unless something
// else has taken its place, and waits for the reader goroutine.
func (p *UnixPort) Close() error {
	return p.stop(func() error {
		err := p.conn.Close()
		if now, lerr := os.Lstat(p.local); lerr != nil || !os.SameFile(p.file, now) {
			return err
		}
		if rerr := os.Remove(p.local); rerr != nil && !errors.Is(rerr, os.ErrNotExist) && err == nil {
			err = rerr
		}
		return err
	})
}

// lookupGroup resolves a group name or numeric id to its id.
func lookupGroup(group string) (int, error) {
	if id, err := strconv.Atoi(group); err == nil {
		if id < 0 {
			return 0, fmt.Errorf("group %q: negative id", group)
		}
		return id, nil
	}
	g, err := user.LookupGroup(group)
	if err != nil {
		return 0, fmt.Errorf("group %q: %w", group, err)
	}
	id, err := strconv.Atoi(g.Gid)
	if err != nil {
		return 0, fmt.Errorf("group %q: id %q is not a number", group, g.Gid)
	}
	return id, nil
}

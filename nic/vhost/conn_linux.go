package vhost

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// listen listens on path, replacing a socket nobody listens on any more (a previous run's);
// anything else at path is refused.
func listen(path string) (*net.UnixListener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("%s: another process serves this socket", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove stale socket: %w", err)
		}
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	ln.SetUnlinkOnClose(true)
	return ln, nil
}

// run is the control goroutine: one front end at a time, until Close.
func (p *Port) run() {
	defer close(p.done)
	for {
		c, err := p.next()
		if err != nil {
			return // closed
		}
		p.connects.Add(1)
		p.connected.Store(true)
		p.log.Info("vhost-user front end connected", zap.String("socket", p.cfg.Socket))
		err = p.serve(c)
		if errors.Is(err, errProto) {
			p.faults.Add(1) // before the link goes down: whoever sees it down sees the count
		}
		p.connected.Store(false)
		p.reset()
		c.Close()
		p.mu.Lock()
		p.conn = nil
		closed := p.closed
		p.mu.Unlock()
		switch {
		case closed:
			return
		case errors.Is(err, errProto):
			p.log.Warn("vhost-user front end broke the protocol, disconnected", zap.String("socket", p.cfg.Socket), zap.Error(err))
		default:
			p.log.Info("vhost-user front end gone", zap.String("socket", p.cfg.Socket), zap.Error(err))
		}
	}
}

// next waits for the next front end: an accepted connection, or one dialled after the
// reconnect interval. It fails once the port is closed.
func (p *Port) next() (*net.UnixConn, error) {
	for first := true; ; first = false {
		var c *net.UnixConn
		var err error
		if p.cfg.Mode == Server {
			c, err = p.ln.AcceptUnix()
		} else {
			if !first && !p.sleep(p.cfg.Reconnect) {
				return nil, net.ErrClosed
			}
			c, err = net.DialUnix("unix", nil, &net.UnixAddr{Name: p.cfg.Socket, Net: "unix"})
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			if c != nil {
				c.Close()
			}
			return nil, net.ErrClosed
		}
		if err == nil {
			p.conn = c
			p.mu.Unlock()
			return c, nil
		}
		p.mu.Unlock()
		if p.cfg.Mode == Server && !p.sleep(p.cfg.Reconnect) {
			return nil, net.ErrClosed
		}
	}
}

// sleep waits d, or less if the port closes (false).
func (p *Port) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.stop:
		return false
	case <-t.C:
		return true
	}
}

// serve handles c's messages until it fails, breaks the protocol or the poll thread
// reports a broken ring.
func (p *Port) serve(c *net.UnixConn) error {
	gone, watched := make(chan struct{}), make(chan struct{})
	defer func() {
		// The watcher is gone before serve returns: a fault it took is stored before the
		// reset that follows clears it, never charged to the next front end.
		close(gone)
		<-watched
	}()
	go func() {
		defer close(watched)
		select {
		case err := <-p.faultCh:
			p.faultErr.Store(&err)
			c.Close()
		case <-gone:
		}
	}()
	s := &session{p: p}
	for {
		m, err := readMsg(c)
		if err != nil {
			if e := p.faultErr.Swap(nil); e != nil {
				return fmt.Errorf("%w: %v", errProto, *e)
			}
			return err
		}
		ack := m.hdr.flags&flagNeedReply != 0 && s.replyAck() // as negotiated when it came
		reply, err := s.handle(m)
		p.remapTx() // a ring may have started, stopped, been enabled or disabled
		if ce := p.log.Check(zap.DebugLevel, "vhost-user request"); ce != nil {
			ce.Write(zap.Uint32("request", m.hdr.req), zap.Uint32("flags", m.hdr.flags), zap.Binary("payload", m.payload),
				zap.Int("fds", len(m.fds)), zap.Error(err))
		}
		m.closeFds()
		if err != nil {
			if reply != nil {
				c.Write(reply) // a refused request's failure in its native reply's place
			} else if ack {
				c.Write(s.ack(m.hdr.req, 1))
			}
			if errors.Is(err, errRefused) {
				p.log.Debug("vhost-user request refused", zap.String("socket", p.cfg.Socket), zap.Error(err))
				continue
			}
			return err
		}
		if reply != nil {
			_, err = c.Write(reply)
		} else if ack {
			_, err = c.Write(s.ack(m.hdr.req, 0))
		}
		if err != nil {
			return err
		}
	}
}

// readMsg reads one request: the header, then its payload, with the descriptors that came
// with any of their bytes. A front end that goes away mid-message is an error.
func readMsg(c *net.UnixConn) (*message, error) {
	m := &message{}
	var hdr [hdrSize]byte
	if err := readFull(c, hdr[:], m); err != nil {
		m.closeFds()
		return nil, err
	}
	h, err := parseHeader(hdr[:])
	if err != nil {
		m.closeFds()
		return nil, err
	}
	m.hdr = h
	m.payload = make([]byte, h.size)
	if err := readFull(c, m.payload, m); err != nil {
		m.closeFds()
		if errors.Is(err, io.EOF) {
			err = fmt.Errorf("front end gone mid-message (request %d): %w", h.req, io.ErrUnexpectedEOF)
		}
		return nil, err
	}
	return m, nil
}

// readFull fills b from c, collecting the descriptors that arrive into m.
func readFull(c *net.UnixConn, b []byte, m *message) error {
	oob := make([]byte, unix.CmsgSpace(4*maxFds))
	for got := 0; got < len(b); {
		n, oobn, flags, _, err := c.ReadMsgUnix(b[got:], oob)
		if oobn > 0 {
			if e := collectFds(oob[:oobn], m); e != nil && err == nil {
				err = e
			}
		}
		if err == nil && flags&unix.MSG_CTRUNC != 0 {
			err = fmt.Errorf("%w: more than %d descriptors with one message", errProto, maxFds)
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return io.EOF
		}
		got += n
	}
	return nil
}

func collectFds(oob []byte, m *message) error {
	cms, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return fmt.Errorf("%w: control message: %v", errProto, err)
	}
	for _, cm := range cms {
		fds, err := unix.ParseUnixRights(&cm)
		if err != nil {
			continue
		}
		m.fds = append(m.fds, fds...)
	}
	if len(m.fds) > maxFds {
		return fmt.Errorf("%w: %d descriptors with one message", errProto, len(m.fds))
	}
	return nil
}

package daemon

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// connLimiter caps the metrics endpoint's open connections at max without letting idle
// ones lock the endpoint: when a new connection arrives at the cap, the connection that
// has been idle longest (a keep-alive connection between requests) is closed to make
// room, else the oldest one that has not sent a byte yet. Only when every connection is
// in the middle of a request does the new one wait, and the server's read and write
// timeouts bound that wait. netutil.LimitListener, which it replaces, let max idle
// keep-alive connections hold every slot for the whole idle timeout.
type connLimiter struct {
	net.Listener
	max int

	mu     sync.Mutex
	freed  *sync.Cond // a connection went away
	conns  map[*limitedConn]connInfo
	closed bool
}

// connInfo is what the limiter knows of one connection: the server's last word on its
// state and when it said it.
type connInfo struct {
	state http.ConnState
	since time.Time
}

// limitedConn is a connection the limiter counts until it is closed.
type limitedConn struct {
	net.Conn
	l    *connLimiter
	once sync.Once
}

// newConnLimiter wraps ln. The server that serves it must report connection states to
// trackState (http.Server.ConnState).
func newConnLimiter(ln net.Listener, max int) *connLimiter {
	l := &connLimiter{Listener: ln, max: max, conns: map[*limitedConn]connInfo{}}
	l.freed = sync.NewCond(&l.mu)
	return l
}

// Accept accepts a connection, evicting an idle one or waiting for a slot at the cap.
func (l *connLimiter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	for len(l.conns) >= l.max && !l.closed {
		if v := l.victimLocked(); v != nil {
			delete(l.conns, v)
			l.mu.Unlock()
			v.Conn.Close() // the server's goroutine sees the error and lets go of it
			l.mu.Lock()
			continue
		}
		l.freed.Wait()
	}
	if l.closed {
		l.mu.Unlock()
		c.Close()
		return nil, net.ErrClosed
	}
	lc := &limitedConn{Conn: c, l: l}
	l.conns[lc] = connInfo{state: http.StateNew, since: time.Now()}
	l.mu.Unlock()
	return lc, nil
}

// victimLocked returns the connection to close for a new one: the longest idle, else the
// oldest that has sent nothing; nil when every connection is serving a request.
func (l *connLimiter) victimLocked() *limitedConn {
	var best *limitedConn
	var bestInfo connInfo
	rank := func(s http.ConnState) int {
		switch s {
		case http.StateIdle:
			return 2
		case http.StateNew:
			return 1
		}
		return 0
	}
	for c, info := range l.conns {
		r := rank(info.state)
		if r == 0 {
			continue
		}
		if best == nil || r > rank(bestInfo.state) || r == rank(bestInfo.state) && info.since.Before(bestInfo.since) {
			best, bestInfo = c, info
		}
	}
	return best
}

// trackState records the server's view of a connection (http.Server.ConnState).
func (l *connLimiter) trackState(c net.Conn, s http.ConnState) {
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	if s == http.StateClosed || s == http.StateHijacked {
		l.release(lc)
		return
	}
	l.mu.Lock()
	if _, open := l.conns[lc]; open {
		l.conns[lc] = connInfo{state: s, since: time.Now()}
		if s == http.StateIdle {
			l.freed.Broadcast() // a waiting Accept may evict it now
		}
	}
	l.mu.Unlock()
}

// release stops counting c and wakes a waiting Accept.
func (l *connLimiter) release(c *limitedConn) {
	l.mu.Lock()
	delete(l.conns, c)
	l.freed.Broadcast()
	l.mu.Unlock()
}

// Close closes the listener and wakes a waiting Accept.
func (l *connLimiter) Close() error {
	l.mu.Lock()
	l.closed = true
	l.freed.Broadcast()
	l.mu.Unlock()
	return l.Listener.Close()
}

// Close closes the connection and frees its slot.
func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c) })
	return err
}

package capture

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/uiod/uiod/config"
	"github.com/uiod/uiod/dataplane"
	"github.com/uiod/uiod/internal/clip"
	"github.com/uiod/uiod/nic"
)

func portID(i int) dataplane.PortID { return dataplane.PortID(i) }

// SocketName is the control socket's name in the daemon's state_dir.
const SocketName = config.ControlSocketName

// tmpExtra is how much longer than the socket's name its temporary name is.
const tmpExtra = len("..tmp-") + 8

// Server timeouts: how long a client may take to send its request, how long a reply
// may take, and how long a client that stopped reading has, once the daemon is shutting
// down, to take the rest of its stream. A client that stops reading while the daemon
// runs (a paused Wireshark, a pipe into less) keeps its capture: the poll threads never
// wait on it, the rings fill and count what they drop, and the statistics blocks report
// it when the client reads again.
var (
	requestTimeout = 5 * time.Second
	replyTimeout   = 5 * time.Second
	closeGrace     = 5 * time.Second
)

// Server serves capture sessions on a unix control socket. Only root, the daemon's own
// user and, when Listen was given a group, that group's members may connect (peer
// credentials); the socket is mode 0600, or 0660 and the group's; and each port has at
// most one session at a time.
type Server struct {
	target Target
	log    *zap.Logger
	ln     *net.UnixListener
	path   string
	group  *Group // nil: root and the daemon's user only

	mu       sync.Mutex
	busy     map[dataplane.PortID]bool
	sessions map[*Session]*net.UnixConn
	closed   bool
	wg       sync.WaitGroup
}

// Listen creates the control socket at path (replacing a stale socket file: the caller
// holds the state directory's lock) and serves it until Close. With a group (the daemon's
// capture.group; nil for none) the socket is 0660 and the group's, and the group's members
// are served too; the directories on the way to the socket must then be searchable by
// them, or Listen says which one is not.
func Listen(path string, t Target, log *zap.Logger, group *Group) (*Server, error) {
	if log == nil {
		log = zap.NewNop()
	}
	if group != nil {
		if err := checkSearchable(filepath.Dir(path), group); err != nil {
			return nil, fmt.Errorf("control socket: %w", err)
		}
	}
	short, done, err := shortPath(path, tmpExtra)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	defer done()
	if fi, err := os.Lstat(short); err == nil {
		if fi.Mode().Type() != os.ModeSocket {
			return nil, fmt.Errorf("control socket %s: exists and is not a socket (%s)", path, fi.Mode().Type())
		}
		if err := os.Remove(short); err != nil {
			return nil, fmt.Errorf("control socket: remove stale %s: %w", path, err)
		}
	}
	// Bound under a temporary name, given its group, made 0600 (0660), then moved into
	// place: the socket is never reachable with wider permissions under its own name.
	tmp := filepath.Join(filepath.Dir(short), fmt.Sprintf(".%s.tmp-%08x", filepath.Base(path), uint32(os.Getpid())))
	os.Remove(tmp)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	ln.SetUnlinkOnClose(false)
	if group != nil {
		if err := giveGroup(tmp, group); err != nil {
			ln.Close()
			os.Remove(tmp)
			return nil, fmt.Errorf("control socket: %w", err)
		}
	}
	if err := os.Chmod(tmp, os.FileMode(socketMode(group))); err != nil {
		ln.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("control socket: %w", err)
	}
	if err := os.Rename(tmp, short); err != nil {
		ln.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("control socket: %w", err)
	}
	s := &Server{target: t, log: log, ln: ln, path: path, group: group, busy: map[dataplane.PortID]bool{}, sessions: map[*Session]*net.UnixConn{}}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Path is the socket's path.
func (s *Server) Path() string { return s.path }

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				s.log.Warn("control socket: accept", zap.Error(err))
			}
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer c.Close()
			s.serve(c)
		}()
	}
}

// serve runs one client: its request, then its session.
func (s *Server) serve(c *net.UnixConn) {
	if err := checkPeer(c, s.group); err != nil {
		s.log.Warn("control socket: client refused", zap.Error(err))
		s.reply(c, Response{Error: err.Error()})
		return
	}
	c.SetReadDeadline(time.Now().Add(requestTimeout))
	br := bufio.NewReaderSize(c, maxRequest)
	line, err := br.ReadSlice('\n')
	if err != nil {
		s.reply(c, Response{Error: fmt.Sprintf("request: %v (send one JSON line of at most %d bytes)", err, maxRequest), Usage: true})
		return
	}
	var req Request
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		s.reply(c, Response{Error: "request: " + clip.String(err.Error()), Usage: true})
		return
	}
	ports := s.target.Ports()
	names := make([]string, len(ports))
	for i, p := range ports {
		names[i] = p.Name
	}
	if req.Op == "list" {
		s.reply(c, Response{List: s.list(ports)})
		return
	}
	opts, err := req.options(names)
	if err != nil {
		s.reply(c, Response{Error: err.Error(), Usage: true})
		return
	}
	sess, err := s.start(opts, names, c)
	if err != nil {
		s.reply(c, Response{Error: err.Error()})
		return
	}
	defer s.end(sess, opts)
	if err := s.reply(c, Response{Ports: req.Ports}); err != nil {
		return
	}
	s.log.Info("capture started", zap.Strings("ports", req.Ports), zap.Int("queue", opts.Queue),
		zap.Stringer("direction", opts.Direction), zap.Uint64("count", opts.Count), zap.Duration("duration", opts.Duration))
	// The client ends a capture early by closing its side (or going away).
	c.SetReadDeadline(time.Time{})
	go func() {
		var b [1]byte
		for {
			if _, err := c.Read(b[:]); err != nil {
				sess.StopFor("the client ended the capture")
				return
			}
		}
	}()
	err = sess.Write(&clientWriter{c: c}, nil)
	st := sess.Stats()
	s.log.Info("capture ended", zap.Strings("ports", req.Ports), zap.Uint64s("captured", st.Captured), zap.Uint64s("dropped", st.Dropped), zap.Error(err))
}

// start claims opts' ports and starts a session on them.
func (s *Server) start(opts Options, names []string, c *net.UnixConn) (*Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("the daemon is shutting down")
	}
	for _, p := range opts.Ports {
		if s.busy[p] {
			return nil, fmt.Errorf("port %s: a capture is already running on it", names[p])
		}
	}
	sess, err := Start(s.target, opts)
	if err != nil {
		return nil, err
	}
	for _, p := range opts.Ports {
		s.busy[p] = true
	}
	s.sessions[sess] = c
	return sess, nil
}

func (s *Server) end(sess *Session, opts Options) {
	sess.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range opts.Ports {
		delete(s.busy, p)
	}
	delete(s.sessions, sess)
}

func (s *Server) reply(c *net.UnixConn, r Response) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	c.SetWriteDeadline(time.Now().Add(replyTimeout))
	_, err = c.Write(append(b, '\n'))
	c.SetWriteDeadline(time.Time{})
	return err
}

// list describes the ports for a "list" request.
func (s *Server) list(ports []dataplane.Port) []PortInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]PortInfo, len(ports))
	for i, p := range ports {
		l := p.NIC.Link()
		out[i] = PortInfo{Name: p.Name, MAC: p.NIC.MAC().String(), Driver: nic.Describe(p.NIC), LinkUp: l.Up,
			RxQueues: p.NIC.NumRxQueues(), TxQueues: p.NIC.NumTxQueues(), Capturing: s.busy[portID(i)]}
		if l.Up {
			out[i].SpeedMbps = l.SpeedMbps
		}
	}
	return out
}

// Close stops accepting clients, ends every session (each client gets its statistics
// blocks), removes the socket and waits for the clients' handlers.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	for sess, c := range s.sessions {
		sess.StopFor("the daemon is shutting down")
		// A client that does not read has closeGrace to take the rest.
		c.SetWriteDeadline(time.Now().Add(closeGrace))
	}
	s.mu.Unlock()
	err := s.ln.Close()
	if short, done, serr := shortPath(s.path, 0); serr == nil {
		os.Remove(short)
		done()
	}
	s.wg.Wait()
	return err
}

// clientWriter writes the stream to the client, naming it in errors.
type clientWriter struct{ c *net.UnixConn }

func (w *clientWriter) Write(b []byte) (int, error) {
	n, err := w.c.Write(b)
	if err != nil {
		err = fmt.Errorf("client: %w", err)
	}
	return n, err
}

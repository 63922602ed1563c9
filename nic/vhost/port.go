package vhost

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic"
)

// Mode says which side of the socket uiod is.
type Mode int

const (
	// Server listens on the socket path; the front end connects (virtio-user's default,
	// QEMU's "-chardev socket,path=…" without server=on).
	Server Mode = iota
	// Client connects to a front end that listens (virtio-user's server=1, QEMU's
	// server=on), and again whenever it goes away.
	Client
)

// String names the mode as the configuration does.
func (m Mode) String() string {
	if m == Client {
		return "client"
	}
	return "server"
}

// The vrings of the one queue pair, by vhost-user index.
const (
	ringGuestRX = 0 // the front end receives: the port's TX queue
	ringGuestTX = 1 // the front end sends: the port's RX queue
)

// Config configures a vhost-user port.
type Config struct {
	Socket string // the unix socket's path
	Mode   Mode
	// MAC is the port's station address; the default is a locally administered address
	// derived from Socket.
	MAC net.HardwareAddr
	// PoolSize is the number of receive buffers (default 1024), of BufSize bytes (default
	// 2048, the largest frame taken from the front end).
	PoolSize, BufSize int
	// Reconnect is the interval between attempts to reach a front end in Client mode, and
	// the pause after a failed accept in Server mode (default 1 s).
	Reconnect time.Duration
	// MemoryFS lists the filesystem types (statfs f_type magic numbers, e.g. 0xef53 for
	// ext4) a front end's memory files may live on besides tmpfs (memfd, /dev/shm) and
	// hugetlbfs, which are always allowed: a file-backed guest whose memory is on a disk
	// filesystem. Files on other filesystems are refused (a FUSE file would put the poll
	// thread's page faults in the front end's hands).
	MemoryFS []int64
	Log      *zap.Logger
}

// Port is a vhost-user back end as a nic.Port with one RX and one TX queue.
type Port struct {
	cfg   Config
	mac   net.HardwareAddr
	pool  *nic.Mempool
	rings [numVrings]vring
	kick  *kickVector
	log   *zap.Logger

	// Data-path constants of the current front end, set before its rings start.
	hdrLen int
	hdr    [12]byte

	stats struct {
		rxPackets, rxBytes, txPackets, txBytes atomic.Uint64
		rxErrors, txErrors                     atomic.Uint64
	}
	faults    atomic.Uint64
	connects  atomic.Uint64
	connected atomic.Bool
	faultCh   chan error // the poll thread's faults, to the control goroutine
	faultErr  atomic.Pointer[error]
	mem       *memTable // the current front end's memory (control goroutine)

	mu     sync.Mutex
	closed bool
	stop   chan struct{}
	done   chan struct{}
	ln     *net.UnixListener
	conn   *net.UnixConn
}

var _ nic.Port = (*Port)(nil)

// Open starts a vhost-user port: it listens on (Server) or starts connecting to (Client)
// cfg.Socket and serves front ends on its own goroutine until Close. The port's link is
// down until a front end has started both rings.
func Open(cfg Config) (*Port, error) {
	if cfg.Socket == "" {
		return nil, errors.New("vhost-user: no socket path")
	}
	if cfg.Mode != Server && cfg.Mode != Client {
		return nil, fmt.Errorf("vhost-user %s: invalid mode %d", cfg.Socket, int(cfg.Mode))
	}
	if cfg.PoolSize == 0 {
		cfg.PoolSize = 1024
	}
	if cfg.BufSize == 0 {
		cfg.BufSize = 2048
	}
	if cfg.Reconnect == 0 {
		cfg.Reconnect = time.Second
	}
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	p := &Port{cfg: cfg, mac: cfg.MAC, log: cfg.Log, faultCh: make(chan error, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	if p.mac == nil {
		p.mac = macFor(cfg.Socket)
	}
	for i := range p.rings {
		p.rings[i] = newVring()
	}
	p.setFeatures(0)
	pool, err := nic.NewMempool(&nic.HeapDMA{}, cfg.PoolSize, cfg.BufSize)
	if err != nil {
		return nil, fmt.Errorf("vhost-user %s: %w", cfg.Socket, err)
	}
	p.pool = pool
	if p.kick, err = newKickVector(); err != nil {
		return nil, fmt.Errorf("vhost-user %s: %w", cfg.Socket, err)
	}
	if cfg.Mode == Server {
		if p.ln, err = listen(cfg.Socket); err != nil {
			p.kick.close()
			return nil, fmt.Errorf("vhost-user %s: %w", cfg.Socket, err)
		}
	}
	go p.run()
	return p, nil
}

// macFor derives a locally administered unicast address from the socket path.
func macFor(path string) net.HardwareAddr {
	h := sha256.Sum256([]byte(path))
	m := net.HardwareAddr(h[:6:6])
	m[0] = m[0]&^1 | 2
	return m
}

// MAC implements nic.Port.
func (p *Port) MAC() net.HardwareAddr { return p.mac }

// NumRxQueues implements nic.Port: one.
func (p *Port) NumRxQueues() int { return 1 }

// NumTxQueues implements nic.Port: one.
func (p *Port) NumTxQueues() int { return 1 }

// RxVector implements nic.Port: it is readable when the front end kicked its TX ring,
// whichever kick eventfd the current front end sent.
func (p *Port) RxVector(q int) *irq.Vector {
	if q != 0 {
		return nil
	}
	return p.kick.vec
}

// EnableRxInterrupt implements nic.Port: it asks the front end to kick on its next TX
// frame (avail_event, or VRING_USED_F_NO_NOTIFY cleared). The caller polls once more
// afterwards: a frame the front end made available before it saw the request is not kicked.
func (p *Port) EnableRxInterrupt(q int) { p.setNotify(q, true) }

// DisableRxInterrupt implements nic.Port.
func (p *Port) DisableRxInterrupt(q int) { p.setNotify(q, false) }

func (p *Port) setNotify(q int, on bool) {
	r := &p.rings[ringGuestTX]
	if q != 0 {
		return
	}
	if !r.mu.TryLock() {
		// The control goroutine is reconfiguring the ring: rather than sleep unarmed,
		// the poll thread is woken at once to look again.
		if on {
			p.kick.self()
		}
		return
	}
	if !r.ready {
		r.mu.Unlock()
		return
	}
	arm(r)
	defer p.disarm(r)
	r.setNotify(on)
	if on && r.noKick {
		// The front end asked for polling (SET_VRING_KICK without a descriptor): it never
		// kicks, so the poll thread must not sleep on this queue.
		p.kick.self()
	}
}

// Link implements nic.Port: up while a front end has both rings started and enabled.
func (p *Port) Link() nic.Link {
	if !p.connected.Load() {
		return nic.Link{}
	}
	for i := range p.rings {
		r := &p.rings[i]
		r.mu.Lock()
		running := r.running()
		r.mu.Unlock()
		if !running {
			return nic.Link{}
		}
	}
	return nic.Link{Up: true, SpeedMbps: 10000}
}

// Stats implements nic.Port. RxErrors counts frames refused (too large, or no longer than
// their header) and front ends stopped for breaking a rule; TxErrors frames too large for
// the buffer the front end offered.
func (p *Port) Stats() nic.Stats {
	return nic.Stats{
		RxPackets: p.stats.rxPackets.Load(), RxBytes: p.stats.rxBytes.Load(),
		TxPackets: p.stats.txPackets.Load(), TxBytes: p.stats.txBytes.Load(),
		RxErrors: p.stats.rxErrors.Load() + p.faults.Load(), TxErrors: p.stats.txErrors.Load(),
	}
}

// Faults is the number of front ends stopped for breaking a rule.
func (p *Port) Faults() uint64 { return p.faults.Load() }

// Connects is the number of front ends that connected.
func (p *Port) Connects() uint64 { return p.connects.Load() }

// fault stops r after the front end broke a rule on the poll thread (r.mu held) and tells
// the control goroutine, which disconnects the front end.
func (p *Port) fault(r *vring, err error) {
	if r.cur != nil {
		r.cur.Free()
		r.cur = nil
	}
	r.stop()
	select {
	case p.faultCh <- err:
	default:
	}
}

// signal has the call eventfd of r written, if the front end gave one: by its caller's
// goroutine, never the poll thread (see caller).
func (p *Port) signal(r *vring) {
	if r.call != nil {
		r.call.signal()
	}
}

// Close stops serving: the connection is closed, the rings stopped, the front end's memory
// unmapped and, in Server mode, the socket removed. Buffers the caller still holds stay
// valid (they are Go memory).
func (p *Port) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.stop)
	if p.ln != nil {
		p.ln.Close()
	}
	if p.conn != nil {
		p.conn.Close()
	}
	p.mu.Unlock()
	<-p.done
	return p.kick.close()
}

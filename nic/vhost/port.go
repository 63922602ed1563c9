package vhost

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"slices"
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

// The vrings of queue pair 0, by vhost-user index; pair q's are 2q and 2q+1 (rxRing, txRing).
const (
	ringGuestRX = 0 // the front end receives: the port's TX queue
	ringGuestTX = 1 // the front end sends: the port's RX queue
)

// rxRing is the vring of RX queue q (the front end's TX ring of pair q); txRing that of
// pair q's guest RX ring, which a TX queue sends on.
func rxRing(q int) int { return 2*q + ringGuestTX }
func txRing(q int) int { return 2*q + ringGuestRX }

// Config configures a vhost-user port.
type Config struct {
	Socket string // the unix socket's path
	Mode   Mode
	// Queues is the number of queue pairs offered (GET_QUEUE_NUM, and VIRTIO_NET_F_MQ when
	// more than one), 1 (the default) to MaxQueuePairs: the port's RX and TX queue count.
	// Pair q is RX queue q and TX queue q; see Port.TxBurst for a pair the front end did
	// not enable.
	Queues int
	// MAC is the port's station address; the default is a locally administered address
	// derived from Socket.
	MAC net.HardwareAddr
	// MTU is the port's IP MTU (default nic.DefaultMTU, at most MaxMTU): frames longer
	// than nic.MaxFrame(MTU) are dropped both ways (RxErrors, TxErrors), and a front end's
	// VHOST_USER_NET_SET_MTU above it is refused. A frame longer than one of the front
	// end's receive buffers needs VIRTIO_NET_F_MRG_RXBUF (see Port.TxBurst).
	MTU int
	// PoolSize is the number of receive buffers of each RX queue (default 1024), of BufSize
	// bytes (default nic.BufSizeFor(MTU); at least nic.MaxFrame(MTU)).
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

// Port is a vhost-user back end as a nic.Port with Config.Queues RX and TX queues.
type Port struct {
	cfg   Config
	mac   net.HardwareAddr
	pools []*nic.Mempool  // RX queue q's buffers
	rings []vring         // 2 per pair: 2q guest RX, 2q+1 guest TX
	kicks []*kickVector   // RX queue q's vector: the kicks of vring 2q+1
	txTo  []atomic.Uint32 // TX queue q sends on pair txTo[q] (see remapTx)
	// txShared is set while some TX queue sends on another's pair: TX bursts then take
	// the ring's lock rather than try it, since the other holder is a poll thread too.
	txShared atomic.Bool
	log      *zap.Logger

	maxFrame int // nic.MaxFrame(cfg.MTU): longer frames are dropped both ways

	// Data-path constants of the current front end, set before its rings start.
	hdrLen int
	hdr    [12]byte
	mrg    bool // VIRTIO_NET_F_MRG_RXBUF: a frame may take several guest RX chains

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
	if cfg.Queues == 0 {
		cfg.Queues = 1
	}
	if cfg.Queues < 1 || cfg.Queues > MaxQueuePairs {
		return nil, fmt.Errorf("vhost-user %s: %d queue pairs, want 1 to %d", cfg.Socket, cfg.Queues, MaxQueuePairs)
	}
	if cfg.PoolSize == 0 {
		cfg.PoolSize = 1024
	}
	if cfg.MTU == 0 {
		cfg.MTU = nic.DefaultMTU
	}
	if cfg.MTU < nic.MinMTU || cfg.MTU > MaxMTU {
		return nil, fmt.Errorf("vhost-user %s: mtu %d, want %d to %d", cfg.Socket, cfg.MTU, nic.MinMTU, MaxMTU)
	}
	if cfg.BufSize == 0 {
		cfg.BufSize = nic.BufSizeFor(cfg.MTU)
	}
	if cfg.BufSize < nic.MaxFrame(cfg.MTU) {
		return nil, fmt.Errorf("vhost-user %s: buffer size %d, smaller than a frame of mtu %d (%d bytes)",
			cfg.Socket, cfg.BufSize, cfg.MTU, nic.MaxFrame(cfg.MTU))
	}
	if cfg.Reconnect == 0 {
		cfg.Reconnect = time.Second
	}
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	p := &Port{cfg: cfg, mac: cfg.MAC, log: cfg.Log, maxFrame: nic.MaxFrame(cfg.MTU), faultCh: make(chan error, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	if p.mac == nil {
		p.mac = macFor(cfg.Socket)
	}
	p.rings = make([]vring, numVrings*cfg.Queues)
	p.txTo = make([]atomic.Uint32, cfg.Queues)
	for q := range p.txTo {
		p.txTo[q].Store(uint32(q))
	}
	p.setFeatures(0)
	for range cfg.Queues {
		pool, err := nic.NewMempool(&nic.HeapDMA{}, cfg.PoolSize, cfg.BufSize)
		if err != nil {
			p.closeKicks()
			return nil, fmt.Errorf("vhost-user %s: %w", cfg.Socket, err)
		}
		k, err := newKickVector()
		if err != nil {
			p.closeKicks()
			return nil, fmt.Errorf("vhost-user %s: %w", cfg.Socket, err)
		}
		p.pools, p.kicks = append(p.pools, pool), append(p.kicks, k)
	}
	if cfg.Mode == Server {
		var err error
		if p.ln, err = listen(cfg.Socket); err != nil {
			p.closeKicks()
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

// NumRxQueues implements nic.Port: the queue pairs offered (Config.Queues), whether or
// not the front end enabled them all (an RX queue of a pair it did not enable receives
// nothing).
func (p *Port) NumRxQueues() int { return p.cfg.Queues }

// NumTxQueues implements nic.Port: the queue pairs offered.
func (p *Port) NumTxQueues() int { return p.cfg.Queues }

// RxVector implements nic.Port: RX queue q's is readable when the front end kicked its TX
// ring of pair q, whichever kick eventfd the current front end sent.
func (p *Port) RxVector(q int) *irq.Vector {
	if q < 0 || q >= len(p.kicks) {
		return nil
	}
	return p.kicks[q].vec
}

// EnableRxInterrupt implements nic.Port: it asks the front end to kick on its next TX
// frame (avail_event, or VRING_USED_F_NO_NOTIFY cleared). The caller polls once more
// afterwards: a frame the front end made available before it saw the request is not kicked.
func (p *Port) EnableRxInterrupt(q int) { p.setNotify(q, true) }

// DisableRxInterrupt implements nic.Port.
func (p *Port) DisableRxInterrupt(q int) { p.setNotify(q, false) }

func (p *Port) setNotify(q int, on bool) {
	if q < 0 || q >= len(p.kicks) {
		return
	}
	r, k := &p.rings[rxRing(q)], p.kicks[q]
	if !r.mu.TryLock() {
		// The control goroutine is reconfiguring the ring: rather than sleep unarmed,
		// the poll thread is woken at once to look again.
		if on {
			k.self()
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
		k.self()
	}
}

// Link implements nic.Port: up while a front end has both rings of pair 0 started and
// enabled (a front end may leave the other pairs disabled).
func (p *Port) Link() nic.Link {
	if !p.connected.Load() {
		return nic.Link{}
	}
	for i := range numVrings {
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

// Stats implements nic.Port. RxErrors counts frames refused (longer than the MTU's frame,
// or no longer than their header) and front ends stopped for breaking a rule; TxErrors
// frames longer than the MTU's frame, or than the buffers the front end offered.
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
	return p.closeKicks()
}

// closeKicks closes every RX queue's vector.
func (p *Port) closeKicks() error {
	var err error
	for _, k := range p.kicks {
		err = errors.Join(err, k.close())
	}
	return err
}

// remapTx points every TX queue at a pair whose guest RX ring runs (started and enabled):
// its own pair when it does, else one of those that do, round robin (queue q takes the
// (q mod n)th of the n running pairs), else its own (which takes nothing). A front end
// that enabled fewer pairs than the port offers (a guest with fewer vCPUs than queues,
// DPDK before its control queue's VQ_PAIRS_SET) still gets every poll thread's frames.
// Control goroutine, after each request and reset.
func (p *Port) remapTx() {
	var run [MaxQueuePairs]uint32
	n, shared := 0, false
	for q := range p.txTo {
		r := &p.rings[txRing(q)]
		r.mu.Lock()
		if r.running() {
			run[n] = uint32(q)
			n++
		}
		r.mu.Unlock()
	}
	for q := range p.txTo {
		to := uint32(q)
		if n > 0 && !slices.Contains(run[:n], to) {
			to = run[q%n]
		}
		shared = shared || to != uint32(q)
		p.txTo[q].Store(to)
	}
	p.txShared.Store(shared)
}

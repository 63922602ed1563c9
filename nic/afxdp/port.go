//go:build linux

package afxdp

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"

	"github.com/vishvananda/netlink"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/pci"
)

// Port is a kernel netdev's queues as a nic.Port through AF_XDP sockets: RX and TX queue
// i are the socket bound to netdev queue QueueStart+i. The threading and buffer rules are
// nic.Port's.
type Port struct {
	h    *netlink.Handle // in the interface's namespace
	name string
	mtu  int // the interface's when it was opened
	// frameSize is the UMEM chunk.
	frameSize int
	ifindex   int
	mac       net.HardwareAddr
	queues    []*queue
	prog      *loaded
	zc        bool
	// promiscSet: Open turned IFF_PROMISC on, Close turns it off again.
	promiscSet bool

	up, gone  atomic.Bool
	stopping  atomic.Bool // the watch is being stopped: its socket's close is no error
	watchStop chan struct{}
	watchDone chan struct{}
	// events gets pci.EventRequest when the interface is deleted; the watch closes it
	// when it ends (Close).
	events chan pci.Event

	// nd is the netdev family connection of the NAPI knobs (napi_linux.go), napiSaved
	// what they were before and napiKnobs which were set; nil when none were set.
	nd        *Netdev
	napiSaved []napiSaved
	napiKnobs NapiKnob

	mu     sync.RWMutex // Close against Stats
	closed bool
	log    *zap.Logger
}

var (
	_ nic.Port      = (*Port)(nil)
	_ pci.Requester = (*Port)(nil)
)

// Open attaches the port's XDP program to cfg.Interface (in the calling thread's network
// namespace) and binds one socket per queue. On error nothing stays attached and the
// interface is as it was.
func Open(cfg Config) (_ *Port, err error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	wrap := func(err error) error { return fmt.Errorf("af_xdp %s: %w", cfg.Interface, err) }
	if err := checkCaps(); err != nil {
		return nil, wrap(err)
	}
	// Bound to this namespace, for Close too (it may run on any thread).
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return nil, wrap(fmt.Errorf("netlink: %w", err))
	}
	defer func() {
		if err != nil {
			h.Close()
		}
	}()
	lk, err := h.LinkByName(cfg.Interface)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil, wrap(ErrNoInterface)
		}
		return nil, wrap(err)
	}
	qs, err := queueRange(cfg, lk)
	if err != nil {
		return nil, wrap(err)
	}
	mtu, err := checkLink(cfg, lk)
	if err != nil {
		return nil, wrap(err)
	}
	cfg.MTU = mtu
	if id, desc := attachedProgram(lk); id != 0 {
		if !cfg.Replace {
			return nil, wrap(fmt.Errorf("%w (%s): detach it, or set replace to put uiod's in its place", ErrBusy, desc))
		}
		err := detachNetlink(lk)
		if err == nil {
			if lk, err = h.LinkByName(cfg.Interface); err == nil {
				if id, _ := attachedProgram(lk); id != 0 {
					err = errors.New("a bpf_link holds it: only its owner can remove it")
				}
			}
		}
		if err != nil {
			return nil, wrap(fmt.Errorf("%w (%s), and it cannot be replaced: %w", ErrBusy, desc, err))
		}
		cfg.Log.Warn("replaced the interface's XDP program", zap.String("interface", cfg.Interface), zap.String("program", desc))
	}
	p := &Port{h: h, name: cfg.Interface, mtu: mtu, frameSize: cfg.FrameSize, ifindex: lk.Attrs().Index, mac: append(net.HardwareAddr(nil), lk.Attrs().HardwareAddr...), log: cfg.Log}
	defer func() {
		if err != nil {
			p.release()
		}
	}()
	if p.prog, err = loadProgram(cfg.PassEthertypes, multiBuffer(cfg)); err != nil {
		return nil, wrap(err)
	}
	p.zc = true
	for _, qid := range qs {
		q, err := openQueue(cfg, p.ifindex, qid)
		if err != nil {
			return nil, wrap(err)
		}
		p.queues = append(p.queues, q)
		p.zc = p.zc && q.zc
		if err := p.prog.xsks.Put(uint32(qid), uint32(q.fd)); err != nil {
			return nil, wrap(fmt.Errorf("XSKMAP entry of queue %d: %w", qid, err))
		}
	}
	if cfg.ZeroCopy == ZeroCopyAuto && !p.zc && !multiBuffer(cfg) {
		cfg.Log.Info("zero-copy refused by the driver: copy mode", zap.String("interface", cfg.Interface))
	}
	err = p.prog.attach(p.ifindex, cfg.Mode, func(err error) {
		cfg.Log.Warn("native XDP refused: generic mode", zap.String("interface", cfg.Interface), zap.Error(err))
	})
	if err != nil {
		return nil, wrap(fmt.Errorf("attach XDP program (%s mode): %w", p.prog.mode, bpfErr(err)))
	}
	if cfg.Promiscuous && lk.Attrs().Flags&net.FlagUp != 0 && lk.Attrs().Promisc == 0 {
		if err := h.SetPromiscOn(lk); err != nil {
			return nil, wrap(fmt.Errorf("promiscuous: %w", err))
		}
		p.promiscSet = true
	}
	if cfg.BusyPoll {
		p.busyPoll(cfg)
	}
	p.setNapi(cfg)
	p.up.Store(operUp(lk))
	if err := p.watch(); err != nil {
		return nil, wrap(err)
	}
	cfg.Log.Info("af_xdp", zap.String("interface", cfg.Interface), zap.Ints("queues", qs),
		zap.Stringer("attach", p.prog.mode), zap.Bool("zerocopy", p.zc), zap.Int("frame_size", cfg.FrameSize), zap.Int("mtu", mtu), zap.Bool("multi_buffer", multiBuffer(cfg)),
		zap.Uint16s("pass_ethertypes", cfg.PassEthertypes))
	return p, nil
}

// queueRange is the netdev queues to bind: cfg's, checked against the RX queues the
// interface has.
func queueRange(cfg Config, lk netlink.Link) ([]int, error) {
	have, err := rxQueues(cfg.Interface, lk)
	if err != nil {
		return nil, err
	}
	n := cfg.Queues
	if n == 0 {
		n = have - cfg.QueueStart
	}
	if cfg.QueueStart+n > have || n <= 0 {
		return nil, fmt.Errorf("%w: queues %d from queue_start %d, but the interface has %d RX queues (ethtool -l)", ErrQueues, n, cfg.QueueStart, have)
	}
	if n > MaxQueues {
		return nil, fmt.Errorf("%w: %d RX queues, at most %d sockets per port: set queues", ErrQueues, n, MaxQueues)
	}
	if n < have && !cfg.Partial {
		return nil, fmt.Errorf("%w: %d of the interface's %d RX queues bound; the frames RSS steers to the others would go to the kernel unseen: bind them all, reduce the channels (ethtool -L), or set partial", ErrQueues, n, have)
	}
	qs := make([]int, n)
	for i := range qs {
		qs[i] = cfg.QueueStart + i
	}
	return qs, nil
}

// rxQueues is the interface's RX queue count: ethtool's rx and combined channels, or the
// kernel's queue count where the driver has no channels.
func rxQueues(name string, lk netlink.Link) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("socket for ethtool: %w", err)
	}
	defer unix.Close(fd)
	ch, err := getChannels(fd, name)
	if err == nil && ch.RxCount+ch.CombinedCount > 0 {
		return int(ch.RxCount + ch.CombinedCount), nil
	}
	if n := lk.Attrs().NumRxQueues; n > 0 {
		return n, nil
	}
	return 1, nil
}

// checkLink refuses an interface that is down, one whose MTU is not cfg.MTU (when set),
// above MaxMultiBufferMTU, or above what a chunk holds with zerocopy on (multi-buffer
// frames are received in copy mode). It returns the port's MTU, the interface's.
func checkLink(cfg Config, lk netlink.Link) (int, error) {
	a := lk.Attrs()
	if a.Flags&net.FlagUp == 0 {
		return 0, fmt.Errorf("%w (ip link set %s up)", ErrDown, cfg.Interface)
	}
	if cfg.MTU != 0 && cfg.MTU != a.MTU {
		return 0, fmt.Errorf("%w: mtu %d asked, but interface %s has MTU %d: an af_xdp port's MTU is its interface's, which the kernel owns (ip link set %s mtu %d, or leave mtu out)",
			ErrMTU, cfg.MTU, cfg.Interface, a.MTU, cfg.Interface, cfg.MTU)
	}
	if a.MTU > MaxMultiBufferMTU {
		return 0, fmt.Errorf("%w: interface %s has MTU %d, more than an af_xdp port takes (%d)", ErrMTU, cfg.Interface, a.MTU, MaxMultiBufferMTU)
	}
	if a.MTU > MaxMTU(cfg.FrameSize) && cfg.ZeroCopy == ZeroCopyOn {
		return 0, fmt.Errorf("%w: interface %s has MTU %d, frames of up to %d bytes; frame_size %d holds %d (%d of headroom), so zero-copy MTU %d at most: frames over several chunks (multi-buffer) are received in copy mode; lower the MTU or leave zerocopy out",
			ErrMTU, cfg.Interface, a.MTU, nic.MaxFrame(a.MTU), cfg.FrameSize, MaxFrame(cfg.FrameSize), Headroom, MaxMTU(cfg.FrameSize))
	}
	return a.MTU, nil
}

// checkCaps names the capabilities the process lacks: CAP_NET_ADMIN (attach, promisc),
// CAP_NET_RAW (AF_XDP sockets) and CAP_BPF (or CAP_SYS_ADMIN on kernels before 5.8).
func checkCaps() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return nil // cannot tell: the syscalls will say
	}
	has := func(c uint) bool { return data[c/32].Effective&(1<<(c%32)) != 0 }
	var missing []string
	if !has(unix.CAP_NET_ADMIN) {
		missing = append(missing, "CAP_NET_ADMIN")
	}
	if !has(unix.CAP_NET_RAW) {
		missing = append(missing, "CAP_NET_RAW")
	}
	if !has(unix.CAP_BPF) && !has(unix.CAP_SYS_ADMIN) {
		missing = append(missing, "CAP_BPF")
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %v", ErrPrivilege, missing)
	}
	return nil
}

// operUp reports whether the link is operationally up.
func operUp(lk netlink.Link) bool {
	a := lk.Attrs()
	return a.OperState == netlink.OperUp || (a.OperState == netlink.OperUnknown && a.RawFlags&unix.IFF_RUNNING != 0)
}

// busyPoll sets the busy-poll socket options on every socket, logging the ones the
// kernel refuses; a queue whose socket took SO_BUSY_POLL makes a recvfrom at every
// empty receive (queue.rxEmpty).
func (p *Port) busyPoll(cfg Config) {
	for _, q := range p.queues {
		for _, o := range []struct {
			name   string
			opt, v int
		}{{"SO_PREFER_BUSY_POLL", unix.SO_PREFER_BUSY_POLL, 1}, {"SO_BUSY_POLL", unix.SO_BUSY_POLL, cfg.BusyPollUsecs}, {"SO_BUSY_POLL_BUDGET", unix.SO_BUSY_POLL_BUDGET, cfg.BusyPollBudget}} {
			if err := unix.SetsockoptInt(q.fd, unix.SOL_SOCKET, o.opt, o.v); err != nil {
				p.log.Warn("busy_poll: socket option refused", zap.String("interface", p.name), zap.Int("queue", q.id), zap.String("option", o.name), zap.Error(err))
			} else if o.opt == unix.SO_BUSY_POLL {
				q.rxWake = &alwaysWake
			}
		}
	}
}

// watch follows the interface through rtnetlink: oper state into Link, deletion into
// Present.
func (p *Port) watch() error {
	ch := make(chan netlink.LinkUpdate, 16)
	p.watchStop, p.watchDone = make(chan struct{}), make(chan struct{})
	p.events = make(chan pci.Event, 1)
	if err := netlink.LinkSubscribeWithOptions(ch, p.watchStop, netlink.LinkSubscribeOptions{ErrorCallback: func(err error) {
		if p.stopping.Load() {
			return
		}
		p.log.Warn("rtnetlink link updates", zap.String("interface", p.name), zap.Error(err))
	}}); err != nil {
		close(p.watchDone)
		close(p.events)
		return fmt.Errorf("rtnetlink subscription: %w", err)
	}
	go func() {
		defer close(p.watchDone)
		defer close(p.events)
		seenMTU := p.mtu
		for u := range ch {
			if int(u.Index) != p.ifindex {
				continue
			}
			switch u.Header.Type {
			case unix.RTM_DELLINK:
				if p.gone.Swap(true) {
					continue
				}
				p.up.Store(false)
				p.log.Warn("interface deleted: the port is absent", zap.String("interface", p.name))
				select {
				case p.events <- pci.EventRequest:
				default:
				}
			case unix.RTM_NEWLINK:
				up := u.Flags&unix.IFF_UP != 0 && u.Flags&unix.IFF_RUNNING != 0
				if p.up.Swap(up) != up {
					p.log.Info("link", zap.String("interface", p.name), zap.Bool("up", up))
				}
				if m := u.Attrs().MTU; m != 0 && m != seenMTU {
					seenMTU = m
					p.mtuChanged(m)
				}
			}
		}
	}()
	return nil
}

// mtuChanged logs that the interface's MTU is now mtu: the kernel owns it, the port keeps
// the one it was opened with (its l3fwd and kernel-path MTU) until it is opened again, and
// frames longer than a chunk holds are the kernel's to drop.
func (p *Port) mtuChanged(mtu int) {
	fields := []zap.Field{zap.String("interface", p.name), zap.Int("mtu", mtu), zap.Int("port_mtu", p.mtu)}
	switch {
	case !p.queues[0].sg && mtu > MaxMTU(p.frameSize):
		p.log.Warn("interface MTU changed beyond what a chunk holds: frames longer than one chunk are dropped by the kernel (xdp rx_dropped); restart with a smaller MTU",
			append(fields, zap.Int("frame_size", p.frameSize), zap.Int("max_mtu", MaxMTU(p.frameSize)))...)
	case p.queues[0].sg && mtu > p.mtu:
		p.log.Warn("interface MTU changed beyond the port's: frames longer than its buffers are dropped and counted as RX errors; restart to take the new MTU", fields...)
	default:
		p.log.Warn("interface MTU changed: the port keeps the MTU it was opened with until it is opened again", fields...)
	}
}

// Name is the interface's name.
func (p *Port) Name() string { return p.name }

// MTU is the port's MTU: the interface's when the port was opened.
func (p *Port) MTU() int { return p.mtu }

// MAC is the interface's address.
func (p *Port) MAC() net.HardwareAddr { return append(net.HardwareAddr(nil), p.mac...) }

// NumRxQueues is the number of sockets.
func (p *Port) NumRxQueues() int { return len(p.queues) }

// NumTxQueues is the number of sockets: TX queue i is socket i's TX ring.
func (p *Port) NumTxQueues() int { return len(p.queues) }

// RxBurst takes frames from socket q's RX ring and refills its fill ring. An empty ring
// is found here, without rxBurst's frame: the empty poll is the common one. No system
// call unless the kernel asks for one or busy_poll is on (queue.rxEmpty).
func (p *Port) RxBurst(q int, bufs []*nic.Buf) int {
	x := p.queues[q]
	n := x.rx.avail()
	if n == 0 {
		x.rxEmpty()
		return 0
	}
	return x.rxFrames(bufs, n)
}

// TxBurst puts frames on socket q's TX ring (a frame of another port's memory is copied
// into this socket's UMEM) and kicks the kernel when the ring asks for it.
func (p *Port) TxBurst(q int, bufs []*nic.Buf) int { return p.queues[q].txBurst(bufs) }

// RxVector is socket q itself: it polls readable while its RX ring holds frames.
func (p *Port) RxVector(q int) *irq.Vector { return p.queues[q].vec }

// EnableRxInterrupt refills the fill ring, flushes TX and wakes the driver when the
// fill ring asks for it, so that the next frame wakes a sleeper on RxVector(q).
func (p *Port) EnableRxInterrupt(q int) { p.queues[q].arm() }

// DisableRxInterrupt does nothing: a socket has no interrupt to mask.
func (p *Port) DisableRxInterrupt(int) {}

// Link is the interface's operational state as rtnetlink last reported it.
func (p *Port) Link() nic.Link { return nic.Link{Up: p.up.Load() && !p.gone.Load()} }

// Present reports whether the interface still exists.
func (p *Port) Present() bool { return !p.gone.Load() }

// Events returns the channel that gets pci.EventRequest once when the interface is
// deleted (or moved to another namespace): the port is then dead for good, and its owner
// closes it and opens a new one when an interface of that name is back — as for a PCI
// device the kernel asks back (pci.Requester). The channel is closed by Close.
func (p *Port) Events() (<-chan pci.Event, error) { return p.events, nil }

// Ready reports whether an interface named name exists in the calling thread's network
// namespace and is administratively up: what Open needs before it tries.
func Ready(name string) bool {
	lk, err := netlink.LinkByName(name)
	return err == nil && lk.Attrs().Flags&net.FlagUp != 0
}

// AttachMode is native or generic.
func (p *Port) AttachMode() Mode { return p.prog.mode }

// ZeroCopy reports whether every socket is bound in zero-copy mode.
func (p *Port) ZeroCopy() bool { return p.zc }

// Describe is the port's kind for /status: af_xdp, the attach mode and copy or
// zero-copy.
func (p *Port) Describe() string {
	c := "copy"
	if p.zc {
		c = "zerocopy"
	}
	return fmt.Sprintf("af_xdp %s %s", p.prog.mode, c)
}

// Counters are the port's counters beyond nic.Stats.
type Counters struct {
	Kicks, KickErrors uint64 // sendto/recvfrom wake-ups of the kernel, and failed ones
	RxFillRingEmpty   uint64 // XDP_STATISTICS rx_fill_ring_empty_descs
	TxRingEmpty       uint64 // XDP_STATISTICS tx_ring_empty_descs
	TxRingFull        uint64 // frames TxBurst left to the caller
}

// Stats returns the sockets' counters and the kernel's XDP_STATISTICS: RxMissed are frames
// dropped for want of a fill-ring buffer or RX-ring room.
func (p *Port) Stats() nic.Stats {
	s, _ := p.stats()
	return s
}

// Counters returns the counters beyond nic.Stats.
func (p *Port) Counters() Counters {
	_, c := p.stats()
	return c
}

func (p *Port) stats() (nic.Stats, Counters) {
	var s nic.Stats
	var c Counters
	p.mu.RLock()
	defer p.mu.RUnlock()
	for _, q := range p.queues {
		s.RxPackets += q.rxPackets.Load()
		s.RxBytes += q.rxBytes.Load()
		s.TxPackets += q.txPackets.Load()
		s.TxBytes += q.txBytes.Load()
		s.RxErrors += q.rxBad.Load()
		s.TxErrors += q.txBad.Load() + q.kickErrs.Load()
		c.Kicks += q.kicks.Load()
		c.KickErrors += q.kickErrs.Load()
		c.TxRingFull += q.txFull.Load()
		if p.closed {
			continue
		}
		if st, err := getStatistics(q.fd); err == nil {
			s.RxMissed += st.Rx_dropped + st.Rx_ring_full
			s.RxErrors += st.Rx_invalid_descs
			s.TxErrors += st.Tx_invalid_descs
			c.RxFillRingEmpty += st.Rx_fill_ring_empty_descs
			c.TxRingEmpty += st.Tx_ring_empty_descs
		}
	}
	return s, c
}

// Close detaches the XDP program (the interface is the kernel's again), closes the
// sockets and frees their memory. Buffers RxBurst handed out must not be used after.
func (p *Port) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	err := p.release()
	p.h.Close()
	return err
}

// release undoes what Open did after making p, in reverse (the handle stays open).
func (p *Port) release() error {
	var errs []error
	if p.watchStop != nil {
		p.stopping.Store(true)
		close(p.watchStop)
		<-p.watchDone
	}
	// Before the program goes: veth's NAPI instances exist only while it is attached.
	if err := p.restoreNapi(); err != nil {
		errs = append(errs, fmt.Errorf("af_xdp %s: napi settings back: %w", p.name, err))
	}
	if p.prog != nil {
		if err := p.prog.close(); err != nil {
			errs = append(errs, fmt.Errorf("af_xdp %s: detach: %w", p.name, err))
		}
	}
	for _, q := range p.queues {
		errs = append(errs, q.close())
	}
	if p.promiscSet && !p.gone.Load() {
		if lk, err := p.h.LinkByIndex(p.ifindex); err == nil {
			errs = append(errs, p.h.SetPromiscOff(lk))
		}
	}
	return errors.Join(errs...)
}

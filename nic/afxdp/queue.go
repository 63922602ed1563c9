//go:build linux

package afxdp

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/irq"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/pci"
)

// fillBatch is the fewest free fill-ring slots RxBurst refills at once.
const fillBatch = 32

// queue is one XSK: netdev queue id, its UMEM and rings, its RX pool (buffers for the fill
// ring) and its TX pool (buffers frames from another UMEM are copied into). The RX half
// belongs to the thread polling the RX queue, the TX half to the one sending on the TX
// queue (the same thread for l2fwd's and reflect's layouts; the pools are separate so
// that they may differ).
type queue struct {
	id     int
	fd     int
	umem   *umem
	dma    pci.DMA // umem, as the interface value buffers' pools compare against
	shift  uint    // log2(chunk)
	rxPool *nic.Mempool
	txPool *nic.Mempool
	// byChunk is every buffer of both pools by UMEM chunk index.
	byChunk  []*nic.Buf
	maxFrame int // the longest frame received: a chunk after the headroom
	txMax    int // the longest frame sent: the MTU's (nic.MaxFrame)
	zc       bool
	// sg: multi-buffer AF_XDP (XDP_USE_SG), for an MTU whose frames a chunk cannot hold.
	// A frame of several chunks is copied into a buffer of big on RX (asm while its
	// chunks arrive, drop while the rest of a refused one does) and split over TX pool
	// chunks on TX.
	sg   bool
	big  *nic.Mempool
	asm  *nic.Buf
	drop bool

	fill, comp addrRing
	rx, tx     descRing
	maps       [][]byte
	vec        *irq.Vector
	txQueued   uint32 // TX descriptors published and not yet completed
	// rxWake is the word whose XDP_RING_NEED_WAKEUP bit makes an empty receive call
	// recvfrom (rxEmpty): the fill ring's flags, or alwaysWake when the socket has
	// SO_BUSY_POLL, which the kernel acts on only inside a system call.
	rxWake *uint32

	rxPackets, rxBytes, txPackets, txBytes nic.Counter
	rxBad, txBad, txFull, kicks, kickErrs  nic.Counter
}

// txMaxFrame is the longest frame a queue of cfg sends: its MTU's (nic.MaxFrame), at
// most a chunk after the headroom (all of that while the MTU is not known, 0).
func txMaxFrame(cfg Config) int {
	if cfg.MTU == 0 {
		return MaxFrame(cfg.FrameSize)
	}
	if multiBuffer(cfg) {
		return nic.MaxFrame(cfg.MTU)
	}
	return min(MaxFrame(cfg.FrameSize), nic.MaxFrame(cfg.MTU))
}

// multiBuffer reports whether a port of cfg needs multi-buffer AF_XDP: its MTU's frames
// do not fit one chunk.
func multiBuffer(cfg Config) bool { return cfg.MTU > MaxMTU(cfg.FrameSize) }

// openQueue creates, sets up and binds the socket of netdev queue qid on ifindex.
func openQueue(cfg Config, ifindex, qid int) (_ *queue, err error) {
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.EAFNOSUPPORT) {
			return nil, fmt.Errorf("socket(AF_XDP): %w: %w", ErrNoXSK, err)
		}
		if errors.Is(err, unix.EPERM) {
			return nil, fmt.Errorf("socket(AF_XDP): %w (needs CAP_NET_RAW)", err)
		}
		return nil, fmt.Errorf("socket(AF_XDP): %w", err)
	}
	q := &queue{id: qid, fd: fd, maxFrame: MaxFrame(cfg.FrameSize), txMax: txMaxFrame(cfg)}
	defer func() {
		if err != nil {
			q.close()
		}
	}()
	chunks := cfg.PoolSize + cfg.TxRing
	if q.umem, err = newUMEM(chunks, cfg.FrameSize); err != nil {
		return nil, err
	}
	q.dma = q.umem
	for 1<<q.shift < cfg.FrameSize {
		q.shift++
	}
	if err := registerUMEM(fd, q.umem.registered(), cfg.FrameSize); err != nil {
		if errors.Is(err, unix.ENOMEM) || errors.Is(err, unix.EPERM) {
			return nil, fmt.Errorf("XDP_UMEM_REG of %d bytes: %w (locked memory: raise RLIMIT_MEMLOCK or give CAP_IPC_LOCK)", len(q.umem.registered()), err)
		}
		return nil, fmt.Errorf("XDP_UMEM_REG: %w", err)
	}
	if q.rxPool, err = nic.NewMempoolStride(q.umem, cfg.PoolSize, q.maxFrame, cfg.FrameSize); err != nil {
		return nil, err
	}
	if q.txPool, err = nic.NewMempoolStride(q.umem, cfg.TxRing, q.maxFrame, cfg.FrameSize); err != nil {
		return nil, err
	}
	if q.sg = multiBuffer(cfg); q.sg {
		if q.big, err = nic.NewMempool(&nic.HeapDMA{}, cfg.RxRing, nic.BufSizeFor(cfg.MTU)); err != nil {
			return nil, err
		}
	}
	q.byChunk = make([]*nic.Buf, chunks)
	for _, p := range []*nic.Mempool{q.rxPool, q.txPool} {
		all := make([]*nic.Buf, 0, p.Size())
		for b := p.Get(); b != nil; b = p.Get() {
			q.byChunk[b.IOVA()>>q.shift] = b
			all = append(all, b)
		}
		for i := len(all) - 1; i >= 0; i-- {
			p.Put(all[i])
		}
	}
	for _, o := range []struct {
		opt, n int
	}{{unix.XDP_UMEM_FILL_RING, cfg.RxRing}, {unix.XDP_UMEM_COMPLETION_RING, cfg.TxRing}, {unix.XDP_RX_RING, cfg.RxRing}, {unix.XDP_TX_RING, cfg.TxRing}} {
		if err := unix.SetsockoptInt(fd, unix.SOL_XDP, o.opt, o.n); err != nil {
			return nil, fmt.Errorf("ring size %d (option %d): %w", o.n, o.opt, err)
		}
	}
	if err := q.mapRings(cfg); err != nil {
		return nil, err
	}
	q.rxWake = q.fill.flags
	if err := q.bind(cfg, ifindex); err != nil {
		return nil, err
	}
	if opts, err := unix.GetsockoptInt(fd, unix.SOL_XDP, unix.XDP_OPTIONS); err == nil {
		q.zc = opts&unix.XDP_OPTIONS_ZEROCOPY != 0
	}
	// Copy mode sends 32 frames per sendto unless told more (6.13 and later).
	_ = unix.SetsockoptInt(fd, unix.SOL_XDP, unix.XDP_MAX_TX_SKB_BUDGET, cfg.TxRing)
	q.refill()
	q.vec = irq.NewFunc(irq.MSIX, qid, fd, func() (uint64, error) { return 0, nil })
	return q, nil
}

// mapRings maps the four rings.
func (q *queue) mapRings(cfg Config) error {
	off, err := getMmapOffsets(q.fd)
	if err != nil {
		return fmt.Errorf("XDP_MMAP_OFFSETS: %w", err)
	}
	mapRing := func(pgoff int64, o unix.XDPRingOffset, n, size int) ([]byte, error) {
		m, err := unix.Mmap(q.fd, pgoff, ringBytes(o, n, size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
		if err != nil {
			return nil, fmt.Errorf("mmap ring at %#x: %w", pgoff, err)
		}
		q.maps = append(q.maps, m)
		return m, nil
	}
	m, err := mapRing(unix.XDP_UMEM_PGOFF_FILL_RING, off.Fr, cfg.RxRing, 8)
	if err == nil {
		q.fill, err = newAddrRing(m, off.Fr, cfg.RxRing)
	}
	if err == nil {
		m, err = mapRing(unix.XDP_UMEM_PGOFF_COMPLETION_RING, off.Cr, cfg.TxRing, 8)
	}
	if err == nil {
		q.comp, err = newAddrRing(m, off.Cr, cfg.TxRing)
	}
	if err == nil {
		m, err = mapRing(unix.XDP_PGOFF_RX_RING, off.Rx, cfg.RxRing, descSize)
	}
	if err == nil {
		q.rx, err = newDescRing(m, off.Rx, cfg.RxRing)
	}
	if err == nil {
		m, err = mapRing(unix.XDP_PGOFF_TX_RING, off.Tx, cfg.TxRing, descSize)
	}
	if err == nil {
		q.tx, err = newDescRing(m, off.Tx, cfg.TxRing)
	}
	// The kernel's producer starts at 0: so do our cached indexes (zero values). The
	// producer rings' cached consumer is 0 too, which is their whole size free.
	return err
}

// bind binds the socket with need-wakeup, in zero-copy mode when asked or possible.
func (q *queue) bind(cfg Config, ifindex int) error {
	if q.sg {
		// Multi-buffer in copy mode: zero-copy multi-buffer is the driver's (and a
		// frame of several chunks is copied here anyway).
		sa := &unix.SockaddrXDP{Flags: unix.XDP_USE_NEED_WAKEUP | unix.XDP_COPY | unix.XDP_USE_SG, Ifindex: uint32(ifindex), QueueID: uint32(q.id)}
		if err := q.bindRetry(sa); err != nil {
			if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EINVAL) {
				return fmt.Errorf("queue %d: bind with XDP_USE_SG (multi-buffer, for MTU %d): %w: %w", q.id, cfg.MTU, ErrMTU, err)
			}
			return bindErr(err, q.id)
		}
		return nil
	}
	sa := &unix.SockaddrXDP{Flags: unix.XDP_USE_NEED_WAKEUP, Ifindex: uint32(ifindex), QueueID: uint32(q.id)}
	if cfg.ZeroCopy == ZeroCopyOff || cfg.Mode == ModeGeneric {
		sa.Flags |= unix.XDP_COPY
		return bindErr(q.bindRetry(sa), q.id)
	}
	sa.Flags |= unix.XDP_ZEROCOPY
	err := q.bindRetry(sa)
	if err == nil || cfg.ZeroCopy == ZeroCopyOn {
		if err != nil && (errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EINVAL)) {
			return fmt.Errorf("queue %d: bind with XDP_ZEROCOPY: %w: %w", q.id, ErrZeroCopyRefused, err)
		}
		return bindErr(err, q.id)
	}
	sa.Flags = unix.XDP_USE_NEED_WAKEUP | unix.XDP_COPY
	return bindErr(q.bindRetry(sa), q.id)
}

// bindBusyFor bounds the wait for a queue the previous socket on it still holds: the
// kernel lets a closed socket's queue go in a work item after the close.
const bindBusyFor = 2 * time.Second

// bindRetry binds, retrying while the queue is busy for up to bindBusyFor.
func (q *queue) bindRetry(sa *unix.SockaddrXDP) error {
	deadline := time.Now().Add(bindBusyFor)
	for {
		err := unix.Bind(q.fd, sa)
		if err != unix.EBUSY || time.Now().After(deadline) {
			if err == unix.EBUSY {
				return fmt.Errorf("%w (another AF_XDP socket holds the queue)", err)
			}
			return err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func bindErr(err error, qid int) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("queue %d: bind: %w", qid, err)
}

// refill posts free RX buffers on the fill ring, when at least fillBatch slots are free
// (or force).
func (q *queue) refillMin(min uint32) {
	r := &q.fill
	n := r.free(min)
	if n < min {
		return
	}
	if a := uint32(q.rxPool.Avail()); n > a {
		n = a
	}
	for i := uint32(0); i < n; i++ {
		r.descs[r.local&r.mask] = q.rxPool.Get().IOVA()
		r.local++
	}
	if n > 0 {
		r.publish()
	}
}

func (q *queue) refill() { q.refillMin(1) }

// rxBurst moves received frames into bufs. (Port.RxBurst does the same with the empty
// check inlined: the empty poll, the common one, does not pay rxFrames's frame.)
func (q *queue) rxBurst(bufs []*nic.Buf) int {
	n := q.rx.avail()
	if n == 0 {
		q.rxEmpty()
		return 0
	}
	return q.rxFrames(bufs, n)
}

// rxFrames is rxBurst once the RX ring shows n entries.
func (q *queue) rxFrames(bufs []*nic.Buf, n uint32) int {
	if q.sg {
		return q.rxBurstSG(bufs, n)
	}
	r := &q.rx
	if n > uint32(len(bufs)) {
		n = uint32(len(bufs))
	}
	k := 0
	var bytes uint64
	for i := uint32(0); i < n; i++ {
		d := &r.descs[(r.local+i)&r.mask]
		idx := d.Addr >> q.shift
		if idx >= uint64(len(q.byChunk)) {
			q.rxBad.Add(1) // an address outside the UMEM: nothing to give back
			continue
		}
		b := q.byChunk[idx]
		if d.Addr != b.IOVA() || int(d.Len) > q.maxFrame {
			// A frame at another offset than the headroom (an XDP program that moved
			// the head) or longer than a buffer: dropped, the buffer reused.
			q.rxBad.Add(1)
			b.Free()
			continue
		}
		b.SetLen(int(d.Len))
		bytes += uint64(d.Len)
		bufs[k] = b
		k++
	}
	return q.rxTaken(n, k, bytes)
}

// rxTaken ends an RX burst that took n descriptors off the RX ring and hands out k
// frames of bytes in all: the ring's entries are released, the frames counted, and the
// fill ring refilled.
func (q *queue) rxTaken(n uint32, k int, bytes uint64) int {
	q.rx.local += n
	q.rx.release()
	q.rxPackets.Add(uint64(k))
	q.rxBytes.Add(bytes)
	q.refillMin(fillBatch)
	return k
}

// rxBurstSG is rxBurst with multi-buffer frames: the chunks of a frame (all but the last
// with XDP_PKT_CONTD) are copied into one buffer of q.big and given back to the fill
// ring; a frame of one chunk is handed out as it is. A frame with a bad chunk, longer
// than a big buffer, or with no big buffer free is dropped whole and counted once.
func (q *queue) rxBurstSG(bufs []*nic.Buf, n uint32) int {
	r := &q.rx
	k := 0
	var bytes uint64
	i := uint32(0)
	for ; i < n && k < len(bufs); i++ {
		d := &r.descs[(r.local+i)&r.mask]
		last := d.Options&unix.XDP_PKT_CONTD == 0
		var b *nic.Buf
		if idx := d.Addr >> q.shift; idx < uint64(len(q.byChunk)) {
			b = q.byChunk[idx]
		}
		switch {
		case b == nil || d.Addr != b.IOVA() || int(d.Len) > q.maxFrame:
			if b != nil {
				b.Free()
			}
			q.dropFrame()
		case q.asm == nil && !q.drop && last:
			b.SetLen(int(d.Len))
			bytes += uint64(d.Len)
			bufs[k] = b
			k++
			continue
		default:
			if q.asm == nil && !q.drop {
				if q.asm = q.big.Get(); q.asm == nil {
					q.rxBad.Add(1)
					q.drop = true
				} else {
					q.asm.SetLen(0)
				}
			}
			if q.asm != nil {
				if off := q.asm.Len(); off+int(d.Len) > q.asm.Cap() {
					q.dropFrame()
				} else {
					copy(q.asm.Data()[off:], b.Data()[:d.Len])
					q.asm.SetLen(off + int(d.Len))
				}
			}
			b.Free()
		}
		if last {
			if q.asm != nil {
				bytes += uint64(q.asm.Len())
				bufs[k] = q.asm
				k++
			}
			q.asm, q.drop = nil, false
		}
	}
	return q.rxTaken(i, k, bytes)
}

// dropFrame drops the frame being received (counted once) and the rest of its chunks.
func (q *queue) dropFrame() {
	if q.drop {
		return
	}
	if q.asm != nil {
		q.asm.Free()
		q.asm = nil
	}
	q.rxBad.Add(1)
	q.drop = true
}

// reclaim frees the buffers the kernel has sent.
func (q *queue) reclaim() {
	r := &q.comp
	n := r.avail()
	if n == 0 {
		return
	}
	for i := uint32(0); i < n; i++ {
		addr := r.descs[(r.local+i)&r.mask]
		if idx := addr >> q.shift; idx < uint64(len(q.byChunk)) {
			q.byChunk[idx].Free()
		}
	}
	r.local += n
	r.release()
	q.txQueued -= n
}

// txBurst queues bufs on the TX ring: a buffer of this UMEM as it is, any other copied
// into one of the TX pool's.
func (q *queue) txBurst(bufs []*nic.Buf) int {
	q.reclaim()
	r := &q.tx
	free := r.free(uint32(len(bufs)))
	n, queued, frames := 0, uint32(0), uint64(0)
	var bytes uint64
	for ; n < len(bufs) && queued < free; n++ {
		b := bufs[n]
		l := b.Len()
		if l < 14 || l > q.txMax {
			q.txBad.Add(1)
			b.Free()
			continue
		}
		if l > q.maxFrame {
			// Multi-buffer (txMax is above a chunk only then): over several chunks.
			segs := uint32((l + q.maxFrame - 1) / q.maxFrame)
			rem := r.free(segs) // past the descriptors queued in this burst
			if rem < segs || q.txPool.Avail() < int(segs) {
				break
			}
			free = queued + rem
			src := b.Bytes()
			for off := 0; off < l; off += q.maxFrame {
				c := q.txPool.Get()
				m := min(q.maxFrame, l-off)
				copy(c.Data(), src[off:off+m])
				c.SetLen(m)
				var opt uint32
				if off+m < l {
					opt = unix.XDP_PKT_CONTD
				}
				r.descs[r.local&r.mask] = unix.XDPDesc{Addr: c.IOVA(), Len: uint32(m), Options: opt}
				r.local++
			}
			b.Free()
			queued += segs
			frames++
			bytes += uint64(l)
			continue
		}
		if b.Pool().DMA() != q.dma {
			c := q.txPool.Get()
			if c == nil {
				break
			}
			copy(c.Data(), b.Bytes())
			c.SetLen(l)
			b.Free()
			b = c
		}
		r.descs[r.local&r.mask] = unix.XDPDesc{Addr: b.IOVA(), Len: uint32(l)}
		r.local++
		queued++
		frames++
		bytes += uint64(l)
	}
	if full := len(bufs) - n; full > 0 {
		q.txFull.Add(uint64(full))
	}
	if queued > 0 {
		r.publish()
		q.txQueued += queued
		q.txPackets.Add(frames)
		q.txBytes.Add(bytes)
		q.kickTx()
	}
	return n
}

// rxEmpty runs at a receive that found nothing: a wake-up of the driver when the fill
// ring asks for one (zero-copy, after it ran out of buffers: a busy poller never arms,
// and the driver would wait for ever), and with busy_poll the recvfrom in which the
// kernel polls the queue's NAPI (as DPDK's net_af_xdp does at every empty receive when
// its busy budget is set). Copy mode never sets the fill ring's flag: then, without
// busy_poll, this is one load.
func (q *queue) rxEmpty() {
	if atomic.LoadUint32(q.rxWake)&unix.XDP_RING_NEED_WAKEUP != 0 {
		q.kickRx()
	}
}

// alwaysWake is rxWake for a busy-polling socket: its need-wakeup bit is always set.
var alwaysWake uint32 = unix.XDP_RING_NEED_WAKEUP

// kickTx asks the kernel to send when the TX ring says it needs it (always, in copy mode).
// The system calls of the kicks are raw (no runtime entry and exit: ~250 instructions a
// call under callgrind, bench/afxdpcg.sh): MSG_DONTWAIT returns without sleeping, and a
// poll thread keeps its P through them as it does while it spins.
func (q *queue) kickTx() {
	if !q.tx.needWakeup() {
		return
	}
	q.kicks.Add(1)
	_, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(q.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
	switch e {
	case 0, unix.EAGAIN, unix.EBUSY, unix.ENOBUFS:
		// Sent what it could; the next burst or arm kicks again.
	default:
		q.kickErrs.Add(1)
	}
}

// arm is EnableRxInterrupt: the fill ring full, TX flushed and the completions taken,
// and a wake-up of the driver when the fill ring asks for one (zero-copy, after it ran
// out of buffers): epoll_wait does not kick it as poll() does.
func (q *queue) arm() {
	q.refill()
	q.reclaim()
	if q.txQueued > 0 {
		q.kickTx()
	}
	if q.fill.needWakeup() {
		q.kickRx()
	}
}

// kickRx wakes the driver's receive (or runs the busy poll) with a non-blocking recvfrom.
func (q *queue) kickRx() {
	q.kicks.Add(1)
	_, _, e := unix.RawSyscall6(unix.SYS_RECVFROM, uintptr(q.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
	if e != 0 && e != unix.EAGAIN {
		q.kickErrs.Add(1)
	}
}

// close releases the socket (unbinding it), its rings and its UMEM. The pools are not
// closed one by one: their memory is the UMEM.
func (q *queue) close() error {
	var errs []error
	if q.vec != nil {
		errs = append(errs, q.vec.Close())
	}
	for _, m := range q.maps {
		errs = append(errs, unix.Munmap(m))
	}
	q.maps = nil
	if q.fd >= 0 {
		errs = append(errs, unix.Close(q.fd))
		q.fd = -1
	}
	if q.umem != nil {
		errs = append(errs, q.umem.unmap())
	}
	return errors.Join(errs...)
}

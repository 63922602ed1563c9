package vhost

import (
	"fmt"
	"sync"

	"github.com/uiod/uiod/nic"
)

// vring is one split virtqueue as the device sees it. The control goroutine configures it
// under mu; the poll thread uses it under mu too, taken with TryLock, so that a ring being
// reconfigured is skipped for a burst and the poll thread never waits.
type vring struct {
	mu sync.Mutex

	// Configuration, from the front end's messages.
	num      uint32
	maxChain uint32 // descriptors a chain may have: min(num, maxChainLen)
	addr     vringAddr
	hasAddr  bool
	base     uint16 // SET_VRING_BASE: the first available entry to take
	kickSet  bool   // SET_VRING_KICK arrived (with a descriptor or "poll")
	noKick   bool   // ... and it was "poll" (no descriptor): the ring is never kicked
	enabled  bool
	call     *caller // signals the call eventfd off the poll thread, nil for none
	eventIdx bool

	// Running state, valid while ready ("started": it stays started while disabled, and a
	// disabled ring is processed without effect, see RxBurst and TxBurst).
	ready     bool
	mem       *memTable
	lay       ringLayout
	last      regionCache // the region of mem the ring's last buffer was in
	mask      uint16
	lastAvail uint16   // next available entry to take
	usedIdx   uint16   // shadow of the used index
	usedFlags uint16   // shadow of the used flags
	cur       *nic.Buf // the buffer being filled (freed on a fault)
	oldFault  bool     // the poll thread's SetPanicOnFault setting before the burst
}

// ringLayout is a ring's parts in the mapped memory.
type ringLayout struct {
	desc     []byte // 16·num bytes
	avail    []byte // 6+2·num bytes (flags, idx, ring, used_event)
	used     []byte // 6+8·num bytes (flags, idx, ring, avail_event)
	idxOff   int    // the aligned 32-bit word of avail that holds idx
	idxShift uint   // ... and idx's place in it

	availRing []uint16   // avail's num entries (ring_unsafe.go: ringViews)
	usedRing  []usedElem // used's num entries
}

// maxChainLen bounds a descriptor chain (the specification lets a device set "a reasonable
// limit"; Linux's vhost allows UIO_MAXIOV, 1024): a chain walk costs at most this many
// steps on the shared poll thread, whatever the ring size.
const maxChainLen = 1024

// canStart reports whether the front end has sent everything a ring needs to start
// (SET_VRING_KICK starts it; SET_VRING_ENABLE only says whether it has effect).
func (r *vring) canStart() bool {
	return r.num != 0 && r.hasAddr && r.kickSet
}

// running reports whether the ring is started and enabled (the port's link needs both).
func (r *vring) running() bool { return r.ready && r.enabled }

// start lays the ring over mem and takes entries from base on; on error it stays
// stopped. It reads the front end's memory: call it armed (Port.armed). It returns the
// used index the ring resumes from when that is not the base the front end sent.
func (r *vring) start(mem *memTable) (resumed bool, err error) {
	l, err := r.plan(mem)
	if err != nil {
		return false, err
	}
	r.commit(mem, l)
	// A front end that resumes its rings after the back end went away (virtio-user in
	// server mode, QEMU with reconnect) may send a base that is not where its rings are:
	// as DPDK's and QEMU's own back ends do, the used index in its memory wins, and entries
	// available beyond it are taken (a frame may be sent twice).
	r.usedIdx = le16(r.lay.used, 2)
	r.lastAvail = r.usedIdx
	r.usedFlags = 0
	r.ready = true
	return r.usedIdx != r.base, nil
}

// plan translates the ring's addresses in mem without changing the ring. The available
// and used rings' head words are loaded and stored atomically: their host addresses must
// be aligned (the guest addresses were checked by setAddr; the region's uva and offset
// could still skew the mapping).
func (r *vring) plan(mem *memTable) (ringLayout, error) {
	if mem == nil {
		return ringLayout{}, fmt.Errorf("%w: vring started before SET_MEM_TABLE", errProto)
	}
	n := int(r.num)
	l := ringLayout{
		desc:  mem.uvaRange(r.addr.desc, 16*n),
		avail: mem.uvaRange(r.addr.avail, 6+2*n),
		used:  mem.uvaRange(r.addr.used, 6+8*n),
	}
	switch {
	case l.desc == nil:
		return l, fmt.Errorf("%w: descriptor table at 0x%x (%d entries) outside every region", errProto, r.addr.desc, n)
	case l.avail == nil:
		return l, fmt.Errorf("%w: available ring at 0x%x (%d entries) outside every region", errProto, r.addr.avail, n)
	case l.used == nil:
		return l, fmt.Errorf("%w: used ring at 0x%x (%d entries) outside every region", errProto, r.addr.used, n)
	case hostAlign(l.avail, 2) != 0 || hostAlign(l.used, 4) != 0:
		return l, fmt.Errorf("%w: rings at avail 0x%x used 0x%x are misaligned in the region's file (uva and mmap_offset disagree)",
			errProto, r.addr.avail, r.addr.used)
	}
	l.availRing, l.usedRing = ringViews(l.avail, l.used, n)
	l.idxShift = 16
	if hostAlign(l.avail, 4) != 0 {
		l.idxOff, l.idxShift = 2, 0 // avail is 2 mod 4: idx opens the next word
	}
	return l, nil
}

// commit lays the ring over mem (its indices stay) and forgets the region it last
// translated into, which may belong to the table mem replaces. Called with mu held.
func (r *vring) commit(mem *memTable, l ringLayout) {
	r.mem, r.lay, r.last = mem, l, regionCache{}
	r.mask = uint16(r.num - 1)
}

// relayout lays a running ring over mem again (its addresses changed); a ring that no
// longer fits is stopped. Called with mu held.
func (r *vring) relayout(mem *memTable) error {
	if !r.ready {
		return nil
	}
	l, err := r.plan(mem)
	if err != nil {
		r.stop()
		return err
	}
	r.commit(mem, l)
	return nil
}

// stop halts the ring (the poll thread skips it) and forgets the memory. Called with mu held.
func (r *vring) stop() {
	r.ready = false
	r.mem, r.lay, r.last = nil, ringLayout{}, regionCache{}
}

// clear stops the ring and forgets its configuration; it returns the call notifier for the
// caller to close outside the lock. Called with mu held.
func (r *vring) clear() *caller {
	r.stop()
	c := r.call
	r.call = nil
	r.num, r.maxChain, r.addr, r.hasAddr, r.base = 0, 0, vringAddr{}, false, 0
	r.kickSet, r.noKick, r.enabled, r.eventIdx = false, false, false, false
	return c
}

// setAddr checks a SET_VRING_ADDR: the specification's alignments (descriptors 16, the
// available ring 2, the used ring 4) and no dirty logging.
func (r *vring) setAddr(a vringAddr) error {
	switch {
	case a.flags != 0:
		return fmt.Errorf("%w: SET_VRING_ADDR: flags 0x%x (dirty logging is not offered)", errProto, a.flags)
	case a.desc%16 != 0 || a.avail%2 != 0 || a.used%4 != 0:
		return fmt.Errorf("%w: SET_VRING_ADDR: misaligned ring (desc 0x%x avail 0x%x used 0x%x)", errProto, a.desc, a.avail, a.used)
	}
	r.addr, r.hasAddr = a, true
	return nil
}

// setNum checks a SET_VRING_NUM: a power of two up to 32768.
func (r *vring) setNum(n uint32) error {
	if n == 0 || n > maxRingSize || n&(n-1) != 0 {
		return fmt.Errorf("%w: SET_VRING_NUM: %d entries, want a power of two up to %d", errProto, n, maxRingSize)
	}
	r.num, r.maxChain = n, min(n, maxChainLen)
	return nil
}

// usedEvent is used_event (EVENT_IDX), after the available ring's entries.
func (r *vring) usedEvent() uint16 { return le16(r.lay.avail, 4+2*int(r.num)) }

// setAvailEvent stores avail_event (EVENT_IDX), after the used ring's entries.
func (r *vring) setAvailEvent(v uint16) { put16(r.lay.used, 4+8*int(r.num), v) }

// availIdx is the front end's available index (an acquire load).
func (r *vring) availIdx() uint16 { return loadAvailIdx(r.lay.avail, r.lay.idxOff, r.lay.idxShift) }

// needEvent is the specification's vring_need_event: whether moving an index from old to
// new passes event, the index the other side asked to be told about.
func needEvent(event, new, old uint16) bool { return new-event-1 < new-old }

// publish stores the used index after entries old..usedIdx were written, and reports
// whether the front end asked to be interrupted for them. The store is a full fence
// (storeUsedHead): the loads of used_event and of the available flags come after it.
func (r *vring) publish(old uint16) bool {
	storeUsedHead(r.lay.used, r.usedFlags, r.usedIdx)
	if r.eventIdx {
		return needEvent(r.usedEvent(), r.usedIdx, old)
	}
	return le16(r.lay.avail, 0)&availNoInterrupt == 0
}

// Ring flags and descriptor flags.
const (
	availNoInterrupt = 1
	usedNoNotify     = 1
	descNext         = 1
	descWrite        = 2
	descIndirect     = 4
)

// setNotify asks the front end to kick on its next available entry (on) or not to (off):
// with EVENT_IDX avail_event names the next entry when on and is left behind when off,
// otherwise VRING_USED_F_NO_NOTIFY is cleared or set. The store of the used ring's head
// that follows is the full fence before the caller re-checks the available index. It
// writes the front end's memory: call it armed.
func (r *vring) setNotify(on bool) {
	if r.eventIdx {
		if on {
			r.setAvailEvent(r.lastAvail)
		}
	} else if on {
		r.usedFlags &^= usedNoNotify
	} else {
		r.usedFlags |= usedNoNotify
	}
	storeUsedHead(r.lay.used, r.usedFlags, r.usedIdx)
}

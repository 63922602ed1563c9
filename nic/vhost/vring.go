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
	addr     vringAddr
	hasAddr  bool
	base     uint16 // SET_VRING_BASE: the first available entry to take
	kickSet  bool   // SET_VRING_KICK arrived (with a descriptor or "poll")
	enabled  bool
	call     int // call eventfd, -1 for none
	eventIdx bool

	// Running state, valid while ready.
	ready     bool
	mem       *memTable
	desc      []byte // 16·num bytes
	avail     []byte // 6+2·num bytes (flags, idx, ring, used_event)
	used      []byte // 6+8·num bytes (flags, idx, ring, avail_event)
	mask      uint16
	lastAvail uint16 // next available entry to take
	usedIdx   uint16 // shadow of the used index
	usedFlags uint16 // shadow of the used flags
	sig       [8]byte
	cur       *nic.Buf // the buffer being filled (freed on a fault)
	oldFault  bool     // the poll thread's SetPanicOnFault setting before the burst
}

func newVring() vring { return vring{call: -1} }

// canStart reports whether the front end has sent everything a ring needs.
func (r *vring) canStart() bool {
	return r.num != 0 && r.hasAddr && r.kickSet && r.enabled
}

// start lays the ring over mem and takes entries from base on; on error it stays
// stopped. Called with mu held.
func (r *vring) start(mem *memTable) error {
	if err := r.layout(mem); err != nil {
		return err
	}
	// A front end that resumes its rings after the back end went away (virtio-user in
	// server mode, QEMU with reconnect) may send a base that is not where its rings are:
	// as DPDK's and QEMU's own back ends do, the used index in its memory wins, and entries
	// available beyond it are taken (a frame may be sent twice).
	r.usedIdx = le16(r.used, 2)
	r.lastAvail = r.usedIdx
	r.usedFlags = 0
	r.ready = true
	return nil
}

// layout translates the ring's addresses in mem, keeping its indices (a new memory table
// under a running ring). Called with mu held.
func (r *vring) layout(mem *memTable) error {
	if mem == nil {
		return fmt.Errorf("%w: vring started before SET_MEM_TABLE", errProto)
	}
	n := int(r.num)
	desc := mem.uvaRange(r.addr.desc, 16*n)
	avail := mem.uvaRange(r.addr.avail, 6+2*n)
	used := mem.uvaRange(r.addr.used, 6+8*n)
	switch {
	case desc == nil:
		return fmt.Errorf("%w: descriptor table at 0x%x (%d entries) outside every region", errProto, r.addr.desc, n)
	case avail == nil:
		return fmt.Errorf("%w: available ring at 0x%x (%d entries) outside every region", errProto, r.addr.avail, n)
	case used == nil:
		return fmt.Errorf("%w: used ring at 0x%x (%d entries) outside every region", errProto, r.addr.used, n)
	}
	r.mem, r.desc, r.avail, r.used = mem, desc, avail, used
	r.mask = uint16(n - 1)
	return nil
}

// stop halts the ring (the poll thread skips it) and forgets the memory. Called with mu held.
func (r *vring) stop() {
	r.ready = false
	r.mem, r.desc, r.avail, r.used = nil, nil, nil, nil
}

// clear stops the ring and forgets its configuration, closing its call eventfd. Called
// with mu held.
func (r *vring) clear() {
	r.stop()
	closeFd(r.call)
	r.call = -1
	r.num, r.addr, r.hasAddr, r.base = 0, vringAddr{}, false, 0
	r.kickSet, r.enabled, r.eventIdx = false, false, false
}

// setAddr checks a SET_VRING_ADDR: the alignment the ring code relies on (descriptors 16,
// both rings 4: the specification asks 2 of the available ring) and no dirty logging.
func (r *vring) setAddr(a vringAddr) error {
	switch {
	case a.flags != 0:
		return fmt.Errorf("%w: SET_VRING_ADDR: flags 0x%x (dirty logging is not offered)", errProto, a.flags)
	case a.desc%16 != 0 || a.avail%4 != 0 || a.used%4 != 0:
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
	r.num = n
	return nil
}

// usedEvent is used_event (EVENT_IDX), after the available ring's entries.
func (r *vring) usedEvent() uint16 { return le16(r.avail, 4+2*int(r.num)) }

// setAvailEvent stores avail_event (EVENT_IDX), after the used ring's entries.
func (r *vring) setAvailEvent(v uint16) { put16(r.used, 4+8*int(r.num), v) }

// needEvent is the specification's vring_need_event: whether moving an index from old to
// new passes event, the index the other side asked to be told about.
func needEvent(event, new, old uint16) bool { return new-event-1 < new-old }

// publish stores the used index after entries old..usedIdx were written, and reports
// whether the front end asked to be interrupted for them.
func (r *vring) publish(old uint16) bool {
	storeUsedHead(r.used, r.usedFlags, r.usedIdx)
	if r.eventIdx {
		return needEvent(r.usedEvent(), r.usedIdx, old)
	}
	flags, _ := loadAvailHead(r.avail)
	return flags&availNoInterrupt == 0
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
// that follows is the fence before the caller re-checks the available index.
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
	storeUsedHead(r.used, r.usedFlags, r.usedIdx)
}

package bridge

import (
	"math/bits"
	"sync/atomic"
)

// fdb is the forwarding database: (MAC, VLAN) → port, shared by every poll thread. It is
// an open-addressed table of slots, each two atomic 64-bit words (a key and a value),
// probed linearly from the key's hash over at most maxProbe slots. Lookups take no lock
// and write nothing: three loads per slot tried (key, value, key again). Learning writes
// with compare-and-swap only when something changes: a new entry, a MAC that moved, or a
// timestamp older than the refresh granule, so a known station costs its port no locked
// instruction most of the time. docs/design.md (the bridge's section) has the protocol.
//
// Key word: 0 empty (ends a probe chain: slots are never emptied again), keyTomb a
// removed entry (a chain goes on past it), otherwise keyLive | VLAN<<48 | MAC, with
// keyBusy set while the writer that claimed the slot fills in its value.
//
// Value word: port (bits 0–15), valStatic, valDead (bits 16–23), and the last time the
// source was seen in milliseconds (bits 24–63, 2^40 ms is 34 years). An entry is removed
// by whoever sets valDead with a CAS (the ager, or a learner reusing an expired slot):
// winning that CAS is the right to take the entry off its port's count and to replace
// the key, so two removers never both do it.
type fdb struct {
	slots []fdbSlot
	mask  uint64
	shift uint
	// counts are the dynamic entries per port, the MAC limit's count.
	counts []portCount
}

type fdbSlot struct {
	key atomic.Uint64
	val atomic.Uint64
}

type portCount struct {
	n atomic.Int64
	_ [56]byte // its own cache line: learners on different ports do not share one
}

const (
	keyLive = 1 << 60
	keyBusy = 1 << 61
	keyTomb = 1 << 62

	valStatic = 1 << 16
	valDead   = 1 << 17
	valTime   = 24

	// maxProbe bounds a probe chain: a lookup reads at most this many slots, and a key
	// that finds no free slot among them is not learned (counted as table full).
	maxProbe = 32
)

// fdbKey is the key word of (mac, vid); mac is the 48-bit address as a big-endian number.
func fdbKey(mac uint64, vid uint16) uint64 {
	return keyLive | uint64(vid&0xfff)<<48 | mac&(1<<48-1)
}

func keyMAC(k uint64) uint64  { return k & (1<<48 - 1) }
func keyVLAN(k uint64) uint16 { return uint16(k>>48) & 0xfff }

func fdbVal(port uint16, ms int64, flags uint64) uint64 {
	return uint64(port) | flags | uint64(ms)<<valTime
}

func valPort(v uint64) uint16 { return uint16(v) }
func valMs(v uint64) int64    { return int64(v >> valTime) }

// newFDB makes a table of at least 2×entries slots, a power of two, for ports ports.
func newFDB(entries, ports int) *fdb {
	n := 1 << bits.Len(uint(2*entries-1))
	return &fdb{slots: make([]fdbSlot, n), mask: uint64(n - 1), shift: uint(64 - bits.Len(uint(n-1))), counts: make([]portCount, ports)}
}

func (t *fdb) home(k uint64) uint64 {
	return (k * 0x9e3779b97f4a7c15) >> t.shift & t.mask
}

// live reports whether value v is an entry in force at now (ms) under ageing ageMs.
func live(v uint64, now, ageMs int64) bool {
	return v&valDead == 0 && (v&valStatic != 0 || now-valMs(v) <= ageMs)
}

// lookup returns the port of key k at now (ms), if an entry in force has it.
func (t *fdb) lookup(k uint64, now, ageMs int64) (uint16, bool) {
	h := t.home(k)
	for i := range uint64(maxProbe) {
		s := &t.slots[(h+i)&t.mask]
		k1 := s.key.Load()
		if k1 == 0 {
			return 0, false
		}
		if k1 != k {
			continue
		}
		v := s.val.Load()
		if s.key.Load() != k1 || !live(v, now, ageMs) {
			return 0, false
		}
		return valPort(v), true
	}
	return 0, false
}

// learnResult is what learn did.
type learnResult uint8

const (
	learnNone   learnResult = iota // known, nothing changed (or a race: next frame again)
	learnNew                       // a new entry
	learnMoved                     // the MAC moved to this port
	learnLimit                     // refused: the port has its MAC limit of entries
	learnFull                      // refused: no free slot in the key's probe chain
	learnStatic                    // a static entry elsewhere: not moved
)

// learn records that key k was seen on port at now (ms). limit is the port's MAC limit
// (0 none); refresh is how old (ms) an entry's timestamp may get before it is rewritten.
func (t *fdb) learn(k uint64, port uint16, now, ageMs, refresh int64, limit int64) learnResult {
	h := t.home(k)
	var free *fdbSlot
	var freeKey, freeVal uint64
probe:
	for i := range uint64(maxProbe) {
		s := &t.slots[(h+i)&t.mask]
		k1 := s.key.Load()
		switch {
		case k1 == k:
			return t.update(s, k, port, now, ageMs, refresh, limit)
		case k1 == 0:
			if free == nil {
				free, freeKey = s, 0
			}
			break probe // the chain ends here: k is not in the table
		case k1&keyBusy != 0:
			if k1&^keyBusy == k {
				return learnNone // another thread is adding it right now
			}
		case k1 == keyTomb:
			if free == nil {
				free, freeKey = s, keyTomb
			}
		case free == nil:
			if v := s.val.Load(); v&(valStatic|valDead) == 0 && !live(v, now, ageMs) {
				free, freeKey, freeVal = s, k1, v // an expired entry: reusable
			}
		}
	}
	if free == nil {
		return learnFull
	}
	if !t.take(port, limit) {
		return learnLimit
	}
	switch freeKey {
	case 0, keyTomb:
		if !free.key.CompareAndSwap(freeKey, k|keyBusy) {
			t.counts[port].n.Add(-1)
			return learnNone
		}
	default:
		if !t.remove(free, freeKey, freeVal, k|keyBusy) {
			t.counts[port].n.Add(-1)
			return learnNone
		}
	}
	free.val.Store(fdbVal(port, now, 0))
	free.key.Store(k)
	return learnNew
}

// take counts one more entry on port unless it has limit of them already (0: no limit).
func (t *fdb) take(port uint16, limit int64) bool {
	c := &t.counts[port].n
	if limit <= 0 {
		c.Add(1)
		return true
	}
	for {
		n := c.Load()
		if n >= limit {
			return false
		}
		if c.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// remove takes the dynamic entry (k, v) out of slot s, putting newKey in its place, if
// no one else changed it first: it marks the value dead, then uncounts the entry.
func (t *fdb) remove(s *fdbSlot, k, v, newKey uint64) bool {
	if !s.val.CompareAndSwap(v, v|valDead) {
		return false
	}
	t.counts[valPort(v)].n.Add(-1)
	s.key.Store(newKey)
	return true
}

// update is learn for the slot s that holds k.
func (t *fdb) update(s *fdbSlot, k uint64, port uint16, now, ageMs, refresh, limit int64) learnResult {
	v := s.val.Load()
	if s.key.Load() != k || v&valDead != 0 {
		return learnNone
	}
	if v&valStatic != 0 {
		if valPort(v) != port {
			return learnStatic
		}
		return learnNone
	}
	old := valPort(v)
	if old == port {
		if now-valMs(v) < refresh {
			return learnNone // the hot path's usual case: no write at all
		}
		s.val.CompareAndSwap(v, fdbVal(port, now, 0)) // lost to another writer: it is as new
		return learnNone
	}
	if !t.take(port, limit) {
		return learnLimit
	}
	if !s.val.CompareAndSwap(v, fdbVal(port, now, 0)) {
		t.counts[port].n.Add(-1)
		return learnNone
	}
	t.counts[old].n.Add(-1)
	if !live(v, now, ageMs) {
		return learnNew // an expired entry of another port: learnt afresh here
	}
	return learnMoved
}

// addStatic puts a static entry in; before the table is shared (New).
func (t *fdb) addStatic(k uint64, port uint16) bool {
	h := t.home(k)
	for i := range uint64(maxProbe) {
		s := &t.slots[(h+i)&t.mask]
		if k1 := s.key.Load(); k1 == 0 || k1 == k {
			s.val.Store(fdbVal(port, 0, valStatic))
			s.key.Store(k)
			return true
		}
	}
	return false
}

// settled reads slot i's key and then its value; ok is false if the slot holds no entry
// or one being written (its value is then not read). The caller checks the key again
// after the value when it must know the two belong together.
func (t *fdb) settled(i int) (s *fdbSlot, k, v uint64, ok bool) {
	s = &t.slots[i]
	k = s.key.Load()
	if k&keyLive == 0 || k&keyBusy != 0 {
		return s, k, 0, false
	}
	return s, k, s.val.Load(), true
}

// expire removes the dynamic entries not seen for longer than ageMs at now (ms), and
// returns how many it removed. Any goroutine may run it at any time (the ager does).
func (t *fdb) expire(now, ageMs int64) int {
	n := 0
	for i := range t.slots {
		s, k, v, ok := t.settled(i)
		if !ok || v&(valStatic|valDead) != 0 || live(v, now, ageMs) || s.key.Load() != k {
			continue
		}
		if t.remove(s, k, v, keyTomb) {
			n++
		}
	}
	return n
}

// entry is one entry of the table as walk sees it.
type entry struct {
	key, val uint64
}

// walk calls fn for every entry in force at now (ms).
func (t *fdb) walk(now, ageMs int64, fn func(entry)) {
	for i := range t.slots {
		s, k, v, ok := t.settled(i)
		if !ok || s.key.Load() != k || !live(v, now, ageMs) {
			continue
		}
		fn(entry{k, v})
	}
}

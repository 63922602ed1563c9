package lpm

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// NextHop is what a route resolves to: an index into the caller's table of next hops
// (l3fwd: output port and neighbour MAC), at most MaxNextHop.
type NextHop uint32

// MaxNextHop is the largest NextHop a table stores.
const MaxNextHop NextHop = valMask

// Errors of Insert and Delete.
var (
	// ErrNotFound is returned by Delete for a prefix that is not in the table.
	ErrNotFound = errors.New("no such route")
	// ErrFull is returned by Insert when the table has no room for another group of
	// 256 entries below its first level.
	ErrFull = errors.New("route table full")
)

// An entry is one uint32 of a table: bit 31 valid, bit 30 ext (the value is a group of the
// next level rather than a next hop), bits 22–29 the depth (prefix length) of the route it
// holds, bits 0–21 the next hop or group number.
const (
	validBit   = 1 << 31
	extBit     = 1 << 30
	depthShift = 22
	depthMask  = 0xff << depthShift
	valMask    = 1<<depthShift - 1
	groupBits  = 8 // every level below the first is one byte of the address
	groupSize  = 1 << groupBits
	maxGroups  = valMask + 1
)

func leaf(nh NextHop, depth int) uint32 { return validBit | uint32(depth)<<depthShift | uint32(nh) }
func depthOf(e uint32) int              { return int(e&depthMask) >> depthShift }

// rule is one route as inserted: its masked address and length.
type rule struct {
	addr  [16]byte
	depth uint8
}

// trie is a multibit trie with controlled prefix expansion: a first level of 2^first
// entries indexed by the address's top bits, then groups of 256 entries, one per further
// byte (DIR-24-8 for IPv4 with first = 24; 16 then 8-bit strides for IPv6). Every entry
// holds the longest route covering it, or a group that refines it. The rules are kept
// beside it so that a deleted route's range falls back to the next shorter one.
type trie struct {
	bits  int // address length: 32 or 128
	first int // bits the first level consumes
	root  []uint32
	pages PageInfo // what root lies on
	tbl8  []uint32
	free  []uint32 // released group numbers
	rules map[rule]NextHop
}

func newTrie(bits, first int) trie {
	root, pages := allocRoot(1 << first)
	return trie{bits: bits, first: first, root: root, pages: pages, rules: map[rule]NextHop{}}
}

// clone is a deep copy of t; its first level is allocated as a new table's is.
func (t *trie) clone() trie {
	c := *t
	c.root, c.pages = allocRoot(len(t.root))
	copy(c.root, t.root)
	c.tbl8 = slices.Clone(t.tbl8)
	c.free = slices.Clone(t.free)
	c.rules = maps.Clone(t.rules)
	return c
}

// index returns the bits of a from bit off (0 = most significant), n of them (n ≤ 24).
func index(a *[16]byte, off, n int) uint32 {
	var v uint32
	for i := off; i < off+n; i += 8 {
		v = v<<8 | uint32(a[i/8])
	}
	return v
}

// mask clears the bits of a beyond depth.
func mask(a [16]byte, depth int) [16]byte {
	for i := range a {
		switch lo := i * 8; {
		case lo >= depth:
			a[i] = 0
		case lo+8 > depth:
			a[i] &= byte(0xff << (lo + 8 - depth))
		}
	}
	return a
}

// check refuses a prefix the table cannot hold as it is.
func (t *trie) check(a [16]byte, depth int) error {
	if depth < 0 || depth > t.bits {
		return fmt.Errorf("prefix length %d outside [0, %d]", depth, t.bits)
	}
	if mask(a, depth) != a {
		return errors.New("prefix has bits set beyond its length")
	}
	return nil
}

func (t *trie) insert(a [16]byte, depth int, nh NextHop) error {
	if err := t.check(a, depth); err != nil {
		return err
	}
	if nh > MaxNextHop {
		return fmt.Errorf("next hop %d above %d", nh, MaxNextHop)
	}
	// Room for the groups this route may need, before anything changes.
	if need := (depth - t.first + groupBits - 1) / groupBits; need > 0 && len(t.tbl8)/groupSize-len(t.free)+need > maxGroups {
		return ErrFull
	}
	t.rules[rule{a, uint8(depth)}] = nh
	t.set(&a, depth, leaf(nh, depth), func(e uint32) bool { return e&validBit == 0 || depthOf(e) <= depth })
	return nil
}

func (t *trie) delete(a [16]byte, depth int) error {
	if err := t.check(a, depth); err != nil {
		return err
	}
	r := rule{a, uint8(depth)}
	if _, ok := t.rules[r]; !ok {
		return ErrNotFound
	}
	delete(t.rules, r)
	var repl uint32 // the next shorter route covering this one, or none
	for d := depth - 1; d >= 0; d-- {
		if nh, ok := t.rules[rule{mask(a, d), uint8(d)}]; ok {
			repl = leaf(nh, d)
			break
		}
	}
	// The entries the route holds are the ones of its range at its own depth: two routes
	// of the same length never overlap.
	t.set(&a, depth, repl, func(e uint32) bool { return e&validBit != 0 && depthOf(e) == depth })
	return nil
}

// set writes e into every entry of a/depth's range for which replace holds, descending
// into the groups that refine the range. Groups are created along a/depth's path when it
// ends below the first level, and collapsed on the way back when all their entries agree.
// Groups are named by number, never held as slices: creating one may move tbl8.
func (t *trie) set(a *[16]byte, depth int, e uint32, replace func(uint32) bool) {
	t.setLevel(rootGroup, 0, t.first, a, depth, e, replace)
}

// rootGroup names the first level among the group numbers.
const rootGroup = ^uint32(0)

// slot is entry i of group g.
func (t *trie) slot(g, i uint32) *uint32 {
	if g == rootGroup {
		return &t.root[i]
	}
	return &t.tbl8[g<<groupBits|i]
}

func (t *trie) setLevel(g uint32, off, stride int, a *[16]byte, depth int, e uint32, replace func(uint32) bool) {
	end := off + stride
	idx := index(a, off, stride)
	if depth <= end {
		span := uint32(1) << (end - depth)
		start := idx &^ (span - 1)
		for i := start; i < start+span; i++ {
			t.fill(t.slot(g, i), e, replace)
		}
		return
	}
	if s := t.slot(g, idx); *s&extBit == 0 {
		n := t.newGroup(*s)
		*t.slot(g, idx) = extBit | n
	}
	t.setLevel(*t.slot(g, idx)&valMask, end, groupBits, a, depth, e, replace)
	t.collapse(t.slot(g, idx))
}

// fill writes e into *slot, or into every entry of its group, where replace holds. It
// creates no group, so slot stays valid.
func (t *trie) fill(slot *uint32, e uint32, replace func(uint32) bool) {
	if *slot&extBit == 0 {
		if replace(*slot) {
			*slot = e
		}
		return
	}
	for i, g := 0, t.group(*slot); i < groupSize; i++ {
		t.fill(&g[i], e, replace)
	}
	t.collapse(slot)
}

// collapse turns *slot's group back into one entry when all its entries are the same leaf.
func (t *trie) collapse(slot *uint32) {
	if *slot&extBit == 0 {
		return
	}
	g := t.group(*slot)
	first := g[0]
	if first&extBit != 0 {
		return
	}
	for _, e := range g[1:] {
		if e != first {
			return
		}
	}
	t.free = append(t.free, *slot&valMask)
	clear(g)
	*slot = first
}

// newGroup returns the number of a group whose entries all hold e.
func (t *trie) newGroup(e uint32) uint32 {
	var n uint32
	if k := len(t.free); k > 0 {
		n = t.free[k-1]
		t.free = t.free[:k-1]
	} else {
		n = uint32(len(t.tbl8) / groupSize)
		t.tbl8 = append(t.tbl8, make([]uint32, groupSize)...)
	}
	g := t.tbl8[n*groupSize : (n+1)*groupSize]
	for i := range g {
		g[i] = e
	}
	return n
}

func (t *trie) group(slot uint32) []uint32 {
	n := slot & valMask
	return t.tbl8[n*groupSize : (n+1)*groupSize : (n+1)*groupSize]
}

// memory is the bytes the lookup tables take (first level and every group allocated,
// and the huge page of slack a THP first level is aligned in).
func (t *trie) memory() int {
	n := 4 * (cap(t.root) + cap(t.tbl8))
	if t.pages.Mode == PagesTHP {
		n += hugePage
	}
	return n
}

// groups is the number of groups in use.
func (t *trie) groups() int { return len(t.tbl8)/groupSize - len(t.free) }

// Package lpm is longest-prefix-match route lookup for l3fwd: Table4, a DIR-24-8 table
// (one memory access for a route of /24 or shorter, two for a longer one), and Table6, a
// multibit trie with a 16-bit first level and then one byte per level (a /48 in four
// accesses). Both map a prefix to a NextHop index, take inserts and deletes in any order,
// and look up without allocating. A table is not safe for concurrent use: build it, then
// share it read-only among the poll threads; to change a shared table, Clone it, change the
// copy and publish that.
package lpm

import (
	"fmt"
	"net/netip"
)

// Table4 is an IPv4 route table: DIR-24-8, 64 MiB for its first level plus 1 KiB for
// every /24 that holds a longer route. The first level is on transparent huge pages
// where the kernel has them (Pages, HugePages).
type Table4 struct {
	t   trie
	top *[1 << 24]uint32
}

// NewTable4 returns an empty IPv4 table.
func NewTable4() *Table4 {
	t := &Table4{t: newTrie(32, 24)}
	t.top = (*[1 << 24]uint32)(t.t.root)
	return t
}

func prefix4(p netip.Prefix) ([16]byte, int, error) {
	if !p.IsValid() || !p.Addr().Is4() {
		return [16]byte{}, 0, fmt.Errorf("%v: not an IPv4 prefix", p)
	}
	var a [16]byte
	b := p.Addr().As4()
	copy(a[:], b[:])
	return a, p.Bits(), nil
}

// Insert adds the route p → nh, replacing any route for exactly p. p must be IPv4 with no
// bits set beyond its length.
func (t *Table4) Insert(p netip.Prefix, nh NextHop) error {
	a, d, err := prefix4(p)
	if err == nil {
		err = t.t.insert(a, d, nh)
	}
	if err != nil {
		return fmt.Errorf("insert %v: %w", p, err)
	}
	return nil
}

// Delete removes the route for exactly p (ErrNotFound if there is none): its addresses
// fall back to the next shorter route covering them.
func (t *Table4) Delete(p netip.Prefix) error {
	a, d, err := prefix4(p)
	if err == nil {
		err = t.t.delete(a, d)
	}
	if err != nil {
		return fmt.Errorf("delete %v: %w", p, err)
	}
	return nil
}

// Lookup returns the next hop of the longest route covering a (an IPv4 address in host
// byte order), and false when no route does.
func (t *Table4) Lookup(a uint32) (NextHop, bool) {
	e := t.top[a>>8]
	if e&extBit != 0 {
		e = t.t.tbl8[(e&valMask)<<groupBits|a&(groupSize-1)]
	}
	return NextHop(e & valMask), e&validBit != 0
}

// Clone returns a copy of t that shares no memory with it, so that t may go on being
// looked up in (by other goroutines) while the copy is changed and then used in its place.
func (t *Table4) Clone() *Table4 {
	c := &Table4{t: t.t.clone()}
	c.top = (*[1 << 24]uint32)(c.t.root)
	return c
}

// Len is the number of routes.
func (t *Table4) Len() int { return len(t.t.rules) }

// Memory is the bytes the lookup tables take: the first level and every group allocated
// (the rule list that Delete consults is extra).
func (t *Table4) Memory() int { return t.t.memory() }

// Groups is the number of 256-entry groups in use below the first level.
func (t *Table4) Groups() int { return t.t.groups() }

// Pages says what pages the first level lies on, and how much of it the kernel backs
// by huge pages now (it reads /proc/self/smaps: call it when the table is built, not
// per lookup).
func (t *Table4) Pages() PageInfo {
	p := t.t.pages
	p.measure(t.t.root)
	return p
}

// Table6 is an IPv6 route table: a 16-bit first level (256 KiB), then a group of 256
// entries for each further byte a route needs.
type Table6 struct {
	t   trie
	top *[1 << 16]uint32
}

// NewTable6 returns an empty IPv6 table.
func NewTable6() *Table6 {
	t := &Table6{t: newTrie(128, 16)}
	t.top = (*[1 << 16]uint32)(t.t.root)
	return t
}

func prefix6(p netip.Prefix) ([16]byte, int, error) {
	if !p.IsValid() || !p.Addr().Is6() || p.Addr().Is4In6() || p.Addr().Zone() != "" {
		return [16]byte{}, 0, fmt.Errorf("%v: not an IPv6 prefix", p)
	}
	return p.Addr().As16(), p.Bits(), nil
}

// Insert adds the route p → nh, replacing any route for exactly p. p must be IPv6 (not an
// IPv4-mapped address) with no bits set beyond its length.
func (t *Table6) Insert(p netip.Prefix, nh NextHop) error {
	a, d, err := prefix6(p)
	if err == nil {
		err = t.t.insert(a, d, nh)
	}
	if err != nil {
		return fmt.Errorf("insert %v: %w", p, err)
	}
	return nil
}

// Delete removes the route for exactly p (ErrNotFound if there is none).
func (t *Table6) Delete(p netip.Prefix) error {
	a, d, err := prefix6(p)
	if err == nil {
		err = t.t.delete(a, d)
	}
	if err != nil {
		return fmt.Errorf("delete %v: %w", p, err)
	}
	return nil
}

// Lookup returns the next hop of the longest route covering a, and false when no route
// does.
func (t *Table6) Lookup(a *[16]byte) (NextHop, bool) {
	e := t.top[uint32(a[0])<<8|uint32(a[1])]
	for i := 2; e&extBit != 0 && i < len(a); i++ {
		e = t.t.tbl8[(e&valMask)<<groupBits|uint32(a[i])]
	}
	return NextHop(e & valMask), e&validBit != 0
}

// Clone returns a copy of t that shares no memory with it (see Table4.Clone).
func (t *Table6) Clone() *Table6 {
	c := &Table6{t: t.t.clone()}
	c.top = (*[1 << 16]uint32)(c.t.root)
	return c
}

// Len is the number of routes.
func (t *Table6) Len() int { return len(t.t.rules) }

// Memory is the bytes the lookup tables take.
func (t *Table6) Memory() int { return t.t.memory() }

// Groups is the number of 256-entry groups in use below the first level.
func (t *Table6) Groups() int { return t.t.groups() }

// Pages says what pages the first level lies on (see Table4.Pages; IPv6's first level
// is smaller than a huge page).
func (t *Table6) Pages() PageInfo {
	p := t.t.pages
	p.measure(t.t.root)
	return p
}

// Need is what a table's lookup memory may grow to: its first level (with the huge
// page of slack a THP first level is aligned in) and its groups of 256 entries at worst,
// in bytes. A growing group list may have up to a quarter more capacity than it uses.
type Need struct {
	First, Groups int64
}

// groupBytes is one group's size.
const groupBytes = groupSize * 4

// Need4 is an IPv4 table's need with routes routes: a route longer than /24 takes at
// most one group (none when it shares its /24 with another), a shorter one none.
func Need4(routes int) Need {
	return Need{First: 4<<24 + hugePage, Groups: int64(min(routes, maxGroups)) * groupBytes}
}

// Need6 is an IPv6 table's need with routes routes of at most bits bits each: a route
// takes at most one group per byte beyond the first level's 16 bits (four for a /48),
// and the table numbers at most 2^22 groups.
func Need6(routes, bits int) Need {
	per := max(0, (bits-16+groupBits-1)/groupBits)
	return Need{First: 4 << 16, Groups: min(int64(routes)*int64(per), maxGroups) * groupBytes}
}

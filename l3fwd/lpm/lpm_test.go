package lpm

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net/netip"
	"testing"
)

func addr4(s string) uint32 {
	b := netip.MustParseAddr(s).As4()
	return binary.BigEndian.Uint32(b[:])
}

// step is one operation of a table test: insert (nh ≥ 0) or delete (nh < 0) a prefix.
type step struct {
	prefix string
	nh     int
}

type probe struct {
	addr string
	nh   NextHop
	ok   bool
}

func TestTable4(t *testing.T) {
	tests := []struct {
		name   string
		steps  []step
		probes []probe
	}{
		{"empty", nil, []probe{{"10.0.0.1", 0, false}, {"0.0.0.0", 0, false}}},
		{"default route", []step{{"0.0.0.0/0", 7}}, []probe{{"1.2.3.4", 7, true}, {"255.255.255.255", 7, true}}},
		{"longest wins", []step{{"10.0.0.0/8", 1}, {"10.1.0.0/16", 2}, {"10.1.2.0/24", 3}, {"10.1.2.128/25", 4}, {"10.1.2.200/32", 5}},
			[]probe{{"10.9.9.9", 1, true}, {"10.1.9.9", 2, true}, {"10.1.2.3", 3, true}, {"10.1.2.129", 4, true},
				{"10.1.2.200", 5, true}, {"10.1.2.201", 4, true}, {"11.0.0.0", 0, false}}},
		{"shorter after longer", []step{{"10.1.2.200/32", 5}, {"10.1.2.0/24", 3}, {"10.0.0.0/8", 1}},
			[]probe{{"10.1.2.200", 5, true}, {"10.1.2.7", 3, true}, {"10.2.0.0", 1, true}}},
		{"delete falls back", []step{{"10.0.0.0/8", 1}, {"10.1.2.0/24", 3}, {"10.1.2.0/24", -1}},
			[]probe{{"10.1.2.3", 1, true}}},
		{"delete /32 collapses", []step{{"10.1.2.0/24", 3}, {"10.1.2.9/32", 9}, {"10.1.2.9/32", -1}},
			[]probe{{"10.1.2.9", 3, true}, {"10.1.2.10", 3, true}}},
		{"delete shorter keeps longer", []step{{"10.0.0.0/8", 1}, {"10.1.2.9/32", 9}, {"10.0.0.0/8", -1}},
			[]probe{{"10.1.2.9", 9, true}, {"10.1.2.10", 0, false}}},
		{"replace", []step{{"10.0.0.0/8", 1}, {"10.0.0.0/8", 2}}, []probe{{"10.0.0.1", 2, true}}},
		{"/25 and /31", []step{{"192.168.0.0/25", 1}, {"192.168.0.254/31", 2}},
			[]probe{{"192.168.0.127", 1, true}, {"192.168.0.128", 0, false}, {"192.168.0.255", 2, true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb := NewTable4()
			for _, s := range tt.steps {
				p := netip.MustParsePrefix(s.prefix)
				var err error
				if s.nh < 0 {
					err = tb.Delete(p)
				} else {
					err = tb.Insert(p, NextHop(s.nh))
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			for _, p := range tt.probes {
				nh, ok := tb.Lookup(addr4(p.addr))
				if nh != p.nh || ok != p.ok {
					t.Errorf("Lookup(%s) = %d, %v, want %d, %v", p.addr, nh, ok, p.nh, p.ok)
				}
			}
		})
	}
}

func TestTable6(t *testing.T) {
	tb := NewTable6()
	for _, s := range []step{{"::/0", 1}, {"2001:db8::/32", 2}, {"2001:db8:1::/48", 3}, {"2001:db8:1::1/128", 4}, {"2001:db8:1:2::/63", 5}} {
		if err := tb.Insert(netip.MustParsePrefix(s.prefix), NextHop(s.nh)); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []probe{{"::1", 1, true}, {"2001:db8:ffff::", 2, true}, {"2001:db8:1::2", 3, true},
		{"2001:db8:1::1", 4, true}, {"2001:db8:1:3::9", 5, true}, {"2001:db8:1:4::", 3, true}} {
		a := netip.MustParseAddr(p.addr).As16()
		if nh, ok := tb.Lookup(&a); nh != p.nh || ok != p.ok {
			t.Errorf("Lookup(%s) = %d, %v, want %d, %v", p.addr, nh, ok, p.nh, p.ok)
		}
	}
	if err := tb.Delete(netip.MustParsePrefix("2001:db8:1::1/128")); err != nil {
		t.Fatal(err)
	}
	a := netip.MustParseAddr("2001:db8:1::1").As16()
	if nh, _ := tb.Lookup(&a); nh != 3 {
		t.Errorf("after delete: %d, want 3", nh)
	}
}

func TestTableErrors(t *testing.T) {
	t4, t6 := NewTable4(), NewTable6()
	tests := []struct {
		name string
		err  error
		is   error
	}{
		{"host bits", t4.Insert(netip.MustParsePrefix("10.0.0.1/8"), 1), nil},
		{"v6 in v4", t4.Insert(netip.MustParsePrefix("::/0"), 1), nil},
		{"v4 in v6", t6.Insert(netip.MustParsePrefix("10.0.0.0/8"), 1), nil},
		{"mapped in v6", t6.Insert(netip.MustParsePrefix("::ffff:10.0.0.0/104"), 1), nil},
		{"next hop", t4.Insert(netip.MustParsePrefix("10.0.0.0/8"), MaxNextHop+1), nil},
		{"invalid", t4.Insert(netip.Prefix{}, 1), nil},
		{"delete missing", t4.Delete(netip.MustParsePrefix("10.0.0.0/8")), ErrNotFound},
		{"delete missing v6", t6.Delete(netip.MustParsePrefix("2001:db8::/32")), ErrNotFound},
	}
	for _, tt := range tests {
		if tt.err == nil {
			t.Errorf("%s: no error", tt.name)
		} else if tt.is != nil && !errors.Is(tt.err, tt.is) {
			t.Errorf("%s: %v, want %v", tt.name, tt.err, tt.is)
		}
	}
	if t4.Len() != 0 || t6.Len() != 0 || t4.Groups() != 0 {
		t.Errorf("refused inserts left routes: %d %d %d", t4.Len(), t6.Len(), t4.Groups())
	}
}

// TestLookupAllocs: a lookup allocates nothing.
func TestLookupAllocs(t *testing.T) {
	t4, t6 := NewTable4(), NewTable6()
	_ = t4.Insert(netip.MustParsePrefix("10.1.2.128/25"), 1)
	_ = t6.Insert(netip.MustParsePrefix("2001:db8::1/128"), 1)
	a4 := addr4("10.1.2.200")
	a6 := netip.MustParseAddr("2001:db8::1").As16()
	var sink NextHop
	if n := testing.AllocsPerRun(1000, func() {
		nh, _ := t4.Lookup(a4)
		nh6, _ := t6.Lookup(&a6)
		sink += nh + nh6
	}); n != 0 {
		t.Errorf("%v allocations per lookup", n)
	}
	_ = sink
}

// randomOps applies n random inserts and deletes to both the table and the naive trie,
// with prefixes drawn near each other so that they nest, then checks random addresses and
// the addresses at every prefix's edges.
func checkRandom(t *testing.T, r *rand.Rand, bits, n int) {
	t.Helper()
	var t4 *Table4
	var t6 *Table6
	if bits == 32 {
		t4 = NewTable4()
	} else {
		t6 = NewTable6()
	}
	ref := &naive{}
	base := r.Uint64()
	var prefixes []netip.Prefix
	for range n {
		var a [16]byte
		// Addresses share their top bits with a few bases so that prefixes nest.
		binary.BigEndian.PutUint64(a[:], base^(r.Uint64()>>(r.IntN(40)+8)))
		binary.BigEndian.PutUint64(a[8:], r.Uint64())
		var p netip.Prefix
		if bits == 32 {
			p = netip.PrefixFrom(netip.AddrFrom4([4]byte(a[:4])), r.IntN(33)).Masked()
		} else {
			p = netip.PrefixFrom(netip.AddrFrom16(a), r.IntN(129)).Masked()
		}
		if p.Addr().Is4In6() {
			continue
		}
		m := mask(a, p.Bits())
		if bits == 32 {
			copy(m[:], p.Addr().AsSlice())
			clear(m[4:])
		}
		if len(prefixes) > 0 && r.IntN(4) == 0 {
			q := prefixes[r.IntN(len(prefixes))]
			var qa [16]byte
			copy(qa[:], q.Addr().AsSlice())
			var err error
			if t4 != nil {
				err = t4.Delete(q)
			} else {
				err = t6.Delete(q)
			}
			if had := ref.delete(qa, q.Bits()); had != (err == nil) {
				t.Fatalf("delete %v: %v, reference had it: %v", q, err, had)
			}
			continue
		}
		nh := NextHop(r.IntN(1000))
		var err error
		if t4 != nil {
			err = t4.Insert(p, nh)
		} else {
			err = t6.Insert(p, nh)
		}
		if err != nil {
			t.Fatal(err)
		}
		ref.insert(m, p.Bits(), nh)
		prefixes = append(prefixes, p)
	}
	check := func(a [16]byte) {
		want, wok := ref.lookup(&a, bits)
		var got NextHop
		var ok bool
		if t4 != nil {
			got, ok = t4.Lookup(binary.BigEndian.Uint32(a[:]))
		} else {
			got, ok = t6.Lookup(&a)
		}
		if got != want || ok != wok {
			t.Fatalf("lookup %x: %d, %v, reference %d, %v", a[:bits/8], got, ok, want, wok)
		}
	}
	for _, p := range prefixes {
		var a [16]byte
		copy(a[:], p.Addr().AsSlice())
		check(a)
		last := a
		for i := p.Bits(); i < bits; i++ {
			last[i/8] |= 1 << (7 - i%8)
		}
		check(last)
	}
	for range 2000 {
		var a [16]byte
		binary.BigEndian.PutUint64(a[:], base^(r.Uint64()>>(r.IntN(40)+8)))
		binary.BigEndian.PutUint64(a[8:], r.Uint64())
		if bits == 32 {
			clear(a[4:])
		}
		check(a)
	}
}

func TestAgainstNaive(t *testing.T) {
	seeds, ops := uint64(5), 300
	if testing.Short() {
		seeds, ops = 2, 200
	}
	for _, bits := range []int{32, 128} {
		for seed := range seeds {
			checkRandom(t, rand.New(rand.NewPCG(seed, uint64(bits))), bits, ops)
		}
	}
}

// FuzzAgainstNaive: for any seed, random tables and addresses give the naive trie's answer.
func FuzzAgainstNaive(f *testing.F) {
	f.Add(uint64(1), uint64(2), uint8(50))
	f.Add(uint64(7), uint64(0), uint8(200))
	f.Fuzz(func(t *testing.T, s1, s2 uint64, n uint8) {
		r := rand.New(rand.NewPCG(s1, s2))
		bits := 32
		if s1&1 == 1 {
			bits = 128
		}
		checkRandom(t, r, bits, int(n))
	})
}

// TestClone: a clone answers as the original did, and changes to either leave the other
// as it was (no group, entry or rule shared).
func TestClone(t *testing.T) {
	t4, t6 := NewTable4(), NewTable6()
	for i, p := range []string{"0.0.0.0/0", "10.1.0.0/16", "10.1.2.128/25", "10.1.2.200/32"} {
		if err := t4.Insert(netip.MustParsePrefix(p), NextHop(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	for i, p := range []string{"::/0", "2001:db8::/32", "2001:db8:1:2::/64"} {
		if err := t6.Insert(netip.MustParsePrefix(p), NextHop(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	c4, c6 := t4.Clone(), t6.Clone()
	if err := c4.Insert(netip.MustParsePrefix("10.1.2.0/24"), 9); err != nil {
		t.Fatal(err)
	}
	if err := c4.Delete(netip.MustParsePrefix("10.1.2.200/32")); err != nil {
		t.Fatal(err)
	}
	if err := c6.Delete(netip.MustParsePrefix("2001:db8:1:2::/64")); err != nil {
		t.Fatal(err)
	}
	if err := t4.Insert(netip.MustParsePrefix("10.1.2.201/32"), 8); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tbl  *Table4
		addr string
		nh   NextHop
	}{
		{t4, "10.1.2.200", 4}, {t4, "10.1.2.7", 2}, {t4, "10.1.2.201", 8},
		{c4, "10.1.2.200", 3}, {c4, "10.1.2.7", 9}, {c4, "10.1.2.201", 3}, {c4, "192.0.2.1", 1},
	} {
		if nh, ok := c.tbl.Lookup(addr4(c.addr)); !ok || nh != c.nh {
			name := "original"
			if c.tbl == c4 {
				name = "clone"
			}
			t.Errorf("%s: %s → %d, %v; want %d", name, c.addr, nh, ok, c.nh)
		}
	}
	a := netip.MustParseAddr("2001:db8:1:2::9").As16()
	if nh, _ := t6.Lookup(&a); nh != 3 {
		t.Errorf("original v6: %d, want 3", nh)
	}
	if nh, _ := c6.Lookup(&a); nh != 2 {
		t.Errorf("clone v6: %d, want 2", nh)
	}
	if t4.Len() != 5 || c4.Len() != 4 || t6.Len() != 3 || c6.Len() != 2 {
		t.Errorf("lengths %d %d %d %d, want 5 4 3 2", t4.Len(), c4.Len(), t6.Len(), c6.Len())
	}
}

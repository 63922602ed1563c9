package lpm

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"os"
	"reflect"
	"runtime"
	"sync"
	"testing"
	"time"
)

// benchRoutes is the table the benchmarks look up in: 1 M distinct IPv4 routes with a
// length mix like a full Internet table (mostly /24, then /16–/23, a few shorter and a
// few longer), and 1 M random addresses.
const (
	benchRoutes = 1 << 20
	benchAddrs  = 1 << 20
)

var bench4 struct {
	once  sync.Once
	t     *Table4
	ref   *naive
	addrs []uint32
	heap  uint64 // heap the table took as it was built, its rule list included
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func benchLen(r *rand.Rand) int {
	switch x := r.IntN(100); {
	case x < 55:
		return 24
	case x < 90:
		return 16 + r.IntN(8)
	case x < 95:
		return 8 + r.IntN(8)
	default:
		return 25 + r.IntN(8)
	}
}

func setupBench4(b *testing.B) {
	bench4.once.Do(func() {
		r := rand.New(rand.NewPCG(1, 2))
		before := heapInUse()
		t := NewTable4()
		var routes []netip.Prefix
		var hops []NextHop
		for t.Len() < benchRoutes {
			var a [4]byte
			binary.BigEndian.PutUint32(a[:], r.Uint32())
			p := netip.PrefixFrom(netip.AddrFrom4(a), benchLen(r)).Masked()
			nh := NextHop(r.IntN(64))
			if err := t.Insert(p, nh); err != nil {
				b.Fatal(err)
			}
			routes, hops = append(routes, p), append(hops, nh)
		}
		routesSize := uint64(cap(routes))*uint64(reflect.TypeFor[netip.Prefix]().Size()) + uint64(cap(hops))*4
		bench4.heap = heapInUse() - before - routesSize
		// A route inserted twice is replaced: the last next hop wins, in both.
		ref := &naive{}
		for i, p := range routes {
			var k [16]byte
			copy(k[:], p.Addr().AsSlice())
			ref.insert(k, p.Bits(), hops[i])
		}
		addrs := make([]uint32, benchAddrs)
		for i := range addrs {
			addrs[i] = r.Uint32()
		}
		bench4.t, bench4.ref, bench4.addrs = t, ref, addrs
	})
}

// BenchmarkLookup4 looks up random addresses in the 1 M-route table, DIR-24-8 against the
// naive binary trie; it reports the table's memory and checks the two agree.
func BenchmarkLookup4(b *testing.B) {
	setupBench4(b)
	t, ref, addrs := bench4.t, bench4.ref, bench4.addrs
	b.Run("dir24-8", func(b *testing.B) {
		lookup4(b, t, addrs)
		b.ReportMetric(float64(t.Memory())/(1<<20), "table-MiB")
		b.ReportMetric(float64(bench4.heap)/(1<<20), "heap-MiB")
		b.ReportMetric(float64(t.Groups()), "groups")
		b.ReportMetric(float64(rootHuge(t))/(1<<20), "huge-MiB")
	})
	// The same table with its first level on 4 KiB pages (a clone made with HugePages
	// off), against which dir24-8's transparent huge pages are measured; huge-MiB is what
	// the kernel backed by huge pages (/proc/self/smaps).
	b.Run("dir24-8-4k", func(b *testing.B) {
		HugePages = false
		small := t.Clone()
		HugePages = true
		lookup4(b, small, addrs)
		b.ReportMetric(float64(rootHuge(small))/(1<<20), "huge-MiB")
	})
	b.Run("naive", func(b *testing.B) {
		var sink NextHop
		i := 0
		for b.Loop() {
			var k [16]byte
			binary.BigEndian.PutUint32(k[:], addrs[i&(benchAddrs-1)])
			nh, _ := ref.lookup(&k, 32)
			sink += nh
			i++
		}
		_ = sink
	})
	for _, a := range addrs[:10000] {
		var k [16]byte
		binary.BigEndian.PutUint32(k[:], a)
		got, gok := t.Lookup(a)
		want, wok := ref.lookup(&k, 32)
		if got != want || gok != wok {
			b.Fatalf("%08x: %d %v, naive %d %v", a, got, gok, want, wok)
		}
	}
}

// BenchmarkLookup6 looks up random addresses under 2000::/3 in a table of 64 Ki /48s
// and /64s, against the naive trie.
func BenchmarkLookup6(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	t := NewTable6()
	ref := &naive{}
	rnd := func() [16]byte {
		var a [16]byte
		binary.BigEndian.PutUint64(a[:], 0x2000<<48|r.Uint64()>>(3+24)<<24) // 2000::/3, 2^37 /64s in a few /27s
		binary.BigEndian.PutUint64(a[8:], r.Uint64())
		return a
	}
	for t.Len() < 1<<16 {
		bits := 48
		if r.IntN(2) == 0 {
			bits = 64
		}
		p := netip.PrefixFrom(netip.AddrFrom16(rnd()), bits).Masked()
		nh := NextHop(r.IntN(64))
		if err := t.Insert(p, nh); err != nil {
			b.Fatal(err)
		}
		ref.insert(p.Addr().As16(), bits, nh)
	}
	addrs := make([][16]byte, 1<<16)
	for i := range addrs {
		addrs[i] = rnd()
	}
	b.Run("trie16-8", func(b *testing.B) {
		var sink NextHop
		i := 0
		for b.Loop() {
			nh, _ := t.Lookup(&addrs[i&(len(addrs)-1)])
			sink += nh
			i++
		}
		_ = sink
		b.ReportMetric(float64(t.Memory())/(1<<20), "table-MiB")
	})
	b.Run("naive", func(b *testing.B) {
		var sink NextHop
		i := 0
		for b.Loop() {
			nh, _ := ref.lookup(&addrs[i&(len(addrs)-1)], 128)
			sink += nh
			i++
		}
		_ = sink
	})
}

// lookup4 looks up bench4's addresses in t, one per b.Loop turn, in turn.
func lookup4(b *testing.B, t *Table4, addrs []uint32) {
	var sink NextHop
	i := 0
	for b.Loop() {
		nh, _ := t.Lookup(addrs[i&(benchAddrs-1)])
		sink += nh
		i++
	}
	_ = sink
}

// rootHuge is how much of t's first level the kernel backs by huge pages (-1: unknown).
func rootHuge(t *Table4) int {
	start, end := span(t.t.root)
	f, err := os.Open(smapsFile)
	if err != nil {
		return -1
	}
	defer f.Close()
	n, err := hugeBytes(f, start, end)
	if err != nil {
		return -1
	}
	return n
}

// BenchmarkLookup4Pages compares the 1 M-route table's lookups with its first level on
// transparent huge pages and on 4 KiB pages (a clone made with HugePages off) in
// alternating rounds of 64 Ki random addresses, and reports each one's fastest round per
// lookup (ns-thp, ns-4k) and their ratio: on a machine other work shares, the fastest
// round is the one least disturbed, and alternating gives both the same disturbance.
func BenchmarkLookup4Pages(b *testing.B) {
	setupBench4(b)
	thp, addrs := bench4.t, bench4.addrs
	HugePages = false
	small := thp.Clone()
	HugePages = true
	const round = 1 << 16
	best := [2]time.Duration{1 << 62, 1 << 62}
	var sink NextHop
	i := 0
	for b.Loop() {
		for k, t := range []*Table4{thp, small} {
			start := time.Now()
			for j := 0; j < round; j++ {
				nh, _ := t.Lookup(addrs[(i+j)&(benchAddrs-1)])
				sink += nh
			}
			best[k] = min(best[k], time.Since(start))
		}
		i += round
	}
	_ = sink
	b.ReportMetric(float64(best[0].Nanoseconds())/round, "ns-thp")
	b.ReportMetric(float64(best[1].Nanoseconds())/round, "ns-4k")
	b.ReportMetric(float64(best[0])/float64(best[1]), "thp/4k")
	b.ReportMetric(float64(rootHuge(thp))/(1<<20), "huge-MiB-thp")
	b.ReportMetric(float64(rootHuge(small))/(1<<20), "huge-MiB-4k")
}

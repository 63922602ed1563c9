package main

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"sync/atomic"
)

// flowKey is an IPv4 5-tuple.
type flowKey struct {
	src, dst     [4]byte
	sport, dport uint16
	proto        uint8
}

func (k flowKey) String() string {
	return fmt.Sprintf("%s:%d > %s:%d proto %d", netip.AddrFrom4(k.src), k.sport, netip.AddrFrom4(k.dst), k.dport, k.proto)
}

// parseFlow reads the 5-tuple of an untagged Ethernet frame carrying IPv4 TCP or UDP.
func parseFlow(f []byte) (flowKey, bool) {
	var k flowKey
	if len(f) < 14+20 || binary.BigEndian.Uint16(f[12:14]) != 0x0800 {
		return k, false
	}
	ip := f[14:]
	ihl := int(ip[0]&0x0f) * 4
	if ip[0]>>4 != 4 || ihl < 20 || len(ip) < ihl+4 {
		return k, false
	}
	k.proto = ip[9]
	if k.proto != 6 && k.proto != 17 {
		return k, false
	}
	copy(k.src[:], ip[12:16])
	copy(k.dst[:], ip[16:20])
	k.sport = binary.BigEndian.Uint16(ip[ihl:])
	k.dport = binary.BigEndian.Uint16(ip[ihl+2:])
	return k, true
}

// flowTable counts frames per flow in a fixed open-addressing table: it never allocates,
// and when it is full a new flow is counted in overflow instead. One poll thread writes
// it; readers (the metrics collector) see an entry once its key is published (used).
type flowTable struct {
	entries  []flowEntry
	mask     uint32
	overflow atomic.Uint64
}

type flowEntry struct {
	used    atomic.Bool
	key     flowKey
	packets atomic.Uint64
}

func newFlowTable(size int) *flowTable {
	n := 1
	for n < size {
		n <<= 1
	}
	return &flowTable{entries: make([]flowEntry, n), mask: uint32(n - 1)}
}

// hash is FNV-1a over the tuple's fields.
func (k *flowKey) hash() uint32 {
	h := uint32(2166136261)
	mix := func(b byte) { h = (h ^ uint32(b)) * 16777619 }
	for _, b := range k.src {
		mix(b)
	}
	for _, b := range k.dst {
		mix(b)
	}
	mix(byte(k.sport >> 8))
	mix(byte(k.sport))
	mix(byte(k.dport >> 8))
	mix(byte(k.dport))
	mix(k.proto)
	return h
}

// count adds one frame to k's flow. Only the owning poll thread calls it.
func (t *flowTable) count(k flowKey) {
	i := k.hash() & t.mask
	for probe := 0; probe < 16; probe++ {
		e := &t.entries[i]
		if !e.used.Load() {
			e.key = k
			e.packets.Store(1)
			e.used.Store(true) // publishes key to readers
			return
		}
		if e.key == k {
			e.packets.Add(1)
			return
		}
		i = (i + 1) & t.mask
	}
	t.overflow.Add(1)
}

// each calls fn for every flow seen so far.
func (t *flowTable) each(fn func(k flowKey, packets uint64)) {
	for i := range t.entries {
		e := &t.entries[i]
		if e.used.Load() {
			fn(e.key, e.packets.Load())
		}
	}
}

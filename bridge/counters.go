package bridge

import (
	"sync/atomic"

	"github.com/uiod/uiod/dataplane"
	"github.com/uiod/uiod/nic"
)

// Per-port counter indexes. Every counter is the RX port's: the port the frame came in on.
const (
	cLearned      = iota // new entries learnt on the port
	cMoved               // entries that moved to the port from another
	cRefused             // sources not learnt: the port's MAC limit, or a full probe chain
	cFlooded             // frames flooded
	cFloodLimited        // frames dropped by the port's flood limit
	cDropped             // frames dropped by the bridge, for any reason (flood limit included)
	cCopyFailed          // flood copies not made: the thread's copy pool empty, or no room
	numCounters
)

// The bridge's drop reasons, as the dataplane counts them per RX queue (the reason label
// of uiod_queue_drops_by_reason_total).
var (
	// DropRunt: shorter than its Ethernet header, or its 802.1Q tag.
	DropRunt = dataplane.RegisterDropReason("runt")
	// DropBadSource: a multicast or all-zero source MAC (Linux's bridge drops them too).
	DropBadSource = dataplane.RegisterDropReason("bad_source")
	// DropLinkLocal: to 01:80:c2:00:00:00–0f, the addresses a bridge never forwards
	// (STP BPDUs, pause, LACP, LLDP). uiod runs no STP.
	DropLinkLocal = dataplane.RegisterDropReason("link_local")
	// DropVLAN: an untagged frame on a port without PVID, or a VLAN the port is not in.
	DropVLAN = dataplane.RegisterDropReason("vlan_filtered")
	// DropSamePort: to a MAC learnt on the port the frame came in on.
	DropSamePort = dataplane.RegisterDropReason("same_port")
	// DropNoPort: a flood with no other port in the frame's VLAN.
	DropNoPort = dataplane.RegisterDropReason("no_port")
	// DropFloodLimit: over the RX port's flood limit.
	DropFloodLimit = dataplane.RegisterDropReason("flood_limit")
	// DropTooLong: no room in the buffer for the 802.1Q tag the output port needs.
	DropTooLong = dataplane.RegisterDropReason("too_long")
)

var parseDrops = [...]dataplane.DropReason{
	parseRunt:      DropRunt,
	parseBadSource: DropBadSource,
	parseLinkLocal: DropLinkLocal,
}

// thread is one poll thread's state: its copy pool, its flood buckets and its counters.
type thread struct {
	pool     *nic.Mempool
	tat      []int64 // per RX port: the flood bucket's theoretical arrival time (GCRA), ns
	local    [numCounters]uint64
	counters []portCounters
	_        [64]byte // threads' local counters on cache lines of their own
}

// portCounters are one thread's counters of one port. Only the thread adds to them.
type portCounters struct {
	c [numCounters]atomic.Uint64
	_ [64 - numCounters*8%64]byte
}

// floodBurst is how far ahead of now a bucket may run: a tenth of a second of floods.
const floodBurst = int64(100_000_000)

// floodOK takes one flood from port in's bucket at now (ns) (interval ns apart, 0 no limit).
func (t *thread) floodOK(in dataplane.PortID, interval, now int64) bool {
	if interval == 0 {
		return true
	}
	tat := max(t.tat[in], now)
	if tat-now > max(floodBurst, interval) {
		return false
	}
	t.tat[in] = tat + interval
	return true
}

// publish adds the burst's counts to port in's counters: one atomic add per counter that
// changed, none for a burst of known unicast.
func (t *thread) publish(in dataplane.PortID) {
	pc := &t.counters[in]
	for i, n := range t.local {
		if n != 0 {
			pc.c[i].Add(n)
			t.local[i] = 0
		}
	}
}

// PortStats are one port's bridge counters, summed over the poll threads.
type PortStats struct {
	Name string
	// Entries is the port's dynamic entries in the table (its MAC limit's count).
	Entries      int64
	Learned      uint64
	Moved        uint64
	Refused      uint64
	Flooded      uint64
	FloodLimited uint64
	Dropped      uint64
	CopyFailed   uint64
}

// Stats returns every port's counters, by PortID.
func (a *App) Stats() []PortStats {
	st := make([]PortStats, len(a.ports))
	for p := range a.ports {
		var sum [numCounters]uint64
		for ti := range a.threads {
			for i := range sum {
				sum[i] += a.threads[ti].counters[p].c[i].Load()
			}
		}
		st[p] = PortStats{Name: a.ports[p].name, Entries: a.table.counts[p].n.Load(),
			Learned: sum[cLearned], Moved: sum[cMoved], Refused: sum[cRefused], Flooded: sum[cFlooded],
			FloodLimited: sum[cFloodLimited], Dropped: sum[cDropped], CopyFailed: sum[cCopyFailed]}
	}
	return st
}

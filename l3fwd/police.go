package l3fwd

import (
	"fmt"
	"sync/atomic"

	"github.com/uiod/uiod/dataplane"
)

// Rate is one class's limit on what goes to the kernel exception path, per poll thread:
// PerSecond frames a second on average, Burst at once.
type Rate struct {
	PerSecond int
	Burst     int
}

// Police are the exception path's per-class limits (Config.Police). Each class has its
// own budget, so a flood of one never takes another's: junk (error class) cannot starve
// ARP (control class). The defaults' bursts together (224) fit a kernel path's TX ring
// (256 per thread), so what is admitted at once is never refused as tx_full.
type Police struct {
	Control, Local, Error Rate
}

// DefaultPolice is the policer when Config.Police is zero: control 10 000/s (burst 64),
// local 20 000/s (128), error 1 000/s (32), per poll thread. Linux sends at most 1 000
// ICMP errors a second (net.ipv4.icmp_msgs_per_sec), so more error traffic than that
// would only be dropped in the kernel.
var DefaultPolice = Police{
	Control: Rate{PerSecond: 10000, Burst: 64},
	Local:   Rate{PerSecond: 20000, Burst: 128},
	Error:   Rate{PerSecond: 1000, Burst: 32},
}

func (p Police) rates() [numClasses]Rate { return [numClasses]Rate{p.Control, p.Local, p.Error} }

func (p Police) check() error {
	for c, r := range p.rates() {
		if r.PerSecond < 1 || r.PerSecond > 1e9 || r.Burst < 1 || r.Burst > 1<<20 {
			return fmt.Errorf("police %s: rate %d/s burst %d: want 1 to 1e9 a second and a burst of 1 to 2^20", classNames[c], r.PerSecond, r.Burst)
		}
	}
	return nil
}

// bucket is a token bucket in GCRA form (ITU-T I.371): the theoretical arrival time of
// the next frame, one int64, checked and moved with no division and no lock.
type bucket struct {
	tat      int64 // ns
	interval int64 // ns per frame: 1e9/PerSecond
	tau      int64 // (Burst-1)·interval: how far ahead of now tat may run
}

// allow admits a frame at time now (ns) if the bucket has a token.
func (b *bucket) allow(now int64) bool {
	t := max(b.tat, now)
	if t-now > b.tau {
		return false
	}
	b.tat = t + b.interval
	return true
}

// counters are what a poll thread counts of the frames l3fwd does not forward.
type counters struct {
	byReason [dataplane.MaxDropReasons]uint64 // not forwarded, by reason, wherever they went
	toKernel [numClasses]uint64               // handed to the kernel path
	policed  [numClasses]uint64               // over the class's limit
}

// threadState is one poll thread's policer and counters. Only that thread writes it; it
// publishes the counters to pub at the end of each burst that changed them (plain loads
// and compares, a store only for what changed), and readers read pub.
type threadState struct {
	buckets [numClasses]bucket
	local   counters
	dirty   bool
	pub     struct {
		byReason [dataplane.MaxDropReasons]atomic.Uint64
		toKernel [numClasses]atomic.Uint64
		policed  [numClasses]atomic.Uint64
	}
	_ [64]byte // no false sharing with the next thread's state
}

func newThreads(n int, p Police) []threadState {
	ts := make([]threadState, n)
	for i := range ts {
		for c, r := range p.rates() {
			iv := int64(1e9) / int64(r.PerSecond)
			ts[i].buckets[c] = bucket{interval: iv, tau: int64(r.Burst-1) * iv}
		}
	}
	return ts
}

// publish copies the changed counters to pub.
func (s *threadState) publish() {
	s.dirty = false
	for i, v := range s.local.byReason {
		if s.pub.byReason[i].Load() != v {
			s.pub.byReason[i].Store(v)
		}
	}
	for c := range numClasses {
		if v := s.local.toKernel[c]; s.pub.toKernel[c].Load() != v {
			s.pub.toKernel[c].Store(v)
		}
		if v := s.local.policed[c]; s.pub.policed[c].Load() != v {
			s.pub.policed[c].Store(v)
		}
	}
}

// ClassStats are one policer class's counters.
type ClassStats struct {
	Class    string // control, local or error
	ToKernel uint64 // frames handed to the kernel path (which may still refuse them: tx_full)
	Policed  uint64 // frames over the class's limit, dropped as policed
}

// Stats are l3fwd's counters of the frames it did not forward, summed over the poll
// threads, as published at the end of each burst.
type Stats struct {
	// NotForwarded counts them by reason, whether they went to the kernel or were
	// dropped (the dataplane counts the drops again, by the same reasons).
	NotForwarded map[string]uint64
	// Classes are the exception path's policer classes, in order of priority.
	Classes [numClasses]ClassStats
}

// Stats returns the counters. It may be called at any time from any goroutine.
func (a *App) Stats() Stats {
	var s Stats
	for c := range numClasses {
		s.Classes[c].Class = classNames[c]
	}
	for i := range a.threads {
		t := &a.threads[i]
		for r := range t.pub.byReason {
			if n := t.pub.byReason[r].Load(); n != 0 {
				if s.NotForwarded == nil {
					s.NotForwarded = map[string]uint64{}
				}
				s.NotForwarded[dataplane.DropReason(r).String()] += n
			}
		}
		for c := range numClasses {
			s.Classes[c].ToKernel += t.pub.toKernel[c].Load()
			s.Classes[c].Policed += t.pub.policed[c].Load()
		}
	}
	return s
}

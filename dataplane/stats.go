package dataplane

import (
	"runtime"
	"sync/atomic"
	"time"

	"github.com/uiod/uiod/idle"
)

// QueueStats are one queue's counters. They are published by the polling thread about
// every millisecond, before it sleeps and when it exits, so a reader may see values up to
// a millisecond old. Arms, sleeps and wake-ups belong to the thread, which sleeps for all
// its queues at once: see ThreadStats.
type QueueStats struct {
	Name      string
	Thread    int    // index of the thread that polls the queue
	RxPackets uint64 // frames received
	RxBytes   uint64
	TxPackets uint64 // frames TX queues accepted (the App may send to several ports)
	ToKernel  uint64 // frames the kernel exception path accepted
	// Drops counts the frames freed instead of sent, DropsBy the same by reason (only
	// reasons that occurred): RxPackets = TxPackets + ToKernel + Drops.
	Drops      uint64
	DropsBy    map[string]uint64
	Polls      uint64 // RX bursts
	EmptyPolls uint64 // RX bursts that returned nothing
}

// ThreadStats are one polling thread's counters.
type ThreadStats struct {
	Index int
	CPU   int // pinned CPU, -1 if unpinned
	// CPUTime is the thread's CPU time (CLOCK_THREAD_CPUTIME_ID) and WallTime the time
	// since it started, both sampled about every 10 ms: CPUTime/WallTime is its CPU share.
	CPUTime  time.Duration
	WallTime time.Duration
	// State is what the thread is doing now.
	State idle.State
	// Idle are the idle policy's counters: arms, sleeps, wake-ups by interrupt, timeout
	// and Stop, spurious wake-ups, time asleep, housekeeping yields.
	Idle idle.Stats
	// RuntimeYields counts the thread's yields to the Go scheduler its Idler asked for
	// (after idle.RuntimeYieldEvery of polling without a break), RuntimeYieldTime their
	// total time, ThreadChanges those after which the goroutine ran on another OS thread
	// (which it pinned again), and ThreadErrors the failed re-pins and affinity restores
	// after a change.
	RuntimeYields    uint64
	RuntimeYieldTime time.Duration
	ThreadChanges    uint64
	ThreadErrors     uint64
}

// Queue counter indexes.
const (
	cRxPackets = iota
	cRxBytes
	cTxPackets
	cToKernel
	cDrops
	cPolls
	cEmptyPolls
	numCounters
)

// queueCounters are kept in plain fields by the polling thread and copied to atomics by
// publish, so the hot path executes no locked instruction. seq is a sequence lock over
// pub: odd while publish writes, so that snapshot returns counters from one publish
// (RxPackets = TxPackets + ToKernel + Drops holds in every snapshot, not only eventually).
type queueCounters struct {
	local    [numCounters]uint64
	drops    [MaxDropReasons]uint64
	seq      atomic.Uint64
	pub      [numCounters]atomic.Uint64
	pubDrops [MaxDropReasons]atomic.Uint64
}

// publish copies the local counters to pub. Only the polling thread calls it.
func (c *queueCounters) publish() {
	c.seq.Add(1)
	for i := range c.local {
		c.pub[i].Store(c.local[i])
	}
	for i := range c.drops {
		c.pubDrops[i].Store(c.drops[i])
	}
	c.seq.Add(1)
}

func (c *queueCounters) snapshot(name string, thread int) QueueStats {
	var v [numCounters]uint64
	var d [MaxDropReasons]uint64
	for {
		s := c.seq.Load()
		if s&1 == 0 {
			for i := range v {
				v[i] = c.pub[i].Load()
			}
			for i := range d {
				d[i] = c.pubDrops[i].Load()
			}
			if c.seq.Load() == s {
				break
			}
		}
		runtime.Gosched() // a publish is under way
	}
	var by map[string]uint64
	for r, n := range d {
		if n != 0 {
			if by == nil {
				by = map[string]uint64{}
			}
			by[DropReason(r).String()] = n
		}
	}
	return QueueStats{
		Name:       name,
		Thread:     thread,
		RxPackets:  v[cRxPackets],
		RxBytes:    v[cRxBytes],
		TxPackets:  v[cTxPackets],
		ToKernel:   v[cToKernel],
		Drops:      v[cDrops],
		DropsBy:    by,
		Polls:      v[cPolls],
		EmptyPolls: v[cEmptyPolls],
	}
}

package dataplane

import (
	"runtime"
	"sync/atomic"
	"time"

	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/nic"
)

// How often a polling thread publishes its counters and samples its CPU time.
const (
	publishEvery = int64(time.Millisecond)
	cpuEvery     = int64(10 * time.Millisecond)
)

// queue is one RX queue as its thread runs it.
type queue struct {
	name string
	rx   nic.Port
	rxq  int
	tx   nic.Port
	txq  int
	c    queueCounters
}

// loop is one polling thread. It implements idle.Queues for its Idler.
type loop struct {
	index   int
	cpu     int
	reflect bool
	queues  []queue
	bufs    []*nic.Buf
	idler   *idle.Idler // the thread's own; other goroutines use idlerNow
	swap    idlerSwap   // SetPolicy's hand-over (reload.go)
	stop    *atomic.Bool

	nextPublish, nextCPU int64
	startWall, startCPU  int64 // idle.Now and thread CPU time at start (ns)
	cpuNs, wallNs        atomic.Int64

	beforeSleep func() // test hook, see BeforeSleep
}

// run is the thread's body. It reports set-up to ready, then polls until stop is set.
func (l *loop) run(ready chan<- error) {
	// Never unlocked: the thread may carry a changed affinity and timer slack, so it
	// must end with this goroutine instead of going back to the scheduler's pool.
	runtime.LockOSThread()
	if err := setupThread(l.cpu); err != nil {
		ready <- err
		return
	}
	l.startCPU = int64(threadCPUTime())
	l.startWall = idle.Now()
	l.nextPublish = l.startWall + publishEvery
	l.nextCPU = l.startWall + cpuEvery
	ready <- nil
	for !l.stop.Load() {
		l.step()
	}
	now := idle.Now()
	l.publish(now)
	l.sampleCPU(now)
}

// step is one turn of the thread's loop: a poll of every queue, the idle policy told what
// it found, and the counters published when due. It returns the frames the poll found.
func (l *loop) step() int {
	n := l.Poll()
	now := idle.Now()
	if n > 0 {
		l.idler.Traffic(now)
	} else {
		l.idler.Empty(now)
	}
	if now >= l.nextPublish {
		l.publish(now)
	}
	if l.swap.pending.Load() != nil {
		l.swapIdler() // the policy SetPolicy left: between turns, on this thread
	}
	return n
}

// Poll runs one RX burst on every queue of the thread, hands what it got to the app and
// returns the number of frames. It allocates nothing.
func (l *loop) Poll() int {
	total := 0
	bufs := l.bufs
	for i := range l.queues {
		q := &l.queues[i]
		n := q.rx.RxBurst(q.rxq, bufs)
		q.c.local[cPolls]++
		if n == 0 {
			q.c.local[cEmptyPolls]++
			continue
		}
		got := bufs[:n]
		bytes := 0
		for _, b := range got {
			bytes += b.Len()
			if l.reflect {
				swapMACs(b.Bytes())
			}
		}
		sent := q.tx.TxBurst(q.txq, got)
		for _, b := range got[sent:] {
			b.Free()
		}
		clear(got)
		q.c.local[cRxPackets] += uint64(n)
		q.c.local[cRxBytes] += uint64(bytes)
		q.c.local[cTxPackets] += uint64(sent)
		q.c.local[cDrops] += uint64(n - sent)
		total += n
	}
	return total
}

// Arm enables every queue's RX interrupt. The thread is about to sleep, so it publishes
// its counters first.
func (l *loop) Arm() {
	l.publish(idle.Now())
	for i := range l.queues {
		q := &l.queues[i]
		q.rx.EnableRxInterrupt(q.rxq)
	}
}

// Disarm disables every queue's RX interrupt.
func (l *loop) Disarm() {
	for i := range l.queues {
		q := &l.queues[i]
		q.rx.DisableRxInterrupt(q.rxq)
	}
}

// BeforeSleep implements idle.SleepObserver: it runs the test hook, if any, in the window
// between "armed and re-polled empty" and the wait.
func (l *loop) BeforeSleep() {
	if l.beforeSleep != nil {
		l.beforeSleep()
	}
}

// publish makes the counters visible to Stats and samples the CPU time when it is due.
func (l *loop) publish(now int64) {
	for i := range l.queues {
		l.queues[i].c.publish()
	}
	l.nextPublish = now + publishEvery
	if now >= l.nextCPU {
		l.sampleCPU(now)
	}
}

func (l *loop) sampleCPU(now int64) {
	l.cpuNs.Store(int64(threadCPUTime()) - l.startCPU)
	l.wallNs.Store(now - l.startWall)
	l.nextCPU = now + cpuEvery
}

func (l *loop) stats() ThreadStats {
	return ThreadStats{
		Index:    l.index,
		CPU:      l.cpu,
		CPUTime:  time.Duration(l.cpuNs.Load()),
		WallTime: time.Duration(l.wallNs.Load()),
		State:    l.idlerNow().State(),
		Idle:     l.idleStats(),
	}
}

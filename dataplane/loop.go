package dataplane

import (
	"math"
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

// rxQueue is the port and queue number of one RX queue, the part of it an empty poll
// reads: a thread's are kept apart from the rest of their queues, so that its poll walks
// 24 bytes a queue instead of the whole queue with its counters (bench/callgrind.sh
// queues).
type rxQueue struct {
	port nic.Port
	q    int
}

// queue is one RX queue as its thread runs it (its port and queue: loop.rx, same index).
type queue struct {
	name   string
	rxq    int // loop.rx's q, for the burst's received path
	rxID   PortID
	peer   PortID
	slot   int16 // the TX slot of the queue's own TxPort/TxQ
	kernel int16 // the TX slot of the RX port's kernel path, -1 none
	direct bool  // rx is a kernel path: frames go out of the slot without the App
	mirror *mirrorSlot
	wait   *rxWait // the RX port's 1588 wait histograms, nil without (rxwait.go)
	// busyPolls counts the RX bursts that returned frames; the loop's polls count them
	// all (publish derives the queue's Polls and EmptyPolls from the two).
	busyPolls uint64
	c         queueCounters
}

// txSlot is one TX queue a thread sends on, with the frames an RX burst sends to it.
type txSlot struct {
	port   nic.Port
	q      int
	kernel bool // the queue of a kernel path: what it takes counts as ToKernel
	mirror *mirrorSlot
	pend   []*nic.Buf
}

// loop is one polling thread. It implements idle.Queues for its Idler.
type loop struct {
	index  int
	cpu    int
	app    App
	queues []queue
	rx     []rxQueue // the queues' RX port and queue, by index in queues
	slots  []txSlot
	dirty  []int16 // slots with pending frames, in the order they got their first
	bufs   []*nic.Buf
	burst  Burst
	idler  *idle.Idler              // the thread's own; other goroutines use idlerNow
	swap   idlerSwap                // SetPolicy's hand-over (reload.go)
	park   atomic.Pointer[parkGate] // set while Exclusive wants the thread parked
	stop   *atomic.Bool

	nextPublish, nextCPU int64
	startWall, startCPU  int64  // idle.Now and thread CPU time at start (ns)
	pollTime             int64  // idle.Now at the first non-empty burst of a Poll, 0 if none
	polls                uint64 // Polls run: RX bursts on each queue
	cpuNs, wallNs        atomic.Int64

	th    threadState // the OS thread the loop is locked to (thread_linux.go)
	yield yielder     // voluntary yields to the Go scheduler (yield.go)

	beforeSleep func() // test hook, see BeforeSleep
}

// run is the thread's body. It reports set-up to ready, then polls until stop is set.
func (l *loop) run(ready chan<- error) {
	// Unlocked only for a moment by goYield, which undoes the pinning of a thread it
	// leaves; the thread locked at the end carries the changed affinity and timer slack,
	// so it ends with this goroutine instead of going back to the scheduler's pool.
	runtime.LockOSThread()
	if err := l.th.setup(l.cpu); err != nil {
		ready <- err
		return
	}
	l.startCPU = int64(threadCPUTime())
	l.startWall = idle.Now()
	l.yield.locked = true
	l.keepYield(l.idler, l.startWall)
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
// An empty poll the Idler lets go untold (idle.Idler.Skip: a run of about
// idle.SkipTarget) reads no clock: the policy, the runtime yield and the publishing of
// the counters wait for the next told one.
func (l *loop) step() int {
	n := l.Poll()
	if n > 0 {
		now := l.pollTime
		l.idler.Traffic(now)
		if now >= l.nextPublish {
			l.publish(now)
		}
	} else if !l.idler.Skip() {
		now := idle.Now()
		if l.idler.Empty(now) {
			l.goYield() // the runtime yield (yield.go)
		}
		if now >= l.nextPublish {
			l.publish(now)
		}
	}
	if l.swap.pending.Load() != nil {
		l.swapIdler() // the policy SetPolicy left: between turns, on this thread
	}
	if g := l.park.Load(); g != nil {
		l.parkAt(g) // Exclusive's function runs while the thread waits here
	}
	return n
}

// Poll runs one RX burst on every queue of the thread, hands what it got to the App,
// sends or frees every frame as the App decided, and returns the number of frames. It
// allocates nothing. An empty queue costs the RX burst and a branch: the polls are
// counted once per Poll for the thread (every Poll polls every queue), the empty ones
// derived from the bursts that returned frames when the counters are published.
func (l *loop) Poll() int {
	total := 0
	l.pollTime = 0
	l.polls++
	bufs := l.bufs
	for i, r := range l.rx {
		if n := r.port.RxBurst(r.q, bufs); n > 0 {
			total += l.received(&l.queues[i], bufs[:n])
		}
	}
	return total
}

// received is Poll's work on a burst that returned frames: count, mirror, hand them to
// the App and carry out its decisions. It returns len(got).
func (l *loop) received(q *queue, got []*nic.Buf) int {
	if l.pollTime == 0 {
		l.pollTime = idle.Now()
	}
	n := len(got)
	q.busyPolls++
	q.c.local[cRxPackets] += uint64(n)
	q.c.local[cRxBytes] += uint64(frameBytes(got))
	if m := q.mirror.m.Load(); m != nil {
		m.m.Mirror(l.index, RX, q.rxq, got, l.pollTime)
	}
	if q.wait != nil {
		q.wait.observe(got, l.idler.WokenBy())
	}
	b := &l.burst
	b.Port, b.Queue, b.Peer, b.Frames, b.Time = q.rxID, q.rxq, q.peer, got, l.pollTime
	b.peerSlot, b.kernel = q.slot, q.kernel
	if q.direct {
		b.all = verdict(q.slot) + 1
	} else {
		l.app.Process(b)
	}
	l.dispatch(q, b)
	// got keeps its pointers: the next burst overwrites them and nothing reads past a
	// burst's end, and clearing cost 2.4 instructions a frame (a bulk pointer write with
	// its barrier check). parkAt clears the slice, before a port and its mempool may go.
	return n
}

// frameBytes is the total length of frames, eight at a time: the plain loop's index
// increment, comparison and branch per frame were half its cost (6 instructions a frame,
// bench/callgrind.sh loop).
func frameBytes(frames []*nic.Buf) int {
	n := 0
	for len(frames) >= 8 {
		f := (*[8]*nic.Buf)(frames)
		n += f[0].Len() + f[1].Len() + f[2].Len() + f[3].Len() + f[4].Len() + f[5].Len() + f[6].Len() + f[7].Len()
		frames = frames[8:]
	}
	for _, b := range frames {
		n += b.Len()
	}
	return n
}

// dispatch carries out the App's decisions on b's frames and counts them on q.
func (l *loop) dispatch(q *queue, b *Burst) {
	if len(b.extra) > 0 {
		b.perFrame() // a SendAll after SendCopy: the copies go between the frames
	}
	if v := b.all; v != 0 {
		b.all = 0
		if v&dropVerdict != 0 {
			l.drop(q, b.Frames, DropReason(v))
			return
		}
		l.flush(q, &l.slots[v-1], b.Frames)
		return
	}
	e := 0
	for i, f := range b.Frames {
		v := b.verdict[i]
		b.verdict[i] = 0
		l.decide(q, f, v)
		if e < len(b.extra) {
			e = l.copiesAfter(q, b, e, i)
		}
	}
	if len(b.extra) > 0 {
		l.copiesAfter(q, b, e, math.MaxInt) // copies of a frame the burst does not have
		b.extra = b.extra[:0]
	}
	for _, si := range l.dirty {
		s := &l.slots[si]
		l.flush(q, s, s.pend)
		clear(s.pend)
		s.pend = s.pend[:0]
	}
	l.dirty = l.dirty[:0]
}

// flush sends frames on slot s, frees what its ring refused and counts both on q.
func (l *loop) flush(q *queue, s *txSlot, frames []*nic.Buf) {
	if m := s.mirror.m.Load(); m != nil {
		m.m.Mirror(l.index, TX, s.q, frames, l.pollTime)
	}
	sent := s.port.TxBurst(s.q, frames)
	if s.kernel {
		q.c.local[cToKernel] += uint64(sent)
	} else {
		q.c.local[cTxPackets] += uint64(sent)
	}
	if rest := frames[sent:]; len(rest) > 0 {
		l.drop(q, rest, DropTxFull)
	}
}

// drop frees frames, counting them on q under reason r.
func (l *loop) drop(q *queue, frames []*nic.Buf, r DropReason) {
	for _, f := range frames {
		f.Free()
	}
	q.c.drops[r] += uint64(len(frames))
	q.c.local[cDrops] += uint64(len(frames))
}

// Arm enables every queue's RX interrupt. The thread is about to sleep, so it publishes
// its counters first.
func (l *loop) Arm() {
	l.publish(idle.Now())
	for _, r := range l.rx {
		r.port.EnableRxInterrupt(r.q)
	}
}

// Disarm disables every queue's RX interrupt.
func (l *loop) Disarm() {
	for _, r := range l.rx {
		r.port.DisableRxInterrupt(r.q)
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
		q := &l.queues[i]
		q.c.local[cPolls] = l.polls
		q.c.local[cEmptyPolls] = l.polls - q.busyPolls
		q.c.publish()
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

		RuntimeYields:    l.yield.n.Load(),
		RuntimeYieldTime: time.Duration(l.yield.ns.Load()),
		ThreadChanges:    l.yield.moves.Load(),
		ThreadErrors:     l.yield.errs.Load(),
	}
}

// Package capture mirrors a running dataplane's frames into pcapng, like dpdk-dumpcap: a
// Session attaches to ports as their dataplane.Mirror, copies what the poll threads see
// into one bounded byte ring per thread (a frame that does not fit is dropped and
// counted: the poll thread never waits), and a writer goroutine merges the rings by
// timestamp into pcapng: an interface block per port, nanosecond timestamps from the
// poll loop, each frame's direction and queue, and the counts in each interface's
// statistics block. See docs/design.md §14. A Server offers sessions over a unix control socket (root
// only); Dial is its client, what `uiod capture` runs.
package capture

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/bpf"

	"github.com/uiod/uiod/dataplane"
	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/internal/clip"
	"github.com/uiod/uiod/nic"
)

// Direction selects which frames of a port a session captures.
type Direction uint8

// Directions.
const (
	Both Direction = iota
	RxOnly
	TxOnly
)

var directionNames = [...]string{Both: "both", RxOnly: "rx", TxOnly: "tx"}

// String is the direction's name: both, rx or tx.
func (d Direction) String() string {
	if int(d) < len(directionNames) {
		return directionNames[d]
	}
	return fmt.Sprintf("capture.Direction(%d)", int(d))
}

// ParseDirection parses "rx", "tx" or "both".
func ParseDirection(s string) (Direction, error) {
	for d, n := range directionNames {
		if s == n {
			return Direction(d), nil
		}
	}
	return 0, fmt.Errorf("direction %s: want rx, tx or both", clip.Quote(s))
}

// Limits of Options.
const (
	DefaultSnaplen = 262144 // dumpcap's
	MaxSnaplen     = 262144
	// ringBytes is each poll thread's ring, record headers included.
	ringBytes = 4 << 20
	// maxFilter is the most instructions a filter may have (the kernel's BPF_MAXINSNS).
	maxFilter = 4096
)

// Options say what a session captures.
type Options struct {
	// Ports are the ports to capture, by PortID, each an interface of the pcapng.
	Ports []dataplane.PortID
	// Queue restricts the capture to one queue number (RX queue for received frames, TX
	// queue for sent ones); -1 captures every queue.
	Queue     int
	Direction Direction
	// Snaplen is the most bytes kept of a frame (0: DefaultSnaplen).
	Snaplen int
	// Count ends the capture after that many frames (0: no limit).
	Count uint64
	// Duration ends the capture after that long (0: no limit).
	Duration time.Duration
	// Filter is a classic BPF program run on every frame the direction and queue let
	// through (nil: every frame), FilterText its source for the interface blocks.
	Filter     []bpf.RawInstruction
	FilterText string
}

// Target is what a session captures from: a running dataplane.
type Target interface {
	Ports() []dataplane.Port
	Threads() []dataplane.ThreadStats
	SetMirror(p dataplane.PortID, m dataplane.Mirror) error
}

// Stats are a session's counts, per interface (port) in Options.Ports order.
type Stats struct {
	Captured []uint64 // frames written
	Dropped  []uint64 // frames the mirror had to drop (its ring was full)
	Seen     []uint64 // frames that passed the direction, queue and BPF filter
	Received []uint64 // frames the mirror was given, before any filter
}

// Session is one running capture.
type Session struct {
	opts     Options
	target   Target
	vm       *bpf.VM
	rings    []*ring
	stopped  atomic.Bool
	wallBase time.Time
	monoBase int64
	captured []uint64
	missed0  []uint64 // each port's RxMissed at the start
	reason   atomic.Pointer[string]

	stopOnce sync.Once
	done     chan struct{}
}

// mirror is the dataplane.Mirror of one port of a session.
type mirror struct {
	s     *Session
	iface int
}

// Mirror implements dataplane.Mirror: it copies the frames that match the session's
// filter into the calling thread's ring.
func (m *mirror) Mirror(thread int, dir dataplane.Direction, queue int, frames []*nic.Buf, now int64) {
	s := m.s
	if thread >= len(s.rings) {
		return
	}
	pass := (s.opts.Direction != RxOnly || dir == dataplane.RX) && (s.opts.Direction != TxOnly || dir == dataplane.TX) &&
		(s.opts.Queue < 0 || queue == s.opts.Queue)
	r := s.rings[thread]
	r.busy.Store(true)
	if !s.stopped.Load() {
		r.put(m.iface, uint8(dir), queue, frames, now, pass, s.vm)
	}
	r.busy.Store(false)
}

// CompileFilter checks a classic BPF program (what `tcpdump -ddd` prints) and returns
// the VM that runs it.
func CompileFilter(prog []bpf.RawInstruction) (*bpf.VM, error) {
	if len(prog) == 0 || len(prog) > maxFilter {
		return nil, fmt.Errorf("filter: %d instructions, want 1 to %d", len(prog), maxFilter)
	}
	insns, ok := bpf.Disassemble(prog)
	if !ok {
		for i, ins := range insns {
			if _, raw := ins.(bpf.RawInstruction); raw {
				return nil, fmt.Errorf("filter: instruction %d (%#04x %d %d %#x) is not classic BPF", i, prog[i].Op, prog[i].Jt, prog[i].Jf, prog[i].K)
			}
		}
		return nil, errors.New("filter: not classic BPF")
	}
	for i, ins := range insns {
		if _, ext := ins.(bpf.LoadExtension); ext {
			return nil, fmt.Errorf("filter: instruction %d loads a Linux socket extension (%v), which a capture cannot supply", i, ins)
		}
	}
	vm, err := bpf.NewVM(insns)
	if err != nil {
		return nil, fmt.Errorf("filter: %w", err)
	}
	return vm, nil
}

// Start attaches a session to t's ports as opts says. The caller runs Write to produce
// the pcapng and Stop to end it.
func Start(t Target, opts Options) (*Session, error) {
	ports := t.Ports()
	if len(opts.Ports) == 0 {
		return nil, errors.New("capture: no port given")
	}
	if opts.Snaplen == 0 {
		opts.Snaplen = DefaultSnaplen
	}
	if opts.Snaplen < 0 || opts.Snaplen > MaxSnaplen {
		return nil, fmt.Errorf("snaplen %d: outside [1, %d]", opts.Snaplen, MaxSnaplen)
	}
	if opts.Queue < -1 || opts.Queue > 0xffff {
		return nil, fmt.Errorf("queue %d: outside [0, 65535]", opts.Queue)
	}
	s := &Session{opts: opts, target: t, done: make(chan struct{})}
	seen := map[dataplane.PortID]bool{}
	for _, p := range opts.Ports {
		if int(p) >= len(ports) {
			return nil, fmt.Errorf("port %d: no such port", p)
		}
		if seen[p] {
			return nil, fmt.Errorf("port %s: given twice", ports[p].Name)
		}
		seen[p] = true
		if q := opts.Queue; q >= 0 {
			n := ports[p].NIC
			if nq := max(n.NumRxQueues(), n.NumTxQueues()); q >= nq {
				return nil, fmt.Errorf("queue %d: port %s has %s", q, ports[p].Name, queueCount(n))
			}
		}
	}
	if opts.Filter != nil {
		vm, err := CompileFilter(opts.Filter)
		if err != nil {
			return nil, err
		}
		s.vm = vm
	}
	for range t.Threads() {
		s.rings = append(s.rings, newRing(ringBytes, opts.Snaplen, len(opts.Ports)))
	}
	s.captured = make([]uint64, len(opts.Ports))
	s.missed0 = make([]uint64, len(opts.Ports))
	for i, p := range opts.Ports {
		s.missed0[i] = ports[p].NIC.Stats().RxMissed
	}
	s.wallBase, s.monoBase = time.Now(), idle.Now()
	for i, p := range opts.Ports {
		if err := t.SetMirror(p, &mirror{s: s, iface: i}); err != nil {
			for _, q := range opts.Ports[:i] {
				t.SetMirror(q, nil)
			}
			return nil, err
		}
	}
	return s, nil
}

func queueCount(n nic.Port) string {
	rx, tx := n.NumRxQueues(), n.NumTxQueues()
	if rx == tx {
		return fmt.Sprintf("%d queue%s each way (0 to %d)", rx, plural(rx), rx-1)
	}
	return fmt.Sprintf("%d RX and %d TX queue%s", rx, tx, plural(tx))
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// Stop detaches the session from its ports and waits until no poll thread is inside its
// Mirror, so that after Stop every frame the session saw is either in a ring or counted
// as dropped. It returns at once when called again; Write drains what is left.
func (s *Session) Stop() { s.StopFor("") }

// StopFor is Stop, with why the capture ended for the statistics blocks' comment (the
// first reason given wins).
func (s *Session) StopFor(why string) {
	if why != "" {
		s.reason.CompareAndSwap(nil, &why)
	}
	s.stopOnce.Do(func() {
		for _, p := range s.opts.Ports {
			s.target.SetMirror(p, nil)
		}
		s.stopped.Store(true)
		for _, r := range s.rings {
			for r.busy.Load() {
				time.Sleep(10 * time.Microsecond) // a copy of one burst
			}
		}
		close(s.done)
	})
}

// Done is closed by Stop.
func (s *Session) Done() <-chan struct{} { return s.done }

// Stats returns the session's counts so far.
func (s *Session) Stats() Stats {
	n := len(s.opts.Ports)
	st := Stats{Captured: append([]uint64(nil), s.captured...), Dropped: make([]uint64, n), Seen: make([]uint64, n), Received: make([]uint64, n)}
	for _, r := range s.rings {
		for i := range n {
			st.Dropped[i] += r.dropped[i].Load()
			st.Seen[i] += r.accepted[i].Load()
			st.Received[i] += r.recv[i].Load()
		}
	}
	return st
}

// pollEvery is how often the writer looks at the rings. A ring holds ringBytes: 47 k
// records of 64-byte frames, about 2 700 of 1514 bytes, so one look a millisecond keeps
// up with a poll thread at many times the rate a thread forwards.
const pollEvery = time.Millisecond

// holdBack is how long the writer keeps a record back while another ring is empty, in
// case that ring's thread is about to put an earlier one (it stamped its poll, then
// copied): the merged output is in time order unless a poll thread stalls for longer
// between its poll and its copy.
const holdBack = 2 * time.Millisecond

// Write writes the pcapng stream to w until the session ends: Count frames written,
// Duration elapsed, Stop called, or a write to w failed. It stops the session before
// it returns, and ends the stream with each interface's statistics block. flush, if
// not nil, is called after each batch of packets.
func (s *Session) Write(w io.Writer, flush func() error) error {
	defer s.Stop()
	ports := s.target.Ports()
	bw := bufio.NewWriterSize(w, 64<<10)
	ng := &ngWriter{w: bw}
	if err := s.header(ng, ports); err != nil {
		return err
	}
	var deadline <-chan time.Time
	if s.opts.Duration > 0 {
		t := time.NewTimer(s.opts.Duration)
		defer t.Stop()
		deadline = t.C
	}
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	var total uint64
	for {
		n, err := s.drain(ng, &total, false)
		if err != nil {
			s.StopFor("writing to the client failed: " + err.Error())
			return err
		}
		if s.opts.Count > 0 && total >= s.opts.Count {
			s.StopFor(fmt.Sprintf("%d frames captured (count)", s.opts.Count))
			break
		}
		if n > 0 {
			err := bw.Flush()
			if err == nil && flush != nil {
				err = flush()
			}
			if err != nil {
				s.StopFor("writing to the client failed: " + err.Error())
				return err
			}
		}
		select {
		case <-tick.C:
			continue
		case <-deadline:
			s.StopFor(fmt.Sprintf("duration %s reached", s.opts.Duration))
		case <-s.done:
		}
		break
	}
	s.Stop()
	if _, err := s.drain(ng, &total, true); err != nil {
		return err
	}
	if err := s.finish(ng, ports); err != nil {
		return err
	}
	return bw.Flush()
}

func (s *Session) header(ng *ngWriter, ports []dataplane.Port) error {
	if err := ng.section("", "Linux", "uiod capture"); err != nil {
		return err
	}
	for _, id := range s.opts.Ports {
		p := ports[id]
		var speed uint64
		if l := p.NIC.Link(); l.Up && l.SpeedMbps > 0 {
			speed = uint64(l.SpeedMbps) * 1e6
		}
		err := ng.iface(ngInterface{
			name:        p.Name,
			description: fmt.Sprintf("uiod port %s (%s)", p.Name, p.NIC.MAC()),
			hardware:    nic.Describe(p.NIC),
			filter:      s.opts.FilterText,
			mac:         p.NIC.MAC(),
			speedBps:    speed,
			snaplen:     uint32(s.opts.Snaplen),
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// drain writes what the rings hold in time order, up to the session's count, and
// returns how many frames it wrote. Unless final, a record is kept back while another
// ring is empty and the record is younger than holdBack.
func (s *Session) drain(ng *ngWriter, total *uint64, final bool) (int, error) {
	n := 0
	now := idle.Now()
	for s.opts.Count == 0 || *total < s.opts.Count {
		best, all := -1, true
		var bt record
		var bd []byte
		for i, r := range s.rings {
			rec, data, ok := r.peek()
			if !ok {
				all = false
				continue
			}
			if best < 0 || rec.time < bt.time {
				best, bt, bd = i, rec, data
			}
		}
		if best < 0 || (!final && !all && now-bt.time < int64(holdBack)) {
			break
		}
		ns := s.wallBase.UnixNano() + (bt.time - s.monoBase)
		err := ng.packet(uint32(bt.iface), ns, bd, bt.origLen, bt.dir, bt.queue)
		s.rings[best].release(bt)
		if err != nil {
			return n, err
		}
		s.captured[bt.iface]++
		*total++
		n++
	}
	return n, nil
}

// finish writes every interface's statistics block.
func (s *Session) finish(ng *ngWriter, ports []dataplane.Port) error {
	st := s.Stats()
	now := time.Now()
	why := "stopped"
	if r := s.reason.Load(); r != nil {
		why = *r
	}
	for i, id := range s.opts.Ports {
		var c strings.Builder
		fmt.Fprintf(&c, "%d frames captured, %d dropped by the capture ring", st.Captured[i], st.Dropped[i])
		if left := st.Seen[i] - st.Dropped[i] - st.Captured[i]; left > 0 {
			fmt.Fprintf(&c, ", %d not written (the count was reached)", left)
		}
		if m := ports[id].NIC.Stats().RxMissed - s.missed0[i]; m > 0 && m < 1<<63 {
			fmt.Fprintf(&c, "; the port missed %d frames meanwhile (no free descriptor)", m)
		}
		fmt.Fprintf(&c, "; ended: %s", why)
		err := ng.stats(uint32(i), ngStats{
			start: s.wallBase, end: now,
			recv: st.Received[i], drop: st.Dropped[i], filterAccept: st.Seen[i], usrDeliv: st.Captured[i],
			comment: c.String(),
		})
		if err != nil {
			return err
		}
	}
	return nil
}

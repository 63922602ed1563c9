// Package capture mirrors a running dataplane's frames into pcapng, like dpdk-dumpcap: a
// Session attaches to ports as their dataplane.Mirror, copies what the poll threads see
// into one bounded ring per thread (a full ring drops the frame and counts it: the poll
// thread never waits), and a writer goroutine turns the rings into pcapng, an interface
// block per port, nanosecond timestamps from the poll loop, and the drops in each
// interface's statistics block. A Server offers sessions over a unix control socket (root
// only); Dial is its client, what `uiod capture` runs.
package capture

import (
	"errors"
	"fmt"
	"io"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

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
	// maxSlot bounds the bytes a ring slot keeps of a frame (larger than any buffer a
	// port here uses).
	maxSlot   = 16384
	ringBytes = 4 << 20 // per poll thread
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
	Seen     []uint64 // frames that matched the filter while the capture ran
}

// Session is one running capture.
type Session struct {
	opts     Options
	target   Target
	ifaceOf  map[dataplane.PortID]int
	rings    []*ring
	stopped  atomic.Bool
	wallBase time.Time
	monoBase int64
	captured []uint64

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
	if (s.opts.Direction == RxOnly && dir != dataplane.RX) || (s.opts.Direction == TxOnly && dir != dataplane.TX) ||
		(s.opts.Queue >= 0 && queue != s.opts.Queue) || thread >= len(s.rings) {
		return
	}
	r := s.rings[thread]
	r.busy.Store(true)
	if !s.stopped.Load() {
		r.put(m.iface, uint8(dir), queue, frames, now)
	}
	r.busy.Store(false)
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
	s := &Session{opts: opts, target: t, ifaceOf: map[dataplane.PortID]int{}, done: make(chan struct{})}
	for i, p := range opts.Ports {
		if int(p) >= len(ports) {
			return nil, fmt.Errorf("port %d: no such port", p)
		}
		if _, dup := s.ifaceOf[p]; dup {
			return nil, fmt.Errorf("port %s: given twice", ports[p].Name)
		}
		s.ifaceOf[p] = i
	}
	slot := min(opts.Snaplen, maxSlot)
	slots := 1 << (bits.Len(uint(ringBytes/slot)) - 1)
	for range t.Threads() {
		s.rings = append(s.rings, newRing(slots, slot, len(opts.Ports)))
	}
	s.captured = make([]uint64, len(opts.Ports))
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

// Stop detaches the session from its ports and waits until no poll thread is inside its
// Mirror, so that after Stop every frame the session saw is either in a ring or counted
// as dropped. It returns at once when called again; Write drains what is left.
func (s *Session) Stop() {
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
	st := Stats{Captured: append([]uint64(nil), s.captured...), Dropped: make([]uint64, len(s.opts.Ports)), Seen: make([]uint64, len(s.opts.Ports))}
	for _, r := range s.rings {
		for i := range st.Dropped {
			st.Dropped[i] += r.dropped[i].Load()
			st.Seen[i] += r.seen[i].Load()
		}
	}
	return st
}

// pollEvery is how often the writer looks at the rings: often enough that a ring of a
// few thousand slots does not fill at a poll thread's rate between two looks.
const pollEvery = time.Millisecond

// Write writes the pcapng stream to w until the session ends: Count frames written,
// Duration elapsed, Stop called, or a write to w failed (a client that went away or
// stopped reading: flush, see Server). It stops the session before it returns, and
// ends the stream with each interface's statistics block.
func (s *Session) Write(w io.Writer, flush func() error) error {
	defer s.Stop()
	ports := s.target.Ports()
	ng, err := s.newWriter(w, ports)
	if err != nil {
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
		n, err := s.drain(ng, &total)
		if err != nil {
			return err
		}
		if s.opts.Count > 0 && total >= s.opts.Count {
			break
		}
		if n > 0 {
			if err := ng.Flush(); err != nil {
				return err
			}
			if flush != nil {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		select {
		case <-tick.C:
			continue
		case <-deadline:
		case <-s.done:
		}
		break
	}
	s.Stop()
	if s.opts.Count == 0 || total < s.opts.Count {
		if _, err := s.drain(ng, &total); err != nil {
			return err
		}
	}
	return s.finish(ng, ports)
}

func (s *Session) newWriter(w io.Writer, ports []dataplane.Port) (*pcapgo.NgWriter, error) {
	iface := func(i int) pcapgo.NgInterface {
		p := ports[s.opts.Ports[i]]
		return pcapgo.NgInterface{
			Name:                p.Name,
			Description:         fmt.Sprintf("uiod port %s (%s)", p.Name, p.NIC.MAC()),
			OS:                  "Linux",
			LinkType:            layers.LinkTypeEthernet,
			TimestampResolution: 9,
			SnapLength:          uint32(s.opts.Snaplen),
		}
	}
	ng, err := pcapgo.NewNgWriterInterface(w, iface(0), pcapgo.NgWriterOptions{SectionInfo: pcapgo.NgSectionInfo{Application: "uiod capture", OS: "Linux"}})
	if err != nil {
		return nil, err
	}
	for i := 1; i < len(s.opts.Ports); i++ {
		if _, err := ng.AddInterface(iface(i)); err != nil {
			return nil, err
		}
	}
	return ng, nil
}

// drain writes what the rings hold, up to the session's count, and returns how many
// frames it wrote.
func (s *Session) drain(ng *pcapgo.NgWriter, total *uint64) (int, error) {
	n := 0
	inbound, outbound := pcapgo.NgEpbFlags{Direction: pcapgo.NgEpbFlagDirectionInbound}, pcapgo.NgEpbFlags{Direction: pcapgo.NgEpbFlagDirectionOutbound}
	for _, r := range s.rings {
		for {
			if s.opts.Count > 0 && *total >= s.opts.Count {
				return n, nil
			}
			rec, data, ok := r.get()
			if !ok {
				break
			}
			ci := gopacket.CaptureInfo{
				Timestamp:      s.wallBase.Add(time.Duration(rec.time - s.monoBase)),
				CaptureLength:  int(rec.capLen),
				Length:         int(rec.origLen),
				InterfaceIndex: int(rec.iface),
			}
			flags := &inbound
			if rec.dir == uint8(dataplane.TX) {
				flags = &outbound
			}
			err := ng.WritePacketWithOptions(ci, data, pcapgo.NgPacketOptions{Flags: flags})
			r.release()
			if err != nil {
				return n, err
			}
			s.captured[rec.iface]++
			*total++
			n++
		}
	}
	return n, nil
}

// finish writes every interface's statistics block and flushes.
func (s *Session) finish(ng *pcapgo.NgWriter, ports []dataplane.Port) error {
	st := s.Stats()
	now := time.Now()
	for i := range s.opts.Ports {
		err := ng.WriteInterfaceStats(i, pcapgo.NgInterfaceStatistics{
			LastUpdate:      now,
			StartTime:       s.wallBase,
			EndTime:         now,
			PacketsReceived: st.Seen[i],
			PacketsDropped:  st.Dropped[i],
			Comment:         fmt.Sprintf("%d frames captured, %d dropped by the capture ring", st.Captured[i], st.Dropped[i]),
		})
		if err != nil {
			return err
		}
	}
	return ng.Flush()
}

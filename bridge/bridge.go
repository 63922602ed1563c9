// Package bridge is uiod's learning Ethernet switch, run as a dataplane.App over any
// nic.Port (PCI, vhost-user, TAP, sim): what Linux's bridge does with vlan_filtering 1,
// without STP. Each frame's source MAC is learnt on (its VLAN, its RX port), with ageing;
// a unicast frame to a known MAC leaves by that MAC's port; broadcast, multicast and
// unknown unicast are flooded to every other port of the frame's VLAN (per-port flood
// limit). 802.1Q: an access port has a PVID (its untagged frames belong to it, and that
// VLAN leaves it untagged); a trunk port carries its allowed VLANs tagged. A frame never
// leaves its VLAN. A per-port MAC limit keeps one port from filling the table; static
// entries are never moved or aged. Frames to the 802.1D reserved addresses
// 01:80:c2:00:00:00–0f (STP BPDUs, pause, LACP, LLDP) are dropped: uiod runs no STP.
//
// The table (fdb.go) is shared by every poll thread: lookups take no lock and write
// nothing, learning is a compare-and-swap on the slot's words. docs/design.md has the
// design and how it compares with Linux's bridge.
package bridge

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync/atomic"
	"time"

	"github.com/uiod/uiod/dataplane"
	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/nic"
)

// Defaults and limits of Config.
const (
	DefaultAgeing    = 300 * time.Second // Linux's
	MinAgeing        = 10 * time.Millisecond
	MaxAgeing        = 1_000_000 * time.Second
	DefaultTableSize = 16384
	MaxTableSize     = 1 << 22
	DefaultCopyBufs  = 1024
	DefaultCopySize  = 2048
	// DefaultPVID is the VLAN of a port's untagged frames when its Port says nothing.
	DefaultPVID = 1
	MaxVLAN     = 4094
	maxPorts    = 1024
)

// Port is one port's place in the bridge. Its PortID is its index in Config.Ports.
type Port struct {
	// Name labels the port in the table's listing and in errors.
	Name string
	// PVID is the VLAN of the untagged (and priority-tagged) frames the port receives,
	// and the one VLAN it sends untagged; 0: the port takes no untagged frames.
	PVID uint16
	// VLANs are the VLANs the port carries tagged (a trunk), 1 to 4094, not the PVID.
	VLANs []uint16
	// MACLimit is the most dynamic entries the port may have in the table (0: none but
	// the table's size). A source beyond it is not learnt; its frames still pass.
	MACLimit int
	// FloodLimit is the most frames a second received on the port that the bridge floods
	// (broadcast, multicast, unknown unicast), in bursts of up to a tenth of a second's;
	// the rest are dropped (0: no limit).
	FloodLimit int
	// Pollers is the number of poll threads that serve the port's RX queues (default 1):
	// each thread gets an equal share of the flood limit.
	Pollers int
}

// Static is a static entry: frames to MAC in VLAN leave by Port; it never ages, and a
// frame from MAC on another port does not move it.
type Static struct {
	MAC  net.HardwareAddr
	VLAN uint16 // 0: the port's PVID
	Port dataplane.PortID
}

// Config configures an App.
type Config struct {
	// Ports are the bridge's ports by PortID: every port of the dataplane.
	Ports []Port
	// Ageing is how long a learnt entry lives without a frame from its MAC (default
	// DefaultAgeing), MinAgeing to MaxAgeing.
	Ageing time.Duration
	// TableSize is the most entries the table holds (default DefaultTableSize).
	TableSize int
	// Static are the static entries.
	Static []Static
	// Threads is the number of poll threads (every Burst.Thread is below it; default 1).
	Threads int
	// CopyBufs and CopySize size each thread's pool of flood copies: buffers, and bytes
	// each (defaults DefaultCopyBufs, DefaultCopySize). A flood copy that finds the pool
	// empty or the frame too long is not sent (counted as CopyFailed).
	CopyBufs, CopySize int
	// Now is the clock of Burst.Time, for the ager and Entries (default idle.Now).
	Now func() int64
}

// App is the bridge as a dataplane.App. One App serves every poll thread.
type App struct {
	cfg     Config
	ports   []portState
	vlans   [MaxVLAN + 1][]dataplane.PortID // the member ports of each VLAN, in PortID order
	table   *fdb
	threads []thread
	// ageing is the ageing time and the refresh granule (how old an entry's time may get
	// before learning rewrites it), in ms; SetAgeing changes them while the bridge runs.
	ageing atomic.Pointer[ageing]
}

// portState is a port's configuration as the hot path reads it.
type portState struct {
	name     string
	pvid     uint16
	member   [(MaxVLAN + 64) / 64]uint64 // bit v: the port is in VLAN v
	macLimit int64
	interval int64 // ns between flooded frames this thread may take, 0 no limit
}

func (p *portState) in(v uint16) bool { return p.member[v>>6]&(1<<(v&63)) != 0 }

// New checks cfg and builds the bridge. Errors name the port or entry that is wrong.
func New(cfg Config) (*App, error) {
	cfg.Ageing = cmp.Or(cfg.Ageing, DefaultAgeing)
	cfg.TableSize = cmp.Or(cfg.TableSize, DefaultTableSize)
	cfg.Threads = cmp.Or(cfg.Threads, 1)
	cfg.CopyBufs = cmp.Or(cfg.CopyBufs, DefaultCopyBufs)
	cfg.CopySize = cmp.Or(cfg.CopySize, DefaultCopySize)
	if cfg.Now == nil {
		cfg.Now = idle.Now
	}
	switch {
	case len(cfg.Ports) == 0 || len(cfg.Ports) > maxPorts:
		return nil, fmt.Errorf("bridge: %d ports: want 1 to %d", len(cfg.Ports), maxPorts)
	case cfg.Ageing < MinAgeing || cfg.Ageing > MaxAgeing:
		return nil, fmt.Errorf("bridge: ageing %v: want %v to %v", cfg.Ageing, MinAgeing, MaxAgeing)
	case cfg.TableSize < 1 || cfg.TableSize > MaxTableSize:
		return nil, fmt.Errorf("bridge: table size %d: want 1 to %d", cfg.TableSize, MaxTableSize)
	case cfg.Threads < 1 || cfg.Threads > 1024:
		return nil, fmt.Errorf("bridge: %d threads: want 1 to 1024", cfg.Threads)
	case cfg.CopyBufs < 1 || cfg.CopySize < 64:
		return nil, fmt.Errorf("bridge: copy pool of %d buffers of %d bytes: want at least 1 of 64", cfg.CopyBufs, cfg.CopySize)
	}
	a := &App{cfg: cfg, table: newFDB(cfg.TableSize, len(cfg.Ports))}
	a.setAgeing(cfg.Ageing)
	for i, p := range cfg.Ports {
		ps, err := newPortState(p)
		if err != nil {
			return nil, fmt.Errorf("bridge: port %d (%s): %w", i, p.Name, err)
		}
		a.ports = append(a.ports, ps)
		for v := range uint16(MaxVLAN + 1) {
			if ps.in(v) {
				a.vlans[v] = append(a.vlans[v], dataplane.PortID(i))
			}
		}
	}
	for i, s := range cfg.Static {
		if err := a.addStatic(s); err != nil {
			return nil, fmt.Errorf("bridge: static entry %d (%v): %w", i, s.MAC, err)
		}
	}
	for range cfg.Threads {
		th, err := newThread(cfg, a.ports)
		if err != nil {
			a.Close()
			return nil, err
		}
		a.threads = append(a.threads, th)
	}
	return a, nil
}

func newPortState(p Port) (portState, error) {
	ps := portState{name: p.Name, pvid: p.PVID, macLimit: int64(p.MACLimit)}
	if p.PVID > MaxVLAN {
		return ps, fmt.Errorf("pvid %d: want 1 to %d, or 0 for none", p.PVID, MaxVLAN)
	}
	if p.PVID != 0 {
		ps.member[p.PVID>>6] |= 1 << (p.PVID & 63)
	}
	for _, v := range p.VLANs {
		switch {
		case v == 0 || v > MaxVLAN:
			return ps, fmt.Errorf("vlan %d: want 1 to %d", v, MaxVLAN)
		case v == p.PVID:
			return ps, fmt.Errorf("vlan %d is the port's pvid: a VLAN leaves a port tagged or untagged, not both", v)
		case ps.in(v):
			return ps, fmt.Errorf("vlan %d listed twice", v)
		}
		ps.member[v>>6] |= 1 << (v & 63)
	}
	if p.MACLimit < 0 || p.FloodLimit < 0 || p.Pollers < 0 {
		return ps, errors.New("mac limit, flood limit and pollers cannot be negative")
	}
	if p.FloodLimit > 0 {
		ps.interval = int64(time.Second) * int64(max(1, p.Pollers)) / int64(p.FloodLimit)
	}
	return ps, nil
}

func (a *App) addStatic(s Static) error {
	if len(s.MAC) != 6 || s.MAC[0]&1 != 0 || [6]byte(s.MAC) == [6]byte{} {
		return errors.New("not a unicast MAC address")
	}
	if int(s.Port) >= len(a.ports) {
		return fmt.Errorf("port %d: the bridge has %d ports", s.Port, len(a.ports))
	}
	p := &a.ports[s.Port]
	v := cmp.Or(s.VLAN, p.pvid)
	if v == 0 || v > MaxVLAN || !p.in(v) {
		return fmt.Errorf("vlan %d: port %s is not in it", v, p.name)
	}
	k := fdbKey(macNumber(s.MAC), v)
	if _, dup := a.table.lookup(k, 0, 0); dup {
		return fmt.Errorf("a second entry for %v in vlan %d", s.MAC, v)
	}
	if !a.table.addStatic(k, uint16(s.Port)) {
		return errors.New("the table has no room for it")
	}
	return nil
}

func macNumber(m net.HardwareAddr) uint64 {
	var n uint64
	for _, b := range m[:6] {
		n = n<<8 | uint64(b)
	}
	return n
}

func macOf(n uint64) net.HardwareAddr {
	return net.HardwareAddr{byte(n >> 40), byte(n >> 32), byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}
}

// Close frees the threads' copy pools. The dataplane must have stopped (and the ports
// sent or freed what they held).
func (a *App) Close() {
	for i := range a.threads {
		a.threads[i].pool.Close()
	}
	a.threads = nil
}

// String is the app's configuration name.
func (a *App) String() string { return "bridge" }

// Process switches every frame of the burst.
func (a *App) Process(b *dataplane.Burst) {
	process(a, b, b.Thread, b.Port, b.Frames, b.Time)
}

// sink is what process decides through: *dataplane.Burst, or a test's recorder.
type sink interface {
	Send(i int, p dataplane.PortID)
	Drop(i int, r dataplane.DropReason)
	SendCopy(i int, c *nic.Buf, p dataplane.PortID)
}

// process switches frames received on port in by thread ti at now (ns), deciding each
// through out. It is generic so that the Burst's calls are direct ones.
func process[S sink](a *App, out S, ti int, in dataplane.PortID, frames []*nic.Buf, now int64) {
	th := &a.threads[ti]
	ms := now / int64(time.Millisecond)
	p := &a.ports[in]
	c := &th.local
	age := a.ageing.Load()
	for i, buf := range frames {
		f := buf.Bytes()
		fr, pr := parse(f)
		if pr != parseOK {
			c[cDropped]++
			out.Drop(i, parseDrops[pr])
			continue
		}
		// Ingress: the frame's VLAN, and the TCI it leaves tagged ports with.
		vid, tci := fr.tci&vidMask, fr.tci
		if !fr.tagged || vid == 0 { // untagged or priority-tagged: the PVID's
			if p.pvid == 0 {
				c[cDropped]++
				out.Drop(i, DropVLAN)
				continue
			}
			vid, tci = p.pvid, tci&^vidMask|p.pvid
		} else if !p.in(vid) {
			c[cDropped]++
			out.Drop(i, DropVLAN)
			continue
		}
		switch a.table.learn(fdbKey(fr.src, vid), uint16(in), ms, age.ms, age.refresh, p.macLimit) {
		case learnNew:
			c[cLearned]++
		case learnMoved:
			c[cMoved]++
		case learnLimit, learnFull:
			c[cRefused]++
		}
		if !multicast(fr.dst) {
			if to, ok := a.table.lookup(fdbKey(fr.dst, vid), ms, age.ms); ok {
				if dataplane.PortID(to) == in {
					c[cDropped]++
					out.Drop(i, DropSamePort)
					continue
				}
				q := &a.ports[to]
				if n := retag(buf.Data(), len(f), fr.tagged, q.pvid != vid, tci); n >= 0 {
					buf.SetLen(n)
					out.Send(i, dataplane.PortID(to))
				} else {
					c[cDropped]++
					out.Drop(i, DropTooLong)
				}
				continue
			}
		}
		flood(a, out, th, i, in, buf, fr, vid, tci, now)
	}
	th.publish(in)
}

// flood sends frame i (buf) to every port of VLAN vid but in: copies to all but the last,
// the frame itself to the last.
func flood[S sink](a *App, out S, th *thread, i int, in dataplane.PortID, buf *nic.Buf, fr frame, vid, tci uint16, now int64) {
	c := &th.local
	if !th.floodOK(in, a.ports[in].interval, now) {
		c[cDropped]++
		c[cFloodLimited]++
		out.Drop(i, DropFloodLimit)
		return
	}
	members := a.vlans[vid]
	last := -1
	for j := len(members) - 1; j >= 0; j-- {
		if members[j] != in {
			last = j
			break
		}
	}
	if last < 0 {
		c[cDropped]++
		out.Drop(i, DropNoPort)
		return
	}
	c[cFlooded]++
	f := buf.Bytes()
	for _, to := range members[:last] {
		if to == in {
			continue
		}
		cp := th.pool.Get()
		if cp == nil {
			c[cCopyFailed]++
			continue
		}
		n := copyAs(cp.Data(), f, fr.tagged, a.ports[to].pvid != vid, tci)
		if n < 0 {
			cp.Free()
			c[cCopyFailed]++
			continue
		}
		cp.SetLen(n)
		out.SendCopy(i, cp, to)
	}
	to := members[last]
	if n := retag(buf.Data(), len(f), fr.tagged, a.ports[to].pvid != vid, tci); n >= 0 {
		buf.SetLen(n)
		out.Send(i, to)
	} else {
		c[cDropped]++
		out.Drop(i, DropTooLong)
	}
}

// newThread makes thread state: its copy pool and flood buckets.
func newThread(cfg Config, ports []portState) (thread, error) {
	pool, err := nic.NewMempool(&nic.HeapDMA{}, cfg.CopyBufs, nic.BufStride(cfg.CopySize))
	if err != nil {
		return thread{}, fmt.Errorf("bridge: copy pool: %w", err)
	}
	return thread{pool: pool, tat: make([]int64, len(ports)), counters: make([]portCounters, len(ports))}, nil
}

// Entry is one entry of the MAC table.
type Entry struct {
	MAC    net.HardwareAddr
	VLAN   uint16
	Port   dataplane.PortID
	Static bool
	// Age is the time since a frame from MAC last refreshed the entry (0 if static).
	Age time.Duration
}

// Entries lists the table's entries in force, by VLAN, then MAC.
func (a *App) Entries() []Entry {
	now := a.cfg.Now() / int64(time.Millisecond)
	var es []Entry
	a.table.walk(now, a.ageing.Load().ms, func(e entry) {
		en := Entry{MAC: macOf(keyMAC(e.key)), VLAN: keyVLAN(e.key), Port: dataplane.PortID(valPort(e.val)), Static: e.val&valStatic != 0}
		if !en.Static {
			en.Age = time.Duration(max(0, now-valMs(e.val))) * time.Millisecond
		}
		es = append(es, en)
	})
	slices.SortFunc(es, func(x, y Entry) int {
		return cmp.Or(cmp.Compare(x.VLAN, y.VLAN), cmp.Compare(macNumber(x.MAC), macNumber(y.MAC)), cmp.Compare(x.Port, y.Port))
	})
	return es
}

// Expire removes the entries that aged out by now and returns how many; the ager runs it.
func (a *App) Expire() int {
	return a.table.expire(a.cfg.Now()/int64(time.Millisecond), a.ageing.Load().ms)
}

// StartAgeing runs Expire every eighth of the ageing time (10 ms to 1 s) until the
// returned stop is called, so that entries gone stale leave their port's MAC count.
func (a *App) StartAgeing() (stop func()) {
	every := min(time.Second, max(10*time.Millisecond, time.Duration(a.ageing.Load().ms)*time.Millisecond/8))
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				a.Expire()
			}
		}
	}()
	return func() {
		close(done)
		<-exited
	}
}

// PortName is the name of port p, as Config gave it.
func (a *App) PortName(p dataplane.PortID) string { return a.ports[p].name }

// SetPollers sets the number of poll threads serving port p's RX queues (Port.Pollers),
// which share its flood limit. Call it before the dataplane starts.
func (a *App) SetPollers(p dataplane.PortID, n int) {
	ps := &a.ports[p]
	if limit := a.cfg.Ports[p].FloodLimit; limit > 0 {
		ps.interval = int64(time.Second) * int64(max(1, n)) / int64(limit)
	}
}

// ageing is the ageing time in force.
type ageing struct{ ms, refresh int64 }

func (a *App) setAgeing(d time.Duration) {
	ms := d.Milliseconds()
	a.ageing.Store(&ageing{ms: ms, refresh: max(1, min(1000, ms/16))})
}

// SetAgeing changes the ageing time of the running bridge (MinAgeing to MaxAgeing):
// entries older than d are gone at once. The ager keeps the interval it started with.
func (a *App) SetAgeing(d time.Duration) error {
	if d < MinAgeing || d > MaxAgeing {
		return fmt.Errorf("bridge: ageing %v: want %v to %v", d, MinAgeing, MaxAgeing)
	}
	a.setAgeing(d)
	return nil
}

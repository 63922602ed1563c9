package daemon

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vishvananda/netlink"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/uiod/uiod/dataplane"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/tap"
)

// How often the watcher reads the ports' links for the TAPs' carriers, and how often it
// reads the TAPs' state and multicast lists whatever rtnetlink said (joining a group sends
// no message, and a lost subscription none at all).
const (
	tapCarrierPoll = 100 * time.Millisecond
	tapResync      = time.Second
	// tapGroupsDelay is how long after a link or address message the multicast lists are
	// read: the kernel joins an address's groups around its message, and a burst of
	// messages costs one read.
	tapGroupsDelay = 20 * time.Millisecond
)

// tapFollower makes every kernel path's TAP follow its port and the port's filter follow
// the TAP (docs/design.md, "The TAP follows its port"): the TAP's carrier is the port's
// link; a kernel-side MTU at or below the port's is taken by the TAP port (above, it is
// set back and counted); a kernel-side MAC goes to the port's filter (or is set back); a
// TAP set down drops what the dataplane hands it, counted; the groups the kernel joined on
// the TAP go to the port's multicast filter. One goroutine does all of it, off the poll
// threads; the TAP port and the filter take the changes atomically or under their own
// locks.
type tapFollower struct {
	log     *zap.Logger
	h       *netlink.Handle // in the daemon's namespace, made at Start
	mcast   *os.File        // the namespace's dev_mcast, nil when it cannot be read
	buf     []byte
	taps    []*followedTAP
	byIndex map[int]*followedTAP
	// onChange is told a port's new MAC or MTU, after the TAP port and the filter took it
	// (l3fwd's tables are rebuilt from them).
	onChange func(f *followedTAP)

	done chan struct{}
	wg   sync.WaitGroup
}

// followedTAP is one port's kernel path as the watcher follows it.
type followedTAP struct {
	id       int // the port's place in the configuration
	port     string
	nic      nic.Port
	tap      *tap.Port
	index    int
	allmulti bool // kernel.allmulti
	log      *zap.Logger

	// The watcher goroutine's.
	carrierSet   bool
	carrierErr   string
	kernelAll    bool // the TAP is IFF_ALLMULTI
	programmed   bool
	groups       []net.HardwareAddr
	all          bool
	noFilterSaid bool
	groupsErr    string

	mtuRefused, macRefused atomic.Uint64
	filterFollows          atomic.Bool
	nGroups                atomic.Int64
	allOn                  atomic.Bool
}

// startTAPFollow starts the watcher for the ports' kernel paths, if any. It runs in
// Start's thread, whose network namespace the TAPs are in: the netlink sockets and the
// dev_mcast file it opens stay bound to it.
func (d *Daemon) startTAPFollow() error {
	var taps []*followedTAP
	for i, p := range d.ports {
		if p.kernel == nil {
			continue
		}
		taps = append(taps, &followedTAP{id: i, port: p.cfg.Name, nic: p.nic, tap: p.kernel, allmulti: p.cfg.Kernel.AllMulti,
			log: d.log.With(zap.String("port", p.cfg.Name), zap.String("tap", p.kernel.Name()))})
	}
	if len(taps) == 0 {
		return nil
	}
	w, err := newTAPFollower(d.log.Named("tapfollow"), taps)
	if err != nil {
		return err
	}
	w.onChange = d.tapChanged
	w.start()
	d.tapFollow.Store(w)
	return nil
}

// tapChanged gives l3fwd, when it runs, the port's MAC and MTU as its kernel path now has
// them: a new generation of its tables (l3fwd.App.SetPort), off the poll threads.
func (d *Daemon) tapChanged(f *followedTAP) {
	r := d.router.Load()
	if r == nil {
		return
	}
	st, err := r.SetPort(dataplane.PortID(f.id), f.tap.MAC(), f.tap.MTU())
	if err != nil {
		f.log.Error("kernel path: l3fwd cannot follow the port's new MAC or MTU", zap.Error(err))
		return
	}
	f.log.Info("kernel path: l3fwd follows the port's MAC and MTU", zap.Stringer("mac", f.tap.MAC()), zap.Int("mtu", f.tap.MTU()),
		zap.Uint64("generation", st.Generation))
}

// closeTAPFollow stops the watcher, if one runs.
func (d *Daemon) closeTAPFollow() {
	if w := d.tapFollow.Swap(nil); w != nil {
		w.stop()
	}
}

// tapStatus is the watcher's view of port i's TAP, nil when none follows it.
func (d *Daemon) tapStatus(i int) *TAPFollowStatus {
	w := d.tapFollow.Load()
	if w == nil {
		return nil
	}
	for _, f := range w.taps {
		if f.id == i {
			return f.status()
		}
	}
	return nil
}

func (f *followedTAP) status() *TAPFollowStatus {
	return &TAPFollowStatus{
		MTU: f.tap.MTU(), Carrier: f.tap.Carrier(), Down: f.tap.Down(), TxDown: f.tap.Counters().TxDown,
		MTURefused: f.mtuRefused.Load(), MACRefused: f.macRefused.Load(),
		FilterFollows: f.filterFollows.Load(), Groups: int(f.nGroups.Load()), AllMulti: f.allOn.Load(),
	}
}

// newTAPFollower opens what the watcher needs in the calling thread's namespace and
// brings the TAPs and filters in line once (the carrier, the TAPs' state, the groups).
func newTAPFollower(log *zap.Logger, taps []*followedTAP) (*tapFollower, error) {
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("kernel path: netlink: %w", err)
	}
	w := &tapFollower{log: log, h: h, taps: taps, byIndex: map[int]*followedTAP{}, done: make(chan struct{})}
	for _, f := range taps {
		l, err := h.LinkByName(f.tap.Name())
		if err != nil {
			h.Close()
			return nil, fmt.Errorf("port %s: kernel: TAP %s: %w", f.port, f.tap.Name(), err)
		}
		f.index = l.Attrs().Index
		w.byIndex[f.index] = f
	}
	// /proc/thread-self/net is this thread's namespace's; the open file stays bound to it.
	if w.mcast, err = os.Open("/proc/thread-self/net/dev_mcast"); err != nil {
		log.Warn("kernel path: the TAPs' multicast groups cannot be read; the ports' filters take only kernel.allmulti", zap.Error(err))
		w.mcast = nil
	}
	return w, nil
}

// start subscribes to link and address messages, syncs once and runs the watcher.
func (w *tapFollower) start() {
	onErr := func(what string) func(error) {
		return func(err error) {
			select {
			case <-w.done:
			default:
				w.log.Warn("rtnetlink "+what+" subscription; the TAPs are still read every "+tapResync.String(), zap.Error(err))
			}
		}
	}
	links := make(chan netlink.LinkUpdate, 64)
	if err := netlink.LinkSubscribeWithOptions(links, w.done, netlink.LinkSubscribeOptions{ErrorCallback: onErr("link")}); err != nil {
		w.log.Warn("rtnetlink link subscription; the TAPs are read every "+tapResync.String(), zap.Error(err))
		links = nil
	}
	addrs := make(chan netlink.AddrUpdate, 64)
	if err := netlink.AddrSubscribeWithOptions(addrs, w.done, netlink.AddrSubscribeOptions{ErrorCallback: onErr("address")}); err != nil {
		w.log.Warn("rtnetlink address subscription; the TAPs' groups are read every "+tapResync.String(), zap.Error(err))
		addrs = nil
	}
	w.resync()
	w.wg.Add(1)
	go w.loop(links, addrs)
}

func (w *tapFollower) stop() {
	close(w.done)
	w.wg.Wait()
	w.h.Close()
	if w.mcast != nil {
		w.mcast.Close()
	}
}

// loop is the watcher goroutine.
func (w *tapFollower) loop(links chan netlink.LinkUpdate, addrs chan netlink.AddrUpdate) {
	defer w.wg.Done()
	// A subscription's goroutine may be sending as done closes: let it finish and close.
	defer func() {
		if links != nil {
			go drain(links)
		}
		if addrs != nil {
			go drain(addrs)
		}
	}()
	carrier := time.NewTicker(tapCarrierPoll)
	defer carrier.Stop()
	resync := time.NewTicker(tapResync)
	defer resync.Stop()
	groups := time.NewTimer(time.Hour)
	groups.Stop()
	defer groups.Stop()
	for {
		select {
		case <-w.done:
			return
		case u, ok := <-links:
			if !ok {
				links = nil
				continue
			}
			if f := w.byIndex[int(u.Index)]; f != nil && u.Header.Type == unix.RTM_NEWLINK {
				w.link(f, u.Link)
				groups.Reset(tapGroupsDelay)
			}
		case u, ok := <-addrs:
			if !ok {
				addrs = nil
				continue
			}
			if w.byIndex[u.LinkIndex] != nil {
				groups.Reset(tapGroupsDelay)
			}
		case <-groups.C:
			w.syncGroups()
		case <-carrier.C:
			for _, f := range w.taps {
				w.syncCarrier(f)
			}
		case <-resync.C:
			w.resync()
		}
	}
}

// resync reads every TAP's state and the multicast lists and applies what changed.
func (w *tapFollower) resync() {
	for _, f := range w.taps {
		w.syncCarrier(f)
		if l, err := w.h.LinkByIndex(f.index); err == nil {
			w.link(f, l)
		}
	}
	w.syncGroups()
}

// syncCarrier sets f's TAP carrier to its port's link, when it differs.
func (w *tapFollower) syncCarrier(f *followedTAP) {
	if f.tap.Gone() {
		return
	}
	up := f.nic.Link().Up
	if f.carrierSet && up == f.tap.Carrier() {
		return
	}
	if err := f.tap.SetCarrier(up); err != nil {
		if err.Error() != f.carrierErr {
			f.carrierErr = err.Error()
			f.log.Warn("kernel path: the TAP's carrier cannot follow the port's link", zap.Error(err))
		}
		f.carrierSet = true // tried: again only when the link changes
		return
	}
	f.carrierErr = ""
	if f.carrierSet || !up {
		f.log.Info("kernel path: TAP carrier follows the port's link", zap.Bool("up", up))
	}
	f.carrierSet = true
}

// link applies what the kernel side changed on f's TAP: its administrative state, its
// MTU and its MAC.
func (w *tapFollower) link(f *followedTAP, l netlink.Link) {
	if f.tap.Gone() {
		return
	}
	a := l.Attrs()
	if down := a.Flags&net.FlagUp == 0; down != f.tap.Down() {
		f.tap.SetDown(down)
		if down {
			f.log.Warn("kernel path: TAP set down; frames for the kernel are dropped (counted as tx_down) until it is up")
		} else {
			f.log.Info("kernel path: TAP up again; frames for the kernel flow")
		}
	}
	f.kernelAll = a.RawFlags&unix.IFF_ALLMULTI != 0
	changed := false
	if a.MTU != 0 && a.MTU != f.tap.MTU() {
		if err := f.tap.SetMTU(a.MTU); err != nil {
			f.mtuRefused.Add(1)
			limit := f.tap.MaxMTU()
			f.log.Warn("kernel path: TAP MTU above the port's mtu refused; set back to the port's",
				zap.Int("asked_mtu", a.MTU), zap.Int("port_mtu", limit))
			if err := w.h.LinkSetMTU(l, limit); err != nil {
				f.log.Error("kernel path: set the TAP's MTU back", zap.Int("mtu", limit), zap.Error(err))
			}
			if f.tap.MTU() != limit {
				f.tap.SetMTU(limit)
				changed = true
			}
		} else {
			f.log.Info("kernel path: TAP MTU changed by the kernel side; frames to the kernel follow it", zap.Int("mtu", a.MTU), zap.Int("port_mtu", f.tap.MaxMTU()))
			changed = true
		}
	}
	if mac := a.HardwareAddr; len(mac) == 6 && !bytes.Equal(mac, f.tap.MAC()) {
		err := errNoRxFilter
		if rf, ok := rxFilterOf(f.nic); ok {
			err = rf.SetMAC(mac)
		}
		if err == nil {
			f.tap.SetMAC(mac)
			f.log.Info("kernel path: TAP MAC changed by the kernel side; the port's filter takes it", zap.Stringer("mac", mac))
			changed = true
		} else {
			f.macRefused.Add(1)
			old := f.tap.MAC()
			f.log.Warn("kernel path: TAP MAC change refused; set back to the port's", zap.Stringer("asked_mac", mac), zap.Stringer("mac", old), zap.Error(err))
			if err := w.h.LinkSetHardwareAddr(l, old); err != nil {
				f.log.Error("kernel path: set the TAP's MAC back", zap.Stringer("mac", old), zap.Error(err))
			}
		}
	}
	if changed && w.onChange != nil {
		w.onChange(f)
	}
}

// syncGroups reads the multicast lists and gives each port's filter its TAP's groups
// when they (or the all-multicast wish) changed.
func (w *tapFollower) syncGroups() {
	var lists map[int][]net.HardwareAddr
	if w.mcast != nil {
		data, err := w.readMcast()
		if err == nil {
			lists, err = parseDevMcast(data)
		}
		if err != nil {
			w.log.Warn("kernel path: read the TAPs' multicast groups", zap.Error(err))
			return
		}
	}
	for _, f := range w.taps {
		groups, all := lists[f.index], f.allmulti || f.kernelAll
		if f.programmed && all == f.all && sameAddrs(groups, f.groups) {
			continue
		}
		err := errNoRxFilter
		if rf, ok := rxFilterOf(f.nic); ok {
			err = rf.SetMulticast(groups, all)
		}
		switch {
		case errors.Is(err, errNoRxFilter):
			f.filterFollows.Store(false)
			if !f.noFilterSaid {
				f.noFilterSaid = true
				f.log.Warn("kernel path: the port's receive filter cannot follow the TAP (its driver has no nic.RxFilter): multicast the kernel joins reaches it only with promiscuous on",
					zap.Int("groups", len(groups)), zap.Bool("allmulti", all))
			}
			f.programmed, f.groups, f.all = true, groups, all
		case err != nil:
			if err.Error() != f.groupsErr {
				f.groupsErr = err.Error()
				f.log.Warn("kernel path: program the port's multicast filter", zap.Int("groups", len(groups)), zap.Error(err))
			}
		default:
			f.groupsErr = ""
			f.programmed, f.groups, f.all = true, slices.Clone(groups), all
			f.filterFollows.Store(true)
			f.nGroups.Store(int64(len(groups)))
			f.allOn.Store(all)
			f.log.Debug("kernel path: the port's multicast filter follows the TAP", zap.Int("groups", len(groups)), zap.Bool("allmulti", all))
		}
	}
}

// readMcast reads the whole dev_mcast file again.
func (w *tapFollower) readMcast() ([]byte, error) {
	if _, err := w.mcast.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	w.buf = w.buf[:0]
	for {
		if len(w.buf) == cap(w.buf) {
			w.buf = slices.Grow(w.buf, 4096)
		}
		n, err := w.mcast.Read(w.buf[len(w.buf):cap(w.buf)])
		w.buf = w.buf[:len(w.buf)+n]
		if err == io.EOF || (err == nil && n == 0) {
			return w.buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// drain receives from c until it is closed.
func drain[T any](c chan T) {
	for range c {
	}
}

package daemon

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vishvananda/netlink"
	"go.uber.org/zap"

	"github.com/uiod/uiod/config"
	"github.com/uiod/uiod/dataplane"
	"github.com/uiod/uiod/l3fwd"
)

// fibCoalesce is how long the watcher gathers changes before it builds a table: a burst
// of route or neighbour messages (a routing daemon's full table, a link flap) costs one
// rebuild, and the tables are built at most this often plus a build's own time.
const fibCoalesce = 20 * time.Millisecond

// fibResubscribe is the pause before a lost subscription is taken up again.
const fibResubscribe = 100 * time.Millisecond

// fibRcvBuf is the subscriptions' socket receive buffer: room for a routing daemon's
// burst while the watcher applies the messages before (forced past rmem_max as root).
const fibRcvBuf = 8 << 20

// fibWatcher follows the kernel's routes and neighbours on the TAPs (rtnetlink) and
// publishes l3fwd's table from them (docs/design.md §16, "Routes from the kernel"). One
// goroutine takes the messages into the state, another builds and publishes the tables,
// off the poll threads, which only load the table's pointer.
type fibWatcher struct {
	app   *l3fwd.App
	log   *zap.Logger
	table int

	mu      sync.Mutex // guards k, lastErr, changes and built
	k       *kernelFIB
	lastErr string
	changes uint64        // changes applied to k
	built   uint64        // changes in the table last published
	kick    chan struct{} // a change to build (capacity 1)
	done    chan struct{}
	wg      sync.WaitGroup
	events  atomic.Uint64
	updates atomic.Uint64
	resyncs atomic.Uint64
}

// startFIB starts the watcher of forward.routes_from kernel for app: the routes of
// forward.kernel_table and the local table, and the neighbours, on the ports' TAPs.
func (d *Daemon) startFIB(app *l3fwd.App) error {
	if d.cfg.Forward.RoutesFrom != config.RoutesFromKernel {
		return nil
	}
	table, err := config.ParseKernelTable(d.cfg.Forward.KernelTable)
	if err != nil {
		return fmt.Errorf("forward.kernel_table: %w", err)
	}
	ports := map[int]dataplane.PortID{}
	var names []string
	for i, p := range d.ports {
		names = append(names, p.cfg.Name)
		if p.kernel == nil {
			continue
		}
		l, err := netlink.LinkByName(p.cfg.Kernel.TAP)
		if err != nil {
			return fmt.Errorf("forward.routes_from: port %s: TAP %s: %w", p.cfg.Name, p.cfg.Kernel.TAP, err)
		}
		ports[l.Attrs().Index] = dataplane.PortID(i)
	}
	if len(ports) == 0 {
		return errors.New("forward.routes_from: kernel: no port has a kernel path")
	}
	w := &fibWatcher{app: app, log: d.log.Named("fib"), table: table, k: newKernelFIB(table, ports, names),
		kick: make(chan struct{}, 1), done: make(chan struct{})}
	routes, neighs, err := w.subscribe(true, true)
	if err != nil {
		close(w.done) // closes a subscription that was made
		return fmt.Errorf("forward.routes_from: %w", err)
	}
	w.wg.Add(2)
	go w.receive(routes, neighs)
	go w.builder()
	d.fibWatch.Store(w)
	w.log.Info("following the kernel's routes", zap.Int("table", table), zap.Int("taps", len(ports)))
	return nil
}

// closeFIB stops the watcher, if one runs.
func (d *Daemon) closeFIB() {
	if w := d.fibWatch.Swap(nil); w != nil {
		close(w.done)
		w.wg.Wait()
	}
}

// subscribe opens the route and neighbour subscriptions asked for, each dumping what the
// kernel has first; a nil channel is one not asked for.
func (w *fibWatcher) subscribe(route, neigh bool) (chan netlink.RouteUpdate, chan netlink.NeighUpdate, error) {
	var rc chan netlink.RouteUpdate
	var nc chan netlink.NeighUpdate
	onErr := func(what string) func(error) {
		return func(err error) { w.setErr(fmt.Errorf("%s subscription: %w", what, err)) }
	}
	if route {
		rc = make(chan netlink.RouteUpdate, 1024)
		if err := netlink.RouteSubscribeWithOptions(rc, w.done, netlink.RouteSubscribeOptions{
			ListExisting: true, ErrorCallback: onErr("route"), ReceiveBufferSize: fibRcvBuf, ReceiveBufferForceSize: true,
		}); err != nil {
			return nil, nil, fmt.Errorf("subscribe to routes: %w", err)
		}
	}
	if neigh {
		nc = make(chan netlink.NeighUpdate, 1024)
		if err := netlink.NeighSubscribeWithOptions(nc, w.done, netlink.NeighSubscribeOptions{
			ListExisting: true, ErrorCallback: onErr("neighbour"), ReceiveBufferSize: fibRcvBuf, ReceiveBufferForceSize: true,
		}); err != nil {
			return nil, nil, fmt.Errorf("subscribe to neighbours: %w", err)
		}
	}
	return rc, nc, nil
}

func (w *fibWatcher) setErr(err error) {
	select {
	case <-w.done:
		return // the subscriptions' sockets closed under them
	default:
	}
	w.mu.Lock()
	w.lastErr = err.Error()
	w.mu.Unlock()
	w.log.Warn("rtnetlink", zap.Error(err))
}

// receive takes the messages into the state until done. A subscription whose channel
// closes (the socket overran: ENOBUFS, or a message it could not parse) is taken up
// again with a fresh dump, its part of the state forgotten first.
func (w *fibWatcher) receive(routes chan netlink.RouteUpdate, neighs chan netlink.NeighUpdate) {
	defer w.wg.Done()
	for {
		select {
		case <-w.done:
			return
		case u, ok := <-routes:
			if !ok {
				routes, _ = w.resubscribe(true)
				continue
			}
			w.apply(func(k *kernelFIB) bool { return k.route(u) })
		case u, ok := <-neighs:
			if !ok {
				_, neighs = w.resubscribe(false)
				continue
			}
			w.apply(func(k *kernelFIB) bool { return k.neigh(u) })
		}
	}
}

// resubscribe takes the route subscription (route) or the neighbour one up again, after
// a pause, until it works or the watcher stops.
func (w *fibWatcher) resubscribe(route bool) (chan netlink.RouteUpdate, chan netlink.NeighUpdate) {
	for {
		select {
		case <-w.done:
			return nil, nil
		case <-time.After(fibResubscribe):
		}
		w.resyncs.Add(1)
		w.apply(func(k *kernelFIB) bool {
			if route {
				k.resetRoutes()
			} else {
				k.resetNeighs()
			}
			return true
		})
		rc, nc, err := w.subscribe(route, !route)
		if err == nil {
			return rc, nc
		}
		w.setErr(err)
	}
}

// apply runs fn on the state; when it changed something, the builder is told.
func (w *fibWatcher) apply(fn func(*kernelFIB) bool) {
	w.events.Add(1)
	w.mu.Lock()
	changed := fn(w.k)
	if changed {
		w.changes++
	}
	w.mu.Unlock()
	if changed {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
}

// builder publishes a table after each burst of changes: it waits fibCoalesce after the
// first, translates the state, and hands the result to l3fwd.App.Update.
func (w *fibWatcher) builder() {
	defer w.wg.Done()
	var limit limitLog
	for {
		select {
		case <-w.done:
			return
		case <-w.kick:
		}
		select {
		case <-w.done:
			return
		case <-time.After(fibCoalesce):
		}
		w.mu.Lock()
		routes, local := w.k.build()
		changes := w.changes
		w.mu.Unlock()
		start := time.Now()
		st, err := w.app.Update(routes, local)
		if err != nil { // counted by the App
			w.setErr(err)
			continue
		}
		w.updates.Add(1)
		limit.note(w.log, st)
		w.mu.Lock()
		w.built = changes
		w.mu.Unlock()
		w.log.Debug("table published", zap.Uint64("generation", st.Generation), zap.Int("routes", st.Static+st.Dynamic),
			zap.Int("unresolved", st.Unresolved), zap.Int("local", st.Local), zap.Duration("build", time.Since(start)))
	}
}

// status fills /status's FIB with what the watcher has.
func (w *fibWatcher) status(st *FIBStatus) {
	st.Source, st.Table = config.RoutesFromKernel, w.table
	st.Events, st.Updates, st.Resyncs = w.events.Load(), w.updates.Load(), w.resyncs.Load()
	w.mu.Lock()
	defer w.mu.Unlock()
	st.LastError = w.lastErr
	st.Pending = w.built != w.changes
	st.RouteList, st.Neighbours, st.Truncated = w.k.lists()
}

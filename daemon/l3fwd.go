package daemon

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/uiod/uiod/config"
	"github.com/uiod/uiod/dataplane"
	"github.com/uiod/uiod/l3fwd"
)

// l3fwdApp builds the router of forward.routes, forward.local and forward.police. A
// port's PortID is its place in the configuration's ports, which is its place in d.ports.
func (d *Daemon) l3fwdApp() (*l3fwd.App, error) {
	cfg := l3fwd.Config{Threads: d.cfg.Threads()}
	id := map[string]dataplane.PortID{}
	for i, p := range d.ports {
		cfg.Ports = append(cfg.Ports, p.nic.MAC())
		cfg.MTU = append(cfg.MTU, p.cfg.PortMTU())
		id[p.cfg.Name] = dataplane.PortID(i)
	}
	for i, r := range d.cfg.Forward.Routes {
		prefix, mac, err := config.ParseRoute(r)
		if err != nil {
			return nil, fmt.Errorf("forward.routes[%d]: %w", i, err)
		}
		port, ok := id[r.Port]
		if !ok {
			return nil, fmt.Errorf("forward.routes[%d].port: no port %q", i, r.Port)
		}
		cfg.Routes = append(cfg.Routes, l3fwd.Route{Prefix: prefix, Port: port, NextHopMAC: mac})
	}
	for i, s := range d.cfg.Forward.Local {
		p, err := config.ParseLocal(s)
		if err != nil {
			return nil, fmt.Errorf("forward.local[%d]: %w", i, err)
		}
		cfg.Local = append(cfg.Local, p)
	}
	cfg.Police = policeOf(d.cfg.Forward.Police)
	cfg.MaxRoutes4, cfg.MaxRoutes6 = d.cfg.Forward.RouteLimits()
	app, err := l3fwd.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("forward: %w", err)
	}
	f := app.FIB()
	d.log.Info("l3fwd tables", zap.Int("memory_bytes", f.Memory), zap.Stringer("ipv4_pages", f.Pages4),
		zap.Int("max_routes", f.Max4), zap.Int("max_routes6", f.Max6))
	if err := d.startFIB(app); err != nil { // fib_linux.go
		return nil, err
	}
	d.router.Store(app)
	return app, nil
}

// policeOf is forward.police over l3fwd's defaults, class by class.
func policeOf(p map[string]config.PoliceRate) l3fwd.Police {
	out := l3fwd.DefaultPolice
	for class, r := range map[string]*l3fwd.Rate{"control": &out.Control, "local": &out.Local, "error": &out.Error} {
		if in, ok := p[class]; ok {
			*r = l3fwd.Rate{PerSecond: in.Rate, Burst: in.Burst}
		}
	}
	return out
}

// forwardApp is forward.mode's app.
func (d *Daemon) forwardApp() (dataplane.App, error) {
	if d.cfg.Forward.Mode == config.ForwardL3fwd {
		return d.l3fwdApp()
	}
	if d.isBridge() {
		return d.bridgeApp() // bridge.go
	}
	app, err := dataplane.ParseApp(d.cfg.Forward.Mode)
	if err != nil {
		return nil, fmt.Errorf("forward.mode: %w", err)
	}
	return app, nil
}

var (
	mRouterNotForwarded = prometheus.NewDesc("uiod_l3fwd_not_forwarded_total", "Frames l3fwd did not forward, by reason, whether it handed them to the kernel path or dropped them.", []string{"reason"}, nil)
	mRouterToKernel     = prometheus.NewDesc("uiod_l3fwd_to_kernel_total", "Frames l3fwd handed to the kernel path, by policer class.", []string{"class"}, nil)
	mRouterPoliced      = prometheus.NewDesc("uiod_l3fwd_policed_total", "Frames for the kernel path over their class's rate limit (forward.police), dropped.", []string{"class"}, nil)
	mRouterRoutes       = prometheus.NewDesc("uiod_l3fwd_routes", "Routes in l3fwd's table, by source (static: forward.routes; kernel: forward.routes_from kernel, unresolved ones included; local: receive routes).", []string{"source"}, nil)
	mRouterUnresolved   = prometheus.NewDesc("uiod_l3fwd_routes_unresolved", "Kernel routes whose next hop has no resolved neighbour: their frames go to the kernel.", nil, nil)
	mRouterGeneration   = prometheus.NewDesc("uiod_l3fwd_table_generation", "Tables l3fwd has published: 1 at start, one more for each update from the kernel.", nil, nil)
	mRouterOverLimit    = prometheus.NewDesc("uiod_l3fwd_routes_over_limit", "Kernel routes and local addresses left out of the table in force because their family's table was full (forward.max_routes, max_routes6).", nil, nil)
	mRouterUpdateErrors = prometheus.NewDesc("uiod_l3fwd_table_update_errors_total", "Updates from the kernel that could not be built (the table in force kept).", nil, nil)
)

// routerCollector exports l3fwd's counters, when forward.mode is l3fwd.
type routerCollector struct{ d *Daemon }

func (c routerCollector) Describe(ch chan<- *prometheus.Desc) {
	describe(ch, mRouterNotForwarded, mRouterToKernel, mRouterPoliced, mRouterRoutes, mRouterUnresolved, mRouterGeneration, mRouterUpdateErrors, mRouterOverLimit)
}

func (c routerCollector) Collect(ch chan<- prometheus.Metric) {
	app := c.d.router.Load()
	if app == nil {
		return
	}
	m := scrape(ch)
	s := app.Stats()
	for r, n := range s.NotForwarded {
		m.counter(mRouterNotForwarded, float64(n), r)
	}
	for _, cl := range s.Classes {
		m.counter(mRouterToKernel, float64(cl.ToKernel), cl.Class)
		m.counter(mRouterPoliced, float64(cl.Policed), cl.Class)
	}
	f := app.FIB()
	for src, n := range map[string]int{"static": f.Static, "kernel": f.Dynamic, "local": f.Local} {
		m.gauge(mRouterRoutes, float64(n), src)
	}
	m.gauge(mRouterUnresolved, float64(f.Unresolved))
	m.gauge(mRouterGeneration, float64(f.Generation))
	m.counter(mRouterUpdateErrors, float64(app.UpdateErrors()))
	m.gauge(mRouterOverLimit, float64(f.OverLimit))
}

// l3fwdQueues lists every RX queue of every port. Their own TX queue (TxPort) is their
// RX port's; l3fwdTx sets its number.
func l3fwdQueues(ports []*port) []dataplane.Queue {
	var queues []dataplane.Queue
	for _, p := range ports {
		for q := 0; q < p.nic.NumRxQueues(); q++ {
			queues = append(queues, dataplane.Queue{Name: fmt.Sprintf("%s/rx%d", p.cfg.Name, q), RxPort: p.nic, RxQ: q, TxPort: p.nic})
		}
	}
	return queues
}

// l3fwdTx gives poll thread t TX queue t on every port, since a route may send any frame
// out of any port: its queues' own TX queue and Thread.Tx for the others.
func l3fwdTx(threads []dataplane.Thread, ports []*port) error {
	for _, p := range ports {
		if n := p.nic.NumTxQueues(); n < len(threads) {
			return fmt.Errorf("forward: port %s has %d tx_queues, fewer than the %d poll threads: l3fwd gives every thread a TX queue on every port", p.cfg.Name, n, len(threads))
		}
	}
	for t := range threads {
		th := &threads[t]
		for q := range th.Queues {
			th.Queues[q].TxQ = t
		}
		for _, p := range ports {
			th.Tx = append(th.Tx, dataplane.TxQueue{Port: p.nic, Queue: t})
		}
	}
	return nil
}

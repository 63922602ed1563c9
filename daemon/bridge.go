package daemon

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/uiod/uiod/bridge"
	"github.com/uiod/uiod/config"
	"github.com/uiod/uiod/dataplane"
)

// bridgeRun is the running bridge of forward.mode bridge: its App and its ager.
type bridgeRun struct {
	app       *bridge.App
	stopAgeer func()
}

// bridgeApp builds the bridge of the bridge section: every port joins, by its place in
// d.ports (its PortID), with the VLANs and limits bridge.ports gives it.
func (d *Daemon) bridgeApp() (*bridge.App, error) {
	b := &d.cfg.Bridge
	cfg := bridge.Config{Ageing: b.BridgeAgeing(), TableSize: b.TableSize, Threads: d.cfg.Threads()}
	id := map[string]dataplane.PortID{}
	for i, p := range d.ports {
		bp := b.BridgePortOf(p.cfg.Name)
		port := bridge.Port{Name: p.cfg.Name, PVID: uint16(bp.PVID), MACLimit: bp.MACLimit, FloodLimit: bp.FloodLimit}
		for _, v := range bp.VLANs {
			port.VLANs = append(port.VLANs, uint16(v))
		}
		cfg.Ports = append(cfg.Ports, port)
		id[p.cfg.Name] = dataplane.PortID(i)
	}
	for i, s := range b.Static {
		mac, err := config.ParseBridgeMAC(s.MAC)
		if err != nil {
			return nil, fmt.Errorf("bridge.static[%d].mac: %w", i, err)
		}
		port, ok := id[s.Port]
		if !ok {
			return nil, fmt.Errorf("bridge.static[%d].port: no port %q", i, s.Port)
		}
		cfg.Static = append(cfg.Static, bridge.Static{MAC: mac, VLAN: uint16(s.VLAN), Port: port})
	}
	app, err := bridge.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("bridge: %w", err)
	}
	return app, nil
}

// startBridge gives each port its poll threads' share of its flood limit and starts the
// ager, once the threads are laid out; app is forwardApp's.
func (d *Daemon) startBridge(app dataplane.App, threads []dataplane.Thread) {
	a, ok := app.(*bridge.App)
	if !ok {
		return
	}
	for i, p := range d.ports {
		n := 0
		for _, th := range threads {
			for _, q := range th.Queues {
				if q.RxPort == p.nic {
					n++
					break
				}
			}
		}
		a.SetPollers(dataplane.PortID(i), n)
	}
	d.bridge = &bridgeRun{app: a, stopAgeer: a.StartAgeing()}
}

// closeBridge stops the ager and frees the bridge's copy pools, once the poll threads
// and the ports (whose TX rings may hold copies) are closed.
func (d *Daemon) closeBridge() {
	if d.bridge == nil {
		return
	}
	d.bridge.stopAgeer()
	d.bridge.app.Close()
	d.bridge = nil
}

// BridgeStatus is the bridge's part of /status: its MAC table and per-port counters.
type BridgeStatus struct {
	Ageing  string             `json:"ageing"`
	Entries int                `json:"entries"`
	Ports   []BridgePortStatus `json:"ports"`
	FDB     []BridgeEntry      `json:"fdb"`
}

// BridgePortStatus is one port's bridge counters (bridge.PortStats).
type BridgePortStatus struct {
	Name         string `json:"name"`
	Entries      int64  `json:"entries"`
	Learned      uint64 `json:"learned"`
	Moved        uint64 `json:"moved"`
	Refused      uint64 `json:"refused"`
	Flooded      uint64 `json:"flooded"`
	FloodLimited uint64 `json:"flood_limited"`
	Dropped      uint64 `json:"dropped"`
	CopyFailed   uint64 `json:"copy_failed"`
}

// BridgeEntry is one MAC table entry.
type BridgeEntry struct {
	MAC    string  `json:"mac"`
	VLAN   uint16  `json:"vlan"`
	Port   string  `json:"port"`
	Static bool    `json:"static,omitempty"`
	AgeSec float64 `json:"age_seconds"`
}

// maxStatusFDB bounds the entries /status lists (the count is always the whole table's).
const maxStatusFDB = 4096

// bridgeStatus is the running bridge's status, nil without one.
func (d *Daemon) bridgeStatus() *BridgeStatus {
	if d.bridge == nil {
		return nil
	}
	a := d.bridge.app
	es := a.Entries()
	st := &BridgeStatus{Ageing: d.cfg.Bridge.BridgeAgeing().String(), Entries: len(es), Ports: []BridgePortStatus{}, FDB: []BridgeEntry{}}
	for _, p := range a.Stats() {
		st.Ports = append(st.Ports, BridgePortStatus(p))
	}
	for _, e := range es[:min(len(es), maxStatusFDB)] {
		st.FDB = append(st.FDB, BridgeEntry{MAC: e.MAC.String(), VLAN: e.VLAN, Port: a.PortName(e.Port), Static: e.Static, AgeSec: e.Age.Round(time.Millisecond).Seconds()})
	}
	return st
}

var (
	mBridgeEntries  = prometheus.NewDesc("uiod_bridge_fdb_entries", "Learnt MAC table entries on the port (its MAC limit's count).", portLabels, nil)
	mBridgeLearned  = prometheus.NewDesc("uiod_bridge_learned_total", "MACs learnt on the port.", portLabels, nil)
	mBridgeMoved    = prometheus.NewDesc("uiod_bridge_moved_total", "MACs that moved to the port from another.", portLabels, nil)
	mBridgeRefused  = prometheus.NewDesc("uiod_bridge_learn_refused_total", "Source MACs on the port not learnt: its MAC limit, or the table full.", portLabels, nil)
	mBridgeFlooded  = prometheus.NewDesc("uiod_bridge_flooded_total", "Frames received on the port and flooded (broadcast, multicast, unknown unicast).", portLabels, nil)
	mBridgeLimited  = prometheus.NewDesc("uiod_bridge_flood_limited_total", "Frames received on the port dropped by its flood limit.", portLabels, nil)
	mBridgeDropped  = prometheus.NewDesc("uiod_bridge_dropped_total", "Frames received on the port the bridge dropped (by reason: uiod_queue_drops_by_reason_total).", portLabels, nil)
	mBridgeCopyFail = prometheus.NewDesc("uiod_bridge_flood_copy_failed_total", "Flood copies of frames received on the port not sent: the poll thread's copy pool was empty.", portLabels, nil)
)

// bridgeCollector turns the bridge's counters into metrics at scrape time.
type bridgeCollector struct{ d *Daemon }

func (c bridgeCollector) Describe(ch chan<- *prometheus.Desc) {
	describe(ch, mBridgeEntries, mBridgeLearned, mBridgeMoved, mBridgeRefused, mBridgeFlooded, mBridgeLimited, mBridgeDropped, mBridgeCopyFail)
}

func (c bridgeCollector) Collect(ch chan<- prometheus.Metric) {
	c.d.mu.Lock()
	br := c.d.bridge
	c.d.mu.Unlock()
	if br == nil {
		return
	}
	m := scrape(ch)
	for _, p := range br.app.Stats() {
		m.gauge(mBridgeEntries, float64(p.Entries), p.Name)
		for _, c := range []struct {
			d *prometheus.Desc
			v uint64
		}{{mBridgeLearned, p.Learned}, {mBridgeMoved, p.Moved}, {mBridgeRefused, p.Refused}, {mBridgeFlooded, p.Flooded},
			{mBridgeLimited, p.FloodLimited}, {mBridgeDropped, p.Dropped}, {mBridgeCopyFail, p.CopyFailed}} {
			m.counter(c.d, float64(c.v), p.Name)
		}
	}
}

// isBridge reports whether the configuration runs the bridge.
func (d *Daemon) isBridge() bool { return d.cfg.Forward.Mode == config.ForwardBridge }

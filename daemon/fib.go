package daemon

import (
	"time"

	"go.uber.org/zap"

	"github.com/uiod/uiod/config"
	"github.com/uiod/uiod/l3fwd"
	"github.com/uiod/uiod/l3fwd/lpm"
)

// FIBStatus is l3fwd's forwarding table in /status: where its routes come from, the
// table in force and, with routes from the kernel, what the watcher has seen.
type FIBStatus struct {
	// Source is forward.routes_from: static or kernel.
	Source string `json:"source"`
	// Table is the kernel routing table followed (routes from the kernel only).
	Table int `json:"table,omitempty"`
	// Generation counts the tables published (1: the first), Updated is when the one in
	// force was.
	Generation uint64    `json:"generation"`
	Updated    time.Time `json:"updated"`
	// Routes is every route in force: Static (forward.routes) plus Kernel (from the
	// kernel, host routes to its resolved on-link neighbours among them), of which
	// Unresolved send their frames to the kernel until the neighbour is known. Local
	// counts the receive routes.
	Routes     int `json:"routes"`
	Static     int `json:"static"`
	Kernel     int `json:"kernel"`
	Unresolved int `json:"unresolved"`
	Local      int `json:"local"`
	// Shadowed are kernel routes left out for a static one of the same prefix, Refused
	// those l3fwd never routes (reserved destinations such as fe80::/64 or multicast).
	Shadowed int `json:"shadowed"`
	Refused  int `json:"refused"`
	// OverLimit are the kernel routes and local addresses left out because their
	// family's table was full (forward.max_routes, max_routes6), FirstOverLimit the first
	// of them; Routes4 and Routes6 the entries of each family in force (local ones
	// included), MaxRoutes and MaxRoutes6 the limits.
	OverLimit      int    `json:"over_limit"`
	FirstOverLimit string `json:"first_over_limit,omitempty"`
	Routes4        int    `json:"routes4"`
	Routes6        int    `json:"routes6"`
	MaxRoutes      int    `json:"max_routes"`
	MaxRoutes6     int    `json:"max_routes6"`
	// MemoryBytes is what the lookup tables take, Pages what pages the IPv4 table's
	// first level lies on (mode thp or 4k, and how much the kernel backs by huge pages).
	MemoryBytes int          `json:"memory_bytes"`
	Pages       lpm.PageInfo `json:"pages"`
	// Events counts the route and neighbour messages received, Updates the tables
	// published from them, UpdateErrors the tables that could not be built (the one in
	// force kept), Resyncs the times a subscription was lost and the tables dumped anew.
	Events       uint64 `json:"events,omitempty"`
	Updates      uint64 `json:"updates,omitempty"`
	UpdateErrors uint64 `json:"update_errors,omitempty"`
	Resyncs      uint64 `json:"resyncs,omitempty"`
	// Pending says the watcher has changes not yet in the table in force (it publishes
	// them within fibCoalesce plus a build's time).
	Pending bool `json:"pending,omitempty"`
	// LastError is the last update's or subscription's error, if any.
	LastError string `json:"last_error,omitempty"`
	// RouteList and Neighbours are the kernel routes and the neighbours on the TAPs the
	// table was built from, at most fibListMax of each (Truncated says some were left out).
	RouteList  []FIBRoute     `json:"route_list,omitempty"`
	Neighbours []FIBNeighbour `json:"neighbours,omitempty"`
	Truncated  bool           `json:"truncated,omitempty"`
}

// FIBRoute is one route from the kernel as l3fwd took it.
type FIBRoute struct {
	Prefix string `json:"prefix"`
	// Kind is forward (by Port to the gateway's NextHopMAC), unresolved (a gateway
	// without a MAC yet: to the kernel), on-link (to the kernel, but for host routes to
	// the resolved neighbours it covers), or local (a receive route).
	Kind    string `json:"kind"`
	Port    string `json:"port,omitempty"`
	Gateway string `json:"gateway,omitempty"`
	MAC     string `json:"next_hop_mac,omitempty"`
}

// FIBNeighbour is one resolved neighbour on a TAP (ip neigh's state: reachable, stale,
// delay, probe or permanent).
type FIBNeighbour struct {
	Port  string `json:"port"`
	IP    string `json:"ip"`
	MAC   string `json:"mac"`
	State string `json:"state"`
}

// fibListMax bounds the routes and neighbours /status lists.
const fibListMax = 1000

// fibStatus is /status's FIB, nil unless forward.mode is l3fwd.
func (d *Daemon) fibStatus() *FIBStatus {
	app := d.router.Load()
	if app == nil {
		return nil
	}
	st := &FIBStatus{Source: config.RoutesFromStatic}
	if w := d.fibWatch.Load(); w != nil {
		w.status(st)
	}
	fillFIB(st, app.FIB())
	st.UpdateErrors = app.UpdateErrors()
	return st
}

// fillFIB copies the table in force's counts into st.
func fillFIB(st *FIBStatus, f l3fwd.FIBStats) {
	st.Generation, st.Updated = f.Generation, f.Updated
	st.Routes, st.Static, st.Kernel, st.Unresolved, st.Local = f.Static+f.Dynamic, f.Static, f.Dynamic, f.Unresolved, f.Local
	st.Shadowed, st.Refused, st.MemoryBytes = f.Shadowed, f.Refused, f.Memory
	st.OverLimit, st.Routes4, st.Routes6, st.MaxRoutes, st.MaxRoutes6 = f.OverLimit, f.Routes4, f.Routes6, f.Max4, f.Max6
	if f.OverLimit > 0 {
		st.FirstOverLimit = f.FirstOverLimit.String()
	}
	st.Pages = f.Pages4
}

// limitLog logs the route limit's refusals once per burst: a warning when a table first
// leaves entries out, naming the first and the limits, and a note when all fit again.
type limitLog struct{ over bool }

func (l *limitLog) note(log *zap.Logger, f l3fwd.FIBStats) {
	switch {
	case f.OverLimit > 0 && !l.over:
		log.Warn("route table full: routes left out (forward.max_routes, max_routes6); forwarding by the rest",
			zap.Int("left_out", f.OverLimit), zap.Stringer("first", f.FirstOverLimit),
			zap.Int("max_routes", f.Max4), zap.Int("max_routes6", f.Max6), zap.Int("routes4", f.Routes4), zap.Int("routes6", f.Routes6))
	case f.OverLimit == 0 && l.over:
		log.Info("route table: every route fits again", zap.Int("routes4", f.Routes4), zap.Int("routes6", f.Routes6))
	}
	l.over = f.OverLimit > 0
}

package daemon

import (
	"net"
	"net/netip"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/uiod/uiod/l3fwd"
)

// TestRouterTableMetrics: /metrics and /status count the routes by source and the
// table's generation.
func TestRouterTableMetrics(t *testing.T) {
	app, err := l3fwd.New(l3fwd.Config{
		Ports:  []net.HardwareAddr{{2, 0, 0, 0, 0, 1}, {2, 0, 0, 0, 0, 2}},
		Routes: []l3fwd.Route{{Prefix: netip.MustParsePrefix("10.1.0.0/16"), Port: 1, NextHopMAC: net.HardwareAddr{2, 0, 0, 0, 1, 1}}},
		Local:  []netip.Prefix{netip.MustParsePrefix("192.0.2.254/32")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.Update([]l3fwd.Route{
		{Prefix: netip.MustParsePrefix("10.2.0.0/16"), Port: 0, NextHopMAC: net.HardwareAddr{2, 0, 0, 0, 1, 2}},
		{Prefix: netip.MustParsePrefix("10.3.0.0/16"), Unresolved: true},
	}, []netip.Prefix{netip.MustParsePrefix("192.0.2.1/32")}); err != nil {
		t.Fatal(err)
	}
	d := &Daemon{}
	d.router.Store(app)
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(routerCollector{d}); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := mf.GetName()
			for _, l := range m.GetLabel() {
				name += "{" + l.GetName() + "=" + l.GetValue() + "}"
			}
			got[name] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	for name, v := range map[string]float64{
		"uiod_l3fwd_routes{source=kernel}": 2, "uiod_l3fwd_routes{source=local}": 2, "uiod_l3fwd_routes{source=static}": 1,
		"uiod_l3fwd_routes_unresolved": 1, "uiod_l3fwd_table_generation": 2, "uiod_l3fwd_table_update_errors_total": 0,
		"uiod_l3fwd_routes_over_limit": 0,
	} {
		if g, ok := got[name]; !ok || g != v {
			t.Errorf("%s = %v (exported: %v), want %v", name, g, ok, v)
		}
	}
	st := d.fibStatus()
	if st == nil || st.Source != "static" || st.Routes != 3 || st.Static != 1 || st.Kernel != 2 || st.Unresolved != 1 || st.Local != 2 || st.Generation != 2 {
		t.Errorf("/status fib %+v", st)
	}
}

// TestRouterLimitStatus: kernel routes over forward.max_routes are left out, /status
// counts them and names the first, and the refusals are logged once per burst (a warning
// when they start, a note when every route fits again).
func TestRouterLimitStatus(t *testing.T) {
	mac := net.HardwareAddr{2, 0, 0, 0, 1, 1}
	app, err := l3fwd.New(l3fwd.Config{
		Ports:  []net.HardwareAddr{{2, 0, 0, 0, 0, 1}, {2, 0, 0, 0, 0, 2}},
		Routes: []l3fwd.Route{{Prefix: netip.MustParsePrefix("10.1.0.0/16"), Port: 1, NextHopMAC: mac}}, MaxRoutes4: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	d := &Daemon{}
	d.router.Store(app)
	core, logs := observer.New(zap.InfoLevel)
	log := zap.New(core)
	var limit limitLog
	route := func(s string) l3fwd.Route {
		return l3fwd.Route{Prefix: netip.MustParsePrefix(s), Port: 0, NextHopMAC: mac}
	}
	for _, routes := range [][]l3fwd.Route{
		{route("10.2.0.0/16"), route("10.3.0.0/16"), route("10.4.0.0/16")},
		{route("10.2.0.0/16"), route("10.3.0.0/16")},
		{route("10.2.0.0/16")},
	} {
		st, err := app.Update(routes, nil)
		if err != nil {
			t.Fatal(err)
		}
		limit.note(log, st)
	}
	if n := logs.FilterMessageSnippet("route table full").Len(); n != 1 {
		t.Errorf("%d warnings for one burst of refusals, want 1: %v", n, logs.All())
	}
	w := logs.FilterMessageSnippet("route table full").All()
	if len(w) == 1 && (w[0].ContextMap()["first"] != "10.3.0.0/16" || w[0].ContextMap()["max_routes"] != int64(2) || w[0].ContextMap()["left_out"] != int64(2)) {
		t.Errorf("warning %v", w[0].ContextMap())
	}
	if n := logs.FilterMessageSnippet("fits again").Len(); n != 1 {
		t.Errorf("%d notes that every route fits, want 1: %v", n, logs.All())
	}
	if _, err := app.Update([]l3fwd.Route{route("10.2.0.0/16"), route("10.5.0.0/16")}, nil); err != nil {
		t.Fatal(err)
	}
	st := d.fibStatus()
	if st.OverLimit != 1 || st.FirstOverLimit != "10.5.0.0/16" || st.MaxRoutes != 2 || st.Routes4 != 2 || st.MaxRoutes6 != l3fwd.DefaultMaxRoutes6 || st.Pages.Mode == "" {
		t.Errorf("/status fib %+v", st)
	}
}

package daemon

import (
	"net"
	"net/netip"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

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

package daemon

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
)

// TestIntegrationRoutesFromKernelLimit: with forward.max_routes, the kernel routes over
// the limit are left out of uiod's table, counted in /status (over_limit, the first one
// named), the routes in force before the burst kept (their frames still take their route)
// and the new ones over it sent to the kernel as no_route; when the kernel drops the
// extra routes, the count returns to 0.
func TestIntegrationRoutesFromKernelLimit(t *testing.T) {
	needTUN(t)
	ns := testutil.Netns(t, "uiod-fl")
	d := startKernelRouter(t, ns, "fibl", `
  max_routes: 24`)
	testutil.IPIn(t, ns, "addr", "add", "10.232.0.1/24", "dev", "uiodk1")
	for i := range 4 {
		testutil.IPIn(t, ns, "route", "add", fmt.Sprintf("10.50.%d.0/24", i), "via", "10.232.0.2")
	}
	testutil.Eventually(t, 10*time.Second, func() bool {
		st := d.fibStatus()
		return !st.Pending && st.Kernel >= 5 // the four and 10.232.0.0/24
	}, "the first routes never reached uiod: %+v", d.fibStatus())
	if st := d.fibStatus(); st.OverLimit != 0 || st.MaxRoutes != 24 || st.Routes4 >= 24 {
		t.Fatalf("before the burst: %+v", st)
	}
	base := d.fibStatus().Routes4
	for i := 4; i < 40; i++ {
		testutil.IPIn(t, ns, "route", "add", fmt.Sprintf("10.50.%d.0/24", i), "via", "10.232.0.2")
	}
	testutil.Eventually(t, 10*time.Second, func() bool {
		st := d.fibStatus()
		return !st.Pending && st.OverLimit > 0 && st.OverLimit+st.Routes4 == base+36
	}, "the burst over the limit: %+v", d.fibStatus())
	st := d.fibStatus()
	if st.Routes4 != 24 || st.FirstOverLimit == "" {
		t.Errorf("over the limit: %d IPv4 entries, first left out %q; want 24 and one", st.Routes4, st.FirstOverLimit)
	}
	t.Logf("%d entries before the burst, %d in force after, %d left out (first %s)", base, st.Routes4, st.OverLimit, st.FirstOverLimit)
	app := d.router.Load()
	macA := d.ports[0].nic.MAC()
	reason := func(dst string) string {
		f := ipv4Frame(net.ParseIP(dst), 64, 1)
		copy(f, macA)
		_, _, r, ok := app.Forward(0, f)
		if ok {
			return "forwarded"
		}
		return r.String()
	}
	for i := range 4 { // in force before the burst: still in the table (unresolved: no neighbour)
		if r := reason(fmt.Sprintf("10.50.%d.1", i)); r != "unresolved" {
			t.Errorf("10.50.%d.1, routed before the burst: %s, want unresolved", i, r)
		}
	}
	left := 0
	for i := 4; i < 40; i++ {
		if reason(fmt.Sprintf("10.50.%d.1", i)) == "no_route" {
			left++
		}
	}
	if left != st.OverLimit {
		t.Errorf("%d of the burst's destinations have no route in uiod, %d left out", left, st.OverLimit)
	}
	for i := 4; i < 40; i++ {
		testutil.IPIn(t, ns, "route", "del", fmt.Sprintf("10.50.%d.0/24", i))
	}
	testutil.Eventually(t, 10*time.Second, func() bool {
		st := d.fibStatus()
		return !st.Pending && st.OverLimit == 0 && st.Routes4 == base
	}, "after the kernel dropped the burst: %+v", d.fibStatus())
}

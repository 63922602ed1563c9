package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uiod/uiod/internal/testutil"
)

// kernelPorts are simPorts with a kernel path on port a.
const kernelPorts = `
ports:
  - {name: a, driver: sim, wire: "pair:a", kernel: {tap: uiodt0}}
  - {name: b, driver: sim, wire: "pair:b"}
`

func TestRoutesFromKeys(t *testing.T) {
	c, err := read(t, kernelPorts+"forward:\n  mode: l3fwd\n  routes_from: kernel\n  kernel_table: \"100\"\n")
	if err != nil {
		t.Fatal(err)
	}
	if c.Forward.RoutesFrom != RoutesFromKernel || c.Forward.KernelTable != "100" || len(c.Forward.Routes) != 0 {
		t.Errorf("forward %+v", c.Forward)
	}
	route := "  routes:\n    - {prefix: 0.0.0.0/0, port: a, next_hop_mac: \"02:00:00:00:00:01\"}\n"
	if _, err := read(t, kernelPorts+"forward:\n  mode: l3fwd\n  routes_from: kernel\n"+route); err != nil {
		t.Errorf("static routes with routes_from kernel: %v", err)
	}
	wantOneErrors(t, []oneError{
		{"unknown source", kernelPorts + "forward:\n  mode: l3fwd\n  routes_from: bgp\n" + route, "forward.routes_from", "want static or kernel"},
		{"no tap", simPorts + "forward:\n  mode: l3fwd\n  routes_from: kernel\n", "forward.routes_from", "no port has a kernel path"},
		{"bad table", kernelPorts + "forward:\n  mode: l3fwd\n  routes_from: kernel\n  kernel_table: no-such-table-here\n", "forward.kernel_table", "no table of this name"},
		{"local table", kernelPorts + "forward:\n  mode: l3fwd\n  routes_from: kernel\n  kernel_table: local\n", "forward.kernel_table", "the local table"},
		{"table without kernel", kernelPorts + "forward:\n  mode: l3fwd\n  kernel_table: \"100\"\n" + route, "forward.kernel_table", "only applies to routes_from: kernel"},
		{"static needs routes", kernelPorts + "forward:\n  mode: l3fwd\n  routes_from: static\n", "forward.routes", "or routes_from: kernel"},
		{"in l2fwd", simPorts + "forward:\n  routes_from: kernel\n", "forward.routes_from", "only applies to forward.mode l3fwd"},
	})
}

func TestParseKernelTable(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "rt_tables")
	if err := os.WriteFile(file, []byte("# comment\n255\tlocal\n254 main\n100 isp1 # trailing\n0x65 isp2\nbad line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	saved := RTTablesFiles
	RTTablesFiles = []string{filepath.Join(dir, "missing"), file}
	t.Cleanup(func() { RTTablesFiles = saved })
	testutil.CheckParseCases(t, "ParseKernelTable", ParseKernelTable, []testutil.ParseCase[int]{
		{In: "", Want: 254},
		{In: "main", Want: 254},
		{In: "default", Want: 253},
		{In: "100", Want: 100},
		{In: "4294967295", Want: 4294967295},
		{In: "isp1", Want: 100},
		{In: "isp2", Want: 0x65},
		{In: "local", Err: "the local table"},
		{In: "255", Err: "the local table"},
		{In: "0", Err: "table 0 is unspecified"},
		{In: "4294967296", Err: "no table of this name"},
		{In: "isp3", Err: "no table of this name"},
	})
}

// TestExampleL3fwdShowsRoutesFrom: the router example shows the keys the default example
// leaves to it.
func TestExampleL3fwdShowsRoutesFrom(t *testing.T) {
	if _, err := read(t, ExampleL3fwd()); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"routes_from:", "kernel_table:"} {
		if !strings.Contains(ExampleL3fwd(), "\n  "+key) {
			t.Errorf("the l3fwd example does not show forward.%s", key)
		}
	}
}

// TestExampleRouterValidates: the router example (uiod config example --router) is a
// valid two-port router whose routes come from the kernel, a TAP on each port, and it
// shows the route limits at their defaults.
func TestExampleRouterValidates(t *testing.T) {
	c := mustRead(t, ExampleRouter())
	if c.Forward.Mode != ForwardL3fwd || c.Forward.RoutesFrom != RoutesFromKernel || len(c.Ports) != 2 || len(c.Forward.Routes) != 0 {
		t.Errorf("the router example: %+v", c.Forward)
	}
	for _, p := range c.Ports {
		if p.Kernel.TAP == "" {
			t.Errorf("port %s has no kernel TAP", p.Name)
		}
	}
	if c.Forward.MaxRoutes != DefaultMaxRoutes || c.Forward.MaxRoutes6 != DefaultMaxRoutes6 {
		t.Errorf("limits %d, %d: want the defaults shown", c.Forward.MaxRoutes, c.Forward.MaxRoutes6)
	}
}

package config

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/viper"

	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/wire"
)

func TestExampleValidates(t *testing.T) {
	c, err := read(t, Example())
	if err != nil {
		t.Fatalf("example does not validate:\n%v", err)
	}
	if len(c.Ports) != 2 {
		t.Errorf("example has %d ports, want 2", len(c.Ports))
	}
	// The example shows every key of the schema.
	v := viper.New()
	v.SetConfigType("yaml")
	if err := v.ReadConfig(strings.NewReader(Example())); err != nil {
		t.Fatal(err)
	}
	for _, key := range envKeys {
		// The bridge example's (bridge_test.go) and the router examples' (l3fwd keys;
		// the route limits: TestExampleRouterValidates).
		if !v.IsSet(key) && !strings.HasPrefix(key, "bridge.") && key != "forward.routes_from" && key != "forward.kernel_table" &&
			key != "forward.max_routes" && key != "forward.max_routes6" {
			t.Errorf("example does not show %s", key)
		}
	}
	port := v.Get("ports").([]any)[0].(map[string]any)
	for _, key := range schemaKeys(reflect.TypeFor[Port]()) {
		if _, ok := port[key]; !ok {
			t.Errorf("example's first port does not show %s", key)
		}
	}
	if !v.IsSet("forward.pairs") {
		t.Error("example does not show forward.pairs")
	}
}

func TestExampleFiles(t *testing.T) {
	files, err := filepath.Glob("../examples/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example files: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			l := Loader{Host: &testHost, LookupEnv: func(string) (string, bool) { return "", false }}
			c, err := l.Load(f)
			if err != nil {
				t.Fatalf("%s does not validate:\n%v", f, err)
			}
			if len(c.Ports) != 2 || len(c.ForwardPairs()) != 1 {
				t.Errorf("%s: %d ports, pairs %v; want two ports forwarding to each other", f, len(c.Ports), c.ForwardPairs())
			}
		})
	}
	c, err := Loader{Host: &testHost}.Load("../examples/sim.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Poll.Mode != PollAdaptive || c.Forward.Mode != ForwardL2fwd {
		t.Errorf("sim.yaml: mode %s, forward %s; want adaptive, l2fwd", c.Poll.Mode, c.Forward.Mode)
	}
	for i, want := range []string{"pair:gen0", "pair:gen1"} {
		if got := c.Ports[i].Wire.String(); got != want || c.Ports[i].Driver != DriverSim {
			t.Errorf("sim.yaml port %d: driver %s wire %s, want sim on %s", i, c.Ports[i].Driver, got, want)
		}
	}
}

func TestDefaults(t *testing.T) {
	c, err := read(t, simPorts)
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	want.Ports = []Port{DefaultPort(), DefaultPort()}
	for i, name := range []string{"a", "b"} {
		p := &want.Ports[i]
		p.Name, p.Driver, p.Interrupts = name, DriverSim, InterruptsMSIX
		p.Wire = Wire{wire.Spec{Kind: wire.KindPair, Name: name}}
		p.PCI = []string{"ffff:00:00.0", "ffff:00:01.0"}[i]
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("got  %+v\nwant %+v", c, want)
	}
	if d, auto := c.IdleThreshold(); d != 300*time.Microsecond || auto {
		t.Errorf("IdleThreshold() = %v, %v; want 300µs, false", d, auto)
	}
	if !c.MetricsEnabled() || c.Metrics.Listen != "127.0.0.1:9477" {
		t.Errorf("metrics %q, enabled %v", c.Metrics.Listen, c.MetricsEnabled())
	}
	if _, ok := c.CPUDMALatency(); ok {
		t.Error("cpu_dma_latency is on by default")
	}
	if got := c.ForwardPairs(); !reflect.DeepEqual(got, [][2]string{{"a", "b"}}) {
		t.Errorf("ForwardPairs() = %v, want [[a b]] (ports in order)", got)
	}
	if c.Port("b") != &c.Ports[1] || c.Port("z") != nil {
		t.Error("Port(name) does not find ports by name")
	}
}

func TestIdlePolicy(t *testing.T) {
	c, err := read(t, simPorts+"poll: {mode: sleep, sleep_min: 10us, sleep_max: 20us, idle_threshold: auto, housekeeping: {hz: 10, length: 1ms}, delivery: inline}")
	if err != nil {
		t.Fatal(err)
	}
	pol, err := c.Poll.IdlePolicy()
	want := idle.PolicyConfig{Mode: idle.SleepRange, Auto: true, IdleThreshold: idle.DefaultIdleThreshold, WaitTimeout: DefaultWaitTimeout,
		SleepMin: 10 * time.Microsecond, SleepMax: 20 * time.Microsecond, HousekeepingHz: 10, HousekeepingLength: time.Millisecond}
	if err != nil || pol != want {
		t.Errorf("IdlePolicy() = %+v, %v\nwant %+v", pol, err, want)
	}
	if err := pol.Validate(); err != nil {
		t.Errorf("the policy of a valid configuration does not validate: %v", err)
	}
	for _, tt := range []struct {
		p    Poll
		want string
	}{
		{Poll{Mode: "nap", Delivery: DeliveryInline}, "poll.mode"},
		{Poll{Mode: PollAdaptive, Delivery: "later", WaitTimeout: DefaultWaitTimeout}, "poll.delivery"},
		// A section checkPoll would refuse: the policy refuses it too.
		{Poll{Mode: PollSleep, Delivery: DeliveryInline, SleepMin: 2 * time.Millisecond, SleepMax: time.Millisecond}, "poll: "},
	} {
		_, err := tt.p.IdlePolicy()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("IdlePolicy of %+v: error %v, want one naming %q", tt.p, err, tt.want)
		}
	}
}

func TestNullKeepsDefaults(t *testing.T) {
	c, err := read(t, simPorts+"log:\npoll:\n  mode:\n  housekeeping:\n")
	if err != nil {
		t.Fatal(err)
	}
	if c.Log.Level != "info" || c.Poll.Mode != PollAdaptive || c.Poll.WaitTimeout != DefaultWaitTimeout {
		t.Errorf("null sections lost their defaults: %+v %+v", c.Log, c.Poll)
	}
}

func TestGoodFiles(t *testing.T) {
	tests := []struct {
		name  string
		text  string
		check func(*Config) bool
	}{
		{"uio defaults to intx", `
ports:
  - {name: u, driver: uio_pci_generic, pci: "0000:03:00.0"}
forward: {mode: reflect}`, func(c *Config) bool {
			return c.Ports[0].Interrupts == InterruptsINTx && c.Ports[0].InterruptMode() == "intx"
		}},
		{"vfio short address unquoted", `
ports:
  - name: x
    driver: vfio-pci
    pci: 03:00.1
    interrupts: intx
forward: {mode: reflect}`, func(c *Config) bool { return c.Ports[0].Addr().String() == "0000:03:00.1" }},
		{"idle_threshold auto", simPorts + "poll: {idle_threshold: auto}", func(c *Config) bool { _, auto := c.IdleThreshold(); return auto }},
		{"idle_threshold 1s", simPorts + "poll: {idle_threshold: 1s}", func(c *Config) bool { d, _ := c.IdleThreshold(); return d == time.Second }},
		{"idle_threshold 0", simPorts + "poll: {idle_threshold: 0}", func(c *Config) bool { d, auto := c.IdleThreshold(); return d == 0 && !auto }},
		{"sleep mode", simPorts + "poll: {mode: sleep, sleep_min: 0, sleep_max: 1s}", func(c *Config) bool { return c.Poll.SleepMax == time.Second }},
		{"housekeeping", simPorts + "poll: {housekeeping: {hz: 1000, length: 999us}}", func(c *Config) bool { return c.Poll.Housekeeping.Hz == 1000 }},
		{"threaded delivery", simPorts + "poll: {delivery: threaded}", nil},
		{"vfio iommufd", simPorts + "vfio: {interface: iommufd}", nil},
		{"cpus", simPorts + "poll: {cpus: [3, 0, 1]}", func(c *Config) bool { return reflect.DeepEqual(c.Poll.CPUs, []int{3, 0, 1}) }},
		{"cpu list string", simPorts + "poll: {cpus: \"0-2\"}", func(c *Config) bool { return reflect.DeepEqual(c.Poll.CPUs, []int{0, 1, 2}) }},
		{"metrics off", simPorts + "metrics: {listen: \"\"}", func(c *Config) bool { return !c.MetricsEnabled() }},
		{"metrics all interfaces", simPorts + "metrics: {listen: \":9000\", public: true}", nil},
		{"metrics localhost", simPorts + "metrics: {listen: \"localhost:9000\"}", func(c *Config) bool { return c.Metrics.ListenAddr() == "127.0.0.1:9000" }},
		{"metrics public LAN address", simPorts + "metrics: {listen: \"192.0.2.7:9000\", public: true}", nil},
		{"metrics loopback v4-mapped", simPorts + "metrics: {listen: \"[::ffff:127.0.0.2]:9000\"}", nil},
		{"itr at the 82599's limit", port0("itr", "1046528ns"), nil},
		{"itr at the 82576's limit", port0("itr", "8191us", "nic", "igb"), nil},
		{"dma limit", port0("driver", "vfio-pci", "pci", "01:00.0", "wire", `""`) + "memory: {dma_limit: 64MiB}", func(c *Config) bool { return c.Memory.DMALimit == Size{Bytes: 64 << 20} }},
		{"metrics ipv6", simPorts + "metrics: {listen: \"[::1]:9477\"}", nil},
		{"cpu_dma_latency 0", simPorts + "power: {cpu_dma_latency: 0}", func(c *Config) bool { us, ok := c.CPUDMALatency(); return us == 0 && ok }},
		{"reflect with odd ports", `
ports:
  - {name: a, driver: sim, wire: "pair:w"}
forward: {mode: reflect}`, nil},
		{"two ports on one wire", `
ports:
  - {name: a, driver: sim, wire: "pair:w"}
  - {name: b, driver: sim, wire: "pair:w"}`, nil},
		{"other wires", `
ports:
  - {name: a, driver: sim, wire: "unixpair:/tmp/a.sock,/tmp/q.sock"}
  - {name: b, driver: sim, wire: "unix:/tmp/b.sock,/tmp/q.sock"}
  - {name: c, driver: sim, wire: "afpacket:eth0"}
  - {name: d, driver: sim, wire: "tap:tap1", pci: "ffff:00:00.0"}
forward: {pairs: [[a, c], [d, b]]}`, func(c *Config) bool {
			// c gets the first free synthetic address: d holds ffff:00:00.0.
			return c.Ports[0].PCI == "ffff:00:01.0" && c.Ports[2].PCI == "ffff:00:03.0" &&
				reflect.DeepEqual(c.ForwardPairs(), [][2]string{{"a", "c"}, {"d", "b"}})
		}},
		{"itr and rings", port0("itr", "50us", "rx_ring", "64", "tx_ring", "4096", "rx_queues", "1", "tx_queues", "16"), func(c *Config) bool { return c.Ports[0].ITR == 50*time.Microsecond }},
		{"numbers as strings", port0("rx_ring", `"1024"`, "promiscuous", `"true"`), func(c *Config) bool { return c.Ports[0].RxRing == 1024 && c.Ports[0].Promiscuous }},
		{"keys are case-insensitive", strings.Replace(simPorts, "ports:", "Ports:", 1), nil},
		{"mixed nics", `
ports:
  - {name: a, driver: vfio-pci, pci: "0000:01:00.0", nic: igb}
  - {name: b, driver: uio_pci_generic, pci: "0000:02:00.0", nic: ixgbe, interrupts: intx}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := read(t, tt.text)
			if err != nil {
				t.Fatalf("unexpected error:\n%v", err)
			}
			if tt.check != nil && !tt.check(c) {
				t.Errorf("config not as expected: %+v", c)
			}
			if err := c.ValidateOn(testHost); err != nil {
				t.Errorf("loaded config does not validate again: %v", err)
			}
		})
	}
}

func TestSimAddrsSkipUsed(t *testing.T) {
	c, err := read(t, `
ports:
  - {name: a, driver: sim, wire: "pair:a", pci: "ffff:00:01.0"}
  - {name: b, driver: sim, wire: "pair:b"}
  - {name: c, driver: sim, wire: "pair:c"}
  - {name: d, driver: vfio-pci, pci: "ffff:00:00.0"}
forward: {mode: reflect}`)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"ffff:00:01.0", "ffff:00:02.0", "ffff:00:03.0", "ffff:00:00.0"} {
		if c.Ports[i].PCI != want {
			t.Errorf("ports[%d].pci = %s, want %s", i, c.Ports[i].PCI, want)
		}
	}
}

func TestLocalHost(t *testing.T) {
	h := LocalHost()
	if len(h.CPUs) == 0 {
		t.Fatal("LocalHost has no CPUs")
	}
	for i := 1; i < len(h.CPUs); i++ {
		if h.CPUs[i] <= h.CPUs[i-1] {
			t.Fatalf("CPUs not increasing: %v", h.CPUs)
		}
	}
	if !h.hasCPU(h.CPUs[0]) || h.hasCPU(-1) {
		t.Error("hasCPU wrong")
	}
}

func TestCPUListFormat(t *testing.T) {
	for _, tt := range []struct {
		cpus []int
		want string
	}{
		{nil, "none"}, {[]int{0}, "0"}, {[]int{0, 1, 2, 3}, "0-3"}, {[]int{0, 2, 3, 4, 7}, "0,2-4,7"},
	} {
		if got := (Host{CPUs: tt.cpus}).cpuList(); got != tt.want {
			t.Errorf("cpuList(%v) = %q, want %q", tt.cpus, got, tt.want)
		}
	}
}

// TestExampleL3fwdValidates: the l3fwd example (uiod config example --l3fwd) is a valid
// router configuration with a kernel exception path.
func TestExampleL3fwdValidates(t *testing.T) {
	c, err := read(t, ExampleL3fwd())
	if err != nil {
		t.Fatalf("the l3fwd example does not validate: %v", err)
	}
	if c.Forward.Mode != ForwardL3fwd || len(c.Forward.Routes) != 3 || c.Ports[0].Kernel.TAP != "uiod0" {
		t.Errorf("the l3fwd example: mode %s, %d routes, port0's kernel %+v", c.Forward.Mode, len(c.Forward.Routes), c.Ports[0].Kernel)
	}
}

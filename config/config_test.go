package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/viper"
	"github.com/uiod/uiod/idle"
	"github.com/uiod/uiod/wire"
)

// testHost is the machine tests validate against: CPUs 0-3.
var testHost = HostWithCPUs(4)

// read loads a configuration from text against testHost with no environment.
func read(t testing.TB, text string, env ...string) (*Config, error) {
	t.Helper()
	vars := map[string]string{}
	for i := 0; i+1 < len(env); i += 2 {
		vars[env[i]] = env[i+1]
	}
	l := Loader{Host: &testHost, LookupEnv: func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}}
	return l.Read(strings.NewReader(text))
}

// fieldErrs returns the FieldErrors of err, failing the test if err is not a
// *ValidationError.
func fieldErrs(t *testing.T, err error) []FieldError {
	t.Helper()
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error %v (%T) is not a *ValidationError", err, err)
	}
	return ve.Errors
}

// simPorts is two valid sim ports, each on its own wire.
const simPorts = `
ports:
  - {name: a, driver: sim, wire: "pair:a"}
  - {name: b, driver: sim, wire: "pair:b"}
`

// port0 returns simPorts with port a's fields set or overridden by key, value pairs
// (values are YAML).
func port0(kv ...string) string {
	fields := [][2]string{{"name", "a"}, {"driver", "sim"}, {"wire", `"pair:a"`}}
next:
	for i := 0; i+1 < len(kv); i += 2 {
		for j := range fields {
			if fields[j][0] == kv[i] {
				fields[j][1] = kv[i+1]
				continue next
			}
		}
		fields = append(fields, [2]string{kv[i], kv[i+1]})
	}
	var b strings.Builder
	b.WriteString("\nports:\n  - {")
	for i, f := range fields {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(f[0] + ": " + f[1])
	}
	b.WriteString("}\n  - {name: b, driver: sim, wire: \"pair:b\"}\n")
	return b.String()
}

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
		if !v.IsSet(key) {
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

// TestBadFiles checks each rule: the file has exactly one problem, reported on the right
// path with the bad value.
func TestBadFiles(t *testing.T) {
	tests := []struct {
		name string
		text string
		path string
		msg  string // substring of the message
	}{
		// Top level.
		{"no ports", "log: {level: info}", "ports", "at least one port"},
		{"empty ports", "ports: []", "ports", "at least one port"},
		{"log level", simPorts + "log: {level: loud}", "log.level", `"loud"`},
		{"log format", simPorts + "log: {format: xml}", "log.format", "console or json"},
		{"metrics listen", simPorts + "metrics: {listen: localhost}", "metrics.listen", "host:port"},
		{"metrics host name", simPorts + "metrics: {listen: \"example.com:9477\"}", "metrics.listen", "not an IP address or localhost"},
		{"metrics all interfaces, not public", simPorts + "metrics: {listen: \":9477\"}", "metrics.listen", "metrics.public: true"},
		{"metrics LAN address, not public", simPorts + "metrics: {listen: \"[2001:db8::1]:9477\"}", "metrics.listen", "not a loopback address"},
		{"metrics public not a boolean", simPorts + "metrics: {public: yes}", "metrics.public", "true or false"},
		{"dma limit word", simPorts + "memory: {dma_limit: lots}", "memory.dma_limit", "not a size"},
		{"dma limit huge", simPorts + "memory: {dma_limit: 99999999TiB}", "memory.dma_limit", "out of range"},
		{"dma over an explicit limit", port0("driver", "vfio-pci", "pci", "01:00.0", "wire", `""`, "rx_queues", "4", "tx_queues", "4") + "forward: {mode: reflect}\nmemory: {dma_limit: 16MiB}",
			"memory.dma_limit", "the ports need 16.1MiB of DMA memory (a 16.1MiB), more than the 16MiB allowed by memory.dma_limit"},
		{"itr beyond the 82599", port0("itr", "1047us"), "ports[0].itr", "82599 (ixgbe)'s interrupt throttle range, [0, 1.046528ms] in 2.048µs steps"},
		{"itr beyond the 82576", port0("itr", "9ms", "nic", "igb"), "ports[0].itr", "[0, 8.191ms] in 1µs steps"},
		{"itr beyond auto on hardware", "ports:\n  - {name: a, driver: vfio-pci, pci: \"01:00.0\", itr: 2ms}\nforward: {mode: reflect}", "ports[0].itr", "set nic: igb"},
		{"metrics port", simPorts + "metrics: {listen: \"localhost:99999\"}", "metrics.listen", "65535"},
		{"state_dir relative", simPorts + "state_dir: run/uiod", "state_dir", "absolute"},
		{"state_dir empty", simPorts + "state_dir: \"\"", "state_dir", "required"},
		{"cpu_dma_latency", simPorts + "power: {cpu_dma_latency: -2}", "power.cpu_dma_latency", "-1"},
		{"cpu_dma_latency beyond s32", simPorts + "power: {cpu_dma_latency: 4294967296}", "power.cpu_dma_latency", "2147483647"},
		// Ports.
		{"name empty", port0("name", `""`), "ports[0].name", "empty"},
		{"name charset", port0("name", `"a b"`), "ports[0].name", "letters"},
		{"name duplicate", strings.Replace(simPorts, "name: b", "name: a", 1) + "forward: {mode: reflect}", "ports[1].name", "duplicate of ports[0]"},
		{"driver missing", "ports:\n  - {name: a}\nforward: {mode: reflect}", "ports[0].driver", "required"},
		{"driver unknown", port0("driver", "igb_uio"), "ports[0].driver", `"igb_uio"`},
		{"nic unknown", port0("nic", "e1000"), "ports[0].nic", "auto, ixgbe, igb or virtio"},
		{"pci required", "ports:\n  - {name: a, driver: vfio-pci}\nforward: {mode: reflect}", "ports[0].pci", "required"},
		{"pci invalid", port0("pci", `"0000:03:00.8"`), "ports[0].pci", `"0000:03:00.8"`},
		{"pci path", port0("pci", `"../../x"`), "ports[0].pci", "not a PCI address"},
		{"pci duplicate", `
ports:
  - {name: a, driver: vfio-pci, pci: "0000:03:00.0"}
  - {name: b, driver: vfio-pci, pci: "03:00.0"}`, "ports[1].pci", "ports[0].pci"},
		{"wire missing on sim", "ports:\n  - {name: a, driver: sim}\nforward: {mode: reflect}", "ports[0].wire", "required for sim"},
		{"wire on vfio", "ports:\n  - {name: a, driver: vfio-pci, pci: \"03:00.0\", wire: \"pair:x\"}\nforward: {mode: reflect}", "ports[0].wire", "only sim ports"},
		{"wire kind", port0("wire", `"udp:1.2.3.4"`), "ports[0].wire", "unknown kind"},
		{"wire unix one path", port0("wire", `"unix:/tmp/a.sock"`), "ports[0].wire", "LOCAL,REMOTE"},
		{"wire tap name", port0("wire", `"tap:way-too-long-name"`), "ports[0].wire", "15 bytes"},
		{"wire not a string", port0("wire", `{pair: x}`), "ports[0].wire", "want a string"},
		{"wire shared by three", `
ports:
  - {name: a, driver: sim, wire: "pair:w"}
  - {name: b, driver: sim, wire: "pair:w"}
  - {name: c, driver: sim, wire: "pair:w"}
forward: {mode: reflect}`, "ports[2].wire", "two ends"},
		{"wire socket reused", `
ports:
  - {name: a, driver: sim, wire: "unix:/tmp/s,/tmp/u"}
  - {name: b, driver: sim, wire: "unixpair:/tmp/s,/tmp/t"}`, "ports[1].wire", "ports[0].wire"},
		{"wire tap reused", `
ports:
  - {name: a, driver: sim, wire: "tap:t0"}
  - {name: b, driver: sim, wire: "afpacket:t0"}`, "ports[1].wire", "already used"},
		{"rx_queues 0", port0("rx_queues", "0"), "ports[0].rx_queues", "[1, 16]"},
		{"tx_queues 17", port0("tx_queues", "17"), "ports[0].tx_queues", "= 17"},
		{"rx_ring not power of two", port0("rx_ring", "1000"), "ports[0].rx_ring", "power of two"},
		{"rx_ring too small", port0("rx_ring", "32"), "ports[0].rx_ring", "[64, 4096]"},
		{"tx_ring too big", port0("tx_ring", "8192"), "ports[0].tx_ring", "= 8192"},
		{"ring not a number", port0("tx_ring", "big"), "ports[0].tx_ring", "integer"},
		{"ring fractional", port0("tx_ring", "512.5"), "ports[0].tx_ring", "whole number"},
		{"ring huge", port0("rx_ring", "18446744073709551615"), "ports[0].rx_ring", "out of range"},
		{"ring huge float", port0("rx_ring", "1e30"), "ports[0].rx_ring", "out of range"},
		{"ring hex string", port0("rx_ring", `"0x200"`), "ports[0].rx_ring", "want an integer"},
		{"queues beyond int32", port0("rx_queues", "99999999999"), "ports[0].rx_queues", "= 99999999999: must be in [1, 16]"},
		{"pci not a string", port0("pci", "[a]"), "ports[0].pci", "want a string, got a list"},
		{"itr boolean", port0("itr", "true"), "ports[0].itr", "want a duration"},
		{"promiscuous word", port0("promiscuous", "yes"), "ports[0].promiscuous", `"yes": want true or false`},
		{"itr negative", port0("itr", "-1us"), "ports[0].itr", "negative"},
		{"itr no unit", port0("itr", "100"), "ports[0].itr", "unit"},
		{"itr garbage", port0("itr", "soon"), "ports[0].itr", `"soon"`},
		{"promiscuous", port0("promiscuous", "1"), "ports[0].promiscuous", "true or false"},
		{"interrupts unknown", port0("interrupts", "msi"), "ports[0].interrupts", "msix or intx"},
		{"uio msix", "ports:\n  - {name: a, driver: uio_pci_generic, pci: \"03:00.0\", interrupts: msix}\nforward: {mode: reflect}", "ports[0].interrupts", "only delivers intx"},
		{"port not a mapping", "ports: [a]\nforward: {mode: reflect}", "ports[0]", "mapping"},
		{"ports not a list", "ports: {name: a}", "ports", "list"},
		// Forward.
		{"forward mode", simPorts + "forward: {mode: bridge}", "forward.mode", "l2fwd or reflect"},
		{"odd ports without pairs", simPorts + "  - {name: c, driver: sim, wire: \"pair:c\"}", "forward.pairs", "odd (3)"},
		{"pair unknown port", simPorts + "forward: {pairs: [[a, z]]}", "forward.pairs[0][1]", `"z"`},
		{"pair of three", simPorts + "forward: {pairs: [[a, b, a]]}", "forward.pairs[0]", "exactly two"},
		{"pair with itself", simPorts + "forward: {pairs: [[a, a]]}", "forward.pairs[0]", "itself"},
		{"port in two pairs", `
ports:
  - {name: a, driver: sim, wire: "pair:a"}
  - {name: b, driver: sim, wire: "pair:b"}
  - {name: c, driver: sim, wire: "pair:c"}
forward: {pairs: [[a, b], [c, a]]}`, "forward.pairs[1][1]", "already paired in forward.pairs[0]"},
		{"port in no pair", `
ports:
  - {name: a, driver: sim, wire: "pair:a"}
  - {name: b, driver: sim, wire: "pair:b"}
  - {name: c, driver: sim, wire: "pair:c"}
forward: {pairs: [[a, b]]}`, "forward.pairs", `"c"`},
		{"pairs in reflect", simPorts + "forward: {mode: reflect, pairs: [[a, b]]}", "forward.pairs", "only apply to l2fwd"},
		{"pairs flat", simPorts + "forward: {pairs: [[a, b], c]}", "forward.pairs[1]", "list"},
		// Poll.
		{"poll mode", simPorts + "poll: {mode: spin}", "poll.mode", "busy, adaptive or sleep"},
		{"idle_threshold too long", simPorts + "poll: {idle_threshold: 2s}", "poll.idle_threshold", "= 2s"},
		{"idle_threshold negative", simPorts + "poll: {idle_threshold: -1ms}", "poll.idle_threshold", "negative"},
		{"idle_threshold word", simPorts + "poll: {idle_threshold: automatic}", "poll.idle_threshold", "or auto"},
		{"wait_timeout zero", simPorts + "poll: {wait_timeout: 0}", "poll.wait_timeout", "[1ms, 1s]"},
		{"wait_timeout short, any mode", simPorts + "poll: {mode: busy, wait_timeout: 500us}", "poll.wait_timeout", "= 500µs"},
		{"wait_timeout long", simPorts + "poll: {wait_timeout: 2s}", "poll.wait_timeout", "[1ms, 1s]"},
		{"wait_timeout negative", simPorts + "poll: {mode: busy, wait_timeout: -1s}", "poll.wait_timeout", "= -1s"},
		{"sleep_min equals max", simPorts + "poll: {mode: sleep, sleep_min: 50us, sleep_max: 50us}", "poll.sleep_min", "less than poll.sleep_max"},
		{"sleep_min above max", simPorts + "poll: {mode: sleep, sleep_min: 1ms, sleep_max: 10us}", "poll.sleep_min", "= 1ms"},
		{"sleep_max over 1s", simPorts + "poll: {mode: sleep, sleep_max: 1001ms}", "poll.sleep_max", "at most 1s"},
		{"sleep_min negative", simPorts + "poll: {sleep_min: -5us}", "poll.sleep_min", "negative"},
		// Every value is checked whatever the mode, so that switching the mode (as with
		// UIOD_POLL_MODE=sleep) never turns a valid file invalid.
		{"sleep bounds checked in busy mode", simPorts + "poll: {mode: busy, sleep_min: 5ms, sleep_max: 1ms}", "poll.sleep_min", "less than poll.sleep_max (1ms)"},
		{"sleep bounds checked in adaptive mode", simPorts + "poll: {mode: adaptive, sleep_min: 50us, sleep_max: 50us}", "poll.sleep_min", "= 50µs"},
		{"sleep_max checked in adaptive mode", simPorts + "poll: {sleep_max: 2s}", "poll.sleep_max", "at most 1s"},
		{"sleep_max zero", simPorts + "poll: {sleep_min: 0, sleep_max: 0}", "poll.sleep_max", "more than 0"},
		{"housekeeping length too long", simPorts + "poll: {housekeeping: {hz: 1000, length: 1ms}}", "poll.housekeeping.length", "1/hz = 1ms"},
		{"housekeeping without length", simPorts + "poll: {housekeeping: {hz: 10}}", "poll.housekeeping.length", "required"},
		{"housekeeping without hz", simPorts + "poll: {housekeeping: {length: 1ms}}", "poll.housekeeping.hz", "> 0"},
		{"housekeeping hz negative", simPorts + "poll: {housekeeping: {hz: -5}}", "poll.housekeeping.hz", "= -5"},
		{"housekeeping length negative", simPorts + "poll: {housekeeping: {hz: 5, length: -1ms}}", "poll.housekeeping.length", "negative"},
		{"cpu missing", simPorts + "poll: {cpus: [0, 4]}", "poll.cpus[1]", "have 0-3"},
		{"cpu negative", simPorts + "poll: {cpus: [-1]}", "poll.cpus[0]", "= -1"},
		{"cpu duplicate", simPorts + "poll: {cpus: [1, 1]}", "poll.cpus[1]", "duplicate of poll.cpus[0]"},
		{"cpus not a list", simPorts + "poll: {cpus: 1}", "poll.cpus", "list"},
		{"cpu list bad", simPorts + "poll: {cpus: \"3-1\"}", "poll.cpus", "backwards"},
		{"delivery", simPorts + "poll: {delivery: irq}", "poll.delivery", "inline or threaded"},
		{"vfio interface", simPorts + "vfio: {interface: cdev}", "vfio.interface", "auto, group or iommufd"},
		{"threaded without adaptive", simPorts + "poll: {mode: busy, delivery: threaded}", "poll.delivery", "adaptive"},
		{"poll not a mapping", simPorts + "poll: [busy]", "poll", "mapping"},
		// Unknown keys.
		// Each RX queue forwards to the TX queue of the same number on its peer (l2fwd) or
		// its own port (reflect); the daemon would refuse to start after opening the ports.
		{"rx queues beyond peer tx, implicit pair", port0("rx_queues", "4"), "ports[0].rx_queues", "more than ports[1].tx_queues (1)"},
		{"rx queues beyond peer tx, listed pair", port0("rx_queues", "2", "tx_queues", "2") + "forward: {pairs: [[b, a]]}", "ports[0].rx_queues", "more than ports[1].tx_queues"},
		{"rx queues beyond own tx, reflect", port0("rx_queues", "2") + "forward: {mode: reflect}", "ports[0].rx_queues", "more than ports[0].tx_queues (1)"},
		{"unknown top key", simPorts + "polll: {}", "polll", "did you mean poll?"},
		{"unknown port key", port0("rx_rnig", "512"), "ports[0].rx_rnig", "did you mean rx_ring?"},
		{"unknown key, empty mapping", simPorts + "poll: {housekeeping: {}, hk: {}}", "poll.hk", "unknown key"},
		{"unknown key, null", simPorts + "bogus:", "bogus", "unknown key"},
		{"unknown key in list item", port0("extra", "{}"), "ports[0].extra", "unknown key"},
		{"unknown nested key", simPorts + "poll: {housekeeping: {hertz: 5}}", "poll.housekeeping.hertz", "unknown key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := read(t, tt.text)
			errs := fieldErrs(t, err)
			if len(errs) != 1 {
				t.Fatalf("got %d errors, want 1 on %s:\n%v", len(errs), tt.path, err)
			}
			if errs[0].Path != tt.path || !strings.Contains(errs[0].Error(), tt.msg) {
				t.Errorf("got %q, want path %s and %q", errs[0].Error(), tt.path, tt.msg)
			}
		})
	}
}

func TestManyErrorsAtOnce(t *testing.T) {
	_, err := read(t, `
ports:
  - name: a
    driver: sim
    wire: "pair:a"
    rx_ring: 100
    tx_rnig: 512
  - name: b
    driver: vfio-pci
    pci: "0000:03:00.0"
    rx_queues: 0
    itr: -1ms
  - name: a
    driver: vfio-pci
    pci: "03:00.0"
forward: {pairs: [[a, b], [c, a]]}
poll:
  mode: sleep
  sleep_min: 2ms
  sleep_max: 1ms
  cpus: [9]
`)
	var got []string
	for _, fe := range fieldErrs(t, err) {
		got = append(got, fe.Path)
	}
	want := []string{
		"ports[0].rx_ring", "ports[0].tx_rnig",
		"ports[1].rx_queues", "ports[1].itr",
		"ports[2].name", "ports[2].pci",
		"forward.pairs[1][0]", "forward.pairs[1][1]",
		"poll.sleep_min", "poll.cpus[0]",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("error paths:\n got %q\nwant %q\n%v", got, want, err)
	}
	// Every line names its path and the bad value.
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != len(want) {
		t.Fatalf("Error() has %d lines, want %d", len(lines), len(want))
	}
	for _, frag := range []string{`ports[0].rx_ring = 100:`, `ports[1].itr = -1ms:`, `ports[2].name = "a": duplicate`, `poll.cpus[0] = 9:`} {
		if !strings.Contains(err.Error(), frag) {
			t.Errorf("error text lacks %q:\n%v", frag, err)
		}
	}
}

func TestDecodeErrorsHideDefaults(t *testing.T) {
	// A value that fails to decode is reported once, not again by validation of
	// whatever was left in its place.
	_, err := read(t, port0("rx_ring", "[1]", "wire", "5")+"poll: 7\n")
	var got []string
	for _, fe := range fieldErrs(t, err) {
		got = append(got, fe.Path)
	}
	want := []string{"ports[0].wire", "ports[0].rx_ring", "poll"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("paths %q, want %q:\n%v", got, want, err)
	}
}

func TestEnvOverrides(t *testing.T) {
	c, err := read(t, simPorts+"poll: {mode: busy}\nmetrics: {listen: \"127.0.0.1:1\"}",
		"UIOD_POLL_MODE", "adaptive",
		"UIOD_POLL_IDLE_THRESHOLD", "auto",
		"UIOD_POLL_WAIT_TIMEOUT", "5ms",
		"UIOD_POLL_HOUSEKEEPING_HZ", "100",
		"UIOD_POLL_HOUSEKEEPING_LENGTH", "10us",
		"UIOD_POLL_CPUS", "1-2",
		"UIOD_METRICS_LISTEN", "",
		"UIOD_LOG_LEVEL", "debug",
		"UIOD_STATE_DIR", "/tmp/uiod",
		"UIOD_POWER_CPU_DMA_LATENCY", "0",
		"UIOD_FORWARD_MODE", "reflect",
		"UIOD_PORTS", "nonsense", // lists of mappings are not overridable
	)
	if err != nil {
		t.Fatal(err)
	}
	_, auto := c.IdleThreshold()
	switch {
	case c.Poll.Mode != PollAdaptive, !auto, c.Poll.WaitTimeout != 5*time.Millisecond,
		c.Poll.Housekeeping != Housekeeping{Hz: 100, Length: 10 * time.Microsecond},
		!reflect.DeepEqual(c.Poll.CPUs, []int{1, 2}), c.MetricsEnabled(), c.Log.Level != "debug",
		c.StateDir != "/tmp/uiod", c.Power.CPUDMALatency != 0, c.Forward.Mode != ForwardReflect:
		t.Errorf("overrides not applied: %+v", c)
	}

	_, err = read(t, simPorts, "UIOD_POLL_HOUSEKEEPING_HZ", "often", "UIOD_POLL_MODE", "nap", "UIOD_POLL_CPUS", "0,9")
	var got []string
	for _, fe := range fieldErrs(t, err) {
		got = append(got, fe.Error())
	}
	want := []string{
		`poll.mode = "nap": want busy, adaptive or sleep (from $UIOD_POLL_MODE)`,
		`poll.housekeeping.hz = "often": want an integer (from $UIOD_POLL_HOUSEKEEPING_HZ)`,
		`poll.cpus[1] = 9: no such CPU here (have 0-3) (from $UIOD_POLL_CPUS)`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("bad overrides reported as\n%q\nwant\n%q", got, want)
	}
}

// TestEnvValuesChecked checks that a value from the environment is checked like one from
// the file, whatever the mode, and that the error names the variable.
func TestEnvValuesChecked(t *testing.T) {
	_, err := read(t, simPorts+"poll: {mode: adaptive}", "UIOD_POLL_SLEEP_MIN", "1ms")
	errs := fieldErrs(t, err)
	if len(errs) != 1 || errs[0].Error() != "poll.sleep_min = 1ms: must be less than poll.sleep_max (200µs) (from $UIOD_POLL_SLEEP_MIN)" {
		t.Errorf("errors %q", err)
	}
	if errors.Unwrap(errs[0]) == nil {
		t.Errorf("the idle policy's own error is not behind %v", errs[0])
	}
}

func TestEnvFromProcess(t *testing.T) {
	t.Setenv("UIOD_POLL_MODE", "busy")
	f := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(f, []byte(simPorts), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(f)
	if err != nil {
		t.Fatal(err)
	}
	if c.Poll.Mode != PollBusy {
		t.Errorf("poll.mode = %s, want busy from UIOD_POLL_MODE", c.Poll.Mode)
	}
}

func TestEnvKeys(t *testing.T) {
	want := []string{"log.level", "log.format", "metrics.listen", "metrics.public", "state_dir", "forward.mode",
		"poll.mode", "poll.idle_threshold", "poll.wait_timeout", "poll.sleep_min", "poll.sleep_max",
		"poll.housekeeping.hz", "poll.housekeeping.length", "poll.cpus", "poll.delivery",
		"power.cpu_dma_latency", "vfio.interface", "memory.dma_limit"}
	if !reflect.DeepEqual(envKeys, want) {
		t.Errorf("envKeys = %q\nwant %q", envKeys, want)
	}
	if got := envName("poll.housekeeping.hz"); got != "UIOD_POLL_HOUSEKEEPING_HZ" {
		t.Errorf("envName = %s", got)
	}
}

func TestLoadErrors(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "missing.yaml"))
	var ve *ValidationError
	if err == nil || errors.As(err, &ve) || !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing file: %v", err)
	}
	for _, text := range []string{"ports: [", "- a\n- b", "a: b: c", "\t x"} {
		_, err := read(t, text)
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("%q: error %v (%T), want *ParseError", text, err, err)
		}
	}
}

func TestLoadStdin(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdin
	os.Stdin = r
	defer func() { os.Stdin = old; r.Close() }()
	go func() { w.WriteString(simPorts + "poll: {mode: busy}"); w.Close() }()
	c, err := Loader{Host: &testHost}.Load("-")
	if err != nil {
		t.Fatal(err)
	}
	if c.Poll.Mode != PollBusy || len(c.Ports) != 2 {
		t.Errorf("stdin config not read: %+v", c)
	}
}

func TestErrorTypes(t *testing.T) {
	_, err := read(t, port0("rx_ring", "3", "tx_ring", "5"))
	var fe FieldError
	if !errors.As(err, &fe) || fe.Path != "ports[0].rx_ring" || fe.Value != 3 {
		t.Errorf("errors.As(FieldError) = %#v", fe)
	}
	_, err = read(t, "a: [")
	var pe *ParseError
	if !errors.As(err, &pe) || errors.Unwrap(pe) == nil || !strings.HasPrefix(err.Error(), "parse config: ") {
		t.Errorf("parse error %v", err)
	}
	if got := (FieldError{Path: "ports", Msg: "x"}).Error(); got != "ports: x" {
		t.Errorf("FieldError without value: %q", got)
	}
	for _, m := range []interface{ MarshalText() ([]byte, error) }{Threshold{Auto: true}, Threshold{Duration: time.Millisecond}, Wire{wire.Spec{Kind: wire.KindTAP, Name: "t"}}} {
		b, _ := m.MarshalText()
		var back any
		switch m.(type) {
		case Threshold:
			var th Threshold
			err = th.UnmarshalText(b)
			back = th
		case Wire:
			var w Wire
			err = w.UnmarshalText(b)
			back = w
		}
		if err != nil || back != m {
			t.Errorf("%#v does not round-trip through %q: %v", m, b, err)
		}
	}
}

func TestValidateBuiltConfig(t *testing.T) {
	c := Default()
	p := DefaultPort()
	p.Name, p.Driver, p.PCI = "x", DriverVFIO, "0000:05:00.0"
	c.Ports = append(c.Ports, p)
	c.Forward.Mode = ForwardReflect
	if err := c.ValidateOn(testHost); err != nil {
		t.Fatalf("built config: %v", err)
	}
	if err := Default().Validate(); err == nil {
		t.Error("Default() without ports validates")
	}
	c.Ports[0].Wire = Wire{wire.Spec{Kind: "carrier-pigeon"}}
	c.Ports[0].RxRing = 3
	errs := fieldErrs(t, c.ValidateOn(testHost))
	if len(errs) != 2 || errs[0].Path != "ports[0].wire" || errs[1].Path != "ports[0].rx_ring" {
		t.Errorf("errors %v", errs)
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

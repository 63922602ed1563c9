package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/wire"
)

// TestBadFiles checks each rule: the file has exactly one problem, reported on the right
// path with the bad value.
func TestBadFiles(t *testing.T) {
	wantOneErrors(t, []oneError{
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
		{"nic unknown", port0("nic", "e1000"), "ports[0].nic", "auto, igb, igbvf, ixgbe or virtio"},
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
		{"rx_ring too small", port0("rx_ring", "32"), "ports[0].rx_ring", "[64, 8192], the 82599 (ixgbe)'s range"},
		{"tx_ring too big", port0("tx_ring", "16384"), "ports[0].tx_ring", "= 16384"},
		{"tx_ring too big for the 82576", port0("tx_ring", "8192", "nic", "igb"), "ports[0].tx_ring", "= 8192: must be a power of two in [64, 4096], the 82576 (igb)'s range"},
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
		{"forward mode", simPorts + "forward: {mode: hub}", "forward.mode", "l2fwd, reflect, l3fwd or bridge"},
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
	})
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

// TestVFPorts checks what a port with nic: igbvf may not ask of a virtual function.
func TestVFPorts(t *testing.T) {
	tests := []struct {
		name string
		set  func(p *Port)
		path string // "" for a valid port
		msg  string
	}{
		{"one queue pair", func(p *Port) {}, "", ""},
		{"two rx queues", func(p *Port) { p.RxQueues = 2 }, "ports[0].rx_queues", "one queue pair"},
		{"two tx queues", func(p *Port) { p.TxQueues = 2 }, "ports[0].tx_queues", "one queue pair"},
		{"intx", func(p *Port) { p.Interrupts = InterruptsINTx }, "ports[0].interrupts", "no INTx"},
		{"uio", func(p *Port) { p.Driver = DriverUIO; p.PCI = "0000:01:10.0"; p.Interrupts = "" }, "ports[0].driver", "use vfio-pci"},
		{"promiscuous", func(p *Port) { p.Promiscuous = true }, "ports[0].promiscuous", "their PF filters"},
		{"itr beyond the range", func(p *Port) { p.ITR = time.Second }, "ports[0].itr", "82576 VF (igbvf)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			c.Ports = []Port{{Name: "vf0", Driver: DriverVFIO, PCI: "0000:01:10.0", NIC: NICIgbvf, RxQueues: 1, TxQueues: 1, RxRing: 512, TxRing: 512},
				{Name: "vf1", Driver: DriverVFIO, PCI: "0000:01:10.2", NIC: NICIgbvf, RxQueues: 1, TxQueues: 1, RxRing: 512, TxRing: 512}}
			tt.set(&c.Ports[0])
			err := c.Validate()
			if tt.path == "" {
				if err != nil {
					t.Fatalf("valid port refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.path) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("error %v, want %s naming %q", err, tt.path, tt.msg)
			}
		})
	}
}

package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestExampleBridgeValidates: the bridge example (uiod config example --bridge) is valid
// and shows every key of the bridge section.
func TestExampleBridgeValidates(t *testing.T) {
	c := mustRead(t, ExampleBridge())
	if c.Forward.Mode != ForwardBridge || len(c.Bridge.Ports) != 3 || len(c.Bridge.Static) != 1 {
		t.Errorf("the bridge example: mode %s, bridge %+v", c.Forward.Mode, c.Bridge)
	}
	v := shownKeys(t, ExampleBridge())
	for _, key := range envKeys {
		if strings.HasPrefix(key, "bridge.") && !v.IsSet(key) {
			t.Errorf("the bridge example does not show %s", key)
		}
	}
	shown := map[string]bool{}
	for _, p := range v.Get("bridge.ports").([]any) {
		for k := range p.(map[string]any) {
			shown[k] = true
		}
	}
	for _, key := range schemaKeys(reflect.TypeFor[BridgePort]()) {
		if !shown[key] {
			t.Errorf("the bridge example's ports do not show %s", key)
		}
	}
}

func TestBridgePortOf(t *testing.T) {
	b := Bridge{MACLimit: 100, FloodLimit: 50, Ports: []BridgePort{
		{Port: "acc", PVID: 10},
		{Port: "trunk", VLANs: []int{10, 20}, TaggedOnly: true, MACLimit: -1, FloodLimit: 7},
	}}
	tests := []struct {
		name string
		want BridgePort
	}{
		{"none", BridgePort{Port: "none", PVID: 1, MACLimit: 100, FloodLimit: 50}},
		{"acc", BridgePort{Port: "acc", PVID: 10, MACLimit: 100, FloodLimit: 50}},
		{"trunk", BridgePort{Port: "trunk", VLANs: []int{10, 20}, TaggedOnly: true, MACLimit: 0, FloodLimit: 7}},
	}
	for _, tt := range tests {
		if got := b.BridgePortOf(tt.name); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
	if b.BridgeAgeing() != 300*time.Second {
		t.Errorf("default ageing %v", b.BridgeAgeing())
	}
}

func TestBridgeBadConfigs(t *testing.T) {
	mode := "forward: {mode: bridge}\n"
	wantOneErrors(t, []oneError{
		{"bridge section in l2fwd", simPorts + "bridge: {ageing: 10s}", "bridge", "only applies to forward.mode bridge"},
		{"pairs", simPorts + "forward: {mode: bridge, pairs: [[a, b]]}", "forward.pairs", "only apply to l2fwd"},
		{"routes", simPorts + "forward: {mode: bridge, routes: [{prefix: 10.0.0.0/8, port: a, next_hop_mac: \"02:00:00:00:00:01\"}]}", "forward.routes", "only apply to forward.mode l3fwd"},
		{"ageing", simPorts + mode + "bridge: {ageing: 1ms}", "bridge.ageing", "want 10ms"},
		{"table size", simPorts + mode + "bridge: {table_size: -1}", "bridge.table_size", "want 1 to"},
		{"mac limit", simPorts + mode + "bridge: {mac_limit: -1}", "bridge.mac_limit", "no limit"},
		{"flood limit", simPorts + mode + "bridge: {flood_limit: -2}", "bridge.flood_limit", "frames a second"},
		{"unknown port", simPorts + mode + "bridge: {ports: [{port: z}]}", "bridge.ports[0].port", "no port has this name"},
		{"no port", simPorts + mode + "bridge: {ports: [{pvid: 2}]}", "bridge.ports[0].port", "required"},
		{"port twice", simPorts + mode + "bridge: {ports: [{port: a}, {port: a}]}", "bridge.ports[1].port", "bridge.ports[0]"},
		{"pvid", simPorts + mode + "bridge: {ports: [{port: a, pvid: 4095}]}", "bridge.ports[0].pvid", "1 to 4094"},
		{"pvid and tagged only", simPorts + mode + "bridge: {ports: [{port: a, pvid: 3, tagged_only: true, vlans: [4]}]}", "bridge.ports[0].pvid", "no pvid"},
		{"tagged only without vlans", simPorts + mode + "bridge: {ports: [{port: a, tagged_only: true}]}", "bridge.ports[0].vlans", "at least one"},
		{"vlan range", simPorts + mode + "bridge: {ports: [{port: a, vlans: [5, 0]}]}", "bridge.ports[0].vlans[1]", "1 to 4094"},
		{"vlan twice", simPorts + mode + "bridge: {ports: [{port: a, vlans: [5, 5]}]}", "bridge.ports[0].vlans[1]", "twice"},
		{"vlan is pvid", simPorts + mode + "bridge: {ports: [{port: a, pvid: 5, vlans: [5]}]}", "bridge.ports[0].vlans[0]", "not both"},
		{"vlan is default pvid", simPorts + mode + "bridge: {ports: [{port: a, vlans: [1]}]}", "bridge.ports[0].vlans[0]", "not both"},
		{"port mac limit", simPorts + mode + "bridge: {ports: [{port: a, mac_limit: -2}]}", "bridge.ports[0].mac_limit", "-1 (no limit)"},
		{"static mac", simPorts + mode + "bridge: {static: [{mac: \"ff:ff:ff:ff:ff:ff\", port: a}]}", "bridge.static[0].mac", "broadcast"},
		{"static port", simPorts + mode + "bridge: {static: [{mac: \"02:00:00:00:00:01\", port: z}]}", "bridge.static[0].port", "no port"},
		{"static vlan", simPorts + mode + "bridge: {static: [{mac: \"02:00:00:00:00:01\", port: a, vlan: 7}]}", "bridge.static[0].vlan", "not in VLAN 7"},
		{"static twice", simPorts + mode + "bridge: {static: [{mac: \"02:00:00:00:00:01\", port: a}, {mac: \"02:00:00:00:00:01\", port: b}]}", "bridge.static[1].mac", "bridge.static[0]"},
		{"tx queues", strings.Replace(port0("tx_queues", "1"), "pair:b\"}", "pair:b\", tx_queues: 2}", 1) + mode + "poll: {cpus: [0, 1]}", "ports[0].tx_queues", "every thread a TX queue"},
		{"unknown key", simPorts + mode + "bridge: {ageng: 1s}", "bridge.ageng", "did you mean ageing?"},
	})
	// No bridge section: every port joins, untagged.
	if _, err := read(t, simPorts+mode); err != nil {
		t.Errorf("a bridge of two ports with no bridge section: %v", err)
	}
	// Three ports are fine too (l2fwd would refuse an odd number).
	if _, err := read(t, simPorts+"  - {name: c, driver: sim, wire: \"pair:c\"}\n"+mode); err != nil {
		t.Errorf("a bridge of three ports: %v", err)
	}
}

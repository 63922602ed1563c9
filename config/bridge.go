package config

import (
	"fmt"
	"net"
	"time"
)

// ForwardBridge is forward.mode for the learning switch: every port joins one bridge
// (untagged, VLAN 1, unless bridge.ports says otherwise).
const ForwardBridge = "bridge"

// Bridge configures forward.mode bridge (the bridge section; see docs/bridge.md).
type Bridge struct {
	// Ageing is how long a learnt MAC lives without a frame from it: 0 for
	// DefaultBridgeAgeing (300 s, as Linux's), 10ms to 1000000s.
	Ageing time.Duration `mapstructure:"ageing"`
	// TableSize is the most entries the MAC table holds (0: DefaultBridgeTable).
	TableSize int `mapstructure:"table_size"`
	// MACLimit and FloodLimit are every port's default MAC limit (dynamic entries) and
	// flood limit (flooded frames a second it receives); 0 is no limit.
	MACLimit   int `mapstructure:"mac_limit"`
	FloodLimit int `mapstructure:"flood_limit"`
	// Ports set the VLANs and limits of ports by name; a port not listed is an access
	// port of VLAN 1 with the default limits.
	Ports []BridgePort `mapstructure:"ports"`
	// Static are static MAC entries.
	Static []BridgeStatic `mapstructure:"static"`
}

// BridgePort is one entry of bridge.ports.
type BridgePort struct {
	// Port is the name of a port in ports.
	Port string `mapstructure:"port"`
	// PVID is the VLAN of the untagged frames the port receives and the one it sends
	// untagged (0: 1), 1 to 4094. TaggedOnly drops untagged frames instead (no PVID).
	PVID       int  `mapstructure:"pvid"`
	TaggedOnly bool `mapstructure:"tagged_only"`
	// VLANs are the VLANs the port carries tagged (a trunk), not the PVID.
	VLANs []int `mapstructure:"vlans"`
	// MACLimit and FloodLimit override the bridge's defaults (0: the default; -1: no limit).
	MACLimit   int `mapstructure:"mac_limit"`
	FloodLimit int `mapstructure:"flood_limit"`
}

// BridgeStatic is one entry of bridge.static.
type BridgeStatic struct {
	MAC  string `mapstructure:"mac"`
	Port string `mapstructure:"port"`
	// VLAN is the entry's VLAN (0: the port's PVID).
	VLAN int `mapstructure:"vlan"`
}

// Bridge defaults and limits.
const (
	DefaultBridgeAgeing = 300 * time.Second
	DefaultBridgeTable  = 16384
	MinBridgeAgeing     = 10 * time.Millisecond
	MaxBridgeAgeing     = 1_000_000 * time.Second
	MaxBridgeTable      = 1 << 22
	MaxVLAN             = 4094
)

// BridgeAgeing is bridge.ageing with its default.
func (b *Bridge) BridgeAgeing() time.Duration {
	if b.Ageing == 0 {
		return DefaultBridgeAgeing
	}
	return b.Ageing
}

// BridgePortOf returns the bridge.ports entry of the port named name, with the bridge's
// defaults filled in: PVID (0 when TaggedOnly), MACLimit and FloodLimit (0: none).
func (b *Bridge) BridgePortOf(name string) BridgePort {
	bp := BridgePort{Port: name}
	for _, p := range b.Ports {
		if p.Port == name {
			bp = p
			break
		}
	}
	switch {
	case bp.TaggedOnly:
		bp.PVID = 0
	case bp.PVID == 0:
		bp.PVID = 1
	}
	limit := func(own, def int) int {
		switch own {
		case 0:
			return def
		case -1:
			return 0
		}
		return own
	}
	bp.MACLimit, bp.FloodLimit = limit(bp.MACLimit, b.MACLimit), limit(bp.FloodLimit, b.FloodLimit)
	return bp
}

// ParseBridgeMAC parses a static entry's MAC: six bytes, unicast, not zero.
func ParseBridgeMAC(s string) (net.HardwareAddr, error) { return ParseNextHopMAC(s) }

// checkBridge checks forward.mode bridge: the bridge section, forward.pairs unused, and a
// TX queue on every port for every poll thread (a frame may leave by any port).
func (c *Config) checkBridge(errs *fieldErrors) {
	b := &c.Bridge
	if len(c.Forward.Pairs) > 0 {
		errs.add("forward.pairs", nil, "pairs only apply to l2fwd; a bridge sends each frame where its MAC was learnt")
	}
	if b.Ageing != 0 && (b.Ageing < MinBridgeAgeing || b.Ageing > MaxBridgeAgeing) {
		errs.add("bridge.ageing", b.Ageing.String(), "want %v to %v (0: %v)", MinBridgeAgeing, MaxBridgeAgeing, DefaultBridgeAgeing)
	}
	if b.TableSize < 0 || b.TableSize > MaxBridgeTable {
		errs.add("bridge.table_size", b.TableSize, "want 1 to %d (0: %d)", MaxBridgeTable, DefaultBridgeTable)
	}
	if b.MACLimit < 0 {
		errs.add("bridge.mac_limit", b.MACLimit, "want 0 (no limit) or more")
	}
	if b.FloodLimit < 0 {
		errs.add("bridge.flood_limit", b.FloodLimit, "want 0 (no limit) or more frames a second")
	}
	members := map[string]map[int]bool{} // port → its VLANs
	for _, p := range c.Ports {
		members[p.Name] = map[int]bool{c.Bridge.BridgePortOf(p.Name).PVID: true}
	}
	seen := map[string]int{}
	for i, p := range b.Ports {
		path := func(key string) string { return fmt.Sprintf("bridge.ports[%d].%s", i, key) }
		switch j, dup := seen[p.Port]; {
		case p.Port == "":
			errs.add(path("port"), nil, "required: the name of a port in ports")
		case c.Port(p.Port) == nil:
			errs.add(path("port"), p.Port, "no port has this name")
		case dup:
			errs.add(path("port"), p.Port, "already configured by bridge.ports[%d]", j)
		default:
			seen[p.Port] = i
		}
		switch {
		case p.PVID < 0 || p.PVID > MaxVLAN:
			errs.add(path("pvid"), p.PVID, "want 1 to %d (0: 1)", MaxVLAN)
		case p.TaggedOnly && p.PVID != 0:
			errs.add(path("pvid"), p.PVID, "a tagged_only port has no pvid")
		}
		vl := map[int]bool{}
		for k, v := range p.VLANs {
			vp := fmt.Sprintf("bridge.ports[%d].vlans[%d]", i, k)
			switch {
			case v < 1 || v > MaxVLAN:
				errs.add(vp, v, "want 1 to %d", MaxVLAN)
			case vl[v]:
				errs.add(vp, v, "listed twice")
			case v == c.Bridge.BridgePortOf(p.Port).PVID:
				errs.add(vp, v, "the port's pvid: a VLAN leaves a port untagged (pvid) or tagged (vlans), not both")
			}
			vl[v] = true
			if m := members[p.Port]; m != nil {
				m[v] = true
			}
		}
		if p.TaggedOnly && len(p.VLANs) == 0 {
			errs.add(path("vlans"), nil, "a tagged_only port needs at least one VLAN")
		}
		if p.MACLimit < -1 {
			errs.add(path("mac_limit"), p.MACLimit, "want -1 (no limit), 0 (bridge.mac_limit) or more")
		}
		if p.FloodLimit < -1 {
			errs.add(path("flood_limit"), p.FloodLimit, "want -1 (no limit), 0 (bridge.flood_limit) or more")
		}
	}
	type key struct {
		mac  string
		vlan int
	}
	statics := map[key]int{}
	for i, s := range b.Static {
		path := func(k string) string { return fmt.Sprintf("bridge.static[%d].%s", i, k) }
		m, err := ParseBridgeMAC(s.MAC)
		if err != nil {
			errs.add(path("mac"), s.MAC, "%v", err)
		}
		vlan := s.VLAN
		switch {
		case s.Port == "":
			errs.add(path("port"), nil, "required: the name of the port the MAC is behind")
			continue
		case c.Port(s.Port) == nil:
			errs.add(path("port"), s.Port, "no port has this name")
			continue
		case vlan == 0:
			vlan = c.Bridge.BridgePortOf(s.Port).PVID
		}
		if !members[s.Port][vlan] || vlan == 0 {
			errs.add(path("vlan"), s.VLAN, "port %s is not in VLAN %d", s.Port, vlan)
		}
		if err == nil {
			k := key{m.String(), vlan}
			if j, dup := statics[k]; dup {
				errs.add(path("mac"), s.MAC, "same MAC and VLAN as bridge.static[%d]", j)
			}
			statics[k] = i
		}
	}
	c.checkTxPerThread(errs, "a bridge")
}

// checkNotBridge refuses a bridge section in the other modes.
func (c *Config) checkNotBridge(errs *fieldErrors) {
	b := &c.Bridge
	if b.Ageing != 0 || b.TableSize != 0 || b.MACLimit != 0 || b.FloodLimit != 0 || len(b.Ports) > 0 || len(b.Static) > 0 {
		errs.add("bridge", nil, "the bridge section only applies to forward.mode bridge")
	}
}

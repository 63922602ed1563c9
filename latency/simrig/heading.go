package simrig

import (
	"fmt"

	"github.com/uiod/uiod/latency"
)

// models are the NIC each bench kind models, by NIC name.
var models = map[string]string{NICIxgbe: "Intel 82599", NICIgb: "Intel 82576", NICIgbvf: "Intel 82576 VF", NICVirtio: "virtio-net"}

// Model returns the NIC the bench kind nic (one of NICs, "" for NICIxgbe) models, e.g.
// "Intel 82599"; an unknown kind is returned as it is.
func Model(nic string) string {
	if nic == "" {
		nic = NICIxgbe
	}
	if m, ok := models[nic]; ok {
		return m
	}
	return nic
}

// Describe names what a bench run of cfg on model ports of kind nic measures — the NIC
// model and its driver, the traffic pattern and how long each policy runs — in the
// form the demo's heading and plot title use:
// "model Intel 82599 ports (ixgbe), constant:400µs, 4s per policy".
func Describe(nic string, cfg latency.Config) string {
	if nic == "" {
		nic = NICIxgbe
	}
	pattern := "constant:" + latency.DefaultInterval.String()
	if cfg.Pattern != nil {
		pattern = cfg.Pattern.String()
	}
	var length string
	switch {
	case cfg.Duration > 0 && cfg.Count > 0:
		length = fmt.Sprintf("%v or %d probes", cfg.Duration, cfg.Count)
	case cfg.Count > 0:
		length = fmt.Sprintf("%d probes", cfg.Count)
	default:
		length = cfg.Duration.String()
	}
	return fmt.Sprintf("model %s ports (%s), %s, %s per policy", Model(nic), nic, pattern, length)
}

package config

import (
	"fmt"
	"strings"

	"github.com/uiod/uiod/pci"
)

// PCIEnvPrefix starts a port's pci value that names an environment variable instead of
// an address: "env:PCIDEVICE_INTEL_COM_SRIOV_VFIO". Kubernetes' SR-IOV network device
// plugin sets PCIDEVICE_<RESOURCE> in a pod to the comma-separated addresses of the
// functions it allocated from that resource.
const PCIEnvPrefix = "env:"

// pciEnvVar is the form of a variable pci: env: may name: what the device plugin sets.
const pciEnvVar = "PCIDEVICE_"

// resolvePCIEnv replaces every pci: env:VAR of the ports with an address from VAR: the
// ports naming one variable take its addresses in order, each once. An unset or empty
// variable, one with fewer addresses than ports naming it, or a value that is not a
// PCI address is an error naming the variable.
func (c *Config) resolvePCIEnv(lookup func(string) (string, bool), errs *fieldErrors) {
	lists := map[string][]string{}
	next := map[string]int{}
	for i := range c.Ports {
		p := &c.Ports[i]
		name, ok := strings.CutPrefix(p.PCI, PCIEnvPrefix)
		if !ok {
			continue
		}
		path := fmt.Sprintf("ports[%d].pci", i)
		if !validPCIEnvName(name) {
			errs.add(path, p.PCI, "env: must name a device plugin variable %s<RESOURCE> (upper case, digits, _)", pciEnvVar)
			p.PCI = ""
			continue
		}
		list, seen := lists[name]
		if !seen {
			v, set := lookup(name)
			if !set || strings.TrimSpace(v) == "" {
				errs.add(path, p.PCI, "$%s is not set or empty: the SR-IOV device plugin sets it in a pod that requests the resource", name)
				lists[name], p.PCI = nil, ""
				continue
			}
			for _, s := range strings.Split(v, ",") {
				list = append(list, strings.TrimSpace(s))
			}
			lists[name] = list
		}
		n := next[name]
		next[name]++
		switch {
		case list == nil:
			p.PCI = "" // reported at the variable's first port
		case n >= len(list):
			errs.add(path, p.PCI, "$%s has %d addresses, but this is port %d naming it", name, len(list), n+1)
			p.PCI = ""
		default:
			if _, err := pci.ParseAddr(list[n]); err != nil {
				errs.add(path, p.PCI, "$%s entry %d %v", name, n+1, err)
				p.PCI = ""
				continue
			}
			p.PCI = list[n]
		}
	}
}

// validPCIEnvName reports whether name is PCIDEVICE_ followed by upper-case letters,
// digits and underscores, as the device plugin forms its variables.
func validPCIEnvName(name string) bool {
	rest, ok := strings.CutPrefix(name, pciEnvVar)
	if !ok || rest == "" || len(name) > 128 {
		return false
	}
	return strings.Trim(rest, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == ""
}

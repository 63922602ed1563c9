package config

import (
	"fmt"

	"github.com/uiod/uiod/internal/ifname"
	"github.com/uiod/uiod/wire"
)

// Kernel is a port's kernel exception path: the interface through which the App hands
// frames to the host's network stack (Burst.ToKernel) and the stack's frames leave by
// the port. The zero Kernel is none.
type Kernel struct {
	// TAP names the TAP interface the daemon creates for the port (or attaches to, if a
	// persistent TAP of that name exists), with the port's MAC address and MTU, up. It
	// takes 1 to 15 bytes of letters, digits, '-', '_' and '.'.
	TAP string `mapstructure:"tap"`
	// AllMulti makes the port take every multicast frame for the kernel, not only those
	// of the groups the kernel joined on the TAP (which the port's filter follows:
	// docs/design.md, "The TAP follows its port"). It needs tap.
	AllMulti bool `mapstructure:"allmulti"`
}

// checkKernel checks every port's kernel path: a valid interface name, on one port only,
// and not an interface a sim port's wire uses.
func (c *Config) checkKernel(errs *fieldErrors) {
	taps := map[string]int{}
	wires := map[string]int{}
	for i, p := range c.Ports {
		if k := p.Wire.Kind; k == wire.KindTAP || k == wire.KindAFPacket {
			wires[p.Wire.Name] = i
		}
	}
	for i, p := range c.Ports {
		name := p.Kernel.TAP
		if name == "" {
			if p.Kernel.AllMulti {
				errs.add(fmt.Sprintf("ports[%d].kernel.allmulti", i), true, "needs kernel.tap (the multicast groups are the TAP's)")
			}
			continue
		}
		path := fmt.Sprintf("ports[%d].kernel.tap", i)
		if err := ifname.Check(name); err != nil {
			errs.add(path, name, "interface name %v", err)
		} else if j, dup := taps[name]; dup {
			errs.add(path, name, "TAP already the kernel path of ports[%d]", j)
		} else if j, used := wires[name]; used {
			errs.add(path, name, "interface is ports[%d].wire's", j)
		} else {
			taps[name] = i
		}
	}
}

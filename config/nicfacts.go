package config

import (
	"fmt"

	"github.com/uiod/uiod/internal/clip"
	"github.com/uiod/uiod/nic"
)

// What a port may ask of its NIC comes from the NIC driver registry (nic.Named and each
// driver's nic.Facts), not from the drivers' packages: config imports nic alone, and the
// program registers the drivers it has (cmd/uiod imports nic/drivers). A port whose NIC
// is known before it opens — nic: names a driver, or a sim port, which models its nic
// (the 82599 by default) — is checked against that driver's own limits; one whose NIC is
// not (nic: auto on hardware, a vhost-user port) against the widest any registered driver
// takes, and the driver refuses at open what its device cannot do. CheckDevices checks a
// nic: auto port again once its function is identified under the host root.

// facts returns the facts of the NIC driver port p is known to use, and whether it is
// known.
func (p *Port) facts() (nic.Facts, bool) {
	name := p.NIC
	switch {
	case p.Driver == DriverVhostUser:
		return nic.Facts{}, false
	case p.Driver == DriverSim && (name == "" || name == NICAuto):
		name = NICIxgbe // the model a sim port is without a nic:
	case name == "" || name == NICAuto:
		return nic.Facts{}, false
	}
	d, ok := nic.Named(name)
	return d.Facts, ok
}

// limits are the queue and ring limits port p is checked against.
func (p *Port) limits() nic.Limits {
	if f, ok := p.facts(); ok {
		return f.Limits
	}
	return widest().Limits
}

// widest returns, of every registered driver, the most queues, the largest ring and the
// largest descriptor: what a port whose NIC is not yet known may ask for.
func widest() nic.Facts {
	var w nic.Facts
	for _, name := range nic.Drivers() {
		d, _ := nic.Named(name)
		w.Limits.Queues = max(w.Limits.Queues, d.Facts.Limits.Queues)
		w.Limits.Ring = max(w.Limits.Ring, d.Facts.Limits.Ring)
		w.DescSize = max(w.DescSize, d.Facts.DescSize)
		w.Limits.MaxMTU = max(w.Limits.MaxMTU, d.Facts.Limits.MaxMTUOrDefault())
	}
	return w
}

// PortMTU is the port's MTU: mtu, or nic.DefaultMTU where it is 0 (left out).
func (p *Port) PortMTU() int {
	if p.MTU == 0 {
		return nic.DefaultMTU
	}
	return p.MTU
}

// checkMTU checks port i's mtu against what its NIC takes (the widest of the NIC
// drivers while the NIC is not known); vhost-user ports take up to MaxVhostMTU, af_xdp
// ports their interface's (checkAFXDP).
func checkMTU(errs *fieldErrors, i int, p *Port) {
	path := fmt.Sprintf("ports[%d].mtu", i)
	mtu := p.PortMTU()
	switch p.Driver {
	case DriverVhostUser:
		if mtu < nic.MinMTU || mtu > MaxVhostMTU {
			errs.add(path, p.MTU, "must be in [%d, %d], what a vhost-user port carries", nic.MinMTU, MaxVhostMTU)
		}
		return
	case DriverAFXDP:
		return // its interface's: checkAFXDP
	}
	l := p.limits()
	if mtu < nic.MinMTU || mtu > l.MaxMTUOrDefault() {
		of := ", what every NIC driver takes"
		if f, ok := p.facts(); ok && f.Chip != "" {
			of = fmt.Sprintf(", the %s's range", f.Chip)
		}
		errs.add(path, p.MTU, "must be in [%d, %d]%s", nic.MinMTU, l.MaxMTUOrDefault(), of)
	}
}

// nicNames are the values nic: takes: auto and every registered driver.
func nicNames() []string { return append([]string{NICAuto}, nic.Drivers()...) }

// checkLimits checks port i's queues and rings against its limits: one message names
// the NIC whose limit it is, when the NIC is known.
func checkLimits(errs *fieldErrors, i int, p *Port) {
	path := func(key string) string { return fmt.Sprintf("ports[%d].%s", i, key) }
	l := p.limits()
	of := ""
	if f, ok := p.facts(); ok && f.Chip != "" {
		of = fmt.Sprintf(", the %s's range", f.Chip)
	}
	for _, q := range []struct {
		key string
		v   int
	}{{"rx_queues", p.RxQueues}, {"tx_queues", p.TxQueues}} {
		switch {
		case l.Queues == 1 && q.v > 1 && of != "":
			f, _ := p.facts()
			errs.add(path(q.key), q.v, "%s ports take one queue pair", f.Chip)
		case q.v < 1 || q.v > l.Queues:
			errs.add(path(q.key), q.v, "must be in [1, %d]%s", l.Queues, of)
		}
	}
	for _, r := range []struct {
		key string
		v   int
	}{{"rx_ring", p.RxRing}, {"tx_ring", p.TxRing}} {
		if r.v < MinRing || r.v > l.Ring || r.v&(r.v-1) != 0 {
			errs.add(path(r.key), r.v, "must be a power of two in [%d, %d]%s", MinRing, l.Ring, of)
		}
	}
	checkMTU(errs, i, p)
}

// sized reports whether the port's queue and ring sizes are within its limits (else
// they have been reported).
func (p *Port) sized() bool {
	l := p.limits()
	ok := func(v, lo, hi int) bool { return v >= lo && v <= hi }
	return ok(p.RxQueues, 1, l.Queues) && ok(p.TxQueues, 1, l.Queues) && ok(p.RxRing, MinRing, l.Ring) && ok(p.TxRing, MinRing, l.Ring)
}

// descSize is the bytes of one descriptor of the port's NIC, for its DMA memory (the
// largest any driver has while the NIC is not known).
func (p *Port) descSize() uint64 {
	if f, ok := p.facts(); ok && f.DescSize > 0 {
		return uint64(f.DescSize)
	}
	return uint64(widest().DescSize)
}

// checkITR refuses an itr the port's NIC cannot program (the driver would clamp it).
// With nic: auto on hardware the NIC is known only at open, so the narrowest range of
// any registered NIC applies, and the message names the NIC that takes the most.
func checkITR(errs *fieldErrors, path string, p *Port) {
	if f, ok := p.facts(); ok {
		if f.MaxITR > 0 && p.ITR > f.MaxITR {
			errs.add(path, p.ITR, "beyond the %s's interrupt throttle range, [0, %v] in %v steps", f.Chip, f.MaxITR, f.ITRUnit)
		}
		return
	}
	var narrow, broad nic.Facts
	for _, name := range nic.Drivers() {
		d, _ := nic.Named(name)
		f := d.Facts
		if f.MaxITR == 0 {
			continue
		}
		if narrow.MaxITR == 0 || f.MaxITR < narrow.MaxITR {
			narrow = f
		}
		if f.MaxITR > broad.MaxITR {
			broad = f
		}
	}
	if narrow.MaxITR > 0 && p.ITR > narrow.MaxITR {
		errs.add(path, p.ITR, "beyond the interrupt throttle range of the %s, [0, %v] in %v steps (set nic: %s for the %s's [0, %v])",
			narrow.Chip, narrow.MaxITR, narrow.ITRUnit, driverOf(broad), broad.Chip, broad.MaxITR)
	}
}

// driverOf is the registered name of the driver with facts f.
func driverOf(f nic.Facts) string {
	for _, name := range nic.Drivers() {
		if d, _ := nic.Named(name); d.Facts.Chip == f.Chip {
			return name
		}
	}
	return NICAuto
}

// checkFacts refuses what the port's NIC cannot do by its facts: INTx on a function
// without an interrupt pin, promiscuous mode where the function cannot receive other
// addresses' frames, more TX than RX queues where queues come in pairs, interrupt
// moderation where the device has none.
func checkFacts(errs *fieldErrors, i int, p *Port) {
	f, ok := p.facts()
	if !ok {
		return
	}
	path := func(key string) string { return fmt.Sprintf("ports[%d].%s", i, key) }
	if f.NoINTx {
		if p.Interrupts == InterruptsINTx {
			errs.add(path("interrupts"), p.Interrupts, "%s ports have no INTx", f.Chip)
		}
		if p.Driver == DriverUIO {
			errs.add(path("driver"), p.Driver, "%s ports have no INTx, the only interrupt uio_pci_generic delivers: use vfio-pci", f.Chip)
		}
	}
	if f.NoPromiscuous && p.Promiscuous {
		errs.add(path("promiscuous"), p.Promiscuous, "%s ports receive only their own address, broadcast and multicast: their PF filters the rest", f.Chip)
	}
	l := f.Limits
	if f.PairedQueues && p.RxQueues >= 1 && p.RxQueues <= l.Queues && p.TxQueues > p.RxQueues && p.TxQueues <= l.Queues {
		errs.add(path("tx_queues"), p.TxQueues, "more than rx_queues (%d): port %s is %s, whose queues come in pairs, and the device receives on every pair in use",
			p.RxQueues, p.Name, f.Chip)
	}
	if f.MaxITR == 0 && p.ITR != 0 {
		errs.add(path("itr"), p.ITR, "port %s is %s, which has no interrupt moderation: leave itr out (or 0)", clip.String(p.Name), f.Chip)
	} else if nonNegative(errs, path("itr"), p.ITR) {
		checkITR(errs, path("itr"), p)
	}
}

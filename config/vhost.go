package config

import "fmt"

// Values of a vhost-user port's keys.
const (
	// DriverVhostUser is a vhost-user back end served on a unix socket (nic/vhost): the
	// port of a DPDK virtio-user application or a QEMU guest's virtio-net.
	DriverVhostUser = "vhost-user"

	VhostServer = "server" // uiod listens on socket
	VhostClient = "client" // uiod connects to socket, and again when the front end restarts
)

// HasPCI reports whether the port is a PCI function (vfio-pci or uio_pci_generic): sim
// ports are models, vhost-user ports sockets and af_xdp ports kernel interfaces, which bind, quiesce and the locks skip.
func (p *Port) HasPCI() bool {
	return p.Driver != DriverSim && p.Driver != DriverVhostUser && p.Driver != DriverAFXDP
}

// VhostMode is mode with its default, server.
func (p *Port) VhostMode() string {
	if p.Mode == "" {
		return VhostServer
	}
	return p.Mode
}

// MaxVhostQueues is the most queue pairs a vhost-user port offers (nic/vhost's
// MaxQueuePairs): rx_queues, which tx_queues must equal.
const MaxVhostQueues = 16

// MaxVhostMTU is the largest mtu of a vhost-user port (nic/vhost's MaxMTU); a frame
// longer than the front end's receive buffers needs its mergeable RX buffers.
const MaxVhostMTU = 9710

// checkVhost checks port i's vhost-user keys: a socket, a mode, rx_queues queue pairs
// (tx_queues the same; the front end chooses its ring sizes and how many pairs it
// enables) and nothing of a PCI port (interrupts may only keep its default). socket and
// mode belong to vhost-user ports only.
func checkVhost(errs *fieldErrors, i int, p *Port, socks map[string]int) {
	path := func(key string) string { return fmt.Sprintf("ports[%d].%s", i, key) }
	if p.Driver != DriverVhostUser {
		if p.Socket != "" {
			errs.add(path("socket"), p.Socket, "only vhost-user ports have a socket")
		}
		if p.Mode != "" {
			errs.add(path("mode"), p.Mode, "only vhost-user ports have a mode")
		}
		return
	}
	switch {
	case p.Socket == "":
		errs.add(path("socket"), nil, "required for vhost-user ports (the unix socket's path)")
	case len(p.Socket) > 107:
		errs.add(path("socket"), p.Socket, "longer than a unix socket path can be (107 bytes)")
	default:
		if j, dup := socks[p.Socket]; dup {
			errs.add(path("socket"), p.Socket, "same socket as ports[%d].socket", j)
		}
		socks[p.Socket] = i
	}
	if p.Mode != "" {
		oneOf(errs, path("mode"), p.Mode, VhostServer, VhostClient)
	}
	if p.PCI != "" {
		errs.add(path("pci"), p.PCI, "a vhost-user port is a socket, not a PCI function")
	}
	if p.NIC != "" && p.NIC != NICAuto {
		errs.add(path("nic"), p.NIC, "a vhost-user port has no NIC driver: leave nic out")
	}
	switch {
	case p.RxQueues > MaxVhostQueues && p.RxQueues <= p.limits().Queues: // else checkLimits says it
		errs.add(path("rx_queues"), p.RxQueues, "a vhost-user port offers 1 to %d queue pairs", MaxVhostQueues)
	case p.TxQueues != p.RxQueues:
		errs.add(path("tx_queues"), p.TxQueues, "a vhost-user port has queue pairs: tx_queues must equal rx_queues (%d)", p.RxQueues)
	}
	if p.ITR != 0 {
		errs.add(path("itr"), p.ITR, "a vhost-user port has no interrupt moderation: leave itr out")
	}
	if p.Interrupts == InterruptsINTx {
		errs.add(path("interrupts"), p.Interrupts, "a vhost-user port's interrupt is the front end's kick, an eventfd: leave interrupts out")
	}
}

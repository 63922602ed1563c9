package daemon

import (
	"fmt"

	"go.uber.org/zap"

	"github.com/uiod/uiod/config"
	"github.com/uiod/uiod/nic/vhost"
)

// openVhost opens a vhost-user port: its socket served (or dialled) from now on, its
// link down until a front end has started its rings. It offers rx_queues queue pairs
// (config checks tx_queues is the same); each RX queue's receive pool holds as many
// buffers as a PCI port's would (2×rx_ring + tx_ring), each sized for the port's mtu.
func (b *backends) openVhost(p config.Port) (*port, error) {
	mode := vhost.Server
	if p.VhostMode() == config.VhostClient {
		mode = vhost.Client
	}
	np, err := vhost.Open(vhost.Config{
		Socket:   p.Socket,
		Mode:     mode,
		Queues:   p.RxQueues,
		MTU:      p.PortMTU(),
		PoolSize: 2*p.RxRing + p.TxRing,
		Log:      b.log.Named("vhost." + p.Name),
	})
	if err != nil {
		return nil, fmt.Errorf("port %s: %w", p.Name, err)
	}
	b.log.Info("vhost-user", zap.String("port", p.Name), zap.String("socket", p.Socket), zap.String("mode", mode.String()),
		zap.Int("queue_pairs", p.RxQueues), zap.Int("mtu", p.PortMTU()))
	return &port{cfg: p, nic: np, nicName: config.DriverVhostUser}, nil
}

// pciName is the port's PCI address for /status, or "" for a port that is no PCI function.
func (p *port) pciName() string {
	if !p.cfg.HasPCI() && p.cfg.PCI == "" {
		return ""
	}
	return p.addr.String()
}

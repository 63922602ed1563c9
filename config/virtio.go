package config

import (
	"fmt"

	"github.com/uiod/uiod/internal/clip"
)

// checkVirtio applies what the virtio-net driver (nic/virtio) cannot honour to port i:
// virtio-net has no interrupt moderation, so any itr is refused rather than ignored, and
// its queues come in pairs with the device receiving on every pair in use, so a port
// cannot have more TX than RX queues. Packet buffers are the driver's default 2048 bytes,
// which hold a 1518-byte frame: the driver negotiates no mergeable receive buffers, and
// the configuration has no key to change the buffer size.
func checkVirtio(errs *fieldErrors, i int, p *Port) {
	path := func(key string) string { return fmt.Sprintf("ports[%d].%s", i, key) }
	if p.ITR != 0 {
		errs.add(path("itr"), p.ITR, "port %s is virtio-net, which has no interrupt moderation: leave itr out (or 0)", clip.String(p.Name))
	}
	if p.RxQueues >= 1 && p.RxQueues <= MaxQueues && p.TxQueues > p.RxQueues && p.TxQueues <= MaxQueues {
		errs.add(path("tx_queues"), p.TxQueues, "more than rx_queues (%d): port %s is virtio-net, whose queues come in pairs, and the device receives on every pair in use",
			p.RxQueues, p.Name)
	}
}

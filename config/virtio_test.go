package config

import (
	"testing"
)

// TestVirtioPorts checks the virtio-specific rules: nic: virtio is accepted on every
// backend, and an itr or more TX than RX queues on a virtio port is exactly one error
// on the right key, naming the port.
func TestVirtioPorts(t *testing.T) {
	good := []struct {
		name, text string
	}{
		{"sim pair", port0("nic", "virtio") + "  - {name: c, driver: sim, wire: \"pair:c\"}\n  - {name: d, driver: sim, wire: \"pair:d\", nic: virtio}\n"},
		{"vfio msix", "ports:\n  - {name: a, driver: vfio-pci, pci: \"01:00.0\", nic: virtio, interrupts: msix}\nforward: {mode: reflect}"},
		{"uio intx", "ports:\n  - {name: a, driver: uio_pci_generic, pci: \"01:00.0\", nic: virtio}\nforward: {mode: reflect}"},
		{"itr 0", port0("nic", "virtio", "itr", "0")},
		{"queue pairs", port0("nic", "virtio", "rx_queues", "4", "tx_queues", "4") + "forward: {mode: reflect}"},
		{"fewer tx than rx queues", "ports:\n  - {name: a, driver: sim, wire: \"pair:a\", nic: virtio, rx_queues: 2, rx_ring: 4096}\n" +
			"  - {name: b, driver: sim, wire: \"pair:b\", tx_queues: 2}\n"},
		{"itr on another port", port0("nic", "virtio") + "  - {name: c, driver: sim, wire: \"pair:c\", itr: 100us}\n  - {name: d, driver: sim, wire: \"pair:d\"}\n"},
	}
	for _, tt := range good {
		t.Run(tt.name, func(t *testing.T) {
			c := mustRead(t, tt.text)
			if c.Ports[0].NIC != NICVirtio {
				t.Errorf("ports[0].nic = %q", c.Ports[0].NIC)
			}
		})
	}
	wantOneErrors(t, []oneError{
		{"itr", port0("nic", "virtio", "itr", "50us"), "ports[0].itr", "= 50µs: port a is virtio-net (virtio), which has no interrupt moderation"},
		{"itr within the 82599 range on hardware", "ports:\n  - {name: up, driver: vfio-pci, pci: \"01:00.0\", nic: virtio, itr: 8us}\nforward: {mode: reflect}",
			"ports[0].itr", "port up is virtio-net"},
		{"itr beyond every EITR", "ports:\n  - {name: up, driver: vfio-pci, pci: \"01:00.0\", nic: virtio, itr: 1s}\nforward: {mode: reflect}",
			"ports[0].itr", "no interrupt moderation"},
		{"itr negative", port0("nic", "virtio", "itr", "-1us"), "ports[0].itr", "no interrupt moderation"},
		{"more tx than rx queues", port0("nic", "virtio", "tx_queues", "2"), "ports[0].tx_queues", "= 2: more than rx_queues (1): port a is virtio-net"},
		{"second port", simPorts + "  - {name: c, driver: sim, wire: \"pair:c\", nic: virtio, itr: 1ms}\n  - {name: d, driver: sim, wire: \"pair:d\"}\n",
			"ports[2].itr", "port c is virtio-net"},
	})
}

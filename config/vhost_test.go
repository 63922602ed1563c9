package config

import "testing"

// TestVhostPorts checks vhost-user ports: a socket and a mode, and anything of a PCI port
// refused, each as exactly one error on the right key.
func TestVhostPorts(t *testing.T) {
	const sim = "ports:\n  - {name: a, driver: sim, wire: \"pair:a\"}\n"
	const sim4 = "ports:\n  - {name: a, driver: sim, wire: \"pair:a\", rx_queues: 4, tx_queues: 4}\n"
	const vm = "  - {name: vm, driver: vhost-user, socket: /run/vm.sock"
	good := []struct {
		name, text, mode string
	}{
		{"server by default", sim + vm + "}\n", VhostServer},
		{"client", sim + vm + ", mode: client}\n", VhostClient},
		{"server", sim + vm + ", mode: server, nic: auto}\n", VhostServer},
		{"queue pairs", sim4 + vm + ", rx_queues: 4, tx_queues: 4}\n", VhostServer},
		{"jumbo", sim + vm + ", mtu: 9000}\n", VhostServer},
		{"largest mtu", sim + vm + ", mtu: 9710}\n", VhostServer},
	}
	for _, tt := range good {
		t.Run(tt.name, func(t *testing.T) {
			c := mustRead(t, tt.text)
			p := c.Ports[1]
			if p.VhostMode() != tt.mode || p.HasPCI() || p.PCI != "" || p.Socket != "/run/vm.sock" {
				t.Errorf("port %+v: mode %s, HasPCI %v", p, p.VhostMode(), p.HasPCI())
			}
		})
	}
	wantOneErrors(t, []oneError{
		{"no socket", sim + "  - {name: vm, driver: vhost-user}\n", "ports[1].socket", "required for vhost-user ports"},
		{"bad mode", sim + vm + ", mode: both}\n", "ports[1].mode", "both"},
		{"pci", sim + vm + ", pci: \"01:00.0\"}\n", "ports[1].pci", "not a PCI function"},
		{"nic", sim + vm + ", nic: virtio}\n", "ports[1].nic", "no NIC driver"},
		{"pairs differ", sim + vm + ", rx_queues: 1, tx_queues: 2}\n", "ports[1].tx_queues", "must equal rx_queues (1)"},
		{"mtu too large", sim + vm + ", mtu: 9711}\n", "ports[1].mtu", "must be in [68, 9710], what a vhost-user port carries"},
		{"mtu too small", sim + vm + ", mtu: 67}\n", "ports[1].mtu", "must be in [68, 9710]"},
		{"itr", sim + vm + ", itr: 10us}\n", "ports[1].itr", "no interrupt moderation"},
		{"interrupts", sim + vm + ", interrupts: intx}\n", "ports[1].interrupts", "the front end's kick"},
		{"wire", sim + vm + ", wire: \"pair:x\"}\n", "ports[1].wire", "only sim ports have a wire"},
		{"socket on a sim port", port0("socket", "/run/x.sock"), "ports[0].socket", "only vhost-user ports"},
		{"mode on a sim port", port0("mode", "server"), "ports[0].mode", "only vhost-user ports"},
		{"same socket", "ports:\n" + vm + "}\n" + "  - {name: vm2, driver: vhost-user, socket: /run/vm.sock}\n", "ports[1].socket", "same socket as ports[0].socket"},
	})
}

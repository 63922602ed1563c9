package config

import (
	"strings"
	"testing"
)

// TestAFXDPPorts checks af_xdp ports: an interface that exists, the xdp keys, and
// anything of a PCI port refused, each as exactly one error on the right key.
func TestAFXDPPorts(t *testing.T) {
	old := netdevExists
	netdevExists = func(name string) bool { return strings.HasPrefix(name, "eth") }
	t.Cleanup(func() { netdevExists = old })
	const sim = "ports:\n  - {name: a, driver: sim, wire: \"pair:a\"}\n"
	const xp = "  - {name: x, driver: af_xdp, interface: eth0"
	good := []struct {
		name, text string
		want       XDP
	}{
		{"defaults", sim + xp + "}\n", XDP{}},
		{"all keys", sim + xp + ", xdp: {queues: 2, queue_start: 1, partial: true, frame_size: 4096, mode: native, zerocopy: on, replace: true, busy_poll: true, busy_poll_usecs: 50, busy_poll_budget: 16}}\n",
			XDP{Queues: 2, QueueStart: 1, Partial: true, FrameSize: 4096, Mode: XDPModeNative, ZeroCopy: XDPZeroCopyOn, Replace: true, BusyPoll: true, BusyPollUsecs: 50, BusyPollBudget: 16}},
		{"queues all", sim + xp + ", xdp: {queues: all, mode: generic, zerocopy: off}}\n", XDP{Mode: XDPModeGeneric, ZeroCopy: XDPZeroCopyOff}},
	}
	for _, tt := range good {
		t.Run(tt.name, func(t *testing.T) {
			c, err := read(t, tt.text)
			if err != nil {
				t.Fatalf("unexpected error:\n%v", err)
			}
			p := c.Ports[1]
			if p.XDP != tt.want || p.HasPCI() || p.Interface != "eth0" {
				t.Errorf("port %+v, want xdp %+v", p, tt.want)
			}
		})
	}
	bad := []struct {
		name, text, path, msg string
	}{
		{"no interface", sim + "  - {name: x, driver: af_xdp}\n", "ports[1].interface", "required for af_xdp ports"},
		{"no such interface", sim + "  - {name: x, driver: af_xdp, interface: nosuch0}\n", "ports[1].interface", "no such network interface"},
		{"long interface", sim + "  - {name: x, driver: af_xdp, interface: eth0123456789012}\n", "ports[1].interface", "15 bytes"},
		{"same interface", "ports:\n" + xp + "}\n  - {name: y, driver: af_xdp, interface: eth0}\n", "ports[1].interface", "same interface as ports[0]"},
		{"queues", sim + xp + ", xdp: {queues: 0}}\n", "ports[1].xdp.queues", "want all or a count"},
		{"queues beyond", sim + xp + ", xdp: {queues: 60, queue_start: 10}}\n", "ports[1].xdp.queues", "at most 54"},
		{"queue_start", sim + xp + ", xdp: {queue_start: -1}}\n", "ports[1].xdp.queue_start", "must be in"},
		{"frame_size", sim + xp + ", xdp: {frame_size: 3000}}\n", "ports[1].xdp.frame_size", "2048 or 4096"},
		{"mode", sim + xp + ", xdp: {mode: offload}}\n", "ports[1].xdp.mode", "offload"},
		{"zerocopy", sim + xp + ", xdp: {zerocopy: maybe}}\n", "ports[1].xdp.zerocopy", "maybe"},
		{"zerocopy generic", sim + xp + ", xdp: {zerocopy: on, mode: generic}}\n", "ports[1].xdp.zerocopy", "needs native mode"},
		{"busy poll knobs", sim + xp + ", xdp: {busy_poll_usecs: 10}}\n", "ports[1].xdp.busy_poll", "need busy_poll: true"},
		{"busy poll budget", sim + xp + ", xdp: {busy_poll: true, busy_poll_budget: 70000}}\n", "ports[1].xdp.busy_poll_budget", "[0, 65535]"},
		{"pci", sim + xp + ", pci: \"01:00.0\"}\n", "ports[1].pci", "not a PCI function"},
		{"nic", sim + xp + ", nic: igb}\n", "ports[1].nic", "no NIC driver"},
		{"tx_queues", sim + xp + ", tx_queues: 2}\n", "ports[1].tx_queues", "set xdp.queues"},
		{"itr", sim + xp + ", itr: 10us}\n", "ports[1].itr", "ethtool -C"},
		{"interrupts", sim + xp + ", interrupts: intx}\n", "ports[1].interrupts", "its socket"},
		{"interface on a sim port", port0("interface", "eth0"), "ports[0].interface", "only af_xdp ports"},
		{"xdp on a sim port", port0("xdp", "{mode: native}"), "ports[0].xdp", "only af_xdp ports"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := read(t, tt.text)
			wantOneError(t, err, tt.path, tt.msg)
		})
	}
}

// FuzzParseXDPQueues: the parser never panics, and what it accepts prints back to the
// same value.
func FuzzParseXDPQueues(f *testing.F) {
	for _, s := range []string{"all", "", "1", "64", "65", "-1", "0x10", "２"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := ParseXDPQueues(s)
		if err != nil {
			return
		}
		if q < 0 || q > maxXDPQueues {
			t.Fatalf("%q: %d", s, q)
		}
		if r, err := ParseXDPQueues(q.String()); err != nil || r != q {
			t.Fatalf("%q → %v → %v, %v", s, q, r, err)
		}
	})
}

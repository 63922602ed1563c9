package config

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/nic/afxdp"
)

// TestAFXDPPorts checks af_xdp ports: an interface that exists, the xdp keys, and
// anything of a PCI port refused, each as exactly one error on the right key.
func TestAFXDPPorts(t *testing.T) {
	fakeNetdevs(t, 1500)
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
		{"napi", sim + xp + ", xdp: {napi: {defer_hard_irqs: 2, gro_flush_timeout: 200us, irq_suspend_timeout: 20ms}}}\n",
			XDP{Napi: XDPNapi{DeferHardIRQs: 2, GROFlushTimeout: 200 * time.Microsecond, IRQSuspendTimeout: 20 * time.Millisecond}}},
		{"pass", sim + xp + ", xdp: {pass: {ethertypes: [0x0806, \"0x88CC\", 2048, 0xffff, 0x0600]}}}\n",
			XDP{Pass: XDPPass{Ethertypes: []Ethertype{0x0806, 0x88cc, 0x0800, 0xffff, 0x0600}}}},
	}
	for _, tt := range good {
		t.Run(tt.name, func(t *testing.T) {
			c := mustRead(t, tt.text)
			p := c.Ports[1]
			if !reflect.DeepEqual(p.XDP, tt.want) || p.HasPCI() || p.Interface != "eth0" {
				t.Errorf("port %+v, want xdp %+v", p, tt.want)
			}
		})
	}
	wantOneErrors(t, []oneError{
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
		{"pass below 0x0600", sim + xp + ", xdp: {pass: {ethertypes: [0x0806, 0x05ff]}}}\n", "ports[1].xdp.pass.ethertypes[1]", "0x0600 to 0xffff"},
		{"pass a length", sim + xp + ", xdp: {pass: {ethertypes: [1500]}}}\n", "ports[1].xdp.pass.ethertypes[0]", "0x0600 to 0xffff"},
		{"pass too big", sim + xp + ", xdp: {pass: {ethertypes: [0x10000]}}}\n", "ports[1].xdp.pass.ethertypes[0]", "0x0600 to 0xffff"},
		{"pass a name", sim + xp + ", xdp: {pass: {ethertypes: [arp]}}}\n", "ports[1].xdp.pass.ethertypes[0]", "hex (0x0806) or decimal"},
		{"pass twice", sim + xp + ", xdp: {pass: {ethertypes: [0x0806, 2054]}}}\n", "ports[1].xdp.pass.ethertypes[1]", "listed twice"},
		{"pass too many", sim + xp + ", xdp: {pass: {ethertypes: [" + strings.Repeat("0x0800, ", 16) + "0x0801]}}}\n", "ports[1].xdp.pass.ethertypes", "at most 16"},
		{"pass not a list", sim + xp + ", xdp: {pass: {ethertypes: 0x0806}}}\n", "ports[1].xdp.pass.ethertypes", ""},
		{"pass unknown key", sim + xp + ", xdp: {pass: {macs: [own]}}}\n", "ports[1].xdp.pass.macs", ""},
		{"napi defer", sim + xp + ", xdp: {napi: {defer_hard_irqs: -1}}}\n", "ports[1].xdp.napi.defer_hard_irqs", "must be in"},
		{"napi defer huge", sim + xp + ", xdp: {napi: {defer_hard_irqs: 4294967296}}}\n", "ports[1].xdp.napi.defer_hard_irqs", ""},
		{"napi gro", sim + xp + ", xdp: {napi: {gro_flush_timeout: -1ms}}}\n", "ports[1].xdp.napi.gro_flush_timeout", "negative"},
		{"napi suspend unit", sim + xp + ", xdp: {napi: {irq_suspend_timeout: 20}}}\n", "ports[1].xdp.napi.irq_suspend_timeout", ""},
		{"napi unknown", sim + xp + ", xdp: {napi: {threaded: true}}}\n", "ports[1].xdp.napi.threaded", ""},
		{"pci", sim + xp + ", pci: \"01:00.0\"}\n", "ports[1].pci", "not a PCI function"},
		{"nic", sim + xp + ", nic: igb}\n", "ports[1].nic", "no NIC driver"},
		{"tx_queues", sim + xp + ", tx_queues: 2}\n", "ports[1].tx_queues", "set xdp.queues"},
		{"itr", sim + xp + ", itr: 10us}\n", "ports[1].itr", "ethtool -C"},
		{"interrupts", sim + xp + ", interrupts: intx}\n", "ports[1].interrupts", "its socket"},
		{"interface on a sim port", port0("interface", "eth0"), "ports[0].interface", "only af_xdp ports"},
		{"xdp on a sim port", port0("xdp", "{mode: native}"), "ports[0].xdp", "only af_xdp ports"},
		{"pass on a sim port", port0("xdp", "{pass: {ethertypes: [0x0806]}}"), "ports[0].xdp", "only af_xdp ports"},
	})
}

// fakeNetdevs makes the interfaces eth* exist, each with MTU mtu, and no others.
func fakeNetdevs(t *testing.T, mtu int) {
	oldExists, oldMTU := netdevExists, netdevMTU
	netdevExists = func(name string) bool { return strings.HasPrefix(name, "eth") }
	netdevMTU = func(name string) (int, bool) { return mtu, strings.HasPrefix(name, "eth") }
	t.Cleanup(func() { netdevExists, netdevMTU = oldExists, oldMTU })
}

// TestAFXDPMTU: an af_xdp port's MTU is its interface's. Left out (or null) it is taken
// from the interface; given, it must be the interface's, refused naming both; at most
// 9710 (multi-buffer AF_XDP above what one chunk holds); and with zerocopy on within one
// UMEM chunk (frame_size less 256 of headroom, less 18 for the Ethernet header and a VLAN
// tag), refused naming the limit and the interface. Where the interface is not here, a
// given mtu is checked against the largest alone.
func TestAFXDPMTU(t *testing.T) {
	const sim = "ports:\n  - {name: a, driver: sim, wire: \"pair:a\"}\n"
	xp := func(keys string) string { return sim + "  - {name: x, driver: af_xdp, interface: eth0" + keys + "}\n" }
	for _, tt := range []struct {
		name  string
		ifMTU int
		text  string
		want  int
		path  string // "" for no error
		msg   []string
	}{
		{"left out at 1500", 1500, xp(""), 1500, "", nil},
		{"left out at 3000", 3000, xp(", xdp: {frame_size: 4096}"), 3000, "", nil},
		{"null at 3000", 3000, xp(", mtu: null, xdp: {frame_size: 4096}"), 3000, "", nil},
		{"given at 3000", 3000, xp(", mtu: 3000, xdp: {frame_size: 4096}"), 3000, "", nil},
		{"largest at 4096", 3822, xp(", xdp: {frame_size: 4096}"), 3822, "", nil},
		{"largest at 2048", 1774, xp(""), 1774, "", nil},
		{"9000 at 4096 (multi-buffer)", 9000, xp(", xdp: {frame_size: 4096}"), 9000, "", nil},
		{"9000 at 2048 (multi-buffer)", 9000, xp(""), 9000, "", nil},
		{"largest", 9710, xp(", mtu: 9710"), 9710, "", nil},
		{"given, not the interface's", 3000, xp(", mtu: 1500, xdp: {frame_size: 4096}"), 0, "ports[1].mtu",
			[]string{"interface eth0 has MTU 3000", "ip link set eth0 mtu 1500", "leave mtu out"}},
		{"given in capitals, not the interface's", 3000, xp(", MTU: 1500, xdp: {frame_size: 4096}"), 0, "ports[1].mtu",
			[]string{"interface eth0 has MTU 3000"}},
		{"9000 given, interface at 1500", 1500, xp(", mtu: 9000, xdp: {frame_size: 4096}"), 0, "ports[1].mtu",
			[]string{"interface eth0 has MTU 1500"}},
		{"interface at 9711", 9711, xp(""), 0, "ports[1].interface", []string{"MTU 9711", "up to 9710"}},
		{"interface at 9000, zerocopy on", 9000, xp(", xdp: {frame_size: 4096, zerocopy: on}"), 0, "ports[1].interface",
			[]string{"MTU 9000", "9018 bytes", "frame_size 4096", "MTU 3822 at most", "copy mode", "leave zerocopy out"}},
		{"interface at 3000, frame_size 2048, zerocopy on", 3000, xp(", xdp: {zerocopy: on}"), 0, "ports[1].interface",
			[]string{"MTU 3000", "frame_size 2048", "MTU 1774 at most"}},
		{"zerocopy on at the chunk's limit", 3822, xp(", xdp: {frame_size: 4096, zerocopy: on}"), 3822, "", nil},
		{"mtu below 68", 1500, xp(", mtu: 67"), 0, "ports[1].mtu", []string{"at least 68"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fakeNetdevs(t, tt.ifMTU)
			c, err := read(t, tt.text)
			if tt.path != "" {
				wantOneError(t, err, tt.path, tt.msg[0])
				for _, m := range tt.msg[1:] {
					if !strings.Contains(err.Error(), m) {
						t.Errorf("%v: does not say %q", err, m)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error:\n%v", err)
			}
			if got := c.Ports[1].PortMTU(); got != tt.want {
				t.Errorf("port's MTU %d, want %d", got, tt.want)
			}
		})
	}
	// The interface not here: a given mtu beyond the largest is refused on mtu.
	t.Run("no interface here", func(t *testing.T) {
		fakeNetdevs(t, 1500)
		_, err := read(t, sim+"  - {name: x, driver: af_xdp, interface: nosuch0, mtu: 9800}\n")
		if err == nil || !strings.Contains(err.Error(), "ports[1].mtu") || !strings.Contains(err.Error(), "up to 9710") {
			t.Fatalf("got %v, want ports[1].mtu refused with the limit", err)
		}
	})
}

// TestMaxXDPMTU: config's limits are nic/afxdp's.
func TestMaxXDPMTU(t *testing.T) {
	if maxXDPMultiBufferMTU != afxdp.MaxMultiBufferMTU {
		t.Errorf("maxXDPMultiBufferMTU %d, nic/afxdp's MaxMultiBufferMTU %d", maxXDPMultiBufferMTU, afxdp.MaxMultiBufferMTU)
	}
	for _, fs := range []int{2048, 4096} {
		if got, want := maxXDPMTU(fs), afxdp.MaxMTU(fs); got != want {
			t.Errorf("maxXDPMTU(%d) = %d, nic/afxdp's MaxMTU %d", fs, got, want)
		}
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

// FuzzParseEthertype: the parser never panics, accepts only 0x0600 to 0xffff, and what it
// accepts prints back to the same value.
func FuzzParseEthertype(f *testing.F) {
	for _, s := range []string{"0x0806", "0X88cc", "2054", "1535", "1536", "65535", "65536", "0x", "-1", "0x-1", "+2054", "0806", "arp"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseEthertype(s)
		if err != nil {
			return
		}
		if e < MinEthertype {
			t.Fatalf("%q: %v", s, e)
		}
		if r, err := ParseEthertype(e.String()); err != nil || r != e {
			t.Fatalf("%q → %v → %v, %v", s, e, r, err)
		}
	})
}

package vhost_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/testrig/qemutest"
)

// bridgeGuestScript is the script of guest n (1 or 2) of TestIntegrationQEMUBridge, at
// boot boot (1, or 2 for guest 1 restarted). Guest n is 10.23.0.1n with MAC
// 52:54:00:23:00:0n (QEMU gives every guest's first NIC the same MAC), in VLAN 10; the
// namespace is 10.23.0.1 (VLAN 10) and 10.23.0.3 (VLAN 20, which must stay unreachable).
// Every wait is a bounded loop.
func bridgeGuestScript(n, boot int) string {
	peer := 3 - n
	s := fmt.Sprintf(`for d in /sys/class/net/*; do x=${d##*/}; [ "$x" = lo ] || IF=$x; done
ip link set "$IF" address 52:54:00:23:00:0%[1]d
ip link set "$IF" up
ip addr add 10.23.0.1%[1]d/24 dev "$IF"
# reach retries a one-shot ping for up to $2 seconds: the other side may still be booting.
reach() { i=0; while [ $i -lt $2 ]; do ping -c 1 -W 1 $1 >/dev/null 2>&1 && return 0; i=$((i+1)); done; return 1; }
reach 10.23.0.1 60; echo "ns ping $?"
reach 10.23.0.1%[2]d 90; echo "peer ping $?"
ping -c 3 -W 5 10.23.0.1%[2]d >/dev/null 2>&1; echo "peer ping3 $?"
ping -c 2 -W 2 10.23.0.3 >/dev/null 2>&1; echo "vlan20 ping $?"
`, n, peer)
	switch {
	case boot == 2:
		s += `echo "restarted done"
`
	case n == 1:
		s += `echo "ready to send"
read -r line <$UIOD_GUEST_CONTROL
dd if=/dev/urandom of=/tmp/f bs=1024 count=1024 2>/dev/null
echo "sent sha $(sha256sum /tmp/f | cut -d' ' -f1)"
nc 10.23.0.12 5001 </tmp/f; echo "nc exit $?"
echo "waiting to be killed"
read -r line <$UIOD_GUEST_CONTROL
`
	default:
		s += `(sleep 120 | nc -l -p 5001 >/tmp/r) &
echo "listening"
i=0; while [ $i -lt 120 ] && [ "$(stat -c %s /tmp/r 2>/dev/null)" != 1048576 ]; do sleep 1; i=$((i+1)); done
echo "recv sha $(sha256sum /tmp/r | cut -d' ' -f1)"
# Traffic that must keep flowing while guest 1 is killed and restarted.
ping -i 0.2 -W 2 10.23.0.1 >/tmp/ping 2>&1 &
echo "pinging"
read -r line <$UIOD_GUEST_CONTROL
kill %2 2>/dev/null; sleep 1
echo "replies $(grep -c 'bytes from' /tmp/ping)"
tail -n 3 /tmp/ping
`
	}
	return s
}

// TestIntegrationQEMUBridge boots two QEMU guests whose virtio-net are vhost-user ports of
// one uiod bridge (forward.mode: bridge) with two uplinks, model NICs on TAP interfaces
// moved into network namespaces: access ports of VLAN 10 (10.23.0.1) and of VLAN 20
// (10.23.0.3, in the guests' subnet). The guests, both in VLAN 10, ping the namespace and
// each other and not VLAN 20's;
// guest 1 sends guest 2 1 MiB over TCP (busybox nc), checksummed on both sides; then
// guest 1's QEMU is killed and started again while guest 2 pings the namespace: guest 2's
// replies keep coming, and guest 1, booted again on the same socket, pings both again.
func TestIntegrationQEMUBridge(t *testing.T) {
	h := newQEMUHost(t, "uiodvb", "boots three QEMU guests; not in -short")
	ns := testutil.TAPNetns(t, "vhbr")
	ns20 := testutil.Netns(t, "vhbr20")
	socks := []string{filepath.Join(h.dir, "vm1.sock"), filepath.Join(h.dir, "vm2.sock")}
	tap := fmt.Sprintf("vhbr%d", os.Getpid()%100000)
	tap20 := tap + "v"
	d := startDaemon(t, h.config(t, fmt.Sprintf(`
ports:
  - {name: up, driver: sim, wire: "tap:%s", promiscuous: true}
  - {name: vm1, driver: vhost-user, socket: %s}
  - {name: vm2, driver: vhost-user, socket: %s}
  - {name: up20, driver: sim, wire: "tap:%s", promiscuous: true}
forward: {mode: bridge}
bridge:
  ports:
    - {port: up, pvid: 10}
    - {port: vm1, pvid: 10}
    - {port: vm2, pvid: 10}
    - {port: up20, pvid: 20}
poll: {mode: adaptive}
`, tap, socks[0], socks[1], tap20)))
	defer d.Stop()
	// The model NICs hold the TAPs open; the interfaces move into their namespaces: VLAN
	// 10's (the up port's) with 10.23.0.1, VLAN 20's (up20's) with 10.23.0.3. The host's
	// kernel needs no 802.1Q: the bridge's access ports tag and untag.
	for _, x := range []struct{ ns, tap, addr string }{{ns, tap, "10.23.0.1/24"}, {ns20, tap20, "10.23.0.3/24"}} {
		testutil.IP(t, "link", "set", x.tap, "netns", x.ns)
		for _, c := range [][]string{{"link", "set", "lo", "up"}, {"addr", "add", x.addr, "dev", x.tap}, {"link", "set", x.tap, "up"}} {
			testutil.IPIn(t, x.ns, c...)
		}
	}
	boot := func(n, b int) *qemutest.VM {
		return qemutest.Start(t, qemutest.Options{Kernel: h.kernel, NICs: 1, VhostUser: socks[n-1], Timeout: 4 * time.Minute,
			Script: bridgeGuestScript(n, b)})
	}
	start := time.Now()
	g1, g2 := boot(1, 1), boot(2, 1)
	wait := func(vm *qemutest.VM, name, s string, dl time.Duration) string {
		t.Helper()
		out, err := vm.WaitOutput(s, dl)
		if err != nil {
			st := d.Status()
			t.Fatalf("%s: %v:\n%s\nuiod ports %+v\nqueues %+v", name, err, out, st.Ports, st.Queues)
		}
		return out
	}
	checkReach := func(name, out string) {
		t.Helper()
		for _, want := range []string{"ns ping 0", "peer ping 0", "peer ping3 0"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: no %q:\n%s", name, want, out)
			}
		}
		if strings.Contains(out, "vlan20 ping 0") {
			t.Errorf("%s reached 10.23.0.3 in VLAN 20 from VLAN 10:\n%s", name, out)
		}
	}
	out1 := wait(g1, "guest 1", "ready to send", 3*time.Minute)
	out2 := wait(g2, "guest 2", "listening", 3*time.Minute)
	booted := time.Since(start)
	checkReach("guest 1", out1)
	checkReach("guest 2", out2)
	if err := g1.Send("send"); err != nil {
		t.Fatal(err)
	}
	out1 = wait(g1, "guest 1", "waiting to be killed", 2*time.Minute)
	out2 = wait(g2, "guest 2", "pinging", 2*time.Minute)
	shaRe := regexp.MustCompile(`(sent|recv) sha ([0-9a-f]{64})`)
	sent, recv := shaRe.FindStringSubmatch(out1), shaRe.FindStringSubmatch(out2)
	switch {
	case sent == nil || recv == nil:
		t.Fatalf("no checksums: guest 1:\n%s\nguest 2:\n%s", out1, out2)
	case sent[2] != recv[2]:
		t.Fatalf("1 MiB sent with sha256 %s, received with %s", sent[2], recv[2])
	case !strings.Contains(out1, "nc exit 0"):
		t.Fatalf("guest 1's nc failed:\n%s", out1)
	}
	transferred := time.Since(start)
	// Guest 1's QEMU is killed; guest 2 goes on pinging the namespace meanwhile.
	g1.Kill()
	killed := time.Now()
	if !testutil.WaitFor(30*time.Second, func() bool { return !d.Status().Ports[1].LinkUp }) {
		t.Fatal("vm1's link still up after its QEMU was killed")
	}
	vm2Rx := d.Status().Ports[2].Stats.RxPackets
	g1 = boot(1, 2)
	out1 = wait(g1, "guest 1 restarted", "restarted done", 3*time.Minute)
	restarted := time.Since(killed)
	checkReach("guest 1 restarted", out1)
	// Guest 2's pings went on through the bridge while guest 1 was away and booting.
	if got := d.Status().Ports[2].Stats.RxPackets; got <= vm2Rx {
		t.Errorf("vm2 sent nothing while guest 1 restarted (rx_packets %d, then %d)", vm2Rx, got)
	}
	if err := g2.Send("stop"); err != nil {
		t.Fatal(err)
	}
	r2, err := g2.Wait()
	if err != nil {
		t.Fatal(err)
	}
	r1, err := g1.Wait()
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`replies (\d+)`).FindStringSubmatch(r2.Output)
	if m == nil || m[1] == "0" {
		t.Errorf("guest 2's pings during guest 1's restart got no replies:\n%s", r2.Output)
	}
	st := d.Status()
	t.Logf("boot of both %v, through the transfer %v, guest 1 killed and back in %v; guest 2 ping: %s",
		booted.Round(time.Millisecond), transferred.Round(time.Millisecond), restarted.Round(time.Millisecond), tailLines(r2.Output, 4))
	t.Logf("guest 1 (second boot):\n%s\nports %+v\nqueues %+v", r1.Output, st.Ports, st.Queues)
	noPortErrors(t, st.Ports[1:]...)
}

// tailLines is the last n lines of s, on one line.
func tailLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(l[max(len(l)-n, 0):], " | ")
}

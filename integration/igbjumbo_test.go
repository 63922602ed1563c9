package integration

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uiod/uiod/internal/testutil"
	"github.com/uiod/uiod/internal/tuntap"
	"github.com/uiod/uiod/testrig/qemutest"
	"github.com/uiod/uiod/wire"
)

// TestIntegrationIgbJumbo proves jumbo frames on QEMU's igb under vfio-pci: a guest
// (Debian's kernel, emulated Intel IOMMU) with two igb NICs runs testdata/igbjumbo.sh,
// where one `uiod run` opens both under vfio-pci (MSI-X) with `mtu: 9000` and forwards
// between them (l2fwd, promiscuous). The host puts each NIC's wire in a network namespace
// of the test's at MTU 9000: NIC 1's host TAP (QEMU's tap netdev) in one, 10.235.0.1/24,
// and for NIC 2 a TAP of the test's in the other, 10.235.0.2/24, which the test relays
// frame by frame to and from NIC 2's datagram socket (the relay counts the frames it
// carries by size). Through the guest: `ping -M do -s 8972` (9014-byte frames, DF set, no
// fragmentation anywhere) must get every answer, and 10 MiB of random bytes sent over TCP
// from one namespace to the other must arrive with the same SHA-256, carried in
// frames longer than 1514 bytes. The daemon's ports must count no RX or TX error (the
// namespaces send no frame shorter than 60 bytes, which QEMU's igb counts as a runt: see
// jumboNamespaces).
func TestIntegrationIgbJumbo(t *testing.T) { jumboThroughGuest(t, "igb") }

// TestIntegrationVirtioJumboTCP is TestIntegrationIgbJumbo on two virtio-net-pci NICs
// offering VIRTIO_NET_F_MTU at 9000 (host_mtu), the ports at mtu 9000 through the virtio
// driver.
func TestIntegrationVirtioJumboTCP(t *testing.T) { jumboThroughGuest(t, "virtio") }

// jumboThroughGuest is the jumbo-frame run on two NICs of QEMU's model (igb or virtio).
func jumboThroughGuest(t *testing.T, model string) {
	if _, err := exec.LookPath("ping"); err != nil {
		t.Skip("needs ping (iputils-ping)")
	}
	o := qemutest.Options{
		IOMMU: true, NICModel: model, NICs: 2, TAPQueues: 1, HugePages: e2eHugePages, Timeout: 10 * time.Minute,
		Script: "export UIOD_JUMBO_NIC=" + model + "\n" + testdataScript(t, "igbjumbo.sh"),
	}
	if model == "virtio" {
		o.VirtioMTU = 9000
	}
	vm := startGuest(t, qemutest.DebianKernel, o)
	if _, err := vm.WaitOutput("E2E READY", 5*time.Minute); err != nil {
		t.Error(err)
	} else if relay, err := jumboNamespaces(t, vm); err != nil {
		t.Error(err)
	} else {
		defer relay.close()
		out, err := exec.Command("ip", "netns", "exec", relay.nsA, "ping", "-c", "5", "-i", "0.5", "-W", "20",
			"-M", "do", "-s", "8972", "10.235.0.2").CombinedOutput()
		t.Logf("ping -M do -s 8972 through uiod at MTU 9000:\n%s", out)
		if err != nil || !strings.Contains(string(out), " 0% packet loss") {
			t.Errorf("ping -M do -s 8972 10.235.0.2: %v", err)
		}
		if n := relay.n9014.Load(); n < 10 {
			t.Errorf("the relay carried %d frames of 9014 bytes, want at least the 5 requests and 5 replies", n)
		}
		big0 := relay.big()
		if err := tcpAcross(t, relay.nsA, relay.nsB, "10.235.0.1", "10.235.0.2", 10<<20); err != nil {
			t.Error(err)
		}
		t.Logf("relay: %d frames out of NIC 2, %d into it; %d of 9014 bytes, %d longer than 1514 during the transfer",
			relay.fromGuest.Load(), relay.toGuest.Load(), relay.n9014.Load(), relay.big()-big0)
		if relay.big()-big0 < 1000 {
			t.Errorf("the TCP transfer went in %d frames longer than 1514 bytes, want 10 MiB of them (> 1000)", relay.big()-big0)
		}
		if err := takeSnapshot(vm, "after"); err != nil {
			t.Error(err)
		}
	}
	_, rep := doneE2E(t, vm)
	rep.checkRunExit(t)
	var st struct {
		Ports []struct {
			Name  string `json:"name"`
			Stats struct {
				RxPackets uint64 `json:"rx_packets"`
				TxPackets uint64 `json:"tx_packets"`
				RxErrors  uint64 `json:"rx_errors"`
				TxErrors  uint64 `json:"tx_errors"`
				RxMissed  uint64 `json:"rx_missed"`
			} `json:"stats"`
		} `json:"ports"`
	}
	if s := rep.snap("after"); s.status == nil {
		t.Error("no /status after the transfer")
	} else if err := json.Unmarshal(s.status, &st); err != nil || len(st.Ports) != 2 {
		t.Errorf("/status after the transfer: %v:\n%s", err, s.status)
	} else {
		for _, p := range st.Ports {
			t.Logf("port %s: %+v", p.Name, p.Stats)
			if p.Stats.RxErrors != 0 || p.Stats.TxErrors != 0 {
				t.Errorf("port %s counted errors: %+v", p.Name, p.Stats)
			}
		}
	}
}

// jumboNamespaces puts the wires of vm's two NICs at MTU 9000 in two namespaces of the
// test's: NIC 1's host TAP in one (10.235.0.1/24), a TAP relayed to NIC 2's datagram
// socket in the other (10.235.0.2/24).
func jumboNamespaces(t *testing.T, vm *qemutest.VM) (*tapRelay, error) {
	const mtu = "9000"
	nsA, nsB := testutil.Netns(t, "uiod-jumboa"), testutil.Netns(t, "uiod-jumbob")
	tapA := vm.NICs[0].TAP
	if out, err := exec.Command("ip", "link", "set", tapA, "netns", nsA).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("ip link set %s netns %s: %v: %s", tapA, nsA, err, out)
	}
	testutil.IPIn(t, nsA, "link", "set", tapA, "mtu", mtu)
	testutil.IPIn(t, nsA, "addr", "add", "10.235.0.1/24", "dev", tapA)
	testutil.IPIn(t, nsA, "link", "set", tapA, "up")
	relay, err := startRelay(nsB, "uiodjumbo0", vm.NICs[1])
	if err != nil {
		return nil, err
	}
	testutil.IPIn(t, nsB, "link", "set", relay.tap, "mtu", mtu)
	testutil.IPIn(t, nsB, "addr", "add", "10.235.0.2/24", "dev", relay.tap)
	testutil.IPIn(t, nsB, "link", "set", relay.tap, "up")
	// No frame shorter than 60 bytes: QEMU's igb pads one and counts it a runt (RUC, an
	// RX error of the port's), and a host TAP sends ARP's 42 bytes unpadded. So no ARP
	// (static neighbours) and no IPv6 (router and neighbour solicitations).
	for _, ns := range []string{nsA, nsB} {
		testutil.Sysctl(t, ns, "net.ipv6.conf.all.disable_ipv6", "1")
		testutil.Sysctl(t, ns, "net.ipv6.conf.default.disable_ipv6", "1")
	}
	macA, err := macIn(nsA, tapA)
	if err != nil {
		relay.close()
		return nil, err
	}
	macB, err := macIn(nsB, relay.tap)
	if err != nil {
		relay.close()
		return nil, err
	}
	testutil.IPIn(t, nsA, "neigh", "replace", "10.235.0.2", "lladdr", macB, "dev", tapA, "nud", "permanent")
	testutil.IPIn(t, nsB, "neigh", "replace", "10.235.0.1", "lladdr", macA, "dev", relay.tap, "nud", "permanent")
	relay.nsA, relay.nsB = nsA, nsB
	return relay, nil
}

// macIn returns the MAC address of interface dev in namespace ns.
func macIn(ns, dev string) (string, error) {
	var mac string
	err := testutil.InNetns(ns, func() error {
		ifc, err := net.InterfaceByName(dev)
		if err == nil {
			mac = ifc.HardwareAddr.String()
		}
		return err
	})
	return mac, err
}

// tcpAcross sends n random bytes over TCP from addrA in namespace nsA to a listener on
// addrB in nsB (a port the kernel picks) and checks that the bytes arrive with the same
// SHA-256, within 5 minutes.
func tcpAcross(t *testing.T, nsA, nsB, addrA, addrB string, n int) error {
	var ln net.Listener
	if err := testutil.InNetns(nsB, func() (err error) {
		ln, err = net.Listen("tcp4", addrB+":0")
		return err
	}); err != nil {
		return fmt.Errorf("listen in %s: %w", nsB, err)
	}
	defer ln.Close()
	deadline := time.Now().Add(5 * time.Minute)
	type result struct {
		sum [32]byte
		n   int64
		err error
	}
	got := make(chan result, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- result{err: err}
			return
		}
		defer c.Close()
		c.SetDeadline(deadline)
		h := sha256.New()
		m, err := io.Copy(h, c)
		var r result
		copy(r.sum[:], h.Sum(nil))
		r.n, r.err = m, err
		got <- r
	}()
	data := make([]byte, n)
	rng := rand.NewChaCha8([32]byte{35})
	rng.Read(data)
	want := sha256.Sum256(data)
	var c net.Conn
	if err := testutil.InNetns(nsA, func() (err error) {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(addrA)}, Timeout: time.Minute}
		c, err = d.Dial("tcp4", ln.Addr().String())
		return err
	}); err != nil {
		return fmt.Errorf("connect from %s to %s: %w", nsA, ln.Addr(), err)
	}
	start := time.Now()
	c.SetDeadline(deadline)
	_, werr := c.Write(data)
	c.Close()
	if werr != nil {
		return fmt.Errorf("send %d bytes: %w", n, werr)
	}
	select {
	case r := <-got:
		t.Logf("TCP: %d bytes in %v, sha256 %x (sent %x)", r.n, time.Since(start).Round(time.Millisecond), r.sum[:8], want[:8])
		if r.err != nil {
			return fmt.Errorf("receive: %w after %d bytes", r.err, r.n)
		}
		if r.n != int64(n) || r.sum != want {
			return fmt.Errorf("received %d bytes with sha256 %x, sent %d with %x", r.n, r.sum, n, want)
		}
		return nil
	case <-time.After(time.Until(deadline) + 10*time.Second):
		return errors.New("the receiver did not finish")
	}
}

// tapRelay carries frames between a TAP interface of the test's and a guest NIC's
// datagram socket, counting them by size.
type tapRelay struct {
	tap               string
	nsA, nsB          string // the namespaces of the two sides
	file              *os.File
	port              *wire.UnixPort
	fromGuest         atomic.Uint64 // frames out of the guest NIC, written to the TAP
	toGuest           atomic.Uint64
	n9014, nBig       atomic.Uint64 // frames either way of 9014 bytes, and longer than 1514
	done              chan struct{}
	writeErr, readErr atomic.Value
}

// startRelay creates the TAP interface name in namespace ns and relays it to nic's
// datagram socket.
func startRelay(ns, name string, nic qemutest.NIC) (*tapRelay, error) {
	r := &tapRelay{done: make(chan struct{})}
	if err := testutil.InNetns(ns, func() (err error) {
		r.file, r.tap, err = tuntap.Open(name)
		return err
	}); err != nil {
		return nil, fmt.Errorf("TAP %s in %s: %w", name, ns, err)
	}
	p, err := wire.ListenUnix(nic.HostSocket, nic.GuestSocket)
	if err != nil {
		r.file.Close()
		return nil, err
	}
	r.port = p
	p.SetHandler(func(f []byte, _ int64) {
		r.fromGuest.Add(1)
		if len(f) == 9014 {
			r.n9014.Add(1)
		}
		if len(f) > 1514 {
			r.nBig.Add(1)
		}
		if _, err := r.file.Write(f); err != nil {
			r.writeErr.Store(err)
		}
	})
	go func() {
		defer close(r.done)
		buf := make([]byte, 65536)
		for {
			n, err := r.file.Read(buf)
			if err != nil {
				r.readErr.Store(err)
				return
			}
			r.toGuest.Add(1)
			if n > 1514 {
				r.nBig.Add(1)
			}
			if n == 9014 {
				r.n9014.Add(1)
			}
			if err := p.Send(buf[:n]); err != nil {
				r.writeErr.Store(err)
			}
		}
	}()
	return r, nil
}

// big returns the frames longer than 1514 bytes the relay carried either way.
func (r *tapRelay) big() uint64 { return r.nBig.Load() }

func (r *tapRelay) close() {
	r.port.Close()
	r.file.Close()
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
	}
}

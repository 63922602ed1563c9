package vhost_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uiod/uiod/config"
	"github.com/uiod/uiod/daemon"
	"github.com/uiod/uiod/testrig/qemutest"
	"github.com/uiod/uiod/wire"
)

// peer answers ARP and ICMP echo for one IPv4 address on a wire: the host at the far end
// of uiod's model NIC.
type peer struct {
	w       wire.Port
	mac     []byte
	ip      netip.Addr
	out     chan []byte
	done    chan struct{}
	once    sync.Once
	echoes  atomic.Int64
	arpReqs atomic.Int64
	maxEcho atomic.Int64 // the longest echo request's frame
}

func (p *peer) handler(f []byte, _ int64) {
	if len(f) < 42 {
		return
	}
	ip4 := p.ip.As4()
	switch binary.BigEndian.Uint16(f[12:]) {
	case 0x0806: // ARP request for ip
		if binary.BigEndian.Uint16(f[20:]) != 1 || !bytes.Equal(f[38:42], ip4[:]) {
			return
		}
		p.arpReqs.Add(1)
		r := make([]byte, 60)
		copy(r, f[6:12])
		copy(r[6:], p.mac)
		copy(r[12:], f[12:20])
		binary.BigEndian.PutUint16(r[20:], 2)
		copy(r[22:], p.mac)
		copy(r[28:], ip4[:])
		copy(r[32:], f[22:32]) // the asker's MAC and IP
		p.out <- r
	case 0x0800: // ICMP echo request to ip
		ihl := int(f[14]&0xf) * 4
		if f[23] != 1 || !bytes.Equal(f[30:34], ip4[:]) || len(f) < 14+ihl+8 || f[14+ihl] != 8 {
			return
		}
		p.echoes.Add(1)
		if n := int64(len(f)); n > p.maxEcho.Load() {
			p.maxEcho.Store(n) // one wire handler: no race between load and store
		}
		r := append([]byte(nil), f...)
		copy(r, f[6:12])
		copy(r[6:], p.mac)
		copy(r[26:], f[30:34])
		copy(r[30:], f[26:30])
		// Echo reply: type 8 → 0 lowers the checksummed word by 0x0800, so the checksum
		// rises by as much (one's complement, end-around carry); swapping the addresses
		// leaves the IP header's checksum as it was.
		r[14+ihl] = 0
		c := uint32(binary.BigEndian.Uint16(r[14+ihl+2:])) + 0x0800
		binary.BigEndian.PutUint16(r[14+ihl+2:], uint16(c&0xffff+c>>16))
		p.out <- r
	}
}

// TestIntegrationQEMU boots a QEMU guest whose virtio-net-pci is backed by -netdev
// vhost-user on uiod's socket (guest RAM a shared memfd): the guest kernel's own virtio_net
// pings, through uiod's l2fwd, a peer behind a model NIC on another uiod port. Then uiod is
// stopped and started again under the running guest: QEMU reconnects (reconnect-ms), sends
// its rings' state again, and the guest's pings resume.
func TestIntegrationQEMU(t *testing.T) {
	h := newQEMUHost(t, "uiodvq", "")
	wireName := fmt.Sprintf("vhqemu%d", os.Getpid())
	cfg := pairedConfig(t, h.dir, wireName, h.sock, config.VhostServer, "mode: adaptive")
	p := startPeer(t, wireName)
	d := startDaemon(t, cfg)
	defer func() { d.Stop() }()
	vm := qemutest.Start(t, qemutest.Options{
		Kernel:    h.kernel,
		NICs:      1,
		VhostUser: h.sock,
		Timeout:   4 * time.Minute,
		Script: guestIF + `echo "interface $IF driver $(basename $(readlink /sys/class/net/$IF/device/driver))"
` + guestUp + `ping -c 5 -W 10 10.22.0.1
echo "ping exit $?"
echo "waiting for uiod's restart"
read -r line <$UIOD_GUEST_CONTROL
ping -c 5 -W 10 10.22.0.1
echo "second ping exit $?"
echo "rx_packets $(cat /sys/class/net/$IF/statistics/rx_packets) tx_packets $(cat /sys/class/net/$IF/statistics/tx_packets)"`,
	})
	if out, err := vm.WaitOutput("waiting for uiod's restart", 3*time.Minute); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	first := d.Status()
	if err := d.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	echoes := p.echoes.Load()
	p.stop()
	p = startPeer(t, wireName) // the model port's new wire end pairs with a new far end
	d = startDaemon(t, cfg)
	if err := vm.Send("go"); err != nil {
		t.Fatal(err)
	}
	r, err := vm.Wait()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("first uiod: ports %+v", first.Ports)
	st := d.Status()
	t.Logf("guest (boot %v, script %v):\n%s\nuiod ports %+v\nqueues %+v\npeer: %d ARP requests, %d echo requests",
		r.Boot, r.Script, r.Output, st.Ports, st.Queues, p.arpReqs.Load(), p.echoes.Load())
	if !strings.Contains(r.Output, "\nping exit 0") {
		t.Fatalf("the guest's pings did not come back:\n%s\nconsole:\n%s", r.Output, r.Console)
	}
	if !strings.Contains(r.Output, "second ping exit 0") {
		t.Fatalf("the guest's pings did not come back after uiod restarted:\n%s\nconsole:\n%s", r.Output, r.Console)
	}
	if echoes < 5 || p.echoes.Load() < 5 {
		t.Errorf("peer saw %d echo requests through the first uiod, %d through the second; want 5 each", echoes, p.echoes.Load())
	}
	noPortErrors(t, st.Ports[1])
}

// qemuHost is the host side every vhost-user QEMU test starts from: a guest kernel with
// virtio_net built in and a scratch directory for the sockets and uiod's state.
type qemuHost struct {
	kernel    qemutest.Kernel
	dir, sock string // sock: dir/vm.sock, for a test with one guest
}

// newQEMUHost skips t without a guest kernel (and in -short, saying short, unless that is
// empty) and makes the scratch directory (named from prefix), removed once t is done.
func newQEMUHost(t *testing.T, prefix, short string) *qemuHost {
	t.Helper()
	k, err := qemutest.SharedKernel()
	if err != nil {
		t.Skip("no guest kernel with virtio_net built in: ", err)
	}
	if short != "" && testing.Short() {
		t.Skip(short)
	}
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return &qemuHost{kernel: k, dir: dir, sock: filepath.Join(dir, "vm.sock")}
}

// config reads the configuration yaml, with uiod's metrics on a free port and its state
// in the scratch directory.
func (h *qemuHost) config(t *testing.T, yaml string) *config.Config {
	t.Helper()
	cfg, err := config.Read(strings.NewReader(yaml))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Metrics.Listen, cfg.StateDir = "127.0.0.1:0", filepath.Join(h.dir, "state")
	return cfg
}

// startDaemon starts uiod on cfg; the caller stops it.
func startDaemon(t *testing.T, cfg *config.Config) *daemon.Daemon {
	t.Helper()
	d := daemon.New(cfg, daemon.Options{})
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	return d
}

// The guest scripts' first lines: guestIF finds the guest's one NIC as $IF, guestUp brings
// it up as 10.22.0.2/24, the peer's subnet.
const (
	guestIF = `for d in /sys/class/net/*; do n=${d##*/}; [ "$n" = lo ] || IF=$n; done
`
	guestUp = `ip link set "$IF" up
ip addr add 10.22.0.2/24 dev "$IF"
`
)

// noPortErrors fails t if any of ports counted an RX or TX error.
func noPortErrors(t *testing.T, ports ...daemon.PortStatus) {
	t.Helper()
	for _, p := range ports {
		if p.Stats.RxErrors != 0 || p.Stats.TxErrors != 0 {
			t.Errorf("vhost-user port %s errors: %+v", p.Name, p.Stats)
		}
	}
}

// startPeer opens the far end of the pair wire name and answers on it until stop (or the
// test's end).
func startPeer(t *testing.T, name string) *peer {
	w, err := wire.Open("pair:" + name)
	if err != nil {
		t.Fatal(err)
	}
	p := &peer{w: w, mac: []byte{2, 0, 0, 0x22, 0, 1}, ip: netip.MustParseAddr("10.22.0.1"),
		out: make(chan []byte, 64), done: make(chan struct{})}
	w.SetHandler(p.handler)
	go func() {
		for {
			select {
			case f := <-p.out:
				w.Send(f)
			case <-p.done:
				return
			}
		}
	}()
	t.Cleanup(p.stop)
	return p
}

func (p *peer) stop() {
	p.once.Do(func() {
		close(p.done)
		p.w.Close()
	})
}

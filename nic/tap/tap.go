// Package tap is the kernel exception path of a port: a Linux TAP interface as a
// nic.Port, so that the poll threads hand frames to the host's network stack (ARP, ICMP,
// SSH on a NIC the kernel no longer drives) and send what the stack transmits out of the
// NIC, as DPDK's KNI did, without polling anything.
//
// The port has one RX queue (what the kernel transmits on the interface) and any number
// of TX queues (towards the kernel), one per poll thread. A reader goroutine, blocked in
// the Go runtime's poller on the TAP descriptor, reads frames into buffers the RX queue's
// polling thread posted from the port's mempool (plain memory: a NIC that sends them
// copies them into its own DMA memory), and RxBurst takes the filled ones without a
// system call. While the queue's interrupt is enabled, the reader signals RxVector's
// eventfd when it fills a buffer, so a sleeping poll thread wakes for kernel traffic.
// TxBurst copies frames into a bounded ring per TX queue that a writer goroutine writes
// to the TAP; a full ring refuses the rest of the burst (counted), so a flood towards the
// kernel never stalls a poll thread.
package tap

import (
	"cmp"
	"errors"
	"fmt"
	"net"

	"go.uber.org/zap"

	"github.com/uiod/uiod/internal/ifname"
)

// Defaults Open fills in.
const (
	DefaultMTU  = 1500
	DefaultRing = 256
)

// MaxMTU is the largest MTU a TAP port takes: the largest of any NIC port's (the 82599's
// 9710), so that a port's kernel path carries every frame the port does.
const MaxMTU = 9710

// MaxName is the longest interface name the kernel takes (IFNAMSIZ less its NUL).
const MaxName = ifname.Max

// frameOverhead is what a frame carries beyond the MTU: the Ethernet header and one VLAN
// tag.
const frameOverhead = 14 + 4

// Config describes the TAP interface a port opens.
type Config struct {
	// Name is the interface's name (see CheckName). An existing TAP interface of that name
	// that no process holds (a persistent one, `ip tuntap add`) is attached to and given
	// back as it was by Close; any other existing interface of that name is refused.
	Name string
	// MAC is the interface's address (the NIC port's, so that the kernel answers for it).
	// Nil keeps the address the kernel gave the interface.
	MAC net.HardwareAddr
	// MTU is the interface's MTU (default DefaultMTU), 68..MaxMTU.
	MTU int
	// TxQueues is the number of TX queues, one per thread that sends to the kernel
	// (default 1).
	TxQueues int
	// RxRing and TxRing are the frames each queue holds, powers of two in 8..4096
	// (default DefaultRing).
	RxRing, TxRing int
	// Log receives the port's warnings (a read error that lasts); nil: none.
	Log *zap.Logger
}

// withDefaults returns c with its zero fields set.
func (c Config) withDefaults() Config {
	c.MTU = cmp.Or(c.MTU, DefaultMTU)
	c.TxQueues = cmp.Or(c.TxQueues, 1)
	c.RxRing = cmp.Or(c.RxRing, DefaultRing)
	c.TxRing = cmp.Or(c.TxRing, DefaultRing)
	return c
}

// validate checks c after withDefaults.
func (c Config) validate() error {
	ringOK := func(n int) bool { return n >= 8 && n <= 4096 && n&(n-1) == 0 }
	switch {
	case CheckName(c.Name) != nil:
		return refuse("tap %q: name %v", c.Name, CheckName(c.Name))
	case c.MAC != nil && (len(c.MAC) != 6 || c.MAC[0]&1 != 0):
		return fmt.Errorf("tap %s: mac %s: want a unicast Ethernet address", c.Name, c.MAC)
	case c.MTU < 68 || c.MTU > MaxMTU:
		return fmt.Errorf("tap %s: mtu %d: want 68..%d", c.Name, c.MTU, MaxMTU)
	case c.TxQueues < 1 || c.TxQueues > 256:
		return fmt.Errorf("tap %s: tx queues %d: want 1..256", c.Name, c.TxQueues)
	case !ringOK(c.RxRing):
		return fmt.Errorf("tap %s: rx ring %d: want a power of two in 8..4096", c.Name, c.RxRing)
	case !ringOK(c.TxRing):
		return fmt.Errorf("tap %s: tx ring %d: want a power of two in 8..4096", c.Name, c.TxRing)
	}
	return nil
}

// maxFrame is the longest frame the port carries either way.
func (c Config) maxFrame() int { return c.MTU + frameOverhead }

// CheckName accepts interface names the kernel takes and a shell passes unquoted (see
// ifname.Check).
func CheckName(name string) error { return ifname.Check(name) }

// ErrUnavailable is what the errors refusing an interface name match (errors.Is): an
// existing interface that is not a TAP, a TUN or multi-queue TAP, a TAP another process
// holds, or a name the kernel would not take.
var ErrUnavailable = errors.New("interface unavailable as a TAP")

// unavailable is an error refusing an interface: its own message, ErrUnavailable's class.
type unavailable struct{ msg string }

func (e *unavailable) Error() string        { return e.msg }
func (e *unavailable) Is(target error) bool { return target == ErrUnavailable }

// refuse returns an unavailable error with the formatted message.
func refuse(format string, args ...any) error {
	return &unavailable{fmt.Sprintf(format, args...)}
}

// Counters break down a port's losses beyond nic.Stats.
type Counters struct {
	// TxRingFull counts frames TxBurst refused because the queue's ring towards the
	// kernel was full (the caller frees them; they are in Stats().TxErrors too).
	TxRingFull uint64
	// TxBadLength counts frames shorter than an Ethernet header or longer than the MTU plus
	// the header and a VLAN tag, taken by TxBurst and freed (in TxErrors too).
	TxBadLength uint64
	// TxWriteErrors counts frames the kernel refused (the interface is down: EIO), in
	// TxErrors too.
	TxWriteErrors uint64
	// TxDown counts frames TxBurst took and freed while the interface was down
	// (Port.SetDown), in TxErrors too.
	TxDown uint64
	// RxNoBuffer counts frames the kernel sent while every posted buffer was filled and
	// not yet taken by RxBurst: read and dropped (Stats().RxMissed).
	RxNoBuffer uint64
}

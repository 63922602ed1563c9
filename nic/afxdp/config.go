package afxdp

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"go.uber.org/zap"

	"github.com/uiod/uiod/nic"
)

// Mode is how the XDP program is attached to the interface.
type Mode int

// Attach modes.
const (
	ModeAuto    Mode = iota // native, falling back to generic with a warning
	ModeNative              // in the driver (XDP_FLAGS_DRV_MODE); refused if the driver has no XDP
	ModeGeneric             // on the skb path (XDP_FLAGS_SKB_MODE); any netdev, slower
)

// modeNames are the modes' names, by value.
var modeNames = []string{ModeAuto: "auto", ModeNative: "native", ModeGeneric: "generic"}

// ParseMode parses auto, native or generic.
func ParseMode(s string) (Mode, error) {
	i, err := parseName("attach mode", s, modeNames)
	return Mode(i), err
}

// String names the mode.
func (m Mode) String() string { return nameOf(int(m), modeNames, "afxdp.Mode") }

// ZeroCopy says whether the sockets are bound in zero-copy mode.
type ZeroCopy int

// Zero-copy choices.
const (
	ZeroCopyAuto ZeroCopy = iota // try zero-copy, fall back to copy mode (logged, reported)
	ZeroCopyOn                   // zero-copy or an error
	ZeroCopyOff                  // copy mode
)

// zeroCopyNames are the zero-copy choices' names, by value.
var zeroCopyNames = []string{ZeroCopyAuto: "auto", ZeroCopyOn: "on", ZeroCopyOff: "off"}

// ParseZeroCopy parses auto, on or off.
func ParseZeroCopy(s string) (ZeroCopy, error) {
	i, err := parseName("zerocopy", s, zeroCopyNames)
	return ZeroCopy(i), err
}

// String names the choice.
func (z ZeroCopy) String() string { return nameOf(int(z), zeroCopyNames, "afxdp.ZeroCopy") }

// parseName is the index of s in names, the empty string naming the first; an error
// names what was parsed and the names wanted.
func parseName(what, s string, names []string) (int, error) {
	if s == "" {
		return 0, nil
	}
	if i := slices.Index(names, s); i >= 0 {
		return i, nil
	}
	last := len(names) - 1
	return 0, fmt.Errorf("%s %q: want %s or %s", what, s, strings.Join(names[:last], ", "), names[last])
}

// nameOf is names[v], or typ(v) for a value without a name.
func nameOf(v int, names []string, typ string) string {
	if v >= 0 && v < len(names) {
		return names[v]
	}
	return fmt.Sprintf("%s(%d)", typ, v)
}

// Limits and defaults.
const (
	DefaultRing      = 2048
	MinRing          = 64
	MaxRing          = 16384
	DefaultFrameSize = 2048
	// Headroom is where the kernel puts a frame in its UMEM chunk (XDP_PACKET_HEADROOM).
	Headroom = 256
	// MaxQueues bounds the sockets of one port (the XSKMAP's size).
	MaxQueues = 64
	// MaxPass bounds PassEthertypes (one compare each in the program).
	MaxPass = 16
	// MinEthertype is the smallest EtherType: below it the field is an 802.3 length.
	MinEthertype = 0x0600
)

// Config selects the interface, its queues and how the sockets are bound.
type Config struct {
	// Interface is the netdev, in the calling thread's network namespace.
	Interface string
	// QueueStart is the first netdev queue bound; Queues is how many (0: every RX queue
	// of the interface from QueueStart on, as ethtool's channels count them).
	QueueStart, Queues int
	// Partial allows fewer bound queues than the interface has RX queues: the frames RSS
	// steers to the others go to the kernel unseen by uiod. Without it that is refused.
	Partial bool
	// RxRing is the fill and RX ring size, TxRing the TX and completion ring size
	// (powers of two, MinRing to MaxRing; default DefaultRing).
	RxRing, TxRing int
	// FrameSize is the UMEM chunk, 2048 or 4096; frames up to FrameSize-Headroom bytes,
	// so interface MTUs up to MaxMTU(FrameSize).
	FrameSize int
	// MTU is the port's IP MTU, which is the interface's: the kernel owns it. 0 takes
	// the interface's as it is; any other value must be the interface's, or Open refuses
	// naming both (ErrMTU).
	MTU int
	// PoolSize is the RX buffers per queue (default 2×RxRing + TxRing); each queue also
	// has TxRing buffers for the frames it copies in from other ports.
	PoolSize int
	Mode     Mode
	ZeroCopy ZeroCopy
	// Promiscuous sets IFF_PROMISC on the interface while the port is open.
	Promiscuous bool
	// Replace detaches an XDP program already attached to the interface through netlink
	// (one a bpf_link holds cannot be replaced); without it such an interface is refused.
	Replace bool
	// BusyPoll sets SO_PREFER_BUSY_POLL, SO_BUSY_POLL (BusyPollUsecs) and
	// SO_BUSY_POLL_BUDGET (BusyPollBudget) on every socket; a kernel that refuses one is
	// logged, not an error.
	BusyPoll       bool
	BusyPollUsecs  int
	BusyPollBudget int
	// PassEthertypes are the EtherTypes (0x0600 and up, at most MaxPass) whose frames the
	// program hands to the kernel stack (XDP_PASS) instead of the sockets, such as 0x0806
	// to leave ARP to the interface's own address.
	PassEthertypes []uint16
	// Napi are per-NAPI knobs set on the NAPI instances of the bound queues through
	// netdev napi-set (Linux 6.13+) and put back at Close; a zero field is left as it is.
	// Where the kernel or device has no such knob it is logged, not an error.
	Napi NapiSettings
	Log  *zap.Logger
}

// withDefaults fills in the zero fields.
func (c Config) withDefaults() Config {
	c.RxRing = cmp.Or(c.RxRing, DefaultRing)
	c.TxRing = cmp.Or(c.TxRing, DefaultRing)
	c.FrameSize = cmp.Or(c.FrameSize, DefaultFrameSize)
	c.PoolSize = cmp.Or(c.PoolSize, 2*c.RxRing+c.TxRing)
	if c.BusyPoll {
		c.BusyPollUsecs = cmp.Or(c.BusyPollUsecs, 20)
		c.BusyPollBudget = cmp.Or(c.BusyPollBudget, 64)
	}
	if c.Log == nil {
		c.Log = zap.NewNop()
	}
	return c
}

// ErrConfig is wrapped by every error Validate returns.
var ErrConfig = errors.New("invalid af_xdp configuration")

// Validate checks what can be checked without the interface.
func (c Config) Validate() error {
	c = c.withDefaults()
	bad := func(format string, args ...any) error {
		return fmt.Errorf("af_xdp %s: %s: %w", c.Interface, fmt.Sprintf(format, args...), ErrConfig)
	}
	switch {
	case c.Interface == "" || len(c.Interface) >= 16:
		return bad("interface name must be 1 to 15 bytes")
	case c.QueueStart < 0 || c.QueueStart >= MaxQueues:
		return bad("queue_start %d outside [0, %d)", c.QueueStart, MaxQueues)
	case c.Queues < 0 || c.QueueStart+c.Queues > MaxQueues:
		return bad("queues %d: at most %d sockets from queue_start %d", c.Queues, MaxQueues-c.QueueStart, c.QueueStart)
	case c.FrameSize != 2048 && c.FrameSize != 4096:
		return bad("frame_size %d: want 2048 or 4096", c.FrameSize)
	case c.MTU < 0:
		return bad("mtu %d: want the interface's, or 0 to take it", c.MTU)
	case c.PoolSize < c.RxRing:
		return bad("pool size %d smaller than rx_ring %d", c.PoolSize, c.RxRing)
	case c.Mode == ModeGeneric && c.ZeroCopy == ZeroCopyOn:
		return bad("zerocopy on needs native mode (generic XDP copies every frame)")
	}
	switch {
	case c.Napi.DeferHardIRQs > math.MaxInt32:
		return bad("napi defer_hard_irqs %d: at most %d", c.Napi.DeferHardIRQs, math.MaxInt32)
	case c.Napi.GROFlushTimeout < 0 || c.Napi.IRQSuspendTimeout < 0:
		return bad("napi timeouts must not be negative")
	}
	if len(c.PassEthertypes) > MaxPass {
		return bad("pass: %d EtherTypes, at most %d", len(c.PassEthertypes), MaxPass)
	}
	for i, et := range c.PassEthertypes {
		if et < MinEthertype {
			return bad("pass: EtherType 0x%04x below 0x%04x (an 802.3 length, not a type)", et, MinEthertype)
		}
		if slices.Contains(c.PassEthertypes[:i], et) {
			return bad("pass: EtherType 0x%04x listed twice", et)
		}
	}
	for _, r := range []struct {
		name string
		n    int
	}{{"rx_ring", c.RxRing}, {"tx_ring", c.TxRing}} {
		if r.n < MinRing || r.n > MaxRing || r.n&(r.n-1) != 0 {
			return bad("%s %d: want a power of two from %d to %d", r.name, r.n, MinRing, MaxRing)
		}
	}
	return nil
}

// MaxFrame is the largest frame a chunk of frameSize bytes holds.
func MaxFrame(frameSize int) int { return frameSize - Headroom }

// MaxMTU is the largest interface MTU whose frames, an Ethernet header and one VLAN tag on
// top of the MTU (nic.MaxFrame), fit one chunk of frameSize bytes after the headroom
// (1774 for 2048, 3822 for 4096). Above it, up to MaxMultiBufferMTU, the port uses
// multi-buffer AF_XDP (XDP_USE_SG: a frame over several chunks, Linux 6.6 and later, in
// copy mode), which costs a copy of every frame longer than a chunk.
func MaxMTU(frameSize int) int { return MaxFrame(frameSize) - nic.EthHeader - nic.VLANTag }

// MaxMultiBufferMTU is the largest MTU an af_xdp port takes (with multi-buffer AF_XDP).
const MaxMultiBufferMTU = 9710

// Errors of Open, each wrapped with the interface and what is wrong.
var (
	ErrNoInterface = errors.New("no such interface")
	ErrDown        = errors.New("interface is down")
	ErrQueues      = errors.New("queues do not match the interface's")
	ErrMTU         = errors.New("MTU refused")
	ErrPrivilege   = errors.New("missing capabilities")
)

// ErrNoXSK is wrapped when the kernel has no AF_XDP sockets.
var ErrNoXSK = errors.New("kernel without AF_XDP sockets (CONFIG_XDP_SOCKETS)")

// ErrZeroCopyRefused is wrapped when zerocopy: on is asked and the driver refuses it.
var ErrZeroCopyRefused = errors.New("zero-copy refused by the driver")

// ErrBusy is wrapped by the error that refuses an interface that has an XDP program.
var ErrBusy = errors.New("interface already has an XDP program")

// IsUsage reports whether err is Open refusing the configuration or the host as they
// are (no such interface, down, queues, MTU, zero-copy refused, an XDP program there
// already, missing capabilities, no AF_XDP in the kernel): nothing was attached, and
// the fix is the user's, so uiod exits as for a configuration error.
func IsUsage(err error) bool {
	for _, e := range []error{ErrConfig, ErrNoInterface, ErrDown, ErrQueues, ErrMTU, ErrZeroCopyRefused, ErrBusy, ErrPrivilege, ErrNoXSK} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

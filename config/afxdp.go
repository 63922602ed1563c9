package config

import (
	"fmt"
	"math"
	"net"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/uiod/uiod/nic"
)

// Values of an af_xdp port's keys.
const (
	// DriverAFXDP is a kernel netdev driven through AF_XDP sockets (nic/afxdp): the
	// interface stays the kernel's, its queues' frames are redirected to uiod by an XDP
	// program.
	DriverAFXDP = "af_xdp"

	XDPModeAuto    = "auto"
	XDPModeNative  = "native"
	XDPModeGeneric = "generic"

	XDPZeroCopyAuto = "auto"
	XDPZeroCopyOn   = "on"
	XDPZeroCopyOff  = "off"
)

// XDP is an af_xdp port's xdp: keys (see docs/design.md, "AF_XDP ports").
type XDP struct {
	// Queues is how many netdev queues to bind from QueueStart on: all (the default) or
	// a count.
	Queues     XDPQueues `mapstructure:"queues"`
	QueueStart int       `mapstructure:"queue_start"`
	// Partial allows fewer bound queues than the interface has RX queues (their frames
	// go to the kernel unseen).
	Partial bool `mapstructure:"partial"`
	// FrameSize is the UMEM chunk, 2048 (default) or 4096.
	FrameSize int `mapstructure:"frame_size"`
	// Mode is the XDP attach mode: auto, native or generic.
	Mode string `mapstructure:"mode"`
	// ZeroCopy is auto (try, fall back to copy), on (or fail) or off.
	ZeroCopy string `mapstructure:"zerocopy"`
	// Replace puts uiod's program in place of one attached through netlink.
	Replace bool `mapstructure:"replace"`
	// BusyPoll sets SO_PREFER_BUSY_POLL, SO_BUSY_POLL (BusyPollUsecs, default 20) and
	// SO_BUSY_POLL_BUDGET (BusyPollBudget, default 64) on the sockets.
	BusyPoll       bool `mapstructure:"busy_poll"`
	BusyPollUsecs  int  `mapstructure:"busy_poll_usecs"`
	BusyPollBudget int  `mapstructure:"busy_poll_budget"`
	// Pass is what the XDP program hands to the kernel stack instead of the sockets.
	Pass XDPPass `mapstructure:"pass"`
	// Napi are the bound queues' NAPI knobs (netdev napi-set, Linux 6.13+).
	Napi XDPNapi `mapstructure:"napi"`
}

// XDPNapi is xdp.napi: per-NAPI knobs set on the NAPI instances of the bound queues while
// the port is open (put back at close); a key left out (or 0) is left as the kernel has
// it. A kernel or device without them is logged, not an error.
type XDPNapi struct {
	// DeferHardIRQs is the consecutive empty NAPI polls before the device's IRQ is
	// re-enabled.
	DeferHardIRQs int `mapstructure:"defer_hard_irqs"`
	// GROFlushTimeout is the NAPI watchdog timer that re-polls while IRQs are deferred.
	GROFlushTimeout time.Duration `mapstructure:"gro_flush_timeout"`
	// IRQSuspendTimeout is how long IRQs stay suspended while a preferred busy poller
	// finds work (IRQ suspension, 6.13).
	IRQSuspendTimeout time.Duration `mapstructure:"irq_suspend_timeout"`
}

// XDPPass is xdp.pass: the frames the interface's own kernel stack keeps (XDP_PASS).
type XDPPass struct {
	// Ethertypes are EtherTypes (outer, 0x0600 to 0xffff, hex or decimal) whose frames go
	// to the kernel, such as 0x0806 for ARP.
	Ethertypes []Ethertype `mapstructure:"ethertypes"`
}

// isZero reports whether x has no key set.
func (x *XDP) isZero() bool { return reflect.ValueOf(*x).IsZero() }

// Ethertype is an Ethernet EtherType: 0x0600 (below it the field is an 802.3 length) to
// 0xffff.
type Ethertype uint16

// Limits of xdp.pass.ethertypes.
const (
	MinEthertype = 0x0600
	// maxXDPPass is nic/afxdp's MaxPass (one compare each in the program).
	maxXDPPass = 16
)

// ParseEthertype parses an EtherType in hex (0x0806) or decimal (2054).
func ParseEthertype(s string) (Ethertype, error) {
	var (
		n   uint64
		err error
	)
	if h, ok := strings.CutPrefix(strings.ToLower(s), "0x"); ok {
		n, err = strconv.ParseUint(h, 16, 64)
	} else {
		n, err = strconv.ParseUint(s, 10, 64)
	}
	if err != nil || n < MinEthertype || n > 0xffff {
		return 0, fmt.Errorf("want an EtherType from 0x0600 to 0xffff, in hex (0x0806) or decimal")
	}
	return Ethertype(n), nil
}

// String is the EtherType in hex, 0x0806.
func (e Ethertype) String() string { return fmt.Sprintf("0x%04x", uint16(e)) }

// MarshalText implements encoding.TextMarshaler.
func (e Ethertype) MarshalText() ([]byte, error) { return []byte(e.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseEthertype's rules.
func (e *Ethertype) UnmarshalText(b []byte) error { return unmarshalText(e, b, ParseEthertype) }

// XDPQueues is xdp.queues: a count, or 0 for all.
type XDPQueues int

// ParseXDPQueues parses "all" or a count from 1 to 64.
func ParseXDPQueues(s string) (XDPQueues, error) {
	if s == "all" || s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > maxXDPQueues {
		return 0, fmt.Errorf("want all or a count from 1 to %d", maxXDPQueues)
	}
	return XDPQueues(n), nil
}

// maxXDPQueues is nic/afxdp's MaxQueues (its XSKMAP's size).
const maxXDPQueues = 64

// String is "all" or the count.
func (q XDPQueues) String() string {
	if q == 0 {
		return "all"
	}
	return strconv.Itoa(int(q))
}

// MarshalText implements encoding.TextMarshaler.
func (q XDPQueues) MarshalText() ([]byte, error) { return []byte(q.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseXDPQueues's rules.
func (q *XDPQueues) UnmarshalText(b []byte) error { return unmarshalText(q, b, ParseXDPQueues) }

// netdevExists says whether this host has a network interface of that name (in the
// validating process's namespace); tests replace it.
var netdevExists = func(name string) bool {
	_, err := net.InterfaceByName(name)
	return err == nil
}

// netdevMTU returns the MTU of this host's network interface of that name (in the
// validating process's namespace); tests replace it.
var netdevMTU = func(name string) (int, bool) {
	ifc, err := net.InterfaceByName(name)
	if err != nil {
		return 0, false
	}
	return ifc.MTU, true
}

// xdpHeadroom is nic/afxdp's Headroom: where the kernel puts a frame in its UMEM chunk.
const xdpHeadroom = 256

// maxXDPMTU is nic/afxdp's MaxMTU: the largest MTU whose frames (nic.MaxFrame) fit one
// chunk of frameSize bytes after the headroom; above it the port uses multi-buffer
// AF_XDP (XDP_USE_SG).
func maxXDPMTU(frameSize int) int {
	if frameSize == 0 {
		frameSize = 2048
	}
	return frameSize - xdpHeadroom - nic.EthHeader - nic.VLANTag
}

// resolveAFXDPMTU gives every af_xdp port whose mtu the document leaves out (or sets to
// null) its interface's MTU, where that interface is here: the kernel owns an af_xdp
// port's MTU. tree is the document's known keys (see schemaTree).
func (c *Config) resolveAFXDPMTU(tree map[string]any) {
	ports, _ := tree["ports"].([]any)
	for i := range c.Ports {
		p := &c.Ports[i]
		if p.Driver != DriverAFXDP || i < len(ports) && portSetsMTU(ports[i]) {
			continue
		}
		if mtu, ok := netdevMTU(p.Interface); ok && p.Interface != "" {
			p.MTU = mtu
		}
	}
}

// portSetsMTU reports whether a port entry of the document has a non-null mtu.
func portSetsMTU(entry any) bool {
	m, ok := entry.(map[string]any)
	return ok && m["mtu"] != nil
}

// maxXDPMultiBufferMTU is nic/afxdp's MaxMultiBufferMTU: the largest MTU an af_xdp port
// takes, with multi-buffer AF_XDP above maxXDPMTU.
const maxXDPMultiBufferMTU = 9710

// checkAFXDPMTU checks an af_xdp port's mtu: the interface's (ifMTU, when ifOK: the
// interface is here), at most maxXDPMultiBufferMTU, and one whose frames a UMEM chunk
// holds when zero-copy is required (frames over several chunks are received in copy mode).
func checkAFXDPMTU(errs *fieldErrors, i int, p *Port, ifMTU int, ifOK bool) {
	path := func(key string) string { return fmt.Sprintf("ports[%d].%s", i, key) }
	mtu, fs := p.PortMTU(), p.XDP.FrameSize
	if fs == 0 {
		fs = 2048
	}
	key, val := "mtu", any(p.MTU)
	if ifOK {
		key, val = "interface", p.Interface
	}
	switch {
	case mtu < nic.MinMTU:
		errs.add(path("mtu"), p.MTU, "must be at least %d", nic.MinMTU)
	case ifOK && mtu != ifMTU:
		errs.add(path("mtu"), p.MTU, "interface %s has MTU %d: an af_xdp port's MTU is its interface's, which the kernel owns (ip link set %s mtu %d, or leave mtu out)",
			p.Interface, ifMTU, p.Interface, mtu)
	case mtu > maxXDPMultiBufferMTU:
		errs.add(path(key), val, "MTU %d: an af_xdp port takes MTUs up to %d", mtu, maxXDPMultiBufferMTU)
	case mtu > maxXDPMTU(fs) && p.XDP.ZeroCopy == XDPZeroCopyOn:
		errs.add(path(key), val, "MTU %d: frames of up to %d bytes, more than xdp.frame_size %d holds (%d after %d bytes of headroom: MTU %d at most), and frames over several chunks (multi-buffer AF_XDP) are received in copy mode: leave zerocopy out or lower the MTU",
			mtu, nic.MaxFrame(mtu), fs, fs-xdpHeadroom, xdpHeadroom, maxXDPMTU(fs))
	}
}

// checkAFXDP checks port i's af_xdp keys: an interface that exists here, used by no
// other port, and nothing of a PCI port.
func checkAFXDP(errs *fieldErrors, i int, p *Port, ifaces map[string]int) {
	path := func(key string) string { return fmt.Sprintf("ports[%d].%s", i, key) }
	if p.Driver != DriverAFXDP {
		if p.Interface != "" {
			errs.add(path("interface"), p.Interface, "only af_xdp ports have an interface")
		}
		if !p.XDP.isZero() {
			errs.add(path("xdp"), nil, "only af_xdp ports have xdp keys")
		}
		return
	}
	var (
		ifMTU int
		ifOK  bool
	)
	switch {
	case p.Interface == "":
		errs.add(path("interface"), nil, "required for af_xdp ports (the netdev, such as eth0)")
	case len(p.Interface) > 15:
		errs.add(path("interface"), p.Interface, "longer than an interface name can be (15 bytes)")
	case !netdevExists(p.Interface):
		errs.add(path("interface"), p.Interface, "no such network interface here (ip link)")
	default:
		if j, dup := ifaces[p.Interface]; dup {
			errs.add(path("interface"), p.Interface, "same interface as ports[%d].interface", j)
		}
		ifaces[p.Interface] = i
		ifMTU, ifOK = netdevMTU(p.Interface)
	}
	checkAFXDPMTU(errs, i, p, ifMTU, ifOK)
	x := &p.XDP
	if x.QueueStart < 0 || x.QueueStart >= maxXDPQueues {
		errs.add(path("xdp.queue_start"), x.QueueStart, "must be in [0, %d)", maxXDPQueues)
	} else if int(x.Queues)+x.QueueStart > maxXDPQueues {
		errs.add(path("xdp.queues"), x.Queues.String(), "at most %d sockets from queue_start %d", maxXDPQueues-x.QueueStart, x.QueueStart)
	}
	if x.FrameSize != 0 && x.FrameSize != 2048 && x.FrameSize != 4096 {
		errs.add(path("xdp.frame_size"), x.FrameSize, "must be 2048 or 4096 (a UMEM chunk: frames up to it less 256 bytes)")
	}
	modeOK := x.Mode == "" || oneOf(errs, path("xdp.mode"), x.Mode, XDPModeAuto, XDPModeNative, XDPModeGeneric)
	if x.ZeroCopy != "" && oneOf(errs, path("xdp.zerocopy"), x.ZeroCopy, XDPZeroCopyAuto, XDPZeroCopyOn, XDPZeroCopyOff) &&
		modeOK && x.ZeroCopy == XDPZeroCopyOn && x.Mode == XDPModeGeneric {
		errs.add(path("xdp.zerocopy"), x.ZeroCopy, "zero-copy needs native mode: generic XDP copies every frame")
	}
	if x.BusyPollUsecs < 0 {
		errs.add(path("xdp.busy_poll_usecs"), x.BusyPollUsecs, "must not be negative")
	}
	if x.BusyPollBudget < 0 || x.BusyPollBudget > 65535 {
		errs.add(path("xdp.busy_poll_budget"), x.BusyPollBudget, "must be in [0, 65535]")
	}
	if (x.BusyPollUsecs != 0 || x.BusyPollBudget != 0) && !x.BusyPoll {
		errs.add(path("xdp.busy_poll"), x.BusyPoll, "busy_poll_usecs and busy_poll_budget need busy_poll: true")
	}
	if ets := x.Pass.Ethertypes; len(ets) > maxXDPPass {
		errs.add(path("xdp.pass.ethertypes"), nil, "%d EtherTypes: at most %d", len(ets), maxXDPPass)
	} else {
		for j, e := range ets {
			if k := slices.Index(ets[:j], e); k >= 0 {
				errs.add(fmt.Sprintf("%s[%d]", path("xdp.pass.ethertypes"), j), e.String(), "listed twice (also ethertypes[%d])", k)
			}
		}
	}
	if n := x.Napi.DeferHardIRQs; n < 0 || n > math.MaxInt32 {
		errs.add(path("xdp.napi.defer_hard_irqs"), n, "must be in [0, %d]", math.MaxInt32)
	}
	if d := x.Napi.GROFlushTimeout; d < 0 {
		errs.add(path("xdp.napi.gro_flush_timeout"), d.String(), "must not be negative")
	}
	if d := x.Napi.IRQSuspendTimeout; d < 0 {
		errs.add(path("xdp.napi.irq_suspend_timeout"), d.String(), "must not be negative")
	}
	if p.PCI != "" {
		errs.add(path("pci"), p.PCI, "an af_xdp port is a kernel interface, not a PCI function: name it in interface")
	}
	if p.NIC != "" && p.NIC != NICAuto {
		errs.add(path("nic"), p.NIC, "an af_xdp port has no NIC driver of uiod's (the kernel drives it): leave nic out")
	}
	if p.RxQueues != DefaultQueues {
		errs.add(path("rx_queues"), p.RxQueues, "an af_xdp port has one queue pair per socket: set xdp.queues")
	}
	if p.TxQueues != DefaultQueues {
		errs.add(path("tx_queues"), p.TxQueues, "an af_xdp port has one queue pair per socket: set xdp.queues")
	}
	if p.ITR != 0 {
		errs.add(path("itr"), p.ITR, "an af_xdp port's interrupt moderation is the kernel driver's (ethtool -C): leave itr out")
	}
	if p.Interrupts == InterruptsINTx {
		errs.add(path("interrupts"), p.Interrupts, "an af_xdp port's interrupt is its socket's readiness: leave interrupts out")
	}
}

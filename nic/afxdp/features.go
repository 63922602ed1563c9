package afxdp

import (
	"errors"
	"fmt"
	"time"
)

// XDPFeatures is netdev's xdp-features bit set (enum netdev_xdp_act): what the driver's
// XDP can do in native mode.
type XDPFeatures uint64

// xdp-features bits.
const (
	XDPBasic       XDPFeatures = 1 << iota // XDP_PASS, XDP_DROP, XDP_ABORTED, XDP_TX: native XDP
	XDPRedirect                            // XDP_REDIRECT: needed to reach an AF_XDP socket
	XDPNdoXmit                             // the device takes redirected frames
	XDPXSKZeroCopy                         // AF_XDP zero-copy
	XDPHWOffload                           // programs run on the NIC
	XDPRxSG                                // multi-buffer RX
	XDPNdoXmitSG                           // multi-buffer redirect target
)

var xdpFeatureNames = []string{"basic", "redirect", "ndo-xmit", "xsk-zerocopy", "hw-offload", "rx-sg", "ndo-xmit-sg"}

// Names lists the set bits by their netdev.yaml names; an unknown bit is bit-N.
func (f XDPFeatures) Names() []string {
	names := []string{}
	for i := 0; i < 64; i++ {
		if f&(1<<i) == 0 {
			continue
		}
		if i < len(xdpFeatureNames) {
			names = append(names, xdpFeatureNames[i])
		} else {
			names = append(names, fmt.Sprintf("bit-%d", i))
		}
	}
	return names
}

// Native reports whether a program attached in native mode can redirect to a socket.
func (f XDPFeatures) Native() bool { return f&(XDPBasic|XDPRedirect) == XDPBasic|XDPRedirect }

// ZeroCopy reports whether the driver binds AF_XDP sockets in zero-copy mode.
func (f XDPFeatures) ZeroCopy() bool { return f&XDPXSKZeroCopy != 0 }

// DevFeatures is one netdev's dev-get reply.
type DevFeatures struct {
	Ifindex      int
	XDP          XDPFeatures
	XDPZCMaxSegs uint32 // fragments a zero-copy driver takes (1 without multi-buffer)
	XSK          uint64 // xsk-features (enum netdev_xsk_flags), 0 where the kernel has none
}

// ErrNoNetdevFamily is wrapped when the kernel has no netdev generic netlink family
// (before 6.3): xdp-features and the NAPI knobs cannot be asked for.
var ErrNoNetdevFamily = errors.New("kernel without the netdev generic netlink family (Linux 6.3+)")

// InterfaceList is ListInterfaces' result: the interfaces, and FeaturesErr, why none has
// Features (ErrNoNetdevFamily on kernels before 6.3), or nil.
type InterfaceList struct {
	Interfaces  []Interface
	FeaturesErr error
}

// Interface is a kernel network interface and what AF_XDP can do on it, as `uiod
// devices --interfaces` shows it.
type Interface struct {
	Name  string
	Index int
	// Kind is rtnetlink's link kind (device, veth, bridge, tun, ...).
	Kind string
	// Driver is the kernel driver bound to the interface's device ("" for a virtual
	// interface), PCI the device's PCI address if it is one.
	Driver, PCI string
	MAC         string
	MTU         int
	// Up is administratively up, Running operationally up.
	Up, Running bool
	// RxQueues is what an af_xdp port binds by default (ethtool's rx + combined
	// channels, else the kernel's RX queue count).
	RxQueues int
	// Features is the netdev family's dev-get reply, nil when it could not be had (see
	// InterfaceList.FeaturesErr).
	Features *DevFeatures
	// Program describes an XDP program already attached ("" if none): an af_xdp port
	// refuses the interface unless xdp.replace.
	Program string
}

// knobs says which of s's knobs are set (non-zero).
func (s NapiSettings) knobs() NapiKnob {
	var k NapiKnob
	if s.DeferHardIRQs != 0 {
		k |= KnobDeferHardIRQs
	}
	if s.GROFlushTimeout != 0 {
		k |= KnobGROFlushTimeout
	}
	if s.IRQSuspendTimeout != 0 {
		k |= KnobIRQSuspendTimeout
	}
	return k
}

// Napi is one NAPI instance's settings as napi-get reports them.
type Napi struct {
	ID      uint32
	Ifindex int
	IRQ     int // -1 without one (veth)
	NapiSettings
}

// NapiSettings are the per-NAPI knobs of napi-set (Linux 6.13+): the consecutive empty
// polls before hard IRQs are re-enabled, the GRO flush / re-poll timer, and how long IRQs
// stay suspended while a busy poller finds work (the IRQ suspension of 6.13).
type NapiSettings struct {
	DeferHardIRQs     uint32
	GROFlushTimeout   time.Duration
	IRQSuspendTimeout time.Duration
}

// NapiKnob selects knobs of NapiSettings for SetNapi.
type NapiKnob uint8

// The knobs.
const (
	KnobDeferHardIRQs NapiKnob = 1 << iota
	KnobGROFlushTimeout
	KnobIRQSuspendTimeout
)

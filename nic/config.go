package nic

import (
	"fmt"
	"time"

	"github.com/uiod/uiod/irq"
)

// Defaults that Config.WithDefaults fills in.
const (
	DefaultRing        = 512
	DefaultBufSize     = 2048
	DefaultMTU         = 1500
	DefaultLinkTimeout = 2 * time.Second
	DefaultTxTimeout   = time.Second
)

// MinRing is the smallest ring in descriptors any driver takes; a ring is a power of two
// from MinRing up to its driver's cap (Limits.Ring, exported by each driver as MaxRing).
const MinRing = 8

// BufAlign is the alignment of packet buffers in a Mempool: each buffer takes its size
// rounded up to a multiple of BufAlign.
const BufAlign = 64

// BufStride is the memory one buffer of size bytes takes in a Mempool.
func BufStride(size int) int { return (size + BufAlign - 1) &^ (BufAlign - 1) }

// Limits are what a driver's hardware takes: queues per direction, descriptors per ring
// and the largest MTU (0: DefaultMTU, the standard Ethernet payload, only).
type Limits struct {
	Queues int
	Ring   int
	MaxMTU int
}

// MinMTU is the smallest MTU a port takes (IPv4's minimum, as Linux's ETH_MIN_MTU).
const MinMTU = 68

// EthHeader is an Ethernet header's length, and VLANTag the bytes one 802.1Q tag adds.
const (
	EthHeader = 14
	VLANTag   = 4
)

// MaxFrame is the longest frame, without FCS, a port with the given MTU receives and
// sends: the MTU's payload behind an Ethernet header and one VLAN tag (a port with MTU
// 9000 carries 9014-byte frames, 9018 tagged; Linux's drivers size for the tag too).
func MaxFrame(mtu int) int { return mtu + EthHeader + VLANTag }

// BufSizeFor is the buffer size that holds one frame of MaxFrame(mtu) bytes: the whole
// KiB at or above it (the NICs size receive buffers in 1 KiB units): 2048 for 1500, 9216
// for 9000.
func BufSizeFor(mtu int) int { return (MaxFrame(mtu) + 1023) &^ 1023 }

// MaxMTUOrDefault is the largest MTU l allows.
func (l Limits) MaxMTUOrDefault() int {
	if l.MaxMTU == 0 {
		return DefaultMTU
	}
	return l.MaxMTU
}

// IRQMode selects how a port delivers interrupts. The zero value, IRQDefault, is MSI-X
// where the backend offers it and INTx where it does not (uio_pci_generic).
type IRQMode int

// Interrupt modes.
const (
	IRQDefault IRQMode = iota // MSI-X, or INTx if the backend has no MSI-X
	IRQMSIX                   // MSI-X, one vector per RX queue, or fail
	IRQINTx                   // the legacy line shared by every queue
	IRQNone                   // no interrupts: the port is only polled
)

// String names the mode as configuration spells it.
func (m IRQMode) String() string {
	switch m {
	case IRQDefault:
		return "default"
	case IRQMSIX:
		return "msix"
	case IRQINTx:
		return "intx"
	case IRQNone:
		return "none"
	}
	return fmt.Sprintf("nic.IRQMode(%d)", int(m))
}

// IRQModeOf is the mode that asks for interrupts of kind k: IRQMSIX or IRQINTx, and an
// invalid mode (refused by Validate) for any other kind.
func IRQModeOf(k irq.Kind) IRQMode {
	switch k {
	case irq.MSIX:
		return IRQMSIX
	case irq.INTx:
		return IRQINTx
	}
	return -1 // a mode Validate refuses
}

// WithDefaults returns c with its zero fields set to their defaults: one queue each way,
// rings of DefaultRing descriptors, DefaultMTU, buffers that hold a frame of the MTU
// (BufSizeFor: DefaultBufSize for DefaultMTU), a pool of 2×RxRing + TxRing
// buffers per RX queue, DefaultLinkTimeout and DefaultTxTimeout. The zero interrupt mode stays IRQDefault:
// the driver picks MSI-X where it can; NoIRQ becomes IRQNone.
func (c Config) WithDefaults() Config {
	if c.NoIRQ {
		c.Interrupts, c.NoIRQ = IRQNone, false
	}
	if c.RxQueues == 0 {
		c.RxQueues = 1
	}
	if c.TxQueues == 0 {
		c.TxQueues = 1
	}
	if c.RxRing == 0 {
		c.RxRing = DefaultRing
	}
	if c.TxRing == 0 {
		c.TxRing = DefaultRing
	}
	if c.MTU == 0 {
		c.MTU = DefaultMTU
	}
	if c.BufSize == 0 {
		c.BufSize = BufSizeFor(c.MTU)
	}
	if c.PoolSize == 0 {
		c.PoolSize = 2*c.RxRing + c.TxRing
	}
	if c.LinkTimeout == 0 {
		c.LinkTimeout = DefaultLinkTimeout
	}
	if c.TxTimeout == 0 {
		c.TxTimeout = DefaultTxTimeout
	}
	return c
}

// Validate checks c (after WithDefaults) against a driver's limits: queue counts up to
// l.Queues, ring sizes powers of two from MinRing to l.Ring, an MTU from MinMTU to
// l.MaxMTU, buffers of 1024..16384 bytes in whole KiB (the NICs size receive buffers in 1
// KiB units) that hold a frame of the MTU (one buffer per frame), a pool at least as large
// as the RX ring, and a known interrupt mode.
func (c Config) Validate(l Limits) error {
	ringOK := func(n int) bool { return n >= MinRing && n <= l.Ring && n&(n-1) == 0 }
	switch {
	case c.RxQueues < 1 || c.RxQueues > l.Queues:
		return fmt.Errorf("rx queues %d: want 1..%d", c.RxQueues, l.Queues)
	case c.TxQueues < 1 || c.TxQueues > l.Queues:
		return fmt.Errorf("tx queues %d: want 1..%d", c.TxQueues, l.Queues)
	case !ringOK(c.RxRing):
		return fmt.Errorf("rx ring %d: want a power of two in %d..%d", c.RxRing, MinRing, l.Ring)
	case !ringOK(c.TxRing):
		return fmt.Errorf("tx ring %d: want a power of two in %d..%d", c.TxRing, MinRing, l.Ring)
	case c.MTU < MinMTU || c.MTU > l.MaxMTUOrDefault():
		return fmt.Errorf("mtu %d: want %d..%d", c.MTU, MinMTU, l.MaxMTUOrDefault())
	case c.BufSize < 1024 || c.BufSize > 16*1024 || c.BufSize%1024 != 0:
		return fmt.Errorf("buffer size %d: want a multiple of 1024 in 1024..16384", c.BufSize)
	case c.BufSize < MaxFrame(c.MTU):
		return fmt.Errorf("buffer size %d: smaller than a frame of mtu %d (%d bytes)", c.BufSize, c.MTU, MaxFrame(c.MTU))
	case c.PoolSize < c.RxRing:
		return fmt.Errorf("pool size %d: smaller than the rx ring (%d)", c.PoolSize, c.RxRing)
	case c.ITR < 0:
		return fmt.Errorf("itr %v: negative", c.ITR)
	case c.LinkTimeout < 0:
		return fmt.Errorf("link timeout %v: negative", c.LinkTimeout)
	case c.TxTimeout < 0:
		return fmt.Errorf("tx timeout %v: negative", c.TxTimeout)
	case !c.NoIRQ && (c.Interrupts < IRQDefault || c.Interrupts > IRQNone):
		return fmt.Errorf("interrupt mode %v: want default, msix, intx or none", c.Interrupts)
	}
	return nil
}

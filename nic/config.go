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
	DefaultLinkTimeout = 2 * time.Second
)

// WithDefaults returns c with its zero fields set to their defaults: one queue each way,
// rings of DefaultRing descriptors, DefaultBufSize buffers, a pool of 2×RxRing + TxRing
// buffers per RX queue and DefaultLinkTimeout. The interrupt mode is kept as given (the
// zero Kind is irq.INTx).
func (c Config) WithDefaults() Config {
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
	if c.BufSize == 0 {
		c.BufSize = DefaultBufSize
	}
	if c.PoolSize == 0 {
		c.PoolSize = 2*c.RxRing + c.TxRing
	}
	if c.LinkTimeout == 0 {
		c.LinkTimeout = DefaultLinkTimeout
	}
	return c
}

// Validate checks c (after WithDefaults) against a driver's limits: queue counts up to
// maxQueues, ring sizes powers of two in 8..32768, buffers of 1024..16384 bytes in whole
// KiB (the NICs size receive buffers in 1 KiB units), a pool at least as large as the RX
// ring, and an interrupt mode of MSI-X or INTx.
func (c Config) Validate(maxQueues int) error {
	ringOK := func(n int) bool { return n >= 8 && n <= 32768 && n&(n-1) == 0 }
	switch {
	case c.RxQueues < 1 || c.RxQueues > maxQueues:
		return fmt.Errorf("rx queues %d: want 1..%d", c.RxQueues, maxQueues)
	case c.TxQueues < 1 || c.TxQueues > maxQueues:
		return fmt.Errorf("tx queues %d: want 1..%d", c.TxQueues, maxQueues)
	case !ringOK(c.RxRing):
		return fmt.Errorf("rx ring %d: want a power of two in 8..32768", c.RxRing)
	case !ringOK(c.TxRing):
		return fmt.Errorf("tx ring %d: want a power of two in 8..32768", c.TxRing)
	case c.BufSize < 1024 || c.BufSize > 16*1024 || c.BufSize%1024 != 0:
		return fmt.Errorf("buffer size %d: want a multiple of 1024 in 1024..16384", c.BufSize)
	case c.PoolSize < c.RxRing:
		return fmt.Errorf("pool size %d: smaller than the rx ring (%d)", c.PoolSize, c.RxRing)
	case c.ITR < 0:
		return fmt.Errorf("itr %v: negative", c.ITR)
	case c.LinkTimeout < 0:
		return fmt.Errorf("link timeout %v: negative", c.LinkTimeout)
	case !c.NoIRQ && c.Interrupts != irq.MSIX && c.Interrupts != irq.INTx:
		return fmt.Errorf("interrupt mode %v: want msix or intx", c.Interrupts)
	}
	return nil
}

//go:build !linux

package irq

import (
	"errors"
	"fmt"
	"time"
)

// Poller waits on interrupt vectors with epoll, which only Linux has: NewPoller fails
// elsewhere, and the methods exist so that the packages above build everywhere.
type Poller struct{}

// NewPoller fails with an error that wraps errors.ErrUnsupported.
func NewPoller(mode WaitMode, vectors ...*Vector) (*Poller, error) {
	return nil, fmt.Errorf("poller: epoll: %w", errors.ErrUnsupported)
}

// Mode is the way Wait blocks.
func (p *Poller) Mode() WaitMode { return WaitRaw }

// Vectors are the distinct vectors the Poller watches.
func (p *Poller) Vectors() []*Vector { return nil }

// Precise reports whether Wait honours timeouts to the nanosecond.
func (p *Poller) Precise() bool { return false }

// Wait fails.
func (p *Poller) Wait(timeout time.Duration) (Wake, error) {
	return WakeTimeout, fmt.Errorf("poller: epoll: %w", errors.ErrUnsupported)
}

// WaitAs fails.
func (p *Poller) WaitAs(mode WaitMode, timeout time.Duration) (Wake, error) {
	return p.Wait(timeout)
}

// Drain does nothing.
func (p *Poller) Drain() (uint64, error) { return 0, nil }

// Stop does nothing.
func (p *Poller) Stop() error { return nil }

// Stopped reports false.
func (p *Poller) Stopped() bool { return false }

// Close does nothing.
func (p *Poller) Close() error { return nil }

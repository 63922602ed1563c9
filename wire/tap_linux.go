package wire

import (
	"errors"
	"fmt"
	"os"

	"github.com/uiod/uiod/internal/tuntap"
)

// TAPPort is a wire whose other end is a Linux TAP interface: frames sent on the port
// appear as received on the interface, frames the kernel transmits on the interface are
// delivered to the handler by a reader goroutine.
type TAPPort struct {
	f    *os.File
	name string
	reader
}

// OpenTAP attaches to the TAP interface name, creating it (non-persistent) if it does not
// exist, with IFF_TAP|IFF_NO_PI: the frames carry no packet-information header. The
// interface is left down; bring it up with `ip link set NAME up`. It needs CAP_NET_ADMIN.
func OpenTAP(name string) (*TAPPort, error) {
	f, ifname, err := tuntap.Open(name)
	if err != nil {
		return nil, fmt.Errorf("tap %s: %w", name, err)
	}
	p := &TAPPort{
		f:    f,
		name: ifname,
	}
	p.start(p.f.Read)
	return p, nil
}

// Name is the interface's name as the kernel assigned it.
func (p *TAPPort) Name() string { return p.name }

// Send hands frame to the kernel as if the interface had received it. It fails with EIO
// while the interface is down.
func (p *TAPPort) Send(frame []byte) error {
	if _, err := p.f.Write(frame); err != nil {
		if errors.Is(err, os.ErrClosed) {
			return ErrClosed
		}
		return fmt.Errorf("send on tap %s: %w", p.name, err)
	}
	return nil
}

// SetHandler installs the receiver for frames the kernel sends out of the interface.
func (p *TAPPort) SetHandler(h Handler) { p.slot.set(h) }

// Close detaches from the interface (which disappears unless it was made persistent) and
// waits for the reader goroutine.
func (p *TAPPort) Close() error {
	return p.stop(p.f.Close)
}

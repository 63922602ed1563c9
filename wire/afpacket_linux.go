package wire

import (
	"errors"
	"fmt"
	"net"

	"github.com/mdlayher/packet"
	"golang.org/x/sys/unix"
)

// PacketPort is a wire onto a kernel network interface through an AF_PACKET raw socket:
// frames sent on the port leave the interface, every frame the interface receives (in
// promiscuous mode, whatever its destination) is delivered by a reader goroutine. Frames
// the host itself transmits on the interface are not delivered.
type PacketPort struct {
	c    *packet.Conn
	io   *rawIO
	name string
	reader
}

// ListenPacket opens a raw AF_PACKET socket on the interface ifname (CAP_NET_RAW) and puts
// the interface into promiscuous mode for as long as the port is open.
func ListenPacket(ifname string) (*PacketPort, error) {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("afpacket %s: %w", ifname, err)
	}
	c, err := packet.Listen(ifi, packet.Raw, unix.ETH_P_ALL, nil)
	if err != nil {
		return nil, fmt.Errorf("afpacket %s: %w", ifname, err)
	}
	if err := ignoreOutgoing(c); err != nil {
		c.Close()
		return nil, fmt.Errorf("afpacket %s: %w", ifname, err)
	}
	if err := c.SetPromiscuous(true); err != nil {
		c.Close()
		return nil, fmt.Errorf("afpacket %s: promiscuous: %w", ifname, err)
	}
	// SOCK_RAW: the frame carries its Ethernet header; the address names the interface.
	rio, err := newRawIO(c, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index})
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("afpacket %s: %w", ifname, err)
	}
	p := &PacketPort{c: c, io: rio, name: ifname}
	p.start(rio.recv)
	return p, nil
}

// ignoreOutgoing sets PACKET_IGNORE_OUTGOING so the socket does not see its own frames.
func ignoreOutgoing(c *packet.Conn) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1)
	}); err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("PACKET_IGNORE_OUTGOING: %w", serr)
	}
	return nil
}

// Send transmits frame (a complete Ethernet frame without FCS) on the interface. It
// allocates nothing.
func (p *PacketPort) Send(frame []byte) error {
	if len(frame) < 14 {
		return fmt.Errorf("send on %s: %d-byte frame is shorter than an Ethernet header", p.name, len(frame))
	}
	if p.closed.Load() {
		return ErrClosed
	}
	closedErr, err := p.io.send(frame)
	if closedErr != nil {
		if errors.Is(closedErr, net.ErrClosed) || p.closed.Load() {
			return ErrClosed
		}
		return fmt.Errorf("send on %s: %w", p.name, closedErr)
	}
	if err != nil {
		return fmt.Errorf("send on %s: %w", p.name, err)
	}
	return nil
}

// SetHandler installs the receiver for frames arriving on the interface.
func (p *PacketPort) SetHandler(h Handler) { p.slot.set(h) }

// Close closes the socket (which leaves promiscuous mode) and waits for the reader.
func (p *PacketPort) Close() error {
	return p.stop(p.c.Close)
}

// htons is v in network byte order, as sockaddr_ll's protocol wants it.
func htons(v uint16) uint16 { return v<<8 | v>>8 }

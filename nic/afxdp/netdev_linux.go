//go:build linux

package afxdp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
)

// The kernel's netdev generic netlink family (include/uapi/linux/netdev.h): commands and
// attributes uiod uses.
const (
	netdevCmdDevGet  = 1
	netdevCmdNapiGet = 11
	netdevCmdNapiSet = 14

	netdevADevIfindex       = 1
	netdevADevXDPFeatures   = 3
	netdevADevXDPZCMaxSegs  = 4
	netdevADevXSKFeatures   = 6
	netdevANapiIfindex      = 1
	netdevANapiID           = 2
	netdevANapiIRQ          = 3
	netdevANapiDeferHardIRQ = 5
	netdevANapiGROFlush     = 6
	netdevANapiIRQSuspend   = 7
)

// Netdev is a connection to the kernel's netdev generic netlink family, in the calling
// thread's network namespace.
type Netdev struct {
	c   *genetlink.Conn
	fam genetlink.Family
}

// DialNetdev connects to the netdev family; a kernel without it is ErrNoNetdevFamily.
func DialNetdev() (*Netdev, error) {
	c, err := genetlink.Dial(nil)
	if err != nil {
		return nil, fmt.Errorf("generic netlink: %w", err)
	}
	fam, err := c.GetFamily("netdev")
	if err != nil {
		c.Close()
		if errors.Is(err, os.ErrNotExist) {
			return nil, ErrNoNetdevFamily
		}
		return nil, fmt.Errorf("generic netlink family netdev: %w", err)
	}
	// The kernel says which attribute it refused, not only EINVAL.
	_ = c.SetOption(netlink.ExtendedAcknowledge, true)
	return &Netdev{c: c, fam: fam}, nil
}

// Close closes the connection.
func (n *Netdev) Close() error { return n.c.Close() }

// Devices dumps dev-get: every netdev's xdp-features, by ifindex.
func (n *Netdev) Devices() (map[int]DevFeatures, error) {
	msgs, err := n.c.Execute(genetlink.Message{Header: genetlink.Header{Command: netdevCmdDevGet, Version: n.fam.Version}},
		n.fam.ID, netlink.Request|netlink.Dump)
	if err != nil {
		return nil, fmt.Errorf("netdev dev-get: %w", err)
	}
	out := make(map[int]DevFeatures, len(msgs))
	for _, m := range msgs {
		d, err := parseDev(m.Data)
		if err != nil {
			return nil, fmt.Errorf("netdev dev-get: %w", err)
		}
		out[d.Ifindex] = d
	}
	return out, nil
}

// parseDev decodes one dev-get reply's attributes.
func parseDev(b []byte) (DevFeatures, error) {
	var d DevFeatures
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return d, err
	}
	for ad.Next() {
		switch ad.Type() {
		case netdevADevIfindex:
			d.Ifindex = int(ad.Uint32())
		case netdevADevXDPFeatures:
			d.XDP = XDPFeatures(uintAttr(ad))
		case netdevADevXDPZCMaxSegs:
			d.XDPZCMaxSegs = ad.Uint32()
		case netdevADevXSKFeatures:
			d.XSK = uintAttr(ad)
		}
	}
	return d, ad.Err()
}

// uintAttr decodes an NLA_UINT or u64 attribute: 4 or 8 bytes as the kernel chose, in
// host order.
func uintAttr(ad *netlink.AttributeDecoder) uint64 {
	b := ad.Bytes()
	switch len(b) {
	case 4:
		return uint64(binary.NativeEndian.Uint32(b))
	case 8:
		return binary.NativeEndian.Uint64(b)
	}
	return 0
}

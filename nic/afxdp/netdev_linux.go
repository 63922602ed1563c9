//go:build linux

package afxdp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"time"

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

// napi-get/napi-set and queue-get attributes.
const (
	netdevCmdQueueGet   = 10
	netdevAQueueID      = 1
	netdevAQueueIfindex = 2
	netdevAQueueType    = 3
	netdevAQueueNapiID  = 4
	netdevQueueTypeRx   = 0
)

// Napis dumps napi-get for the NAPI instances of ifindex.
func (n *Netdev) Napis(ifindex int) ([]Napi, error) {
	ae := netlink.NewAttributeEncoder()
	ae.Uint32(netdevANapiIfindex, uint32(ifindex))
	b, err := ae.Encode()
	if err != nil {
		return nil, err
	}
	msgs, err := n.c.Execute(genetlink.Message{Header: genetlink.Header{Command: netdevCmdNapiGet, Version: n.fam.Version}, Data: b},
		n.fam.ID, netlink.Request|netlink.Dump)
	if err != nil {
		return nil, fmt.Errorf("netdev napi-get: %w", err)
	}
	var out []Napi
	for _, m := range msgs {
		nap := Napi{IRQ: -1}
		ad, err := netlink.NewAttributeDecoder(m.Data)
		if err != nil {
			return nil, fmt.Errorf("netdev napi-get: %w", err)
		}
		for ad.Next() {
			switch ad.Type() {
			case netdevANapiID:
				nap.ID = ad.Uint32()
			case netdevANapiIfindex:
				nap.Ifindex = int(ad.Uint32())
			case netdevANapiIRQ:
				nap.IRQ = int(ad.Uint32())
			case netdevANapiDeferHardIRQ:
				nap.DeferHardIRQs = ad.Uint32()
			case netdevANapiGROFlush:
				nap.GROFlushTimeout = time.Duration(uintAttr(ad))
			case netdevANapiIRQSuspend:
				nap.IRQSuspendTimeout = time.Duration(uintAttr(ad))
			}
		}
		if err := ad.Err(); err != nil {
			return nil, fmt.Errorf("netdev napi-get: %w", err)
		}
		if nap.Ifindex == ifindex {
			out = append(out, nap)
		}
	}
	return out, nil
}

// QueueNapi returns the NAPI instance that serves RX queue qid of ifindex, 0 if the
// kernel names none.
func (n *Netdev) QueueNapi(ifindex, qid int) (uint32, error) {
	ae := netlink.NewAttributeEncoder()
	ae.Uint32(netdevAQueueIfindex, uint32(ifindex))
	ae.Uint32(netdevAQueueType, netdevQueueTypeRx)
	ae.Uint32(netdevAQueueID, uint32(qid))
	b, err := ae.Encode()
	if err != nil {
		return 0, err
	}
	msgs, err := n.c.Execute(genetlink.Message{Header: genetlink.Header{Command: netdevCmdQueueGet, Version: n.fam.Version}, Data: b},
		n.fam.ID, netlink.Request)
	if err != nil {
		return 0, fmt.Errorf("netdev queue-get: %w", err)
	}
	for _, m := range msgs {
		ad, err := netlink.NewAttributeDecoder(m.Data)
		if err != nil {
			return 0, fmt.Errorf("netdev queue-get: %w", err)
		}
		for ad.Next() {
			if ad.Type() == netdevAQueueNapiID {
				return ad.Uint32(), nil
			}
		}
	}
	return 0, nil
}

// SetNapi sets the knobs of s that which selects on NAPI instance id (napi-set). The
// kernel applies all or none; one it does not know (irq-suspend-timeout before 6.13) is
// an error.
func (n *Netdev) SetNapi(id uint32, s NapiSettings, which NapiKnob) error {
	ae := netlink.NewAttributeEncoder()
	ae.Uint32(netdevANapiID, id)
	if which&KnobDeferHardIRQs != 0 {
		ae.Uint32(netdevANapiDeferHardIRQ, s.DeferHardIRQs)
	}
	if which&KnobGROFlushTimeout != 0 {
		ae.Uint64(netdevANapiGROFlush, uint64(s.GROFlushTimeout))
	}
	if which&KnobIRQSuspendTimeout != 0 {
		ae.Uint64(netdevANapiIRQSuspend, uint64(s.IRQSuspendTimeout))
	}
	b, err := ae.Encode()
	if err != nil {
		return err
	}
	if _, err := n.c.Execute(genetlink.Message{Header: genetlink.Header{Command: netdevCmdNapiSet, Version: n.fam.Version}, Data: b},
		n.fam.ID, netlink.Request|netlink.Acknowledge); err != nil {
		return fmt.Errorf("netdev napi-set of NAPI %d: %w", id, err)
	}
	return nil
}

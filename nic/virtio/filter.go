package virtio

import (
	"encoding/binary"
	"fmt"
	"net"

	"github.com/uiod/uiod/internal/hw/virtiospec"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/mcast"
	"github.com/uiod/uiod/pci"
)

var _ nic.RxFilter = (*Port)(nil)

// maxMACTable is the most multicast addresses the driver puts in the device's filter
// table (QEMU's MAC_TABLE_ENTRIES); past it the device takes every multicast frame
// (VIRTIO_NET_CTRL_RX_ALLMULTI) instead.
const maxMACTable = 64

// rxFilter is what the port's user set (SetMAC, SetMulticast), kept so that a recovery
// from DEVICE_NEEDS_RESET, whose reset makes the device forget it, sends it again.
// Written under closeMu held exclusively.
type rxFilter struct {
	on     bool             // the user programmed the filter: the device filters by it
	mac    net.HardwareAddr // the station address set, or nil
	groups []net.HardwareAddr
	all    bool
}

// SetMAC implements nic.RxFilter: the device's station address becomes mac
// (VIRTIO_NET_CTRL_MAC_ADDR_SET, which needs VIRTIO_NET_F_CTRL_MAC_ADDR: without it the
// call fails naming the feature and the device keeps its address). Like SetMulticast it
// turns the device's own filter on (see there). It waits for the device's answer on the
// control queue and may be called while the queues run.
func (p *Port) SetMAC(mac net.HardwareAddr) error {
	if err := mcast.CheckMAC(mac); err != nil {
		return err
	}
	m := append(net.HardwareAddr(nil), mac...)
	p.closeMu.Lock()
	defer p.closeMu.Unlock()
	if err := p.filterUsable(virtiospec.FeatCtrlMACAddr, "VIRTIO_NET_F_CTRL_MAC_ADDR", "set mac "+m.String()); err != nil {
		return err
	}
	if err := p.ctrl.command(virtiospec.CtrlClassMAC, virtiospec.CtrlMACAddrSet, m); err != nil {
		return fmt.Errorf("set mac %v: %w", m, err)
	}
	p.filt.mac = m
	p.mac.Store(&m)
	if !p.filt.on {
		return p.sendFilter()
	}
	return nil
}

// SetMulticast implements nic.RxFilter: the groups go into the device's filter table
// (VIRTIO_NET_CTRL_MAC_TABLE_SET, no extra unicast addresses), or, for all or more than
// 64 of them, the device takes every multicast frame (VIRTIO_NET_CTRL_RX_ALLMULTI). Both
// need VIRTIO_NET_F_CTRL_RX: without it the call fails naming the feature, and the
// device filters as it does by itself (QEMU's takes everything).
//
// A virtio-net device comes out of reset taking every frame (QEMU's does: promiscuous
// until told otherwise), and the driver leaves it so at open. The first SetMAC or
// SetMulticast turns its filter on (VIRTIO_NET_CTRL_RX_PROMISC off, unless the port was
// opened Promiscuous): from then on it takes its own address, broadcast and the groups
// set. The filter is sent again after a recovery from DEVICE_NEEDS_RESET. It waits for
// the device's answers on the control queue and may be called while the queues run.
func (p *Port) SetMulticast(groups []net.HardwareAddr, all bool) error {
	if err := mcast.CheckGroups(groups); err != nil {
		return err
	}
	g := mcast.Unique(groups)
	p.closeMu.Lock()
	defer p.closeMu.Unlock()
	if err := p.filterUsable(virtiospec.FeatCtrlRX, "VIRTIO_NET_F_CTRL_RX", "set multicast"); err != nil {
		return err
	}
	old := p.filt
	p.filt.groups, p.filt.all = g, all
	if err := p.sendFilter(); err != nil {
		p.filt = old // Recover sends what the device took last, not what it refused
		return err
	}
	return nil
}

// filterUsable says why the filter cannot be programmed now: the port is closed or
// broken, or the device lacks feature (named name). closeMu is held.
func (p *Port) filterUsable(feature int, name, what string) error {
	switch {
	case p.closed:
		return fmt.Errorf("%s: port closed", what)
	case p.ctrl == nil:
		return fmt.Errorf("%s: the device has no control queue (VIRTIO_NET_F_CTRL_VQ), nor %s: %w", what, name, pci.ErrNotSupported)
	case !p.has(feature):
		return fmt.Errorf("%s: the device does not offer %s: %w", what, name, pci.ErrNotSupported)
	case p.stopped || broken(p.t.status()):
		return fmt.Errorf("%s: the device needs a reset (DEVICE_NEEDS_RESET); the port's Recover programs the filter", what)
	}
	return nil
}

// sendFilter sends the receive filter to the device: all-multicast on before the table
// changes when it is needed and off after, so that no group is dropped in between, then
// promiscuous mode off (or on for a Promiscuous port). A device without
// VIRTIO_NET_F_CTRL_RX (only SetMAC got here) keeps its own filter. closeMu is held
// exclusively, or the port is being recovered.
func (p *Port) sendFilter() error {
	if !p.has(virtiospec.FeatCtrlRX) {
		return nil
	}
	f := &p.filt
	allMulti := f.all || len(f.groups) > maxMACTable
	table := f.groups
	if allMulti {
		table = nil
	}
	if allMulti {
		if err := p.rxMode(virtiospec.CtrlRXAllMulti, true); err != nil {
			return err
		}
	}
	data := make([]byte, 8+6*len(table)) // no unicast entries, then the multicast ones
	binary.LittleEndian.PutUint32(data[4:], uint32(len(table)))
	for i, a := range table {
		copy(data[8+6*i:], a)
	}
	if err := p.ctrl.command(virtiospec.CtrlClassMAC, virtiospec.CtrlMACTableSet, data); err != nil {
		return fmt.Errorf("set multicast table (%d addresses): %w", len(table), err)
	}
	if !allMulti {
		if err := p.rxMode(virtiospec.CtrlRXAllMulti, false); err != nil {
			return err
		}
	}
	if err := p.rxMode(virtiospec.CtrlRXPromisc, p.cfg.Promiscuous); err != nil {
		return err
	}
	f.on = true
	return nil
}

// rxMode sends VIRTIO_NET_CTRL_RX command cmd with on.
func (p *Port) rxMode(cmd uint8, on bool) error {
	var b [1]byte
	if on {
		b[0] = 1
	}
	if err := p.ctrl.command(virtiospec.CtrlClassRX, cmd, b[:]); err != nil {
		name := map[uint8]string{virtiospec.CtrlRXPromisc: "promiscuous", virtiospec.CtrlRXAllMulti: "all-multicast"}[cmd]
		return fmt.Errorf("%s %v: %w", name, on, err)
	}
	return nil
}

// restoreFilter sends the filter the user set again after a reset: the station address,
// then the rest. Recover calls it with closeMu held.
func (p *Port) restoreFilter() error {
	if p.filt.mac != nil {
		if err := p.ctrl.command(virtiospec.CtrlClassMAC, virtiospec.CtrlMACAddrSet, p.filt.mac); err != nil {
			return fmt.Errorf("set mac %v: %w", p.filt.mac, err)
		}
	}
	if p.filt.on {
		return p.sendFilter()
	}
	return nil
}

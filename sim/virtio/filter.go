package virtio

import (
	"bytes"
	"encoding/binary"
	"net"

	"github.com/uiod/uiod/internal/hw/virtiospec"
)

// macTableEntries is how many addresses the device's filter table holds (QEMU's
// MAC_TABLE_ENTRIES): a list longer than the room left sets its overflow flag, and the
// device then takes every address of that kind.
const macTableEntries = 64

// rxFilter is the device's receive filter, as QEMU's virtio-net keeps it (VirtIONet's
// promisc, allmulti, mac and mac_table): promiscuous after reset, the station address
// from the configuration.
type rxFilter struct {
	promisc, allMulti  bool
	mac                [6]byte
	uni, multi         [][6]byte
	uniOver, multiOver bool
}

// Filter is a snapshot of the receive filter the driver set.
type Filter struct {
	Promisc, AllMulti bool
	MAC               net.HardwareAddr // the station address (VIRTIO_NET_CTRL_MAC_ADDR_SET)
	// Unicast and Multicast are the filter table's addresses; the Over flags say a list
	// was longer than the table (every address of the kind is taken).
	Unicast, Multicast         []net.HardwareAddr
	UnicastOver, MulticastOver bool
}

// Filter returns the receive filter the driver set.
func (m *Model) Filter() Filter {
	m.dev.Lock()
	defer m.dev.Unlock()
	f := &m.rxf
	out := Filter{Promisc: f.promisc, AllMulti: f.allMulti, MAC: append(net.HardwareAddr(nil), f.mac[:]...),
		UnicastOver: f.uniOver, MulticastOver: f.multiOver}
	for _, a := range f.uni {
		out.Unicast = append(out.Unicast, append(net.HardwareAddr(nil), a[:]...))
	}
	for _, a := range f.multi {
		out.Multicast = append(out.Multicast, append(net.HardwareAddr(nil), a[:]...))
	}
	return out
}

// resetFilter is the filter after a device reset (QEMU's virtio_net_reset): promiscuous,
// the configured address, an empty table. The lock is held.
func (m *Model) resetFilter() {
	m.rxf = rxFilter{promisc: true}
	copy(m.rxf.mac[:], m.cfg.MAC)
}

// accepts is QEMU's receive_filter (hw/net/virtio-net.c) without VLANs (the model offers
// no VIRTIO_NET_F_CTRL_VLAN): everything when promiscuous; broadcast; multicast when
// all-multicast, on a table overflow or in the table; unicast to the station address, on
// a table overflow or in the table. The lock is held.
func (m *Model) accepts(frame []byte) bool {
	f := &m.rxf
	if f.promisc {
		return true
	}
	if len(frame) < 6 {
		return false
	}
	dst := frame[:6]
	if dst[0]&1 != 0 {
		switch {
		case bytes.Equal(dst, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}):
			return true
		case f.allMulti || f.multiOver:
			return true
		}
		return inTable(f.multi, dst)
	}
	switch {
	case f.uniOver || bytes.Equal(dst, f.mac[:]):
		return true
	}
	return inTable(f.uni, dst)
}

func inTable(t [][6]byte, a []byte) bool {
	for i := range t {
		if bytes.Equal(t[i][:], a) {
			return true
		}
	}
	return false
}

// rxMode is VIRTIO_NET_CTRL_RX (QEMU's virtio_net_handle_rx_mode), strict: exactly one
// byte of data. The lock is held.
func (m *Model) rxMode(cmd byte, data []byte) byte {
	if !m.has(virtiospec.FeatCtrlRX) || len(data) != 1 {
		return virtiospec.CtrlErr
	}
	on := data[0] != 0
	switch cmd {
	case virtiospec.CtrlRXPromisc:
		m.rxf.promisc = on
	case virtiospec.CtrlRXAllMulti:
		m.rxf.allMulti = on
	default:
		return virtiospec.CtrlErr
	}
	return virtiospec.CtrlOK
}

// macCommand is VIRTIO_NET_CTRL_MAC (QEMU's virtio_net_handle_mac): the station address
// (exactly 6 bytes, with VIRTIO_NET_F_CTRL_MAC_ADDR), or the filter table (with
// VIRTIO_NET_F_CTRL_RX): a 32-bit little-endian count and that many unicast addresses,
// then a count and exactly that many multicast ones filling the rest of the command. A
// list longer than the room left in the table sets its overflow flag. A bad length
// leaves the filter as it was. The lock is held.
func (m *Model) macCommand(cmd byte, data []byte) byte {
	switch cmd {
	case virtiospec.CtrlMACAddrSet:
		if !m.has(virtiospec.FeatCtrlMACAddr) || len(data) != 6 {
			return virtiospec.CtrlErr
		}
		copy(m.rxf.mac[:], data)
		return virtiospec.CtrlOK
	case virtiospec.CtrlMACTableSet:
		if !m.has(virtiospec.FeatCtrlRX) {
			return virtiospec.CtrlErr
		}
		uni, uniOver, rest, ok := macList(data, macTableEntries, false)
		if !ok {
			return virtiospec.CtrlErr
		}
		multi, multiOver, _, ok := macList(rest, macTableEntries-len(uni), true)
		if !ok {
			return virtiospec.CtrlErr
		}
		m.rxf.uni, m.rxf.uniOver, m.rxf.multi, m.rxf.multiOver = uni, uniOver, multi, multiOver
		return virtiospec.CtrlOK
	}
	return virtiospec.CtrlErr
}

// macList reads one list of the filter table from data: its count, then the addresses,
// kept when there are at most room of them (over: more). last: the list must end the
// data exactly.
func macList(data []byte, room int, last bool) (list [][6]byte, over bool, rest []byte, ok bool) {
	if len(data) < 4 {
		return nil, false, nil, false
	}
	n := uint64(binary.LittleEndian.Uint32(data))
	data = data[4:]
	if n*6 > uint64(len(data)) || last && n*6 != uint64(len(data)) {
		return nil, false, nil, false
	}
	if n > uint64(room) {
		return nil, true, data[n*6:], true
	}
	list = make([][6]byte, n)
	for i := range list {
		copy(list[i][:], data[6*i:])
	}
	return list, false, data[n*6:], true
}

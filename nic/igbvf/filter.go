package igbvf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"

	"github.com/uiod/uiod/internal/hw/i82576"
	"github.com/uiod/uiod/nic"
	"github.com/uiod/uiod/nic/internal/mcast"
)

var _ nic.RxFilter = (*Port)(nil)

// errClosed is returned by SetMAC and SetMulticast on a closed port.
var errClosed = errors.New("port closed")

// rxFilter is what the port's user asked the PF to filter by (SetMulticast), kept under
// mbMu and sent again after every VF reset, which clears it in the PF.
type rxFilter struct {
	hashes []uint16 // distinct multicast table hashes of the groups, in their order
	all    bool     // every multicast frame
	prom   bool     // the PF has the VF in multicast promiscuous mode (SET_PROMISC) now
}

// McastHash is the 12-bit multicast table hash the VF registers for group addr
// (SET_MULTICAST; Linux's e1000_hash_mc_addr_vf with the 82576's 128-register table:
// address bits 47:36).
func McastHash(addr net.HardwareAddr) uint16 {
	return (uint16(addr[4])>>4 | uint16(addr[5])<<4) & 0xFFF
}

// SetMAC implements nic.RxFilter: it asks the PF to make mac the VF's address
// (SET_MAC_ADDR). A PF whose administrator set the VF's MAC ("ip link set PF vf N mac")
// refuses it (NACK; Linux's igb for an untrusted VF): the error says so and the old
// address stays. An address the PF took is asked for again after a VF reset that
// forgets it. While the PF is in reset the call fails and changes nothing.
func (p *Port) SetMAC(mac net.HardwareAddr) error {
	if err := mcast.CheckMAC(mac); err != nil {
		return err
	}
	m := append(net.HardwareAddr(nil), mac...)
	p.mbMu.Lock()
	defer p.mbMu.Unlock()
	if err := p.filterUsable(); err != nil {
		return fmt.Errorf("set mac %v: %w", m, err)
	}
	ok, err := p.mbx.request(i82576.MsgSetMAC, binary.LittleEndian.Uint32(m[0:4]), uint32(binary.LittleEndian.Uint16(m[4:6])))
	switch {
	case err != nil:
		return fmt.Errorf("set mac %v: %w", m, err)
	case !ok:
		return fmt.Errorf("set mac %v: the PF refused it (SET_MAC_ADDR answered NACK): its administrator set the VF's address (ip link set PF vf N mac), which an untrusted VF cannot change; the VF keeps %v", m, p.MAC())
	}
	p.mac.Store(&m)
	return nil
}

// SetMulticast implements nic.RxFilter: the PF filters the VF's multicast by the 12-bit
// table hashes of the groups (SET_MULTICAST, address bits 47:36; a group sharing its hash
// with one of them passes too). The PF holds 30 hashes: beyond that, and for all, the
// VF asks for multicast promiscuous mode (SET_PROMISC); a PF that refuses it (NACK) fails
// the call with an error that says so. The last filter the PF took is sent again after
// every VF reset. While the PF is in reset the call fails and changes nothing.
func (p *Port) SetMulticast(groups []net.HardwareAddr, all bool) error {
	if err := mcast.CheckGroups(groups); err != nil {
		return err
	}
	var hashes []uint16
	for _, g := range groups {
		if h := McastHash(g); !slices.Contains(hashes, h) {
			hashes = append(hashes, h)
		}
	}
	p.mbMu.Lock()
	defer p.mbMu.Unlock()
	if err := p.filterUsable(); err != nil {
		return fmt.Errorf("set multicast: %w", err)
	}
	old := p.filt
	p.filt.hashes, p.filt.all = hashes, all
	if err := p.programMulticast(); err != nil {
		// Keep what the PF took last for the next VF reset: a filter it refused would
		// fail every re-initialisation.
		p.filt.hashes, p.filt.all = old.hashes, old.all
		return err
	}
	return nil
}

// filterUsable says why the mailbox cannot program the filter now: the port is closed
// or the PF is in reset (the port waits for a Recover). mbMu is held.
func (p *Port) filterUsable() error {
	switch {
	case p.closed:
		return errClosed
	case p.down.Load():
		return fmt.Errorf("the PF is down or in reset: %w", errPFReset)
	}
	return nil
}

// programMulticast sends the filter to the PF: multicast promiscuous mode on first when
// it is needed, the hashes (at most 30), and promiscuous mode off last when it is no
// longer needed, so that no group is dropped in between. mbMu is held.
func (p *Port) programMulticast() error {
	f := &p.filt
	prom := f.all || len(f.hashes) > i82576.MsgMcastMax
	if prom && !f.prom {
		if err := p.setMcastPromisc(true); err != nil {
			why := "every multicast group"
			if !f.all {
				why = fmt.Sprintf("%d distinct multicast hashes, more than the %d the PF holds", len(f.hashes), i82576.MsgMcastMax)
			}
			return fmt.Errorf("set multicast: %s need multicast promiscuous mode: %w", why, err)
		}
	}
	n := min(len(f.hashes), i82576.MsgMcastMax)
	msg := make([]uint32, 1+(n+1)/2)
	msg[0] = i82576.MsgSetMcast | uint32(n)<<i82576.MsgInfoShift
	for i, h := range f.hashes[:n] {
		msg[1+i/2] |= uint32(h) << (16 * (i % 2))
	}
	ok, err := p.mbx.request(msg...)
	switch {
	case err != nil:
		return fmt.Errorf("set multicast (%d hashes): %w", n, err)
	case !ok:
		return fmt.Errorf("set multicast (%d hashes): the PF refused it (NACK)", n)
	}
	if !prom && f.prom {
		if err := p.setMcastPromisc(false); err != nil {
			return fmt.Errorf("set multicast: leaving multicast promiscuous mode: %w", err)
		}
	}
	return nil
}

// setMcastPromisc asks the PF for multicast promiscuous mode on or off (SET_PROMISC with
// the multicast flag, or none). mbMu is held.
func (p *Port) setMcastPromisc(on bool) error {
	msg := uint32(i82576.MsgSetPromisc)
	if on {
		msg |= i82576.PromiscMcast
	}
	ok, err := p.mbx.request(msg)
	switch {
	case err != nil:
		return err
	case !ok:
		return fmt.Errorf("the PF refused SET_PROMISC %s (NACK): it does not allow this VF multicast promiscuous mode", map[bool]string{true: "multicast", false: "off"}[on])
	}
	p.filt.prom = on
	return nil
}

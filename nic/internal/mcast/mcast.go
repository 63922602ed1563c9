// Package mcast checks the addresses a port's user hands to nic.RxFilter, for every
// driver that implements it.
package mcast

import (
	"fmt"
	"net"
)

// CheckGroups returns an error naming the first address in groups that is not a 6-byte
// multicast address (its group bit, bit 0 of the first byte, set). Broadcast is one.
func CheckGroups(groups []net.HardwareAddr) error {
	for i, g := range groups {
		switch {
		case len(g) != 6:
			return fmt.Errorf("multicast group %d: %q is not a 6-byte Ethernet address", i, g.String())
		case g[0]&1 == 0:
			return fmt.Errorf("multicast group %d: %v is not a multicast address (its first byte's group bit is clear)", i, g)
		}
	}
	return nil
}

// CheckMAC returns an error unless mac is a 6-byte unicast address other than zero: one
// a port can take as its station address.
func CheckMAC(mac net.HardwareAddr) error {
	switch {
	case len(mac) != 6:
		return fmt.Errorf("station address %q is not a 6-byte Ethernet address", mac.String())
	case mac[0]&1 != 0:
		return fmt.Errorf("station address %v is a multicast address", mac)
	case string(mac) == "\x00\x00\x00\x00\x00\x00":
		return fmt.Errorf("station address %v is zero", mac)
	}
	return nil
}

// Unique is groups without repeats, in their first order (a new slice; groups is not
// changed).
func Unique(groups []net.HardwareAddr) []net.HardwareAddr {
	out := make([]net.HardwareAddr, 0, len(groups))
	seen := make(map[string]bool, len(groups))
	for _, g := range groups {
		if !seen[string(g)] {
			seen[string(g)] = true
			out = append(out, append(net.HardwareAddr(nil), g...))
		}
	}
	return out
}

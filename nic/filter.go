package nic

import "net"

// RxFilter is a Port whose receive address filter its user can program after Open: the
// station address it takes unicast frames for, and the multicast groups it takes beyond
// broadcast. The kernel path uses it so that the port follows its TAP: a MAC set on the
// TAP becomes the port's, and the groups the kernel joins there (IPv6 solicited-node
// groups for neighbour discovery, OSPF's, VRRP's) pass the port's filter without
// promiscuous mode (docs/design.md, "The TAP follows its port").
//
// Both methods may be called from any goroutine while the port's queues run (they touch
// only the filter), one call at a time; they return when the filter is programmed. A port
// opened Promiscuous keeps taking every frame whatever they set.
type RxFilter interface {
	Port
	// SetMAC makes mac the port's station address: unicast frames to it are received,
	// frames to the old one no longer are, and MAC returns it.
	SetMAC(mac net.HardwareAddr) error
	// SetMulticast makes the port receive frames to exactly the multicast addresses in
	// groups (besides broadcast), or to every multicast address when all is set. A list
	// longer than the device's exact filter is served by its hash table or, past that,
	// by taking every multicast frame: a port may take more than it was asked to, never
	// fewer. Addresses that are not multicast are an error naming the address.
	SetMulticast(groups []net.HardwareAddr, all bool) error
}

package l3fwd

import "github.com/uiod/uiod/dataplane"

// The reasons l3fwd does not forward a frame, as the dataplane counts the frames it drops
// (the reason label of uiod_queue_drops_total). What l3fwd hands to the RX port's kernel
// exception path is counted there as to_kernel, and by App.Stats under its verdict; the
// same frames on a port with no kernel path are dropped under these reasons. What each
// means and why is docs/design.md, "What the router forwards, drops and delivers".
var (
	// DropNoRoute: no route covers the destination (to the kernel: error class).
	DropNoRoute = dataplane.RegisterDropReason("no_route")
	// DropTTLExpired: a TTL or hop limit of 1 or 0, which a router must not forward (to
	// the kernel: error class, which sends time exceeded).
	DropTTLExpired = dataplane.RegisterDropReason("ttl_expired")
	// DropBadHeader: an IPv4 or IPv6 header that fails l3fwd's checks, malformed IPv4
	// options among them. Dropped: the kernel drops them too.
	DropBadHeader = dataplane.RegisterDropReason("bad_header")
	// DropNotIP: a frame that is neither IPv4 nor IPv6 (ARP and LLDP: control class;
	// VLAN-tagged, other EtherTypes, runts: error class).
	DropNotIP = dataplane.RegisterDropReason("not_ip")
	// DropNotForUs: a unicast destination MAC that is not the RX port's (a frame a switch
	// flooded, or one a promiscuous port took in). Dropped, as the kernel drops
	// PACKET_OTHERHOST frames.
	DropNotForUs = dataplane.RegisterDropReason("not_for_us")
	// DropL2Broadcast: a unicast IP packet in a link-layer broadcast or multicast frame,
	// which RFC 1812 5.3.4 forbids forwarding (to the kernel: local class, which takes it
	// only if the address is its own).
	DropL2Broadcast = dataplane.RegisterDropReason("l2_broadcast")
	// DropMulticast: an IPv4 or IPv6 multicast destination (to the kernel: control class
	// for routing protocols, MLD and IGMP; local class otherwise). l3fwd routes no
	// multicast.
	DropMulticast = dataplane.RegisterDropReason("multicast")
	// DropBroadcast: the limited broadcast 255.255.255.255 (RFC 1812 5.3.5.1), or a
	// broadcast address listed in Config.Local (to the kernel: local class).
	DropBroadcast = dataplane.RegisterDropReason("broadcast")
	// DropLocal: to one of the router's own addresses, Config.Local (to the kernel: local
	// class, or control for routing protocols).
	DropLocal = dataplane.RegisterDropReason("local")
	// DropLinkLocal: a link-local source or destination, which RFC 3927 and RFC 4291
	// 2.5.6 forbid forwarding: IPv4's (169.254/16) dropped unless Config.Local lists the
	// destination; an fe80::/10 destination to the kernel (local class), which takes it
	// if the address is its own; an fe80::/10 source that would leave its link to the
	// kernel (error class), which answers "beyond scope of source address".
	DropLinkLocal = dataplane.RegisterDropReason("link_local")
	// DropMartianSource: a source no host may send from: 0/8, 127/8, multicast,
	// 255.255.255.255; ::, ::1, multicast.
	DropMartianSource = dataplane.RegisterDropReason("martian_source")
	// DropMartianDestination: 0/8, 127/8; ::, ::1, multicast of scope 0 or 1.
	DropMartianDestination = dataplane.RegisterDropReason("martian_destination")
	// DropSourceRoute: an IPv4 loose or strict source route option, which Linux drops by
	// default (accept_source_route=0).
	DropSourceRoute = dataplane.RegisterDropReason("source_route")
	// DropFragmentOffset: an IPv4 fragment at offset 1 (8 bytes), the RFC 1858 overlap
	// attack, dropped as VPP drops it.
	DropFragmentOffset = dataplane.RegisterDropReason("fragment_offset")
	// DropNeighbourDiscovery: IPv6 neighbour discovery (ICMPv6 133-137), which is for the
	// link and never forwarded (to the kernel: control class).
	DropNeighbourDiscovery = dataplane.RegisterDropReason("neighbour_discovery")
	// DropMTU: a packet larger than the output port's MTU (to the kernel: error class,
	// which sends fragmentation needed or packet too big, or fragments an IPv4 packet
	// without DF).
	DropMTU = dataplane.RegisterDropReason("mtu_exceeded")
	// DropPoliced: a frame for the kernel over its class's rate limit (Config.Police).
	DropPoliced = dataplane.RegisterDropReason("policed")
)

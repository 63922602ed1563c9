package l3fwd

import "github.com/uiod/uiod/dataplane"

// The reasons l3fwd does not forward a frame, as the dataplane counts them (the reason
// label of uiod_queue_drops_total). With a kernel exception path on the RX port these
// frames go to the kernel instead, which answers ARP and sends the ICMP errors.
var (
	// DropNoRoute: no route covers the destination.
	DropNoRoute = dataplane.RegisterDropReason("no_route")
	// DropTTLExpired: a TTL or hop limit of 1 or 0, which a router must not forward.
	DropTTLExpired = dataplane.RegisterDropReason("ttl_expired")
	// DropBadHeader: an IPv4 or IPv6 header that fails l3fwd's checks.
	DropBadHeader = dataplane.RegisterDropReason("bad_header")
	// DropNotIP: a frame that is neither IPv4 nor IPv6 (ARP, VLAN-tagged, a runt).
	DropNotIP = dataplane.RegisterDropReason("not_ip")
)

// reasons maps a verdict to its reason.
var reasons = [...]dataplane.DropReason{
	vNoRoute:    DropNoRoute,
	vTTLExpired: DropTTLExpired,
	vBadHeader:  DropBadHeader,
	vNotIP:      DropNotIP,
}

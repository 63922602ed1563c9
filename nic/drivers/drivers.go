// Package drivers registers every PCI NIC driver of uiod (ixgbe, igb, igbvf, virtio)
// with package nic, so that nic.Open and nic.Lookup know each of them by name and
// nic.Open(…, "auto", …) can pick any of them. Import it for that side effect only:
//
//	import _ "github.com/uiod/uiod/nic/drivers"
//
// A program that needs one driver imports that driver's package instead.
package drivers

import (
	_ "github.com/uiod/uiod/nic/igb"    // registers the igb driver
	_ "github.com/uiod/uiod/nic/igbvf"  // registers the igbvf driver
	_ "github.com/uiod/uiod/nic/ixgbe"  // registers the ixgbe driver
	_ "github.com/uiod/uiod/nic/virtio" // registers the virtio driver
)

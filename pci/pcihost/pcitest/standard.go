package pcitest

import (
	"net/netip"
	"testing"
)

// Addresses of the functions in a Standard tree.
const (
	// Bridge is a PCIe root port (8086:1901, class 060400, pcieport), in IOMMU group 1
	// with both 82599 ports.
	Bridge = "0000:00:01.0"
	// Port82599A and Port82599B are the two functions of an 82599ES (8086:10fb) on ixgbe,
	// interfaces eth0 and eth1, sharing IOMMU group 1 with Bridge. 64 MSI-X vectors.
	Port82599A = "0000:01:00.0"
	Port82599B = "0000:01:00.1"
	// X540 is an X540-AT2 (8086:1528) on ixgbe whose interface ens2f0 has routes: active.
	// IOMMU group 2, NUMA node 1.
	X540 = "0000:02:00.0"
	// Igb82576 is an 82576 (8086:10c9) on igb, interface ens3f0, IOMMU group 3, 10 vectors.
	Igb82576 = "0000:03:00.0"
	// I350 is an I350 (8086:1521) already bound to vfio-pci, IOMMU group 4.
	I350 = "0000:04:00.0"
	// Virtio is a virtio 1.0 NIC (1af4:1041) on virtio-pci, interface ens5 under virtio0,
	// IOMMU group 5, 3 vectors.
	Virtio = "0000:05:00.0"
	// Unbound is a second 82576 (8086:10c9) with no driver, IOMMU group 6; its native
	// driver is igb.
	Unbound = "0000:06:00.0"
	// Garbage is a network function whose vendor file holds garbage, IOMMU group 7.
	Garbage = "0000:07:00.0"
	// SATA is a storage controller (8086:2922, class 010601, ahci), not a network
	// function, IOMMU group 8.
	SATA = "0000:00:1f.2"
)

// Standard builds the standard fixture host: the functions named by the constants of this
// package, the active interface's routes (IPv4 10.1.0.0/24 via ens2f0; eth0 has only a
// link-local route, and IPv6 routes are link-local or multicast except ens2f0's), and
// no pci.ids (call InstallPCIIDs for names).
func Standard(t testing.TB) *Tree {
	t.Helper()
	tr := New(t)
	tr.AddFunction(Function{Addr: Bridge, Vendor: 0x8086, Device: 0x1901, Class: 0x060400, Revision: 0x07,
		Driver: "pcieport", IOMMUGroup: 1, NUMANode: 0})
	tr.AddFunction(Function{Addr: Port82599A, Vendor: 0x8086, Device: 0x10fb, SubVendor: 0x8086, SubDevice: 0x0003,
		Class: 0x020000, Revision: 0x01, Driver: "ixgbe", Interfaces: []string{"eth0"}, IOMMUGroup: 1, NUMANode: 0, MSIXVectors: 64})
	tr.AddFunction(Function{Addr: Port82599B, Vendor: 0x8086, Device: 0x10fb, SubVendor: 0x8086, SubDevice: 0x0003,
		Class: 0x020000, Revision: 0x01, Driver: "ixgbe", Interfaces: []string{"eth1"}, IOMMUGroup: 1, NUMANode: 0, MSIXVectors: 64})
	tr.AddFunction(Function{Addr: X540, Vendor: 0x8086, Device: 0x1528, SubVendor: 0x8086, SubDevice: 0x0001,
		Class: 0x020000, Revision: 0x01, Driver: "ixgbe", Interfaces: []string{"ens2f0"}, IOMMUGroup: 2, NUMANode: 1, MSIXVectors: 64})
	tr.AddFunction(Function{Addr: Igb82576, Vendor: 0x8086, Device: 0x10c9, SubVendor: 0x8086, SubDevice: 0xa03c,
		Class: 0x020000, Revision: 0x01, Driver: "igb", Interfaces: []string{"ens3f0"}, IOMMUGroup: 3, NUMANode: -1, MSIXVectors: 10})
	tr.AddFunction(Function{Addr: I350, Vendor: 0x8086, Device: 0x1521, SubVendor: 0x8086, SubDevice: 0x0001,
		Class: 0x020000, Revision: 0x01, Driver: "vfio-pci", Native: "igb", IOMMUGroup: 4, NUMANode: 0, MSIXVectors: 10})
	tr.AddFunction(Function{Addr: Virtio, Vendor: 0x1af4, Device: 0x1041, SubVendor: 0x1af4, SubDevice: 0x1100,
		Class: 0x020000, Revision: 0x01, Driver: "virtio-pci", Interfaces: []string{"ens5"}, Virtio: true, IOMMUGroup: 5, NUMANode: -1, MSIXVectors: 3})
	tr.AddFunction(Function{Addr: Unbound, Vendor: 0x8086, Device: 0x10c9, Class: 0x020000, Revision: 0x01,
		Native: "igb", IOMMUGroup: 6, NUMANode: 0, MSIXVectors: 10})
	tr.AddFunction(Function{Addr: Garbage, Vendor: 0x8086, Device: 0x10fb, Class: 0x020000,
		IOMMUGroup: 7, NUMANode: 0, Files: map[string]string{"vendor": "0xzz86\n"}})
	tr.AddFunction(Function{Addr: SATA, Vendor: 0x8086, Device: 0x2922, Class: 0x010601, Revision: 0x02,
		Driver: "ahci", IOMMUGroup: 8, NUMANode: 0})
	tr.AddDriver("uio_pci_generic")
	tr.AddRoute("ens2f0", netip.MustParsePrefix("0.0.0.0/0"))
	tr.AddRoute("ens2f0", netip.MustParsePrefix("10.1.0.0/24"))
	tr.AddRoute("eth0", netip.MustParsePrefix("169.254.0.0/16"))
	tr.AddRoute("eth0", netip.MustParsePrefix("fe80::/64"))
	tr.AddRoute("eth0", netip.MustParsePrefix("ff00::/8"))
	tr.AddRoute("ens2f0", netip.MustParsePrefix("2001:db8::/64"))
	return tr
}

// PCIIDs is the small pci.ids database InstallPCIIDs writes. It names the standard tree's
// vendors and devices except the 82576 (10c9), which shows ids only.
const PCIIDs = `# pcitest: a few lines of pci.ids
8086  Intel Corporation
	10fb  82599ES 10-Gigabit SFI/SFP+ Network Connection
	1521  I350 Gigabit Network Connection
	1528  Ethernet Controller 10-Gigabit X540-AT2
	1901  6th-10th Gen Core Processor PCIe Controller (x16)
	2922  82801IR/IO/IH (ICH9R/DO/DH) 6 port SATA Controller [AHCI mode]
1af4  Red Hat, Inc.
	1041  Virtio 1.0 network device
C 01  Mass storage controller
	06  SATA controller
C 02  Network controller
	00  Ethernet controller
C 06  Bridge
	04  PCI bridge
`

// InstallPCIIDs writes PCIIDs to usr/share/misc/pci.ids, where pcidb looks under its chroot.
func (tr *Tree) InstallPCIIDs() {
	tr.WriteFile("usr/share/misc/pci.ids", PCIIDs)
}

// Package guest holds the tests that run inside the QEMU guest of uiod's integration tests
// (see testrig/qemutest and the host-side tests in package integration), as root, against
// the guest kernel's real vfio-pci, uio_pci_generic and two emulated igb NICs.
//
// Every test is named TestGuest* and skips unless UIOD_GUEST=1. The guest's /init exports:
//
//	UIOD_GUEST=1
//	UIOD_GUEST_NICS     the igb NICs' PCI addresses, space-separated, in PCI order
//	UIOD_GUEST_IOMMU    1 when the guest has an (emulated Intel) IOMMU
//	UIOD_GUEST_NOIOMMU  1 when vfio's unsafe no-IOMMU mode was asked for
//	UIOD_GUEST_KERNEL   which kernel booted (e.g. "debian 6.1.0-57-amd64", "shared 6.12.117-vfio")
//	UIOD_GUEST_CONTROL  a file to read lines from the host test from (qemutest.VM.Send)
//
// and puts the static uiod binary at /bin/uiod. The NICs start out on the kernel's igb
// driver.
//
// Order. The tests share the two NICs, so they run in a fixed order: Go runs tests in the
// order of their files' names, then in source order. bind_test.go runs first: it binds NIC 1
// (the first address) to vfio-pci and NIC 2 to uio_pci_generic with `uiod bind`. The device
// tests (uio_test.go, vfio_test.go) run next on the bound NICs; each re-binds through sysfs
// if it finds a NIC not bound as expected, so it can also run alone. zz_unbind_test.go runs
// last (the zz_ prefix is what keeps it last) and gives both NICs back to igb with
// `uiod unbind --restore`.
package guest

// Package virtiospec holds the numbers of the virtio 1.x specification that the
// virtio-net driver (nic/virtio) and the device model (sim/virtio) both use: PCI ids,
// the virtio PCI capability layout, the common configuration offsets, device status and
// feature bits, the virtio-net configuration and header, split virtqueue flags and the
// control queue's commands.
//
// The package holds numbers only: the driver and the model each implement their own
// behaviour from them, and QEMU's virtio-net-pci checks the numbers independently in the
// guest tests.
package virtiospec

// PCI ids.
const (
	VendorID                = 0x1af4
	DeviceIDNet             = 0x1041 // modern virtio-net
	DeviceIDNetTransitional = 0x1000 // transitional virtio-net (driven through its modern interface)
)

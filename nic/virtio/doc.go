// Package virtio drives virtio-net devices (the NIC of KVM/QEMU, OpenStack, Proxmox and
// libvirt guests) over the modern virtio 1.x PCI transport.
//
// Open finds the common, notify, ISR and device-configuration capabilities in
// configuration space (each in a memory BAR, at an offset aligned as the spec requires)
// and maps them through the device's BARs, resets the device, negotiates features
// (VERSION_1 is required; ACCESS_PLATFORM, MAC, STATUS, CTRL_VQ, MQ, EVENT_IDX and
// SPEED_DUPLEX are taken when offered, ORDER_PLATFORM on amd64, whose fences are the
// hardware ones), checks that the device configuration holds the fields those features
// promise and that num_queues covers the queues, checks that each queue is disabled
// before setting it up, sets up split virtqueues in DMA memory and brings the device to
// DRIVER_OK. A failed initialisation sets FAILED, then resets the device. A
// configuration read whose config_generation never settles is an error. Mergeable receive buffers are not
// negotiated: every frame lands in one buffer, so buffers must hold a full frame. An MTU
// above 1500 (up to MaxMTU) needs VIRTIO_NET_F_MTU and at most the device's mtu; the
// feature is accepted when the buffers hold a frame of the device's mtu, and frames longer
// than the port's MTU allows are dropped on receive and refused on send, counted in
// Stats.RxErrors and TxErrors (docs/design.md §11). The
// legacy (0.9.5, I/O BAR) transport and packed rings are not supported.
//
// Each packet takes a chain of two descriptors: the 12-byte virtio-net header in a
// per-queue header array, then the packet buffer, so that nic.Buf holds the frame alone.
// The chains are wired once at setup; per packet the driver writes the buffer's address
// and length and one available-ring entry. Receive buffers are posted in batches and the
// device is notified at most once per batch; TxBurst notifies at most once per call, and
// only when the device asks for it (used ring flags, or avail_event with EVENT_IDX).
//
// A device that does not offer ACCESS_PLATFORM bypasses the IOMMU and must be given
// physical addresses: it is driven when the backend's DMA hands out physical addresses
// (uio, VFIO no-IOMMU: pci.PhysicalAddresses) and refused behind a translating IOMMU (VFIO
// type1, iommufd) with an error that says to give it iommu_platform=on. TxBurst never
// posts a zero-length buffer (QEMU would mark the device broken): it drops and counts it.
//
// A device that sets DEVICE_NEEDS_RESET after DRIVER_OK is seen on its configuration
// interrupt and on the status read of every Link call: the link reads down, and the port
// resets and re-initialises the device on the same memory and vectors, counted in
// Stats.DeviceResets (recover.go).
//
// Interrupts: with MSI-X, vector q belongs to RX queue q and the vector after the last RX
// queue to configuration changes (link status); transmit and control queues have none. A
// device with fewer MSI-X vectors gets two: one the RX queues share, one for
// configuration changes (as Linux falls back), then INTx.
// With INTx (uio_pci_generic) one vector serves every queue and EnableRxInterrupt reads
// the ISR register to acknowledge the line. Arming and disarming use event suppression:
// used_event with EVENT_IDX, the NO_INTERRUPT flag without. Both are a store to the ring
// followed by a full fence, so the idle policy's re-poll after arming sees every frame
// the device completed before it could have seen the arm.
//
// Multi-queue: with MQ the driver sets the number of queue pairs through the control
// virtqueue (VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET) and the device steers received frames over
// the pairs itself (QEMU by the backend queue a frame arrived on); RSS is not programmed.
//
// nic.Config: RxRing and TxRing count packets; each queue gets twice as many descriptors,
// capped by the device's maximum queue size (QEMU's default is 256, so 128 packets),
// halving the packet count to fit. BufSize must hold a frame of the MTU (nic.MaxFrame). TxQueues may not
// exceed RxQueues (the device receives on every pair in use). ITR is ignored (the device
// has no moderation). The device filters as it does after reset (QEMU's takes every
// address) until the port's user sets a receive filter (nic.RxFilter: SetMulticast,
// SetMAC, with VIRTIO_NET_F_CTRL_RX and VIRTIO_NET_F_CTRL_MAC_ADDR); from then on it
// takes its own address, broadcast and the groups set, or everything on a port opened
// Promiscuous (docs/design.md §11, "Receive filter"). Stats.RxMissed stays 0: the device reports
// no drops.
//
// Every field the device writes (used index, used entry id and length) is checked before
// use; a bad one is counted in Stats.RxErrors or TxErrors, never trusted.
package virtio

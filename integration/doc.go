// Package integration holds uiod's real-kernel tests: host-side tests (TestIntegration*)
// that boot a QEMU guest with emulated igb NICs (see testrig/qemutest) and run the guest
// tests of package integration/guest in it, each reported here as a subtest; and the
// end-to-end tests (TestIntegrationE2E*), in which the guest binds one NIC to vfio-pci and
// one to uio_pci_generic, runs `uiod run` forwarding between them, and the host sends
// `uiod latency` probes through QEMU's datagram sockets in both directions, checking that
// every probe came back and that the poll thread slept and was woken by the receiving
// port's own interrupt (MSI-X on the vfio port, INTx on the uio port); and the multi-queue
// test (TestIntegrationMultiQueue), in which both NICs run 4 RSS queues, first on vfio-pci
// with an MSI-X vector per queue and two poll threads, then on uio_pci_generic with one
// INTx line per NIC and one thread, while the host sends UDP flows through them.
// TestIntegrationE2EVirtio is the end-to-end test on four NICs, an igb pair and a
// virtio-net pair (-device virtio-net-pci,disable-legacy=on,mq=on,vectors=4,
// iommu_platform=on behind intel-iommu,intremap=on, each NIC on its own pcie-root-port,
// -netdev dgram), all forwarded by one `uiod run`, so that the two NIC models' latencies
// are measured in the same guest. TestIntegrationVirtioRunMultiQueue runs `uiod run` on one
// virtio-net NIC with 2 queue pairs on a 2-queue host TAP (-netdev tap,queues=2,script=no,
// downscript=no,vhost=off; vectors=6), one poll thread per queue on two vCPUs, reflecting
// the host's flows (it needs ip(8) and CAP_NET_ADMIN for the TAP).
//
// Every test boots its guest with startGuest and ends it with finishGuest (guest tests,
// reported as subtests) or finishE2E (the testdata/*.sh scripts, whose "E2E " lines
// parseE2E reads). The scripts source the guest shell library, /etc/uiod/lib.sh
// (qemutest.GuestLib), for reporting, snapshots and the daemon's start and stop.
//
// They skip unless run as root with QEMU, a static busybox and the guest kernel present:
// scripts/qemu-setup.sh installs them. Run them with
//
//	go test ./integration/
package integration

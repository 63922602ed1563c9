// Package qemutest boots a QEMU guest for uiod's real-kernel integration tests.
//
// The guest is a q35 machine under TCG with emulated igb NICs (QEMU's 82576), each behind
// its own PCIe root port, optionally an emulated Intel IOMMU with interrupt remapping, and a
// kernel that is either Debian's (extracted by scripts/qemu-setup.sh, drivers as modules)
// or the shared one with every driver built in (no-IOMMU mode and iommufd included). Its
// root file system is an initramfs built for each boot: static busybox, the needed kernel
// modules with their dependencies, the files the test adds (usually static uiod and test
// binaries, see BuildUIOD and BuildTest), and a generated /init that runs the test's script
// and powers off.
//
// Each NIC's wire is a pair of unix datagram sockets (QEMU's -netdev dgram, one raw Ethernet
// frame per datagram) whose paths are in VM.NICs, so a host-side test can exchange frames
// with the guest while it runs. The script's output and exit status come back on a second
// serial port (see ResultMarker); Result.Report turns `go test -v` output of a guest test
// binary into host subtests.
//
// Start and Run skip the calling test, with the reason, when QEMU, busybox or the kernel is
// missing (scripts/qemu-setup.sh installs them), when not running as root, or in -short
// mode.
package qemutest

import (
	"net"
	"time"
)

// Options say how to build and boot a guest. The zero value boots the Debian kernel with two
// NICs, no IOMMU, and an empty script.
type Options struct {
	// Kernel is the guest kernel; the zero value means DebianKernel.
	Kernel Kernel
	// IOMMU adds an emulated Intel IOMMU with interrupt remapping and boots with
	// intel_iommu=on iommu=pt (passthrough for the host's own drivers, so a uio device's
	// DMA uses physical addresses; vfio-pci devices still get translated domains).
	IOMMU bool
	// UnsafeNoIOMMU makes the guest enable vfio's unsafe no-IOMMU mode before the script
	// runs, where the kernel has it (the shared kernel; Debian's do not).
	UnsafeNoIOMMU bool
	// NICs is the number of NICs; 0 means 2.
	NICs int
	// NICModel is the emulated NIC: "" or "igb" for QEMU's igb (82576), "virtio" for a
	// modern-only virtio-net-pci (VirtioNICArgs).
	NICModel string
	// NICModels, when set, gives NIC i the model NICModels[i] (values as NICModel; NICs
	// past its end use NICModel), for guests with both kinds.
	NICModels []string
	// VirtioMTU, when positive, gives every virtio-net NIC (not the vhost-user one) that
	// MTU: host_mtu=N, which offers VIRTIO_NET_F_MTU with it.
	VirtioMTU int
	// TAPQueues, when positive, gives NIC 0 a multi-queue host TAP backend with that many
	// queues instead of a dgram socket pair (a dgram netdev has one queue, so a virtio-net
	// NIC on it offers one queue pair): QEMU creates the interface NIC.TAP, which the host
	// test brings up and talks to (AF_PACKET); it disappears when QEMU exits.
	TAPQueues int
	// HubPairs wires NICs 2i and 2i+1 to each other inside QEMU (-netdev hubport on hub
	// i) instead of to the host's sockets, so that no host socket sits between them.
	HubPairs bool
	// HubSkip, with HubPairs, leaves the first HubSkip pairs on the host's sockets (a
	// host test relays between them: a path with a delay of its own).
	HubSkip int
	// VhostUser, when set, makes NIC 0 a virtio-net-pci on -netdev vhost-user, QEMU
	// connecting (and reconnecting every second) to this back end's socket, and backs the
	// guest RAM with a shared memfd, which the back end maps.
	VhostUser string
	// VhostQueues, with VhostUser, is the queue pairs of the vhost-user netdev (queues=N)
	// and of the device (mq=on, one MSI-X vector per queue plus two); 0 or 1 means one.
	VhostQueues int
	// VhostMTU, with VhostUser, is the device's host_mtu (VIRTIO_NET_F_MTU, which QEMU
	// also sends the back end in VHOST_USER_NET_SET_MTU); 0 leaves it out.
	VhostMTU int
	// Memory is the guest RAM in QEMU syntax; "" means 512M.
	Memory string
	// CPUs is the number of guest CPUs; 0 means 1.
	CPUs int
	// SingleThread runs every vCPU on one host thread, in turn (-accel tcg,thread=single),
	// instead of a host thread each (MTTCG). A guest whose vCPUs then never run at once
	// cannot lose its timer interrupts the way a 2-vCPU MTTCG guest does on a loaded host
	// (docs/design.md §13), at the price of half the guest's CPU.
	SingleThread bool
	// HugePages is the number of 2 MiB huge pages the guest reserves at boot.
	HugePages int
	// Cmdline holds extra kernel command line words.
	Cmdline []string
	// Modules are the modules a modular kernel loads, each after its dependencies; nil
	// means DefaultModules.
	Modules []string
	// Files are added to the initramfs (see Binary).
	Files []Entry
	// Script is the busybox sh script the guest runs as root in /tmp once the modules
	// are loaded, with PATH=/bin:/sbin (the Files installed by Binary are there) and:
	//
	//	UIOD_GUEST=1
	//	UIOD_GUEST_NICS     the igb NICs' PCI addresses, space-separated, in PCI order
	//	UIOD_GUEST_IOMMU    1 with Options.IOMMU, else 0
	//	UIOD_GUEST_NOIOMMU  1 with Options.UnsafeNoIOMMU, else 0
	//	UIOD_GUEST_KERNEL   Kernel.Name
	//	UIOD_GUEST_CONTROL  the control port to read the host's lines from (see VM.Send)
	//
	// It may source /etc/uiod/lib.sh, the shell functions of GuestLib. Its stdout and
	// stderr are Result.Output, its exit status Result.Exit.
	Script string
	// Timeout bounds the boot and the script; 0 means 5 minutes. QEMU is killed after it.
	Timeout time.Duration
	// Log, if set, receives each console line as it arrives. With env UIOD_QEMU_CONSOLE=1
	// and no Log, the console goes to the test's log as it arrives.
	Log func(line string)

	// watch overrides the heartbeat watchdog's limits (heartbeat.go), for its own test.
	watch *watchLimits
}

// NIC is the host's view of one emulated igb NIC's wire.
type NIC struct {
	// MAC is the NIC's address: 52:54:00:12:34:56 for the first, counting up.
	MAC net.HardwareAddr
	// GuestSocket is QEMU's end: a datagram sent to it arrives at the guest NIC as a
	// received frame.
	GuestSocket string
	// HostSocket is the host's end: QEMU sends each frame the guest NIC transmits to it.
	// Bind a unix datagram socket to it to receive them (frames sent while nothing is
	// bound there are dropped).
	HostSocket string
	// TAP is the host interface of a NIC with a TAP backend (Options.TAPQueues); the
	// sockets are then unused.
	TAP string
}

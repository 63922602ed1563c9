package qemutest

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
)

// qemuArgs returns QEMU's command line; it fills vm.NICs.
func (vm *VM) qemuArgs(o Options, initrd string) []string {
	// no_timer_check: under a loaded TCG host the IO-APIC timer check can fail, and with
	// interrupt remapping that is a panic.
	cmdline := []string{"console=ttyS0", "panic=-1", "quiet", "loglevel=4", "no_timer_check"}
	accel := "tcg"
	if o.SingleThread {
		accel = "tcg,thread=single"
	}
	args := []string{
		"-machine", "q35", "-accel", accel, "-cpu", "max",
		"-m", o.Memory, "-smp", fmt.Sprint(o.CPUs),
		"-display", "none", "-nodefaults", "-no-reboot", "-monitor", "none",
		// Named threads ("CPU 0/TCG"): a killed guest's error says what each was doing.
		"-name", "uiod-guest,debug-threads=on",
		"-serial", "stdio",
		"-serial", "file:" + filepath.Join(vm.dir, resultFile),
		// ttyS2: lines from the host (Send), QEMU listening on a unix socket.
		"-chardev", "socket,id=control,server=on,wait=off,path=" + filepath.Join(vm.dir, "control.sock"),
		"-serial", "chardev:control",
		// ttyS3: the init's heartbeat (heartbeat.go).
		"-serial", "file:" + filepath.Join(vm.dir, heartbeatFile),
		"-kernel", o.Kernel.Image, "-initrd", initrd,
	}
	if o.IOMMU {
		// The IOMMU must come before the devices it translates.
		args = append(args, "-device", "intel-iommu,intremap=on")
		cmdline = append(cmdline, "intel_iommu=on", "iommu=pt")
	} else {
		cmdline = append(cmdline, "intel_iommu=off")
	}
	if o.HugePages > 0 {
		cmdline = append(cmdline, "hugepagesz=2M", fmt.Sprintf("hugepages=%d", o.HugePages))
	}
	cmdline = append(cmdline, o.Cmdline...)
	for i := 0; i < o.NICs; i++ {
		nic := NIC{
			MAC:         net.HardwareAddr{0x52, 0x54, 0x00, 0x12, 0x34, byte(0x56 + i)},
			GuestSocket: filepath.Join(vm.dir, fmt.Sprintf("guest-nic%d.sock", i)),
			HostSocket:  filepath.Join(vm.dir, fmt.Sprintf("host-nic%d.sock", i)),
		}
		netdev := fmt.Sprintf("dgram,id=n%d,local.type=unix,local.path=%s,remote.type=unix,remote.path=%s",
			i, nic.GuestSocket, nic.HostSocket)
		if o.HubPairs && i/2 >= o.HubSkip {
			netdev = fmt.Sprintf("hubport,id=n%d,hubid=%d", i, i/2)
		}
		if i == 0 && o.VhostUser != "" {
			args = append(args, "-object", "memory-backend-memfd,id=mem,size="+o.Memory+",share=on", "-numa", "node,memdev=mem",
				"-chardev", "socket,id=vu0,reconnect-ms=1000,path="+o.VhostUser)
			netdev = "vhost-user,id=n0,chardev=vu0"
			if o.VhostQueues > 1 {
				netdev += fmt.Sprintf(",queues=%d", o.VhostQueues)
			}
		}
		if i == 0 && o.TAPQueues > 0 {
			// One name per guest: two guests of one test binary must not race for the
			// same interface while the kernel still tears down the previous one's.
			nic.TAP = fmt.Sprintf("uiod%d.%d", os.Getpid()%100000, tapSeq.Add(1)%100000)
			netdev = fmt.Sprintf("tap,id=n0,ifname=%s,queues=%d,script=no,downscript=no,vhost=off", nic.TAP, o.TAPQueues)
		}
		vm.NICs = append(vm.NICs, nic)
		args = append(args,
			"-netdev", netdev,
			// One root port each: igb reserves slots for its SR-IOV VFs, so two igb
			// functions on pcie.0 collide.
			"-device", fmt.Sprintf("pcie-root-port,id=rp%d,bus=pcie.0,chassis=%d,slot=%d", i, i+1, i+1),
			"-device", nicDevice(o, i, nic.MAC))
	}
	return append(args, "-append", strings.Join(cmdline, " "))
}

// Args returns QEMU's command line, program first, so a test can log how it booted.
func (vm *VM) Args() []string { return vm.cmd.Args }

// nicDevice is the -device argument of NIC i.
func nicDevice(o Options, i int, mac net.HardwareAddr) string {
	model := o.NICModel
	if i < len(o.NICModels) {
		model = o.NICModels[i]
	}
	if i == 0 && o.VhostUser != "" {
		d := fmt.Sprintf("virtio-net-pci,bus=rp0,netdev=n0,mac=%s,disable-legacy=on", mac)
		if o.VhostQueues > 1 {
			d += fmt.Sprintf(",mq=on,vectors=%d", 2*o.VhostQueues+2)
		}
		if o.VhostMTU > 0 {
			d += fmt.Sprintf(",host_mtu=%d", o.VhostMTU)
		}
		return d
	}
	if model == "virtio" {
		a := VirtioNICArgs(o.IOMMU)
		if i == 0 && o.TAPQueues > 1 {
			// One vector per RX and TX queue plus the configuration vector, as QEMU sizes it.
			a = strings.Replace(a, "vectors=4", fmt.Sprintf("vectors=%d", 2*o.TAPQueues+2), 1)
		}
		if o.VirtioMTU > 0 {
			a += fmt.Sprintf(",host_mtu=%d", o.VirtioMTU)
		}
		return fmt.Sprintf("virtio-net-pci,bus=rp%d,netdev=n%d,mac=%s,%s", i, i, mac, a)
	}
	return fmt.Sprintf("igb,bus=rp%d,netdev=n%d,mac=%s", i, i, mac)
}

// VirtioNICArgs are the virtio-net-pci properties the tests use: the modern interface only
// (1af4:1041), multi-queue offered (a dgram netdev has one queue, so the device offers one
// pair), 4 MSI-X vectors, and behind an IOMMU iommu_platform=on, so that the device's DMA
// goes through the emulated IOMMU (ACCESS_PLATFORM; QEMU refuses it on a transitional
// device).
func VirtioNICArgs(iommu bool) string {
	a := "disable-legacy=on,mq=on,vectors=4"
	if iommu {
		a += ",iommu_platform=on"
	}
	return a
}

// tapSeq numbers the TAP interfaces of this process's guests.
var tapSeq atomic.Int64

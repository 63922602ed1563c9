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
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
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
	// TAPQueues, when positive, gives NIC 0 a multi-queue host TAP backend with that many
	// queues instead of a dgram socket pair (a dgram netdev has one queue, so a virtio-net
	// NIC on it offers one queue pair): QEMU creates the interface NIC.TAP, which the host
	// test brings up and talks to (AF_PACKET); it disappears when QEMU exits.
	TAPQueues int
	// Memory is the guest RAM in QEMU syntax; "" means 512M.
	Memory string
	// CPUs is the number of guest CPUs; 0 means 1.
	CPUs int
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
	// Its stdout and stderr are Result.Output, its exit status Result.Exit.
	Script string
	// Timeout bounds the boot and the script; 0 means 5 minutes. QEMU is killed after it.
	Timeout time.Duration
	// Log, if set, receives each console line as it arrives. With env UIOD_QEMU_CONSOLE=1
	// and no Log, the console goes to the test's log as it arrives.
	Log func(line string)
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

// VM is a running guest.
type VM struct {
	// NICs are the guest's NICs in PCI order: NICs[i] is the i-th address of
	// UIOD_GUEST_NICS in the guest.
	NICs []NIC

	kernel  Kernel
	dir     string
	cmd     *exec.Cmd
	ctx     context.Context
	cancel  context.CancelFunc
	console *consoleBuffer
	start   time.Time
	done    chan struct{}
	waitErr error

	once sync.Once
	res  *Result
	err  error

	controlMu sync.Mutex
	control   net.Conn
}

// skipUnlessReady skips t when the guest cannot be built or booted here.
func skipUnlessReady(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		if errors.Is(err, ErrMissing) {
			t.Skip(err)
		}
		t.Fatal(err)
	}
}

// Require skips t unless a guest can boot here: not in -short mode, as root, with QEMU and
// a static busybox installed. Call it before expensive preparation; Start calls it too.
func Require(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("QEMU guest tests do not run in -short mode")
	}
	if os.Geteuid() != 0 {
		t.Skip("QEMU guest tests need root")
	}
	_, err := QEMU()
	skipUnlessReady(t, err)
	_, err = Busybox()
	skipUnlessReady(t, err)
}

// Start builds the initramfs and boots a guest; QEMU is killed when t ends. It skips t in
// -short mode, when not root, or when QEMU, busybox or the kernel is missing.
func Start(t testing.TB, o Options) *VM {
	t.Helper()
	Require(t)
	qemu, err := QEMU()
	skipUnlessReady(t, err)
	busybox, err := Busybox()
	skipUnlessReady(t, err)
	if o.Kernel.Image == "" {
		o.Kernel, err = DebianKernel()
		skipUnlessReady(t, err)
	}
	if o.NICs == 0 {
		o.NICs = 2
	}
	if o.Memory == "" {
		o.Memory = "512M"
	}
	if o.CPUs == 0 {
		o.CPUs = 1
	}
	if o.Modules == nil {
		o.Modules = DefaultModules
	}
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Minute
	}
	if o.Log == nil && os.Getenv("UIOD_QEMU_CONSOLE") == "1" {
		o.Log = func(line string) { t.Log(line) }
	}

	// A short directory of its own: unix socket paths must fit in 108 bytes.
	dir, err := os.MkdirTemp("", "uiod-qemu-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })

	initrd := filepath.Join(dir, "initramfs.cpio.gz")
	err = writeInitramfs(initrd, initramfsConfig{
		Busybox: busybox,
		Init:    initScript(initConfig{UnsafeNoIOMMU: o.UnsafeNoIOMMU, IOMMU: o.IOMMU, Kernel: o.Kernel.Name}),
		Script:  o.Script,
		Kernel:  o.Kernel,
		Modules: o.Modules,
		Files:   o.Files,
	})
	if err != nil {
		t.Fatalf("build initramfs: %v", err)
	}

	vm := &VM{kernel: o.Kernel, dir: dir, done: make(chan struct{}), console: &consoleBuffer{log: o.Log}}
	args := vm.qemuArgs(o, initrd)
	ctx, cancel := context.WithTimeout(context.Background(), o.Timeout)
	vm.ctx, vm.cancel = ctx, cancel
	cmd := exec.CommandContext(ctx, qemu, args...)
	cmd.Stdin = nil
	cmd.Stdout = vm.console
	cmd.Stderr = vm.console
	cmd.WaitDelay = 5 * time.Second
	cmd.SysProcAttr = qemuProcAttr()
	vm.cmd = cmd
	vm.start = time.Now()
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start %s: %v", qemu, err)
	}
	go func() {
		vm.waitErr = cmd.Wait()
		cancel()
		close(vm.done)
	}()
	t.Cleanup(vm.Kill)
	return vm
}

// qemuArgs returns QEMU's command line; it fills vm.NICs.
func (vm *VM) qemuArgs(o Options, initrd string) []string {
	// no_timer_check: under a loaded TCG host the IO-APIC timer check can fail, and with
	// interrupt remapping that is a panic.
	cmdline := []string{"console=ttyS0", "panic=-1", "quiet", "loglevel=4", "no_timer_check"}
	args := []string{
		"-machine", "q35", "-accel", "tcg", "-cpu", "max",
		"-m", o.Memory, "-smp", fmt.Sprint(o.CPUs),
		"-display", "none", "-nodefaults", "-no-reboot", "-monitor", "none",
		"-serial", "stdio",
		"-serial", "file:" + filepath.Join(vm.dir, "result.log"),
		// ttyS2: lines from the host (Send), QEMU listening on a unix socket.
		"-chardev", "socket,id=control,server=on,wait=off,path=" + filepath.Join(vm.dir, "control.sock"),
		"-serial", "chardev:control",
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
	if model == "virtio" {
		a := VirtioNICArgs(o.IOMMU)
		if i == 0 && o.TAPQueues > 1 {
			// One vector per RX and TX queue plus the configuration vector, as QEMU sizes it.
			a = strings.Replace(a, "vectors=4", fmt.Sprintf("vectors=%d", 2*o.TAPQueues+2), 1)
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

// Kill stops the guest at once if it is still running.
func (vm *VM) Kill() {
	vm.cancel()
	<-vm.done
	vm.controlMu.Lock()
	if vm.control != nil {
		vm.control.Close()
	}
	vm.controlMu.Unlock()
}

// Send writes line and a newline to the guest's control port, /dev/ttyS2, which the
// guest's init holds open with echo off (env UIOD_GUEST_CONTROL names it in the guest): a
// guest script waits for the host with `read -r cmd <$UIOD_GUEST_CONTROL`. Lines sent
// before the guest reads them are kept, up to the tty's 4 KiB input buffer.
func (vm *VM) Send(line string) error {
	vm.controlMu.Lock()
	defer vm.controlMu.Unlock()
	if vm.control == nil {
		c, err := net.Dial("unix", filepath.Join(vm.dir, "control.sock"))
		if err != nil {
			return fmt.Errorf("guest control port: %w", err)
		}
		vm.control = c
	}
	if _, err := io.WriteString(vm.control, line+"\n"); err != nil {
		return fmt.Errorf("guest control port: %w", err)
	}
	return nil
}

// WaitOutput waits until the guest script's output so far contains s, and returns that
// output; it gives up when the guest powers off or after timeout. Use it to start the
// host's side of a test when the guest is ready.
func (vm *VM) WaitOutput(s string, timeout time.Duration) (string, error) {
	deadline := time.After(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		data, _ := os.ReadFile(filepath.Join(vm.dir, "result.log"))
		var r Result
		parseResultPort(string(data), &r)
		if strings.Contains(r.Output, s) {
			return r.Output, nil
		}
		select {
		case <-vm.done:
			return r.Output, fmt.Errorf("guest powered off before its output had %q", s)
		case <-deadline:
			return r.Output, fmt.Errorf("guest output lacks %q after %v", s, timeout)
		case <-tick.C:
		}
	}
}

// Wait waits for the guest to power off (or be killed at the timeout) and returns what it
// reported. The error says why the run did not complete: QEMU failed, the guest timed out,
// or it never reported the script's exit status; the Result is filled as far as it goes.
func (vm *VM) Wait() (*Result, error) {
	vm.once.Do(func() { vm.res, vm.err = vm.wait() })
	return vm.res, vm.err
}

func (vm *VM) wait() (*Result, error) {
	<-vm.done
	r := &Result{Kernel: vm.kernel.Name, Wall: time.Since(vm.start), Console: vm.console.String()}
	data, err := os.ReadFile(filepath.Join(vm.dir, "result.log"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return r, err
	}
	perr := parseResultPort(string(data), r)
	r.Tests, r.Rest = ParseGoTest(r.Output)
	switch {
	case errors.Is(vm.ctx.Err(), context.DeadlineExceeded):
		return r, fmt.Errorf("guest (%s) timed out after %v and was killed; console tail:\n%s",
			vm.kernel.Name, r.Wall.Round(time.Millisecond), tail(r.Console, 40))
	case vm.waitErr != nil:
		return r, fmt.Errorf("qemu (%s): %w; console tail:\n%s", vm.kernel.Name, vm.waitErr, tail(r.Console, 40))
	case perr != nil:
		return r, fmt.Errorf("guest (%s): %w; console tail:\n%s", vm.kernel.Name, perr, tail(r.Console, 40))
	}
	return r, nil
}

// Run boots a guest, waits for it and returns its result; a run that did not complete
// fails t. It skips t like Start.
func Run(t testing.TB, o Options) *Result {
	t.Helper()
	r, err := Start(t, o).Wait()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// consoleBuffer collects the serial console and passes complete lines to log.
type consoleBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	partial []byte
	log     func(string)
}

func (c *consoleBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Write(p)
	if c.log != nil {
		c.partial = append(c.partial, p...)
		for {
			line, rest, ok := bytes.Cut(c.partial, []byte{'\n'})
			if !ok {
				break
			}
			c.log(strings.TrimRight(string(line), "\r"))
			c.partial = append(c.partial[:0], rest...)
		}
	}
	return len(p), nil
}

func (c *consoleBuffer) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.ReplaceAll(c.buf.String(), "\r", "")
}

var _ io.Writer = (*consoleBuffer)(nil)

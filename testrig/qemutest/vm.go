package qemutest

import (
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
	"testing"
	"time"
)

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

	silent silence // set when watch killed the guest
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
	limits := defaultWatch
	if o.watch != nil {
		limits = *o.watch
	}
	go vm.watch(dir, limits)
	t.Cleanup(func() {
		vm.Kill()
		vm.recordStall(t)
	})
	return vm
}

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
		data, _ := os.ReadFile(filepath.Join(vm.dir, resultFile))
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
	data, err := os.ReadFile(filepath.Join(vm.dir, resultFile))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return r, err
	}
	perr := parseResultPort(string(data), r)
	r.Tests, r.Rest = ParseGoTest(r.Output)
	switch {
	case vm.silent.killed():
		return r, fmt.Errorf("guest (%s) stopped: %v, killed after %v; QEMU's threads then:%s\n%s",
			vm.kernel.Name, &vm.silent, r.Wall.Round(time.Millisecond), vm.silent.qemu(), tails(r))
	case errors.Is(vm.ctx.Err(), context.DeadlineExceeded):
		return r, fmt.Errorf("guest (%s) timed out after %v and was killed; %s",
			vm.kernel.Name, r.Wall.Round(time.Millisecond), tails(r))
	case vm.waitErr != nil:
		return r, fmt.Errorf("qemu (%s): %w; console tail:\n%s", vm.kernel.Name, vm.waitErr, Tail(r.Console, 40))
	case perr != nil:
		return r, fmt.Errorf("guest (%s): %w; console tail:\n%s", vm.kernel.Name, perr, Tail(r.Console, 40))
	}
	return r, nil
}

// tails is what an error of a guest killed mid-run shows: the end of its console and of
// its script's output.
func tails(r *Result) string {
	return fmt.Sprintf("console tail:\n%s\nthe script's output, its tail:\n%s", Tail(r.Console, 40), Tail(r.Output, 40))
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

// Finish waits for the guest like Wait and fails t at once if the run did not complete.
// It logs how long the boot, the script and the whole run took, and when t ends failed it
// logs the script's output and the console, so a failure shows what the guest saw.
func (vm *VM) Finish(t testing.TB) *Result {
	t.Helper()
	r, err := vm.Wait()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: boot %v, script %v, QEMU start to power-off %v", r.Kernel,
		r.Boot.Round(time.Millisecond), r.Script.Round(time.Millisecond), r.Wall.Round(time.Millisecond))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("guest output:\n%s", r.Output)
			t.Logf("guest console:\n%s", r.Console)
		}
	})
	return r
}

package qemutest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestIntegrationBoot boots each available kernel with a small script and checks the whole
// protocol: the script's output and exit status, the NICs the guest found, the modules it
// loaded, the environment it exported.
func TestIntegrationBoot(t *testing.T) {
	kernels := map[string]func() (Kernel, error){"debian": DebianKernel, "shared": SharedKernel}
	for _, name := range []string{"debian", "shared"} {
		t.Run(name, func(t *testing.T) {
			k, err := kernels[name]()
			skipUnlessReady(t, err)
			vm := Start(t, Options{
				Kernel: k,
				IOMMU:  true,
				Script: `echo "hello $UIOD_GUEST $UIOD_GUEST_NICS"
for a in $UIOD_GUEST_NICS; do echo "driver $a $(basename $(readlink /sys/bus/pci/devices/$a/driver))"; done
ls /sys/kernel/iommu_groups | wc -l | sed 's/^/groups /'
exit 3`,
			})
			if len(vm.NICs) != 2 {
				t.Fatalf("VM has %d NICs, want 2", len(vm.NICs))
			}
			r, err := vm.Wait()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: boot %v, script %v, wall %v\n%s", r.Kernel, r.Boot, r.Script, r.Wall, r.Output)
			if r.Exit != 3 {
				t.Errorf("exit status %d, want 3", r.Exit)
			}
			if len(r.NICs) != 2 {
				t.Fatalf("guest found NICs %q, want 2", r.NICs)
			}
			want := "hello 1 " + strings.Join(r.NICs, " ")
			if !strings.Contains(r.Output, want) {
				t.Errorf("output lacks %q", want)
			}
			for _, a := range r.NICs {
				if !strings.Contains(r.Output, "driver "+a+" igb") {
					t.Errorf("NIC %s not on igb at start:\n%s", a, r.Output)
				}
			}
			if strings.Contains(r.Console, "insmod") {
				t.Errorf("a module failed to load:\n%s", r.Console)
			}
			if hb, err := os.ReadFile(filepath.Join(vm.dir, heartbeatFile)); err != nil || len(hb) == 0 {
				t.Errorf("no heartbeat from the guest's init (%v)", err)
			}
		})
	}
}

// TestIntegrationHeartbeat stops the guest init's heartbeat, as a guest kernel that stopped
// running anything would, and has a guest's console show an RCU stall while its script
// prints nothing, as one whose script's vCPU lost its timer would; the watchdog must kill
// both long before their timeout and say why.
func TestIntegrationHeartbeat(t *testing.T) {
	k := anyKernel(t)
	for _, tc := range []struct{ name, script, says, want string }{
		{"heartbeat stops", `echo "stopping the heartbeat $UIOD_GUEST_HEARTBEAT"
[ -n "$UIOD_GUEST_HEARTBEAT" ] && kill -STOP "$UIOD_GUEST_HEARTBEAT" || exit 1
sleep 3600`, "stopping the heartbeat", "no heartbeat"},
		// A stand-in for the kernel's line: the watchdog reads the console, not the kernel.
		{"stalled and quiet", `echo "printing a stall"
echo "rcu: INFO: rcu_preempt detected stalls on CPUs/tasks: (a stand-in)" >/dev/console
sleep 3600`, "printing a stall", "reported a stall"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vm := Start(t, Options{Kernel: k, Timeout: 6 * time.Minute,
				watch:  &watchLimits{Poll: time.Second, First: 4 * time.Minute, Gap: 20 * time.Second},
				Script: tc.script})
			r, err := vm.Wait()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("the guest ran on: %v\n%s", err, r.Output)
			}
			if !strings.Contains(err.Error(), "CPU 0/TCG: ") {
				t.Errorf("the error does not say what QEMU's vCPU thread was doing: %v", err)
			}
			if !strings.Contains(r.Output, tc.says) {
				t.Fatalf("the script did not run:\n%s", r.Output)
			}
			if r.Wall > 5*time.Minute {
				t.Errorf("killed after %v: the watchdog waited for the timeout", r.Wall)
			}
			t.Logf("killed after %v: %v", r.Wall, err)
		})
	}
}

// TestIntegrationControl checks the host → guest control port and WaitOutput: the guest
// says it is ready, waits for a line from the host and echoes it.
func TestIntegrationControl(t *testing.T) {
	k := anyKernel(t)
	vm := Start(t, Options{Kernel: k, Timeout: time.Minute, Script: `echo ready
read -r line <$UIOD_GUEST_CONTROL
echo "got: $line"
read -r line <$UIOD_GUEST_CONTROL
echo "then: $line"`})
	if _, err := vm.WaitOutput("ready", 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"hello guest", "second line"} {
		if err := vm.Send(l); err != nil {
			t.Fatal(err)
		}
	}
	r, err := vm.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if want := "ready\ngot: hello guest\nthen: second line"; r.Output != want {
		t.Errorf("guest output %q, want %q", r.Output, want)
	}
	if err := vm.Send("too late"); err == nil {
		t.Error("Send to a powered-off guest succeeded")
	}
}

// anyKernel returns the shared kernel, else Debian's, for a test of the harness that any
// guest kernel does; it skips t when neither is ready.
func anyKernel(t *testing.T) Kernel {
	k, err := SharedKernel()
	if err != nil {
		k, err = DebianKernel()
	}
	skipUnlessReady(t, err)
	return k
}

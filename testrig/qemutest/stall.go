package qemutest

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// stallSigns are console lines that say a guest failed for a reason that says nothing
// about the code under test:
//   - the guest kernel lost its timer interrupts: under TCG with more than one vCPU a vCPU
//     sometimes stops getting them (docs/design.md §13; tsc=reliable makes it rarer, not
//     impossible), RCU stalls and every task that waits for a grace period hangs;
//   - QEMU itself aborted on a race in its softmmu between a vCPU's access through its TLB
//     and another thread's change of the memory map (BARs or an MSI-X table enabled or
//     disabled, an IOMMU's address spaces switched), which vfio's open and release of a
//     device make.
var stallSigns = []string{
	"rcu_preempt kthread timer wakeup didn't happen",
	"rcu: INFO: rcu_preempt detected stalls",
	"iotlb_to_section: Assertion",
}

// stalled reports whether console output shows one of stallSigns.
func stalled(console string) bool {
	for _, s := range stallSigns {
		if strings.Contains(console, s) {
			return true
		}
	}
	return false
}

// StallsFileEnv names the file to which a failed test whose guest kernel stalled appends
// its top-level name, one per line. The Makefile's test target sets it and reruns those
// tests once (scripts/rerun-stalled.sh) when they are the only failures.
const StallsFileEnv = "UIOD_QEMU_STALLS"

// recordStall appends t's top-level test name to the stalls file, if t failed, its guest's
// kernel stalled (the RCU said so, or the init's heartbeat stopped) and the file is
// configured.
func (vm *VM) recordStall(t testing.TB) {
	path := os.Getenv(StallsFileEnv)
	if path == "" || !t.Failed() || !(stalled(vm.console.String()) || vm.silent.killed()) {
		return
	}
	name, _, _ := strings.Cut(t.Name(), "/")
	t.Logf("qemutest: the guest kernel stalled (lost timer interrupts under TCG); %s is recorded for one rerun", name)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Logf("qemutest: %s: %v", StallsFileEnv, err)
		return
	}
	defer f.Close()
	fmt.Fprintln(f, name)
}
